//! The table of hostile requests: every malformed or invalid input the suite sends, generated from
//! a few lists (kinds × bad bodies, bad paths, bad query parameters, bad patches) so that adding
//! a row to a list adds a request per kind.
//!
//! Kubernetes counterpart: the negative cases scattered over `test/integration/apiserver`
//! (`max_request_body_bytes_test.go`, `patch_test.go`, `apply_test.go`) and the API conventions'
//! error codes (400 malformed, 404 unknown path, 405 verb not allowed, 413 too large, 415 wrong
//! content type, 422 invalid). Each case says the class of answer wanted, 4xx, and, where upstream
//! is exact about it, the code.

/// The kinds every body case is sent to: `(path of the collection, apiVersion, kind)`, in the
/// `default` namespace for namespaced ones. RBAC kinds are left out: their names may hold
/// capitals (`ValidatePathSegmentName`), so half the name cases would be valid for them.
pub const KINDS: &[(&str, &str, &str)] = &[
    ("/api/v1/namespaces/default/pods", "v1", "Pod"),
    ("/api/v1/namespaces/default/services", "v1", "Service"),
    ("/api/v1/namespaces/default/configmaps", "v1", "ConfigMap"),
    ("/api/v1/namespaces/default/secrets", "v1", "Secret"),
    (
        "/api/v1/namespaces/default/serviceaccounts",
        "v1",
        "ServiceAccount",
    ),
    ("/api/v1/namespaces/default/endpoints", "v1", "Endpoints"),
    (
        "/api/v1/namespaces/default/replicationcontrollers",
        "v1",
        "ReplicationController",
    ),
    ("/api/v1/namespaces", "v1", "Namespace"),
    ("/api/v1/nodes", "v1", "Node"),
    (
        "/apis/apps/v1/namespaces/default/deployments",
        "apps/v1",
        "Deployment",
    ),
    (
        "/apis/apps/v1/namespaces/default/replicasets",
        "apps/v1",
        "ReplicaSet",
    ),
    (
        "/apis/apps/v1/namespaces/default/daemonsets",
        "apps/v1",
        "DaemonSet",
    ),
    ("/apis/batch/v1/namespaces/default/jobs", "batch/v1", "Job"),
    (
        "/apis/batch/v1/namespaces/default/cronjobs",
        "batch/v1",
        "CronJob",
    ),
    (
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        "policy/v1",
        "PodDisruptionBudget",
    ),
    (
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        "coordination.k8s.io/v1",
        "Lease",
    ),
    (
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
        "networking.k8s.io/v1",
        "Ingress",
    ),
    (
        "/apis/networking.k8s.io/v1/ingressclasses",
        "networking.k8s.io/v1",
        "IngressClass",
    ),
];

/// Kinds with no `spec` field.
const WITHOUT_SPEC: &[&str] = &["ConfigMap", "Secret", "ServiceAccount", "Endpoints"];

/// The most a request body may be (upstream's `MaxRequestBodyBytes`, 3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// One hostile request and what must come back.
#[derive(Clone, Debug)]
pub struct Case {
    /// A short label for the report (`Pod: invalid JSON`).
    pub label: String,
    /// `GET`, `POST`, `PUT`, `PATCH`, `DELETE`.
    pub method: &'static str,
    /// Path and query.
    pub path: String,
    /// `Content-Type`, if any.
    pub content_type: Option<&'static str>,
    /// The body.
    pub body: Vec<u8>,
    /// The exact code upstream answers, when the table is sure of it; else any 4xx.
    pub code: Option<u16>,
}

const JSON: Option<&str> = Some("application/json");

fn case(
    label: String,
    method: &'static str,
    path: String,
    ct: Option<&'static str>,
    body: Vec<u8>,
    code: Option<u16>,
) -> Case {
    Case {
        label,
        method,
        path,
        content_type: ct,
        body,
        code,
    }
}

/// `{"apiVersion": …, "kind": …, "metadata": META, REST}` as text.
fn object(api_version: &str, kind: &str, metadata: &str, rest: &str) -> Vec<u8> {
    let rest = if rest.is_empty() {
        String::new()
    } else {
        format!(", {rest}")
    };
    format!(r#"{{"apiVersion": "{api_version}", "kind": "{kind}", "metadata": {metadata}{rest}}}"#)
        .into_bytes()
}

/// `depth` nested objects: `{"a":{"a":…}}`.
fn nested(depth: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
}

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

/// The whole table.
pub fn all() -> Vec<Case> {
    let mut cases = bad_creates();
    cases.extend(huge_bodies());
    cases.extend(bad_paths_and_queries());
    cases.extend(bad_updates());
    cases
}
