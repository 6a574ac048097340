//! The create rows of the table: every kind × every bad body, and bodies over the size limits.

use super::{case, nested, object, Case, JSON, KINDS, MAX_BODY, WITHOUT_SPEC};

/// The bad bodies sent as a create (POST) of every kind: `(label, body, exact code)`.
fn bad_bodies(api_version: &str, kind: &str) -> Vec<(&'static str, Vec<u8>, Option<u16>)> {
    let o = |meta: &str, rest: &str| object(api_version, kind, meta, rest);
    let long = "a".repeat(300);
    vec![
        ("invalid JSON", b"{\"metadata\": ".to_vec(), Some(400)),
        ("empty body", Vec::new(), Some(400)),
        ("a JSON array", b"[]".to_vec(), Some(400)),
        ("a JSON string", b"\"pod\"".to_vec(), Some(400)),
        ("a JSON number", b"42".to_vec(), Some(400)),
        ("JSON null", b"null".to_vec(), Some(400)),
        ("invalid UTF-8", b"{\"metadata\": {\"name\": \"\xff\xfe\"}}".to_vec(), Some(400)),
        ("trailing garbage", [o(r#"{"name": "tg"}"#, ""), b"}}}".to_vec()].concat(), Some(400)),
        ("no name", o("{}", ""), None),
        ("upper-case name", o(r#"{"name": "UPPER"}"#, ""), Some(422)),
        ("dotdot name", o(r#"{"name": "../../etc"}"#, ""), Some(422)),
        ("slash name", o(r#"{"name": "a/b"}"#, ""), Some(422)),
        ("NUL in name", o(r#"{"name": "a\u0000b"}"#, ""), Some(422)),
        ("newline in name", o(r#"{"name": "a\nb"}"#, ""), Some(422)),
        ("unicode name", o(r#"{"name": "pöd-☃"}"#, ""), Some(422)),
        ("300-char name", o(&format!(r#"{{"name": "{long}"}}"#), ""), Some(422)),
        ("name is a number", o(r#"{"name": 7}"#, ""), Some(400)),
        ("metadata is a string", o(r#""meta""#, ""), Some(400)),
        ("metadata is a list", o("[]", ""), Some(400)),
        ("labels is a list", o(r#"{"name": "lbl", "labels": ["a"]}"#, ""), Some(400)),
        ("bad label key", o(r#"{"name": "lbk", "labels": {"-bad-/key": "v"}}"#, ""), Some(422)),
        ("bad label value", o(r#"{"name": "lbv", "labels": {"k": "sp ace"}}"#, ""), Some(422)),
        ("annotation value a number", o(r#"{"name": "anv", "annotations": {"k": 1}}"#, ""), Some(400)),
        ("spec is a string", o(r#"{"name": "sps"}"#, r#""spec": "nonsense""#), Some(400)),
        ("spec is a list", o(r#"{"name": "spl"}"#, r#""spec": [1, 2]"#), Some(400)),
        ("spec is a number", o(r#"{"name": "spn"}"#, r#""spec": 3"#), Some(400)),
        ("deep nesting in spec", o(r#"{"name": "deep"}"#, &format!(r#""spec": {}"#, nested(10_000))), Some(400)),
        ("deep nesting in metadata", o(&format!(r#"{{"name": "deepm", "x": {}}}"#, nested(5_000)), ""), Some(400)),
        ("apiVersion is a list", format!(r#"{{"apiVersion": ["{api_version}"], "kind": "{kind}", "metadata": {{"name": "avl"}}}}"#).into_bytes(), Some(400)),
        ("wrong kind", object(api_version, "Banana", r#"{"name": "banana"}"#, ""), Some(400)),
        ("wrong apiVersion", object("nonsense.example/v9", kind, r#"{"name": "wav"}"#, ""), Some(400)),
        ("other namespace in body", o(r#"{"name": "ons", "namespace": "kube-system"}"#, ""), None),
        ("generation is a string", o(r#"{"name": "gen", "generation": "x"}"#, ""), Some(400)),
        ("finalizer not a name", o(r#"{"name": "fin", "finalizers": ["Not A Name!"]}"#, ""), Some(422)),
    ]
}

/// Every kind × every bad body, as a create.
pub fn bad_creates() -> Vec<Case> {
    let mut cases = Vec::new();
    for (path, api_version, kind) in KINDS {
        for (label, body, code) in bad_bodies(api_version, kind) {
            // Kinds without a `spec` drop an unknown `spec` field (a warning, not an error).
            if label.starts_with("spec is") && WITHOUT_SPEC.contains(kind) {
                continue;
            }
            // A body naming another namespace is 400 for namespaced kinds; cluster-scoped kinds
            // may ignore it, and a nameless one is 422 for everything (skip where unsure).
            let namespaced = path.contains("/namespaces/default/");
            if label == "other namespace in body" && !namespaced {
                continue;
            }
            let code = match label {
                "other namespace in body" => Some(400),
                "no name" => Some(422),
                _ => code,
            };
            cases.push(case(
                format!("{kind}: {label}"),
                "POST",
                path.to_string(),
                JSON,
                body,
                code,
            ));
        }
        cases.push(case(
            format!("{kind}: text/plain body"),
            "POST",
            path.to_string(),
            Some("text/plain"),
            b"{}".to_vec(),
            Some(415),
        ));
        cases.push(case(
            format!("{kind}: XML body"),
            "POST",
            path.to_string(),
            Some("application/xml"),
            b"<pod/>".to_vec(),
            Some(415),
        ));
        cases.push(case(
            format!("{kind}: no content type"),
            "POST",
            path.to_string(),
            None,
            b"{}".to_vec(),
            None,
        ));
        cases.push(case(
            format!("{kind}: PUT on the collection"),
            "PUT",
            path.to_string(),
            JSON,
            b"{}".to_vec(),
            Some(405),
        ));
        cases.push(case(
            format!("{kind}: GET a missing name"),
            "GET",
            format!("{path}/missing-one"),
            None,
            Vec::new(),
            Some(404),
        ));
        cases.push(case(
            format!("{kind}: DELETE a missing name"),
            "DELETE",
            format!("{path}/missing-one"),
            None,
            Vec::new(),
            Some(404),
        ));
        cases.push(case(
            format!("{kind}: PUT a missing name"),
            "PUT",
            format!("{path}/UPPER"),
            JSON,
            b"{\"metadata\":{\"name\":\"UPPER\"}}".to_vec(),
            None,
        ));
        cases.push(case(
            format!("{kind}: unknown subresource"),
            "GET",
            format!("{path}/x/frobnicate"),
            None,
            Vec::new(),
            Some(404),
        ));
    }
    cases
}

/// Bodies over the limit: refused with 413, for a few kinds (each is 3 MiB on the wire).
pub fn huge_bodies() -> Vec<Case> {
    let padding = "x".repeat(MAX_BODY + 1);
    let over = format!(r#"{{"metadata": {{"name": "huge"}}, "data": {{"k": "{padding}"}}}}"#);
    // Under the request limit, over what the store takes (etcd's 1.5 MiB): 413 as well. (A
    // ConfigMap's data is limited to 1 MiB by its validation first: 422.)
    let two_mib = "y".repeat(2 * 1024 * 1024);
    let object = format!(r#"{{"metadata": {{"name": "big"}}, "data": {{"k": "{two_mib}"}}}}"#);
    let lease =
        format!(r#"{{"metadata": {{"name": "big"}}, "spec": {{"holderIdentity": "{two_mib}"}}}}"#);
    let cm = "/api/v1/namespaces/default/configmaps";
    vec![
        case(
            "ConfigMap: 3 MiB + 1 body".into(),
            "POST",
            cm.into(),
            JSON,
            over.clone().into_bytes(),
            Some(413),
        ),
        case(
            "Pod: 3 MiB + 1 body".into(),
            "POST",
            "/api/v1/namespaces/default/pods".into(),
            JSON,
            over.clone().into_bytes(),
            Some(413),
        ),
        case(
            "ConfigMap: 2 MiB of data".into(),
            "POST",
            cm.into(),
            JSON,
            object.into_bytes(),
            Some(422),
        ),
        case(
            "Lease: 2 MiB object".into(),
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/default/leases".into(),
            JSON,
            lease.into_bytes(),
            Some(413),
        ),
        case(
            "ConfigMap: 3 MiB + 1 update".into(),
            "PUT",
            format!("{cm}/keep"),
            JSON,
            over.into_bytes(),
            Some(413),
        ),
    ]
}
