//! The path and query rows of the table: paths that name nothing, query parameters that make no
//! sense.

use super::{case, Case, JSON};

/// Paths that name nothing, and query parameters that make no sense.
pub fn bad_paths_and_queries() -> Vec<Case> {
    let get = |label: &str, path: &str, code: Option<u16>| {
        case(label.into(), "GET", path.into(), None, Vec::new(), code)
    };
    let pods = "/api/v1/namespaces/default/pods";
    let mut cases = vec![
        get("unknown version", "/api/v2/pods", Some(404)),
        get("unknown group", "/apis/nonsense.example/v1/foos", Some(404)),
        get(
            "unknown resource",
            "/api/v1/namespaces/default/frobs",
            Some(404),
        ),
        get(
            "unknown group version",
            "/apis/apps/v9/deployments",
            Some(404),
        ),
        get(
            "encoded slash in name",
            "/api/v1/namespaces/default/pods/a%2fb",
            None,
        ),
        get(
            "unicode name",
            "/api/v1/namespaces/default/pods/p%C3%B6d",
            Some(404),
        ),
        get("NUL in name", "/api/v1/namespaces/default/pods/a%00b", None),
        get(
            "too many segments",
            "/api/v1/namespaces/default/pods/a/status/extra/more",
            Some(404),
        ),
        get(
            "cluster-scoped kind under a namespace",
            "/api/v1/namespaces/default/nodes",
            Some(404),
        ),
        case(
            "DELETE with a trailing slash".into(),
            "DELETE",
            format!("{pods}/"),
            None,
            Vec::new(),
            None,
        ),
        case(
            "POST to a name".into(),
            "POST",
            format!("{pods}/keep-pod"),
            JSON,
            b"{}".to_vec(),
            None,
        ),
        case(
            "unknown verb".into(),
            "OPTIONS",
            pods.into(),
            None,
            Vec::new(),
            None,
        ),
    ];
    for (label, query) in [
        ("resourceVersion=abc", "resourceVersion=abc"),
        ("resourceVersion=-1", "resourceVersion=-1"),
        (
            "resourceVersionMatch without resourceVersion",
            "resourceVersionMatch=Exact",
        ),
        (
            "resourceVersionMatch=Bogus",
            "resourceVersion=1&resourceVersionMatch=Bogus",
        ),
        ("limit=abc", "limit=abc"),
        ("limit=-5", "limit=-5"),
        ("continue=garbage", "continue=garbage"),
        ("labelSelector=!!!", "labelSelector=%21%21%21"),
        ("labelSelector=a in (", "labelSelector=a%20in%20%28"),
        (
            "fieldSelector on an unknown field",
            "fieldSelector=spec.nope%3Dx",
        ),
        ("fieldSelector=garbage", "fieldSelector=%3D%3D%3D"),
        ("timeoutSeconds=x", "timeoutSeconds=x"),
        (
            "watch from resourceVersion=abc",
            "watch=1&resourceVersion=abc",
        ),
        ("sendInitialEvents without watch", "sendInitialEvents=true"),
    ] {
        cases.push(get(
            &format!("list with {label}"),
            &format!("{pods}?{query}"),
            None,
        ));
    }
    for (label, query) in [
        ("dryRun=Bogus", "dryRun=Bogus"),
        ("fieldValidation=Bogus", "fieldValidation=Bogus"),
        (
            "fieldManager too long",
            &format!("fieldManager={}", "m".repeat(200)),
        ),
    ] {
        let body = br#"{"metadata": {"name": "qp"}, "data": {}}"#.to_vec();
        cases.push(case(
            format!("create with {label}"),
            "POST",
            format!("/api/v1/namespaces/default/configmaps?{query}"),
            JSON,
            body,
            None,
        ));
    }
    for (label, query) in [
        ("gracePeriodSeconds=x", "gracePeriodSeconds=x"),
        ("propagationPolicy=Sideways", "propagationPolicy=Sideways"),
    ] {
        cases.push(case(
            format!("delete with {label}"),
            "DELETE",
            format!("/api/v1/namespaces/default/configmaps/keep?{query}"),
            None,
            Vec::new(),
            None,
        ));
    }
    cases
}
