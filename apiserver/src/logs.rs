//! `GET …/pods/{name}/log`: the apiserver proxies a container's log from the pod's kubelet.
//!
//! Kubernetes counterpart: `pkg/registry/core/pod/rest/log.go` (`LogREST`) and
//! `pkg/registry/core/pod/strategy.go` (`LogLocation`): resolve the container, find the node's
//! kubelet from `node.status.daemonEndpoints.kubeletEndpoint.Port`, and stream
//! `GET /containerLogs/{ns}/{pod}/{container}` back to the client (kubectl `logs -f` keeps reading
//! until the stream ends). minik's kubelet listens on 127.0.0.1 (docs/architecture.md#network).
//!
//! With `--kubelet-client-certificate`/`--kubelet-client-key` (a secure cluster) the kubelet is
//! reached over https, trusting only `--kubelet-certificate-authority`, and presenting the
//! apiserver's own client certificate, which the kubelet authorizes like any caller
//! (`kube-apiserver-kubelet-client`, docs/security.md#x9); without them, plain http.

use std::path::PathBuf;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use minik_api::core::{Node, Pod};
use minik_api::status;

use crate::error::{ApiError, ApiResult};
use crate::registry::typed;
use crate::request::{storage_key, ApiRequest};
use crate::AppState;

/// Query parameters forwarded to the kubelet.
const FORWARDED: &[&str] = &[
    "follow",
    "tailLines",
    "previous",
    "timestamps",
    "sinceSeconds",
    "sinceTime",
    "limitBytes",
];

/// How the apiserver authenticates to the kubelets (upstream's `--kubelet-client-certificate`,
/// `--kubelet-client-key`, `--kubelet-certificate-authority`).
#[derive(Clone, Debug)]
pub struct KubeletClientFiles {
    /// The client certificate (PEM).
    pub cert_file: PathBuf,
    /// Its key (PEM).
    pub key_file: PathBuf,
    /// The CA the kubelets' serving certificates chain to.
    pub ca_file: PathBuf,
}

/// The HTTP client of the log proxy: https with `files`' identity and CA, or plain http.
pub fn kubelet_http_client(files: Option<&KubeletClientFiles>) -> std::io::Result<reqwest::Client> {
    let io = |what: &PathBuf, e: &dyn std::fmt::Display| {
        std::io::Error::other(format!("{}: {e}", what.display()))
    };
    let mut builder = reqwest::Client::builder().no_proxy();
    if let Some(files) = files {
        let ca = std::fs::read(&files.ca_file).map_err(|e| io(&files.ca_file, &e))?;
        let roots =
            reqwest::Certificate::from_pem_bundle(&ca).map_err(|e| io(&files.ca_file, &e))?;
        let mut pem = std::fs::read(&files.cert_file).map_err(|e| io(&files.cert_file, &e))?;
        pem.push(b'\n');
        pem.extend(std::fs::read(&files.key_file).map_err(|e| io(&files.key_file, &e))?);
        let identity = reqwest::Identity::from_pem(&pem).map_err(|e| io(&files.cert_file, &e))?;
        builder = builder.tls_certs_only(roots).identity(identity);
    }
    builder
        .build()
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// Which container a log request means: the `container` parameter, or the only one.
pub fn resolve_container(pod: &Pod, requested: Option<&str>) -> ApiResult<String> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let spec = pod.spec.clone().unwrap_or_default();
    let names: Vec<String> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .map(|c| c.name.clone())
        .chain(
            spec.ephemeral_containers
                .iter()
                .flatten()
                .map(|c| c.name.clone()),
        )
        .collect();
    match requested.filter(|c| !c.is_empty()) {
        Some(container) if names.iter().any(|n| n == container) => Ok(container.to_string()),
        Some(container) => Err(ApiError::bad_request(format!(
            "container {container} is not valid for pod {name}"
        ))),
        None if spec.containers.len() == 1 => Ok(spec.containers[0].name.clone()),
        None => {
            let list: Vec<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
            Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                list.join(" ")
            )))
        }
    }
}

/// Refuses logs of a container that has not run yet, with the kubelet's own words
/// (`validateContainerLogStatus` in `pkg/kubelet/kubelet_pods.go`): kubectl prints them as
/// `Error from server (BadRequest): container "main" in pod "web" is waiting to start: ContainerCreating`.
pub fn check_started(pod: &Pod, container: &str, previous: bool) -> ApiResult<()> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let status = pod.status.clone().unwrap_or_default();
    let found = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .chain(status.ephemeral_container_statuses.iter().flatten())
        .find(|s| s.name == container)
        .cloned();
    let Some(found) = found else {
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"
        )));
    };
    let last_terminated = found.last_state.and_then(|s| s.terminated).is_some();
    if previous && !last_terminated {
        return Err(ApiError::bad_request(format!(
            "previous terminated container \"{container}\" in pod \"{name}\" not found"
        )));
    }
    let waiting = found.state.and_then(|s| s.waiting);
    match waiting {
        Some(waiting) if !previous && !last_terminated => Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: {}",
            waiting.reason.unwrap_or_else(|| "ContainerCreating".into())
        ))),
        _ => Ok(()),
    }
}

/// Proxies the log of one container.
pub async fn pod_logs(state: &AppState, request: &ApiRequest) -> ApiResult<Response> {
    let target = &request.target;
    let (namespace, name) = (
        target.namespace.as_deref().unwrap_or("default"),
        target.name(),
    );
    let record = state
        .storage
        .get(&target.key())
        .map_err(|e| ApiError::from_storage(e, "pods", name))?
        .ok_or_else(|| ApiError::from(status::not_found("pods", name)))?;
    let pod: Pod = typed((*record.value).clone(), "Pod")?;
    let container = resolve_container(&pod, request.params.get("container"))?;
    let node_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    if node_name.is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    check_started(&pod, &container, request.params.flag("previous"))?;
    let node_key = storage_key(
        minik_api::resource::by_plural("", "nodes").expect("nodes are served"),
        None,
        &node_name,
    );
    let node = state
        .storage
        .get(&node_key)
        .map_err(|e| ApiError::from_storage(e, "nodes", &node_name))?
        .ok_or_else(|| ApiError::from(status::not_found("nodes", &node_name)))?;
    let node: Node = typed((*node.value).clone(), "Node")?;
    let port = node
        .status
        .and_then(|s| s.daemon_endpoints)
        .and_then(|d| d.kubelet_endpoint)
        .map(|e| e.port)
        .filter(|p| *p > 0)
        .ok_or_else(|| {
            ApiError::bad_request(format!("node {node_name} reports no kubelet port"))
        })?;
    let query: Vec<(&str, &str)> = FORWARDED
        .iter()
        .filter_map(|k| request.params.get(k).map(|v| (*k, v)))
        .collect();
    let scheme = if state.kubelet_tls { "https" } else { "http" };
    let url = format!("{scheme}://127.0.0.1:{port}/containerLogs/{namespace}/{name}/{container}");
    let upstream = state
        .http
        .get(&url)
        .query(&query)
        .send()
        .await
        .map_err(|e| {
            ApiError::from(status::failure(
                502,
                "InternalError",
                format!("failed to reach the kubelet of {node_name}: {e}"),
            ))
        })?;
    let code = StatusCode::from_u16(upstream.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    if !code.is_success() {
        let text = upstream.text().await.unwrap_or_default();
        let reason = match code.as_u16() {
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            _ => "BadRequest",
        };
        return Err(status::failure(code.as_u16(), reason, text.trim().to_string()).into());
    }
    // `logs -f` streams until the kubelet ends it, or until this server shuts down.
    let stream = upstream
        .bytes_stream()
        .take_until(state.shutdown.clone().cancelled_owned());
    let mut response = (code, Body::from_stream(stream)).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "web"},
            "spec": {"containers": [{"name": "main"}]}, "status": status}))
        .unwrap()
    }

    #[test]
    fn logs_of_a_container_that_never_ran_are_refused_with_the_kubelets_words() {
        let creating = pod(
            json!({"containerStatuses": [{"name": "main", "ready": false, "restartCount": 0,
            "image": "x", "imageID": "", "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
        );
        let error = check_started(&creating, "main", false).unwrap_err();
        assert_eq!(
            (error.code(), error.0.message.as_deref()),
            (
                400,
                Some("container \"main\" in pod \"web\" is waiting to start: ContainerCreating")
            )
        );
        assert!(check_started(&pod(json!({})), "main", false).is_err());
        let crashed = pod(
            json!({"containerStatuses": [{"name": "main", "ready": false, "restartCount": 1,
            "image": "x", "imageID": "", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1}}}]}),
        );
        assert!(
            check_started(&crashed, "main", false).is_ok(),
            "the last run's log is served"
        );
        assert!(check_started(&crashed, "main", true).is_ok());
        let running = pod(
            json!({"containerStatuses": [{"name": "main", "ready": true, "restartCount": 0,
            "image": "x", "imageID": "", "state": {"running": {}}}]}),
        );
        assert!(check_started(&running, "main", false).is_ok());
        assert!(
            check_started(&running, "main", true).is_err(),
            "no previous container"
        );
    }
}
