//! Request hygiene: refuse what only a browser, a rebinding DNS name or a confused tool would send.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/server/filters/cors.go` (CORS is off unless
//! `--cors-allowed-origins` is set, docs/security.md#h7), the media types of
//! `endpoints/handlers/negotiation` (docs/security.md#h1, #h2, #h3) and the Host filter of
//! `kubectl proxy` (docs/security.md#h9). A web page can POST to `127.0.0.1` with a "simple"
//! `text/plain` body and no preflight, and a DNS-rebinding name reaches loopback under a foreign
//! `Host`; so:
//!
//! - a request carrying an `Origin` other than the server's own is refused (403): no browser
//!   page may drive the API (a WebSocket client may name the API's own origin);
//! - `Host` must name loopback (`localhost`, `127.x.x.x`, `[::1]`, any port), else 403;
//! - a write's `Content-Type` must be JSON, YAML, one of the four patch types or protobuf
//!   (415 otherwise, `text/plain` included).
//!
//! A write with no `Content-Type` at all is read as JSON, as upstream's negotiation does, and the
//! Python client needs it: it sends none on creates, replaces, deletes with a body and
//! TokenRequests (docs/security.md#h11); a browser cannot send such a body without `Origin`,
//! which is refused first. A PATCH without one is a 415 (`registry/patch.rs`).
//!
//! What minik simplifies: no allowed-origins list (CORS cannot be switched on).

use axum::extract::Request;
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use minik_api::status;

use crate::error::ApiError;
use crate::request::body::media_type;

/// The media types a write may carry (upstream's serializers plus the patch types).
pub const WRITE_MEDIA_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
];

/// Why a request is refused before anything else looks at it.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A browser `Origin`.
    Origin(String),
    /// A `Host` that is not loopback.
    Host(String),
    /// A write body in a media type the server does not read.
    MediaType(String),
}

/// The checks, as a pure function of the method and three headers.
pub fn check(
    method: &Method,
    origin: Option<&str>,
    host: Option<&str>,
    content_type: Option<&str>,
) -> Result<(), Refusal> {
    if let Some(origin) = origin.filter(|o| !is_own_origin(o, host)) {
        return Err(Refusal::Origin(origin.to_string()));
    }
    if let Some(host) = host {
        if !is_loopback_host(host) {
            return Err(Refusal::Host(host.to_string()));
        }
    }
    let writes = matches!(*method, Method::POST | Method::PUT | Method::PATCH);
    if let Some(media) = media_type(content_type).filter(|_| writes) {
        if !WRITE_MEDIA_TYPES.contains(&media.as_str()) {
            return Err(Refusal::MediaType(media));
        }
    }
    Ok(())
}

/// Whether `origin` is the server's own (`https://` + the request's `Host`): WebSocket clients
/// such as the Python client's `websocket-client` send it on an exec handshake. No page is served
/// from the API's origin, so only a non-browser client can carry it; other origins stay refused.
fn is_own_origin(origin: &str, host: Option<&str>) -> bool {
    host.is_some_and(|host| {
        origin.strip_prefix("https://") == Some(host)
            || origin.strip_prefix("http://") == Some(host)
    })
}

/// `localhost`, `127.0.0.0/8` or `[::1]`, with or without a port.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inside, _)) => inside,
            None => return false,
        }
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    match name.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => name.eq_ignore_ascii_case("localhost"),
    }
}

/// The middleware around every route.
pub async fn filter(request: Request, next: Next) -> Response {
    let verdict = {
        let headers = request.headers();
        let header =
            |name: header::HeaderName| headers.get(name).map(|v| v.to_str().unwrap_or("<binary>"));
        check(
            request.method(),
            header(header::ORIGIN),
            header(header::HOST),
            header(header::CONTENT_TYPE),
        )
    };
    match verdict {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            tracing::debug!(?refusal, path = %request.uri().path(), "request refused");
            refuse(refusal)
        }
    }
}

fn refuse(refusal: Refusal) -> Response {
    let status = match refusal {
        Refusal::Origin(origin) => status::failure(
            403,
            "Forbidden",
            format!("cross-origin requests are not allowed (Origin {origin:?})"),
        ),
        Refusal::Host(host) => status::failure(
            403,
            "Forbidden",
            format!("the Host {host:?} is not a loopback name or address"),
        ),
        Refusal::MediaType(media) => status::unsupported_media_type(&media),
    };
    ApiError::from(status).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_only() {
        for host in [
            "localhost",
            "LOCALHOST:6443",
            "127.0.0.1",
            "127.0.0.1:6443",
            "127.9.9.9:1",
            "[::1]:6443",
            "[::1]",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:6443",
            "203.0.113.7:6443",
            "localhost.evil.example",
            "[::2]:1",
            "[::1",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    /// The API's own origin passes (a WebSocket client's handshake); a page elsewhere on
    /// loopback, another port or scheme-less text does not.
    #[test]
    fn only_the_servers_own_origin_passes() {
        let host = Some("127.0.0.1:6443");
        assert_eq!(
            check(&Method::GET, Some("https://127.0.0.1:6443"), host, None),
            Ok(())
        );
        for origin in [
            "http://127.0.0.1:8000",
            "https://127.0.0.1",
            "null",
            "127.0.0.1:6443",
        ] {
            assert_eq!(
                check(&Method::GET, Some(origin), host, None),
                Err(Refusal::Origin(origin.into())),
                "{origin}"
            );
        }
        assert!(check(&Method::GET, Some("https://127.0.0.1:6443"), None, None).is_err());
    }

    #[test]
    fn origin_host_and_media_type_are_checked_in_that_order() {
        let json = Some("application/json");
        assert_eq!(
            check(&Method::POST, None, Some("127.0.0.1:6443"), json),
            Ok(())
        );
        assert!(matches!(
            check(
                &Method::POST,
                Some("http://evil.example"),
                Some("127.0.0.1"),
                json
            ),
            Err(Refusal::Origin(_))
        ));
        assert!(matches!(
            check(&Method::GET, None, Some("evil.example"), None),
            Err(Refusal::Host(_))
        ));
        assert_eq!(
            check(&Method::POST, None, None, Some("text/plain;charset=UTF-8")),
            Err(Refusal::MediaType("text/plain".into()))
        );
        assert!(check(
            &Method::PATCH,
            None,
            None,
            Some("application/x-www-form-urlencoded")
        )
        .is_err());
        assert!(check(
            &Method::PATCH,
            None,
            None,
            Some("application/apply-patch+yaml")
        )
        .is_ok());
        assert!(check(
            &Method::POST,
            None,
            None,
            Some("application/vnd.kubernetes.protobuf")
        )
        .is_ok());
        // A GET's or DELETE's Content-Type is not a write body; no Content-Type reads as JSON.
        assert!(check(&Method::GET, None, None, Some("text/plain")).is_ok());
        assert!(check(&Method::POST, None, None, None).is_ok());
    }
}
