//! The table of hostile requests: every malformed or invalid input the suite sends, generated from
//! a few lists (kinds × bad bodies, bad paths, bad query parameters, bad patches) so that adding
//! a row to a list adds a request per kind.
//!
//! Kubernetes counterpart: the negative cases scattered over `test/integration/apiserver`
//! (`max_request_body_bytes_test.go`, `patch_test.go`, `apply_test.go`) and the API conventions'
//! error codes (400 malformed, 404 unknown path, 405 verb not allowed, 413 too large, 415 wrong
//! content type, 422 invalid). Each case says the class of answer wanted, 4xx, and, where upstream
//! is exact about it, the code.
//!
//! The rows: [`creates`] (every kind × bad bodies, and bodies over the limits), [`queries`] (bad
//! paths and query parameters), [`updates`] (bad patches and updates of the objects kept).

mod creates;
mod queries;
mod updates;

pub use creates::{bad_creates, huge_bodies};
pub use queries::bad_paths_and_queries;
pub use updates::bad_updates;

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
pub(crate) const WITHOUT_SPEC: &[&str] = &["ConfigMap", "Secret", "ServiceAccount", "Endpoints"];

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

pub(crate) const JSON: Option<&str> = Some("application/json");

pub(crate) fn case(
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
pub(crate) fn object(api_version: &str, kind: &str, metadata: &str, rest: &str) -> Vec<u8> {
    let rest = if rest.is_empty() {
        String::new()
    } else {
        format!(", {rest}")
    };
    format!(r#"{{"apiVersion": "{api_version}", "kind": "{kind}", "metadata": {metadata}{rest}}}"#)
        .into_bytes()
}

/// `depth` nested objects: `{"a":{"a":…}}`.
pub(crate) fn nested(depth: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
}

/// The whole table.
pub fn all() -> Vec<Case> {
    let mut cases = bad_creates();
    cases.extend(huge_bodies());
    cases.extend(bad_paths_and_queries());
    cases.extend(bad_updates());
    cases
}
