//! The update rows of the table: bad patches and PUTs of the objects the suite keeps.

use super::{case, nested, Case, JSON};

/// Bad patches and updates of the objects the suite keeps (`configmaps/keep`, `pods/keep-pod`):
/// none may change them.
pub fn bad_updates() -> Vec<Case> {
    let cm = "/api/v1/namespaces/default/configmaps/keep";
    let pod = "/api/v1/namespaces/default/pods/keep-pod";
    let patch = |label: &str, path: &str, ct: &'static str, body: &str, code: Option<u16>| {
        case(
            label.into(),
            "PATCH",
            path.into(),
            Some(ct),
            body.as_bytes().to_vec(),
            code,
        )
    };
    const MERGE: &str = "application/merge-patch+json";
    const JSONP: &str = "application/json-patch+json";
    const SMP: &str = "application/strategic-merge-patch+json";
    const APPLY: &str = "application/apply-patch+yaml";
    let deep = nested(10_000);
    vec![
        patch("merge patch: invalid JSON", cm, MERGE, "{", Some(400)),
        patch("merge patch: a list", cm, MERGE, "[1]", None),
        patch(
            "merge patch: data is a list",
            cm,
            MERGE,
            r#"{"data": [1]}"#,
            Some(400),
        ),
        patch(
            "merge patch: rename",
            cm,
            MERGE,
            r#"{"metadata": {"name": "other"}}"#,
            None,
        ),
        patch(
            "merge patch: stale resourceVersion",
            cm,
            MERGE,
            r#"{"metadata": {"resourceVersion": "1"}, "data": {"x": "y"}}"#,
            Some(409),
        ),
        patch(
            "merge patch: uid changed",
            cm,
            MERGE,
            r#"{"metadata": {"uid": "not-the-uid"}}"#,
            None,
        ),
        patch(
            "merge patch: deep nesting",
            cm,
            MERGE,
            &format!(r#"{{"data": {deep}}}"#),
            Some(400),
        ),
        patch(
            "json patch: not a list",
            cm,
            JSONP,
            r#"{"op": "add"}"#,
            Some(400),
        ),
        patch(
            "json patch: unknown op",
            cm,
            JSONP,
            r#"[{"op": "frobnicate", "path": "/data/x"}]"#,
            None,
        ),
        patch(
            "json patch: missing path",
            cm,
            JSONP,
            r#"[{"op": "remove", "path": "/data/nope"}]"#,
            None,
        ),
        patch(
            "json patch: failed test",
            cm,
            JSONP,
            r#"[{"op": "test", "path": "/data/k", "value": "wrong"}]"#,
            None,
        ),
        patch(
            "json patch: bad pointer",
            cm,
            JSONP,
            r#"[{"op": "add", "path": "data", "value": 1}]"#,
            None,
        ),
        patch(
            "json patch: replace root with a string",
            cm,
            JSONP,
            r#"[{"op": "replace", "path": "", "value": "x"}]"#,
            None,
        ),
        patch(
            "json patch: 20000 ops (upstream allows 10000)",
            cm,
            JSONP,
            &format!(
                "[{}]",
                vec![r#"{"op": "test", "path": "/kind", "value": "ConfigMap"}"#; 20_000].join(",")
            ),
            None,
        ),
        patch("strategic patch: invalid JSON", pod, SMP, "{{", Some(400)),
        patch(
            "strategic patch: bad directive",
            pod,
            SMP,
            r#"{"spec": {"containers": [{"$patch": "frobnicate"}]}}"#,
            None,
        ),
        patch(
            "strategic patch: containers a string",
            pod,
            SMP,
            r#"{"spec": {"containers": "x"}}"#,
            None,
        ),
        patch(
            "strategic patch: image changed to nothing",
            pod,
            SMP,
            r#"{"spec": {"containers": [{"name": "web", "image": ""}]}}"#,
            Some(422),
        ),
        patch(
            "strategic patch: immutable field",
            pod,
            SMP,
            r#"{"spec": {"restartPolicy": "Never"}}"#,
            Some(422),
        ),
        patch(
            "apply without fieldManager",
            cm,
            APPLY,
            "data: {x: y}",
            None,
        ),
        patch(
            "apply of invalid YAML",
            &format!("{cm}?fieldManager=t"),
            APPLY,
            "data: [unclosed",
            Some(400),
        ),
        patch(
            "apply of another kind",
            &format!("{cm}?fieldManager=t"),
            APPLY,
            "apiVersion: v1\nkind: Secret\nmetadata: {name: keep}\n",
            None,
        ),
        patch(
            "unsupported patch type",
            cm,
            "application/xml",
            "<x/>",
            Some(415),
        ),
        patch("patch with text/plain", cm, "text/plain", "{}", Some(415)),
        case(
            "put: name differs from the URL".into(),
            "PUT",
            cm.into(),
            JSON,
            br#"{"metadata": {"name": "other"}, "data": {}}"#.to_vec(),
            Some(400),
        ),
        case(
            "put: stale resourceVersion".into(),
            "PUT",
            cm.into(),
            JSON,
            br#"{"metadata": {"name": "keep", "resourceVersion": "1"}, "data": {}}"#.to_vec(),
            Some(409),
        ),
        case(
            "put: resourceVersion=abc".into(),
            "PUT",
            cm.into(),
            JSON,
            br#"{"metadata": {"name": "keep", "resourceVersion": "abc"}, "data": {}}"#.to_vec(),
            None,
        ),
        case(
            "put: data is a number".into(),
            "PUT",
            cm.into(),
            JSON,
            br#"{"metadata": {"name": "keep"}, "data": 5}"#.to_vec(),
            Some(400),
        ),
        case(
            "put: pod with 2000 containers".into(),
            "PUT",
            pod.into(),
            JSON,
            many_containers(2000).into_bytes(),
            None,
        ),
        case(
            "put: pod without containers".into(),
            "PUT",
            pod.into(),
            JSON,
            br#"{"metadata": {"name": "keep-pod"}, "spec": {"containers": []}}"#.to_vec(),
            None,
        ),
        case(
            "binding of a missing node".into(),
            "POST",
            format!("{pod}/binding"),
            JSON,
            br#"{"metadata": {"name": "keep-pod"}, "target": "nonsense"}"#.to_vec(),
            None,
        ),
        case(
            "eviction with a bad body".into(),
            "POST",
            format!("{pod}/eviction"),
            JSON,
            b"[]".to_vec(),
            None,
        ),
    ]
}

/// A pod manifest named `keep-pod` with `count` containers.
fn many_containers(count: usize) -> String {
    let containers: Vec<String> = (0..count)
        .map(|i| format!(r#"{{"name": "c{i}", "image": "busybox"}}"#))
        .collect();
    format!(
        r#"{{"metadata": {{"name": "keep-pod"}}, "spec": {{"containers": [{}]}}}}"#,
        containers.join(",")
    )
}
