//! Request routing: from a URL and a verb to the handler of one API operation.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/installer.go` (which registers, per
//! resource, the routes `GET /api/v1/namespaces/{ns}/pods`, `…/pods/{name}`, `…/pods/{name}/status`
//! …) and `request/requestinfo.go` (which parses a path back into verb, namespace, resource, name,
//! subresource). minik parses the path itself into a [`Target`] and dispatches on the method, so
//! every unknown path or verb still gets a proper `Status`.
//!
//! Storage keys follow etcd's layout: `/registry/{plural}/{namespace}/{name}`, or
//! `/registry/{plural}/{name}` for cluster-scoped kinds.

pub mod delete;
pub mod namespaces;
pub mod read;
pub mod request;
pub mod write;

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use minik_api::resource::{by_plural, ResourceInfo};
use minik_api::status;
use serde_json::{json, Value};

use crate::error::{json_response, ApiError, ApiResult};
use crate::storage::{self, Storage};
use crate::table;
use crate::AppState;
use request::{ListOptions, Params};

/// The namespaces that exist from the start, as in every Kubernetes cluster.
pub const INITIAL_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// What a resource path names.
#[derive(Clone, Debug)]
pub struct Target {
    /// The kind.
    pub info: &'static ResourceInfo,
    /// The namespace from the path (`None` for cluster-scoped kinds and cluster-wide lists).
    pub namespace: Option<String>,
    /// The object's name, if the path names one.
    pub name: Option<String>,
    /// `status`, `binding`, `log` …
    pub subresource: Option<String>,
}

/// The storage key of one object.
pub fn storage_key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) if info.namespaced => {
            format!("/registry/{}/{namespace}/{name}", info.plural)
        }
        _ => format!("/registry/{}/{name}", info.plural),
    }
}

impl Target {
    /// The key of the named object (the name must be present).
    pub fn key(&self) -> String {
        storage_key(
            self.info,
            self.namespace.as_deref(),
            self.name.as_deref().unwrap_or(""),
        )
    }

    /// The key prefix covering what a list or watch of this path sees.
    pub fn prefix(&self) -> String {
        match &self.namespace {
            Some(namespace) if self.info.namespaced => {
                format!("/registry/{}/{namespace}/", self.info.plural)
            }
            _ => format!("/registry/{}/", self.info.plural),
        }
    }

    /// The name, or "" when the path names none.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }
}

/// Parses the segments after `/api/v1` or `/apis/{group}/{version}`.
pub fn parse_target(group: &str, rest: &str) -> Option<Target> {
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let owned = |s: Option<&&str>| s.map(|s| s.to_string());
    if segments.len() >= 3 && segments[0] == "namespaces" {
        if let Some(info) = by_plural(group, segments[2]).filter(|info| info.namespaced) {
            if segments.len() > 5 {
                return None;
            }
            return Some(Target {
                info,
                namespace: Some(segments[1].to_string()),
                name: owned(segments.get(3)),
                subresource: owned(segments.get(4)),
            });
        }
    }
    let info = by_plural(group, segments.first()?)?;
    if segments.len() > 3 || (info.namespaced && segments.len() > 1) {
        return None;
    }
    Some(Target {
        info,
        namespace: None,
        name: owned(segments.get(1)),
        subresource: owned(segments.get(2)),
    })
}

/// One API request, parsed.
pub struct ApiRequest {
    /// What the path names.
    pub target: Target,
    /// The query.
    pub params: Params,
    /// The request headers.
    pub headers: HeaderMap,
    /// The raw body.
    pub body: Bytes,
}

impl ApiRequest {
    /// The Content-Type header, if any.
    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
    }
}

/// `/api/v1/{*rest}`: the core group.
pub async fn core_resource(
    State(state): State<AppState>,
    Path(rest): Path<String>,
    method: Method,
    headers: HeaderMap,
    Query(pairs): Query<Vec<(String, String)>>,
    body: Bytes,
) -> Response {
    handle(state, "", &rest, method, headers, pairs, body).await
}

/// `/apis/{group}/{version}/{*rest}`: named groups (coordination.k8s.io for Leases).
pub async fn group_resource(
    State(state): State<AppState>,
    Path(path): Path<HashMap<String, String>>,
    method: Method,
    headers: HeaderMap,
    Query(pairs): Query<Vec<(String, String)>>,
    body: Bytes,
) -> Response {
    let group = path.get("group").cloned().unwrap_or_default();
    let version = path.get("version").cloned().unwrap_or_default();
    let rest = path.get("rest").cloned().unwrap_or_default();
    if minik_api::resource::RESOURCES
        .iter()
        .all(|r| r.api_version != format!("{group}/{version}"))
    {
        return not_found_path().into_response();
    }
    handle(state, &group, &rest, method, headers, pairs, body).await
}

fn not_found_path() -> ApiError {
    status::failure(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
    .into()
}

async fn handle(
    state: AppState,
    group: &str,
    rest: &str,
    method: Method,
    headers: HeaderMap,
    pairs: Vec<(String, String)>,
    body: Bytes,
) -> Response {
    let Some(target) = parse_target(group, rest) else {
        return not_found_path().into_response();
    };
    let request = ApiRequest {
        target,
        params: Params::new(pairs),
        headers,
        body,
    };
    let started = std::time::Instant::now();
    let verb = method.clone();
    let path = format!("{}/{}", request.target.info.plural, request.target.name());
    let response = match dispatch(&state, method, request).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    };
    tracing::debug!(%verb, %path, code = response.status().as_u16(), elapsed_ms = started.elapsed().as_millis() as u64, "request");
    response
}

async fn dispatch(state: &AppState, method: Method, request: ApiRequest) -> ApiResult<Response> {
    let target = &request.target;
    let sub = target.subresource.as_deref();
    let kind = target.info.kind;
    if sub.is_some_and(|sub| !known_subresource(kind, sub)) {
        return Err(not_found_path());
    }
    let status_ok = sub == Some("status");
    let output = if method == Method::GET {
        table::negotiate(&request.headers, &request.params)?
    } else {
        table::Output::Object
    };
    match (&method, target.name.is_some(), sub) {
        (&Method::GET, false, None) => {
            let options = ListOptions::parse(&request.params)?;
            if options.watch {
                crate::watch::serve_watch(state, target, options, output)
            } else {
                read::list(state, target, &options, output)
            }
        }
        (&Method::GET, true, None) if request.params.flag("watch") => {
            let mut options = ListOptions::parse(&request.params)?;
            let by_name = format!("metadata.name={}", target.name());
            let fields = [
                by_name,
                request
                    .params
                    .get("fieldSelector")
                    .unwrap_or("")
                    .to_string(),
            ]
            .join(",");
            options.fields = minik_api::selector::FieldSelector::parse(&fields)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            let list_target = Target {
                name: None,
                ..target.clone()
            };
            crate::watch::serve_watch(state, &list_target, options, output)
        }
        (&Method::GET, true, None) => read::get(state, target, output),
        (&Method::GET, true, Some(_)) if status_ok => read::get(state, target, output),
        (&Method::GET, true, Some("log")) if kind == "Pod" => {
            crate::logs::pod_logs(state, &request).await
        }
        (&Method::POST, false, None) => write::create(state, &request).await,
        (&Method::POST, true, Some("binding")) if kind == "Pod" => {
            write::bind(state, &request).await
        }
        (&Method::PUT, true, None) => write::update(state, &request).await,
        (&Method::PUT, true, Some(_)) if status_ok => write::update(state, &request).await,
        (&Method::PATCH, true, None) => write::patch(state, &request).await,
        (&Method::PATCH, true, Some(_)) if status_ok => write::patch(state, &request).await,
        (&Method::DELETE, true, None) => delete::delete(state, &request).await,
        (&Method::DELETE, false, None) if has_delete_collection(kind) => {
            delete::delete_collection(state, &request).await
        }
        _ => Err(status::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method})"
        ))
        .into()),
    }
}

/// Whether `DELETE` on the collection is served: upstream's namespace storage has no
/// deletecollection (one request must not be able to delete every namespace), so it is a 405.
pub fn has_delete_collection(kind: &str) -> bool {
    kind != "Namespace"
}

/// The subresources a kind has: `status` for kinds with a status, `binding` and `log` for pods.
fn known_subresource(kind: &str, sub: &str) -> bool {
    match sub {
        "status" => crate::registry::has_status_subresource(kind),
        "binding" | "log" => kind == "Pod",
        _ => false,
    }
}

/// A 200/201 answer carrying an object.
pub fn object_response(code: StatusCode, object: &Value) -> Response {
    json_response(code, object)
}

/// Creates the initial namespaces if they are missing.
pub async fn bootstrap_namespaces(storage: &dyn Storage) -> Result<(), storage::Error> {
    for name in INITIAL_NAMESPACES {
        let key = format!("/registry/namespaces/{name}");
        if storage.get(&key)?.is_some() {
            continue;
        }
        let namespace = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "uid": uuid::Uuid::new_v4().to_string(),
                         "creationTimestamp": crate::registry::meta::now_value(),
                         "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {}, "status": {"phase": "Active"}
        });
        match storage.create(&key, namespace).await {
            Ok(_) | Err(storage::Error::AlreadyExists(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_into_kind_namespace_name_and_subresource() {
        let t = parse_target("", "namespaces/default/pods/web/status").unwrap();
        assert_eq!(
            (
                t.info.plural,
                t.namespace.as_deref(),
                t.name(),
                t.subresource.as_deref()
            ),
            ("pods", Some("default"), "web", Some("status"))
        );
        assert_eq!(t.key(), "/registry/pods/default/web");
        let all = parse_target("", "pods").unwrap();
        assert_eq!(
            (all.namespace.clone(), all.prefix()),
            (None, "/registry/pods/".to_string())
        );
        let node = parse_target("", "nodes/node-1/status").unwrap();
        assert_eq!(node.key(), "/registry/nodes/node-1");
        let ns = parse_target("", "namespaces/default").unwrap();
        assert_eq!((ns.info.plural, ns.name()), ("namespaces", "default"));
        let lease = parse_target(
            "coordination.k8s.io",
            "namespaces/kube-node-lease/leases/node-1",
        )
        .unwrap();
        assert_eq!(lease.key(), "/registry/leases/kube-node-lease/node-1");
        assert!(
            parse_target("", "pods/web").is_none(),
            "namespaced kinds need a namespace for a name"
        );
        assert!(parse_target("", "deployments").is_none());
        assert!(parse_target("", "namespaces/default/nodes/x").is_none());
    }
}
