//! The node-group API: the cluster owner serves its node group to the autoscaler process.
//!
//! Kubernetes counterpart: the server side of the cluster autoscaler's `externalgrpc` cloud
//! provider (`cloudprovider/externalgrpc/protos/externalgrpc.proto`), which a cloud runs for an
//! autoscaler that is not compiled against it. minik serves the same methods as JSON over HTTPS on
//! loopback (`POST /NodeGroupIncreaseSize` …, messages in `minik_cluster_autoscaler::cloud`) rather
//! than gRPC: TLS from the cluster CA, and only a client certificate chaining to it is let through
//! the handshake; of those, only `system:cluster-autoscaler` gets an answer (403 otherwise). Its URL
//! and credentials are `DATA/node-group.kubeconfig` (0600), the autoscaler's `--cloud-config`.
//!
//! The size checks are the cloud's, as a managed instance group's are: an increase past the
//! group's `maxSize` is refused whatever the caller believes, so a restarted autoscaler with a
//! wrong idea of the size cannot overshoot. What it leaves out: one group (`minik`); no
//! `NodeGroupTemplateNodeInfo` (Unimplemented, which upstream's autoscaler answers by copying a
//! Ready node of the group, as minik's does); no `NodeGroupDecreaseTargetSize` of started nodes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use minik_cluster_autoscaler::cloud::{GroupInfo, GrpcNode, Instance, GROUP_ID};
use minik_cluster_autoscaler::NodeGroup;
use minik_kubelet::server::auth::PeerUser;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::Mutex;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::pki::{Identity, Pki};
use crate::{Error, Result};

/// `DATA/node-group.kubeconfig`: the API's URL, the CA and the autoscaler's certificate.
pub fn cloud_config(data_dir: &Path) -> PathBuf {
    data_dir.join("node-group.kubeconfig")
}

/// The running API; dropping it stops serving.
pub struct NodeGroupServer {
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    stop: CancellationToken,
}

impl Drop for NodeGroupServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// What the handlers share: the group, its bounds, and a lock so that a size check and the
/// change it allows are one step.
struct Shared {
    group: Arc<dyn NodeGroup>,
    max_size: usize,
    resize: Mutex<()>,
}

type Answer = std::result::Result<Json<Value>, (StatusCode, Json<Value>)>;

/// Serves `group` (at most `max_size` nodes) on a free loopback port and writes the autoscaler's
/// kubeconfig for it under `data_dir`.
pub async fn start(
    data_dir: &Path,
    group: Arc<dyn NodeGroup>,
    max_size: usize,
) -> Result<NodeGroupServer> {
    let pki = Pki::ensure(data_dir, &[])?;
    let acceptor = acceptor(&pki).map_err(|e| Error::Start(format!("node-group API: {e}")))?;
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| Error::io("binding the node-group API", e))?;
    let address = listener
        .local_addr()
        .map_err(|e| Error::io("reading the node-group API's address", e))?;
    let url = format!("https://{address}");
    pki.write_kubeconfig(
        &Identity::cluster_autoscaler(),
        &url,
        &cloud_config(data_dir),
    )?;
    let shared = Arc::new(Shared {
        group,
        max_size,
        resize: Mutex::new(()),
    });
    let stop = CancellationToken::new();
    let serve =
        minik_kubelet::server::auth::serve_tls(listener, router(shared), acceptor, stop.clone());
    tokio::spawn(serve);
    tracing::info!(%url, max_size, "node-group API serving");
    Ok(NodeGroupServer { url, stop })
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/NodeGroups", post(node_groups))
        .route("/NodeGroupForNode", post(node_group_for_node))
        .route("/NodeGroupTargetSize", post(target_size))
        .route("/NodeGroupIncreaseSize", post(increase_size))
        .route("/NodeGroupDeleteNodes", post(delete_nodes))
        .route("/NodeGroupDecreaseTargetSize", post(decrease_target_size))
        .route("/NodeGroupNodes", post(nodes))
        .route("/NodeGroupTemplateNodeInfo", post(template_node_info))
        .layer(axum::middleware::from_fn(only_the_autoscaler))
        .with_state(shared)
}

/// 403 for any certificate but the autoscaler's (the handshake already refused none at all).
async fn only_the_autoscaler(request: Request, next: Next) -> Response {
    let user = request
        .extensions()
        .get::<PeerUser>()
        .and_then(|p| p.0.clone());
    let allowed = Identity::cluster_autoscaler().user;
    match user {
        Some(user) if user.name == allowed => next.run(request).await,
        other => {
            let name = other.map_or_else(|| "anonymous".into(), |u| u.name);
            tracing::info!(user = %name, "node-group API: refused");
            failure(
                StatusCode::FORBIDDEN,
                format!("{name} may not use the node group"),
            )
            .into_response()
        }
    }
}

/// One request's group id (every method names it but `NodeGroups`).
#[derive(Deserialize)]
struct ById {
    id: String,
}

#[derive(Deserialize)]
struct Resize {
    id: String,
    delta: i64,
}

#[derive(Deserialize)]
struct Delete {
    id: String,
    nodes: Vec<GrpcNode>,
}

#[derive(Deserialize)]
struct ForNode {
    node: GrpcNode,
}

/// An error as a Kubernetes Status (what minik's clients read), with the HTTP code that stands
/// for upstream's gRPC one.
fn failure(code: StatusCode, message: String) -> (StatusCode, Json<Value>) {
    let reason = code
        .canonical_reason()
        .unwrap_or("Failure")
        .replace(' ', "");
    let status = json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16(),
    });
    (code, Json(status))
}

fn check_id(id: &str) -> std::result::Result<(), (StatusCode, Json<Value>)> {
    (id == GROUP_ID).then_some(()).ok_or_else(|| {
        failure(
            StatusCode::NOT_FOUND,
            format!("node group {id:?} not found"),
        )
    })
}

fn info(shared: &Shared) -> GroupInfo {
    GroupInfo {
        id: GROUP_ID.into(),
        min_size: 0,
        max_size: shared.max_size,
    }
}

async fn members(shared: &Shared) -> std::result::Result<Vec<String>, (StatusCode, Json<Value>)> {
    shared
        .group
        .nodes()
        .await
        .map_err(|e| failure(StatusCode::SERVICE_UNAVAILABLE, e))
}

async fn node_groups(State(shared): State<Arc<Shared>>) -> Answer {
    Ok(Json(json!({"nodeGroups": [info(&shared)]})))
}

/// The group of a node, or an empty `nodeGroup` for a node of no group (the `--nodes` ones).
async fn node_group_for_node(
    State(shared): State<Arc<Shared>>,
    Json(body): Json<ForNode>,
) -> Answer {
    let ours = members(&shared).await?.contains(&body.node.name);
    let group = if ours {
        info(&shared)
    } else {
        GroupInfo::default()
    };
    Ok(Json(json!({"nodeGroup": group})))
}

async fn target_size(State(shared): State<Arc<Shared>>, Json(body): Json<ById>) -> Answer {
    check_id(&body.id)?;
    Ok(Json(json!({"targetSize": members(&shared).await?.len()})))
}

async fn nodes(State(shared): State<Arc<Shared>>, Json(body): Json<ById>) -> Answer {
    check_id(&body.id)?;
    let instances: Vec<Instance> = members(&shared)
        .await?
        .into_iter()
        .map(|id| Instance { id })
        .collect();
    Ok(Json(json!({"instances": instances})))
}

/// Upstream `IncreaseSize`: delta must be positive and the new size at most `maxSize`.
async fn increase_size(State(shared): State<Arc<Shared>>, Json(body): Json<Resize>) -> Answer {
    check_id(&body.id)?;
    let _one_at_a_time = shared.resize.lock().await;
    let size = members(&shared).await?.len();
    let delta = decide_increase(size, body.delta, shared.max_size)
        .map_err(|m| failure(StatusCode::BAD_REQUEST, m))?;
    let added = shared
        .group
        .increase_size(delta)
        .await
        .map_err(|e| failure(StatusCode::SERVICE_UNAVAILABLE, e))?;
    tracing::info!(from = size, to = size + added.len(), added = ?added, "node-group API: increased");
    Ok(Json(json!({})))
}

/// Whether a group of `size` nodes may grow by `delta` under `max_size` (upstream's checks).
pub fn decide_increase(
    size: usize,
    delta: i64,
    max_size: usize,
) -> std::result::Result<usize, String> {
    let delta = usize::try_from(delta)
        .ok()
        .filter(|d| *d > 0)
        .ok_or_else(|| format!("size increase must be positive, got {delta}"))?;
    if size + delta > max_size {
        return Err(format!(
            "size increase too large: desired {} max {max_size}",
            size + delta
        ));
    }
    Ok(delta)
}

async fn delete_nodes(State(shared): State<Arc<Shared>>, Json(body): Json<Delete>) -> Answer {
    check_id(&body.id)?;
    let _one_at_a_time = shared.resize.lock().await;
    let current = members(&shared).await?;
    if let Some(stranger) = body.nodes.iter().find(|n| !current.contains(&n.name)) {
        let message = format!("{} does not belong to node group {GROUP_ID}", stranger.name);
        return Err(failure(StatusCode::BAD_REQUEST, message));
    }
    for node in &body.nodes {
        shared
            .group
            .delete_node(&node.name)
            .await
            .map_err(|e| failure(StatusCode::SERVICE_UNAVAILABLE, e))?;
    }
    Ok(Json(json!({})))
}

/// Upstream drops requested-but-not-started instances here; minik starts every requested node at
/// once, so there is never one to drop (FailedPrecondition).
async fn decrease_target_size(Json(body): Json<Resize>) -> Answer {
    check_id(&body.id)?;
    let message = "every node of the group is started: delete nodes instead".to_string();
    Err(failure(StatusCode::CONFLICT, message))
}

async fn template_node_info(Json(body): Json<ById>) -> Answer {
    check_id(&body.id)?;
    let message = "no node template: use a Ready node of the group".to_string();
    Err(failure(StatusCode::NOT_IMPLEMENTED, message))
}

/// TLS with the node-group certificate; a client certificate chaining to the cluster CA is
/// required (a client without one fails the handshake).
fn acceptor(pki: &Pki) -> std::result::Result<TlsAcceptor, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let (cert, key) = pki.files("node-group");
    let certs = CertificateDer::pem_file_iter(&cert)
        .and_then(|i| i.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(&key).map_err(|e| format!("{}: {e}", key.display()))?;
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_file(pki.ca_file()).map_err(|e| e.to_string())?;
    roots.add(ca).map_err(|e| e.to_string())?;
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .map_err(|e| e.to_string())?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
#[path = "node_group_server_tests.rs"]
mod tests;
