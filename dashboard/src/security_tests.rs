//! Tests of the guard's decisions.

use super::*;

fn guard() -> Guard {
    Guard::new("t0ken".into(), 8080)
}

fn get(host: &str) -> RequestParts<'_> {
    RequestParts {
        method: "GET",
        host: Some(host),
        ..Default::default()
    }
}

/// Loopback names pass; any other Host is refused before anything else is looked at.
#[test]
fn only_loopback_hosts_are_served() {
    for host in [
        "localhost:8080",
        "127.0.0.1:8080",
        "127.1.2.3",
        "[::1]:8080",
        "LOCALHOST",
    ] {
        assert!(host_is_loopback(host), "{host}");
    }
    for host in [
        "evil.example",
        "evil.example:8080",
        "127.0.0.1.nip.io",
        "10.0.0.1:8080",
        "",
    ] {
        assert!(!host_is_loopback(host), "{host}");
    }
    let request = RequestParts {
        url_token: Some("t0ken"),
        ..get("evil.example:8080")
    };
    assert!(matches!(guard().check(&request), Verdict::Forbidden(_)));
}

/// The URL token sets the cookie; the cookie alone then suffices; neither is 401.
#[test]
fn the_url_token_becomes_a_cookie() {
    let guard = guard();
    assert!(matches!(
        guard.check(&get("127.0.0.1:8080")),
        Verdict::Unauthorized(_)
    ));
    let wrong = RequestParts {
        url_token: Some("t0keN"),
        ..get("127.0.0.1:8080")
    };
    assert!(matches!(guard.check(&wrong), Verdict::Unauthorized(_)));
    let first = RequestParts {
        url_token: Some("t0ken"),
        ..get("127.0.0.1:8080")
    };
    assert_eq!(guard.check(&first), Verdict::AllowAndSetCookie);
    let cookie = guard.set_cookie();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    let pair = cookie.split(';').next().unwrap();
    let again = RequestParts {
        cookie: Some(pair),
        ..get("127.0.0.1:8080")
    };
    assert_eq!(guard.check(&again), Verdict::Allow);
    let other_port = RequestParts {
        cookie: Some("minik_dashboard_9090=t0ken"),
        ..get("127.0.0.1:8080")
    };
    assert!(matches!(guard.check(&other_port), Verdict::Unauthorized(_)));
}

/// A POST needs the CSRF token, and a same-origin Origin and Sec-Fetch-Site when sent.
#[test]
fn state_changes_need_the_csrf_token_and_the_same_origin() {
    let guard = guard();
    let csrf = guard.csrf().to_string();
    let post = |csrf: Option<&'static str>, origin, site| RequestParts {
        method: "POST",
        host: Some("127.0.0.1:8080"),
        cookie: Some("minik_dashboard_8080=t0ken"),
        csrf,
        origin,
        fetch_site: site,
        ..Default::default()
    };
    let token: &'static str = Box::leak(csrf.into_boxed_str());
    assert!(matches!(
        guard.check(&post(None, None, None)),
        Verdict::Forbidden(_)
    ));
    assert_eq!(guard.check(&post(Some(token), None, None)), Verdict::Allow);
    let same = post(
        Some(token),
        Some("http://127.0.0.1:8080"),
        Some("same-origin"),
    );
    assert_eq!(guard.check(&same), Verdict::Allow);
    let cross = post(Some(token), Some("http://evil.example"), None);
    assert!(matches!(guard.check(&cross), Verdict::Forbidden(_)));
    let site = post(Some(token), None, Some("cross-site"));
    assert!(matches!(guard.check(&site), Verdict::Forbidden(_)));
}
