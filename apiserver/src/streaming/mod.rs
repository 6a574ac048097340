//! `pods/exec` and `pods/attach`: the apiserver checks the request and proxies the upgraded
//! stream to the pod's kubelet.
//!
//! Kubernetes counterpart: `pkg/registry/core/pod/rest/subresources.go` (`ExecREST`,
//! `AttachREST`), `pkg/registry/core/pod/strategy.go` (`ExecLocation`, `streamParams`: the query
//! is rewritten to the kubelet's `input`/`output`/`error`/`tty` and repeated `command`) and
//! `apimachinery/pkg/util/proxy/upgradeaware.go` (the upgrade is answered by the kubelet and the
//! two connections are spliced).
//!
//! minik simplifies: the client's WebSocket goes through unchanged (upstream terminates it and
//! speaks SPDY to the kubelet, `streamtranslator.go`); the kubelet serves `v5.channel.k8s.io`
//! itself, and a plain SPDY/3.1 upgrade alike (`Upgrade: SPDY/3.1`, the stream protocol in
//! `X-Stream-Protocol-Version`), as client-go's SPDY executor and older kubectl send.
//! `pods/portforward` takes the same proxy (`portforward.rs`).

mod portforward;
mod upgrade;

pub use portforward::portforward;

pub use upgrade::kubelet_tls_connector;

use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use minik_api::core::{Node, Pod};
use minik_api::status;

use crate::auth::{attributes, rbac, UserInfo};
use crate::error::{ApiError, ApiResult};
use crate::registry::typed;
use crate::request::storage_key;
use crate::AppState;

/// `GET|POST /api/v1/namespaces/{ns}/pods/{name}/exec`.
pub async fn exec(
    state: State<AppState>,
    path: Path<(String, String)>,
    request: Request,
) -> Response {
    stream(state, path, request, "exec").await
}

/// `GET|POST /api/v1/namespaces/{ns}/pods/{name}/attach`.
pub async fn attach(
    state: State<AppState>,
    path: Path<(String, String)>,
    request: Request,
) -> Response {
    stream(state, path, request, "attach").await
}

async fn stream(
    State(state): State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    request: Request,
    subresource: &str,
) -> Response {
    match proxy(&state, &namespace, &name, request, subresource).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn proxy(
    state: &AppState,
    namespace: &str,
    name: &str,
    request: Request,
    subresource: &str,
) -> ApiResult<Response> {
    authorize_create(state, &request)?;
    let pairs = query_pairs(request.uri().query().unwrap_or(""));
    let pod = load_pod(state, namespace, name)?;
    let requested = pairs
        .iter()
        .find(|(k, _)| k == "container")
        .map(|(_, v)| v.as_str());
    let container = crate::logs::resolve_container(&pod, requested)?;
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_default();
    if phase == "Succeeded" || phase == "Failed" {
        return Err(ApiError::bad_request(format!(
            "cannot {subresource} into a container in a completed pod; current phase is {phase}"
        )));
    }
    let (node, port) = pod_kubelet(state, &pod, name)?;
    let path = format!(
        "/{subresource}/{namespace}/{name}/{container}?{}",
        kubelet_query(&pairs)
    );
    tracing::info!(pod = %format!("{namespace}/{name}"), %container, %node, subresource, "proxying stream to the kubelet");
    upgrade::proxy(state, port, &path, request).await
}

/// KEP-4006: a WebSocket exec is a GET, but it is as powerful as a create, so `create` on the
/// subresource is checked as well (upstream does from 1.35; `view` has neither).
pub(super) fn authorize_create(state: &AppState, request: &Request) -> ApiResult<()> {
    let Some(user) = request.extensions().get::<UserInfo>() else {
        return Ok(()); // no authentication configured: everyone may
    };
    let attributes = attributes::request_attributes(
        user.clone(),
        "POST",
        request.uri().path(),
        request.uri().query().unwrap_or(""),
    );
    let policy = state
        .security
        .policy
        .current(state.storage.as_ref())
        .map_err(|e| ApiError::from_storage(e, "clusterroles", ""))?;
    match rbac::authorize(&policy, &attributes, None) {
        rbac::Decision::Allow(_) => Ok(()),
        rbac::Decision::Deny(reason) => {
            let mut message = crate::auth::forbidden_message(&attributes);
            if !reason.is_empty() {
                message = format!("{message}: {reason}");
            }
            let mut status = status::failure(403, "Forbidden", message);
            status.details = serde_json::from_value(serde_json::json!({
                "kind": attributes.resource, "name": attributes.name,
            }))
            .ok();
            Err(status.into())
        }
    }
}

/// The decoded `key=value` pairs of a query, repeated keys kept in order.
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    let uri = format!("/?{query}").parse::<axum::http::Uri>();
    uri.ok()
        .and_then(|uri| axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri).ok())
        .map(|q| q.0)
        .unwrap_or_default()
}

/// The kubelet's query (`streamParams`): `stdin`→`input`, `stdout`→`output`, `stderr`→`error`,
/// `tty`, each as `1`, and `command` repeated in order.
pub fn kubelet_query(pairs: &[(String, String)]) -> String {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for (key, value) in pairs {
        let on = matches!(value.as_str(), "1" | "true");
        match key.as_str() {
            "stdin" if on => out.push(("input", "1")),
            "stdout" if on => out.push(("output", "1")),
            "stderr" if on => out.push(("error", "1")),
            "tty" if on => out.push(("tty", "1")),
            "command" => out.push(("command", value)),
            _ => {}
        }
    }
    let mut url = reqwest::Url::parse("http://kubelet/").expect("a valid base");
    url.query_pairs_mut().extend_pairs(out);
    url.query().unwrap_or("").to_string()
}

pub(super) fn load_pod(state: &AppState, namespace: &str, name: &str) -> ApiResult<Pod> {
    let info = minik_api::resource::by_plural("", "pods").expect("pods are served");
    let record = state
        .storage
        .get(&storage_key(info, Some(namespace), name))
        .map_err(|e| ApiError::from_storage(e, "pods", name))?
        .ok_or_else(|| ApiError::from(status::not_found("pods", name)))?;
    typed((*record.value).clone(), "Pod")
}

/// The node a pod is bound to and its kubelet's port; a 400 for a pod not scheduled yet.
pub(super) fn pod_kubelet(state: &AppState, pod: &Pod, name: &str) -> ApiResult<(String, i32)> {
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    if node.is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let port = kubelet_port(state, &node)?;
    Ok((node, port))
}

/// The node's kubelet port, from `status.daemonEndpoints.kubeletEndpoint.Port`.
fn kubelet_port(state: &AppState, node_name: &str) -> ApiResult<i32> {
    let info = minik_api::resource::by_plural("", "nodes").expect("nodes are served");
    let record = state
        .storage
        .get(&storage_key(info, None, node_name))
        .map_err(|e| ApiError::from_storage(e, "nodes", node_name))?
        .ok_or_else(|| ApiError::from(status::not_found("nodes", node_name)))?;
    let node: Node = typed((*record.value).clone(), "Node")?;
    node.status
        .and_then(|s| s.daemon_endpoints)
        .and_then(|d| d.kubelet_endpoint)
        .map(|e| e.port)
        .filter(|p| *p > 0)
        .ok_or_else(|| ApiError::bad_request(format!("node {node_name} reports no kubelet port")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_rewritten_for_the_kubelet() {
        let pairs = query_pairs("command=sh&command=-c&command=exit%203&container=main&stdin=true&stdout=true&stderr=false&tty=true");
        assert_eq!(
            kubelet_query(&pairs),
            "command=sh&command=-c&command=exit+3&input=1&output=1&tty=1"
        );
    }
}
