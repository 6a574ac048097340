//! `pods/portforward`: the apiserver checks the request and proxies the upgraded stream to the
//! kubelet's `/portForward/{ns}/{pod}`.
//!
//! Kubernetes counterpart: `pkg/registry/core/pod/rest/subresources.go` (`PortForwardREST`) and
//! `pkg/registry/core/pod/strategy.go` (`PortForwardLocation`: the pod's node, no container;
//! ports travel in each SPDY stream's headers, not in the URL the kubelet gets).
//!
//! minik simplifies: kubectl's WebSocket tunnel (`SPDY/3.1+portforward.k8s.io`) goes to the
//! kubelet unchanged (upstream's `streamtunnel.go` unwraps it and re-speaks SPDY to the
//! kubelet); the kubelet serves the tunnel itself.

use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};

use super::{authorize_create, load_pod, pod_kubelet, upgrade};
use crate::error::ApiResult;
use crate::AppState;

/// `GET|POST /api/v1/namespaces/{ns}/pods/{name}/portforward`.
pub async fn portforward(
    State(state): State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    request: Request,
) -> Response {
    match proxy(&state, &namespace, &name, request).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn proxy(
    state: &AppState,
    namespace: &str,
    name: &str,
    request: Request,
) -> ApiResult<Response> {
    authorize_create(state, &request)?;
    let pod = load_pod(state, namespace, name)?;
    let (node, port) = pod_kubelet(state, &pod, name)?;
    let path = format!("/portForward/{namespace}/{name}");
    tracing::info!(pod = %format!("{namespace}/{name}"), %node, "proxying port-forward to the kubelet");
    upgrade::proxy(state, port, &path, request).await
}
