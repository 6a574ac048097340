//! The `metrics.k8s.io/v1beta1` API: NodeMetrics and PodMetrics, as the apiserver proxies them.
//!
//! Kubernetes counterpart: metrics-server's `pkg/api` (`nodeMetrics`, `podMetrics`: get and
//! list, with label selectors, read from the store and the node and pod informers for labels)
//! behind the aggregated-API authentication of `k8s.io/apiserver`: the caller is the
//! kube-apiserver, proven by its front-proxy client certificate (`--requestheader-allowed-names`),
//! and the user it acts for is in `X-Remote-User` and `X-Remote-Group`.
//!
//! minik simplifies: the apiserver has already authorized the user (RBAC on
//! `pods.metrics.k8s.io`), so no second SubjectAccessReview is made here; the front-proxy
//! certificate is the apiserver's kubelet client certificate (`kube-apiserver-kubelet-client`);
//! no Table rendering (clients fall back to the JSON list); no field selectors.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use k8s_openapi::api::core::v1::{Node, Pod};
use minik_api::selector::LabelSelector;
use minik_api::status;
use minik_client::Store;
use minik_kubelet::server::auth::PeerUser;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::points::{cpu_quantity, memory_quantity, Usage};

/// The group version served.
pub const GROUP_VERSION: &str = "metrics.k8s.io/v1beta1";

/// What the handlers share.
pub struct ApiState {
    /// The usage readings.
    pub store: Arc<RwLock<crate::points::Store>>,
    /// Nodes, for their labels.
    pub nodes: Store<Node>,
    /// Pods, for their labels.
    pub pods: Store<Pod>,
    /// The front-proxy client names accepted (`None`: plain http, everyone).
    pub allowed_names: Option<Vec<String>>,
}

type Shared = State<Arc<ApiState>>;

/// The query a list takes.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    /// `app=web`, `tier in (a,b)`.
    pub label_selector: Option<String>,
}

/// The routes under `/apis/metrics.k8s.io/v1beta1`, behind the front-proxy check.
pub fn router(state: Arc<ApiState>) -> Router {
    let base = "/apis/metrics.k8s.io/v1beta1";
    Router::new()
        .route(base, get(resources))
        .route(&format!("{base}/nodes"), get(list_nodes))
        .route(&format!("{base}/nodes/{{name}}"), get(get_node))
        .route(&format!("{base}/pods"), get(list_all_pods))
        .route(&format!("{base}/namespaces/{{ns}}/pods"), get(list_pods))
        .route(
            &format!("{base}/namespaces/{{ns}}/pods/{{name}}"),
            get(get_pod),
        )
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            front_proxy,
        ))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }))
        .with_state(state)
}

fn error(status: minik_api::meta::Status) -> Response {
    let code = status.code.unwrap_or(500) as u16;
    let code = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (code, Json(status)).into_response()
}

/// Only the apiserver may call: its certificate must be one of the allowed names.
async fn front_proxy(State(state): Shared, request: Request, next: Next) -> Response {
    if let Some(allowed) = &state.allowed_names {
        let caller = request
            .extensions()
            .get::<PeerUser>()
            .and_then(|peer| peer.0.as_ref())
            .map(|user| user.name.clone());
        if !caller.is_some_and(|name| allowed.contains(&name)) {
            return error(status::failure(401, "Unauthorized", "Unauthorized"));
        }
    }
    let user = request
        .headers()
        .get("X-Remote-User")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    tracing::debug!(%user, path = %request.uri().path(), "metrics request");
    next.run(request).await
}

async fn resources() -> Response {
    let entry = |name: &str, kind: &str, namespaced: bool| json!({"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": ["get", "list"]});
    Json(json!({
        "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
        "resources": [entry("nodes", "NodeMetrics", false), entry("pods", "PodMetrics", true)],
    }))
    .into_response()
}

/// The list's label selector; a bad one is a 400 answer (boxed: responses are large).
fn selector(query: &ListQuery) -> Result<LabelSelector, Box<Response>> {
    match query.label_selector.as_deref() {
        None | Some("") => Ok(LabelSelector::everything()),
        Some(text) => LabelSelector::parse(text).map_err(|e| {
            Box::new(error(status::bad_request(format!(
                "unable to parse requirement: {}",
                e.0
            ))))
        }),
    }
}

fn usage_json(usage: &Usage) -> Value {
    json!({"cpu": cpu_quantity(usage.nano_cores), "memory": memory_quantity(usage.memory)})
}

fn window(window: Duration) -> String {
    format!("{}s", window.as_secs_f64().round().max(1.0) as u64)
}

fn metadata(
    name: &str,
    namespace: Option<&str>,
    labels: Option<&BTreeMap<String, String>>,
) -> Value {
    let mut meta = json!({"name": name, "creationTimestamp": jiff::Timestamp::now().to_string()});
    if let Some(namespace) = namespace {
        meta["namespace"] = json!(namespace);
    }
    if let Some(labels) = labels.filter(|l| !l.is_empty()) {
        meta["labels"] = json!(labels);
    }
    meta
}

/// A NodeMetrics object (pure, for tests).
pub fn node_metrics(name: &str, labels: Option<&BTreeMap<String, String>>, usage: &Usage) -> Value {
    json!({
        "kind": "NodeMetrics", "apiVersion": GROUP_VERSION,
        "metadata": metadata(name, None, labels),
        "timestamp": usage.time.to_string(), "window": window(usage.window),
        "usage": usage_json(usage),
    })
}

/// A PodMetrics object (pure, for tests): one entry per container.
pub fn pod_metrics(
    namespace: &str,
    name: &str,
    labels: Option<&BTreeMap<String, String>>,
    containers: &[(String, Usage)],
) -> Value {
    let first = containers.first().map(|(_, u)| *u);
    let containers: Vec<Value> = containers
        .iter()
        .map(|(name, usage)| json!({"name": name, "usage": usage_json(usage)}))
        .collect();
    json!({
        "kind": "PodMetrics", "apiVersion": GROUP_VERSION,
        "metadata": metadata(name, Some(namespace), labels),
        "timestamp": first.map(|u| u.time.to_string()),
        "window": first.map(|u| window(u.window)),
        "containers": containers,
    })
}

fn list(kind: &str, items: Vec<Value>) -> Response {
    Json(json!({"kind": kind, "apiVersion": GROUP_VERSION, "metadata": {}, "items": items}))
        .into_response()
}

fn node_labels(state: &ApiState, name: &str) -> Option<BTreeMap<String, String>> {
    let node = state
        .nodes
        .state()
        .into_iter()
        .find(|n| n.metadata.name.as_deref() == Some(name))?;
    Some(node.metadata.labels.clone().unwrap_or_default())
}

fn pod_labels(state: &ApiState, namespace: &str, name: &str) -> Option<BTreeMap<String, String>> {
    let pod = state.pods.state().into_iter().find(|p| {
        p.metadata.namespace.as_deref() == Some(namespace)
            && p.metadata.name.as_deref() == Some(name)
    })?;
    Some(pod.metadata.labels.clone().unwrap_or_default())
}

fn one_node(state: &ApiState, name: &str) -> Option<Value> {
    let usage = state.store.read().ok()?.node(name)?;
    let labels = node_labels(state, name);
    Some(node_metrics(name, labels.as_ref(), &usage))
}

fn one_pod(state: &ApiState, namespace: &str, name: &str) -> Option<Value> {
    let containers = state.store.read().ok()?.pod(namespace, name)?;
    let labels = pod_labels(state, namespace, name);
    Some(pod_metrics(namespace, name, labels.as_ref(), &containers))
}

async fn list_nodes(State(state): Shared, Query(query): Query<ListQuery>) -> Response {
    let selector = match selector(&query) {
        Ok(selector) => selector,
        Err(response) => return *response,
    };
    let names = state
        .store
        .read()
        .map(|s| s.node_names())
        .unwrap_or_default();
    let items = names
        .iter()
        .filter(|name| selector.matches(&node_labels(&state, name).unwrap_or_default()))
        .filter_map(|name| one_node(&state, name))
        .collect();
    list("NodeMetricsList", items)
}

async fn get_node(State(state): Shared, Path(name): Path<String>) -> Response {
    match one_node(&state, &name) {
        Some(metrics) => Json(metrics).into_response(),
        None => error(status::not_found("nodes.metrics.k8s.io", &name)),
    }
}

fn pods_in(state: &ApiState, namespace: Option<&str>, query: &ListQuery) -> Response {
    let selector = match selector(query) {
        Ok(selector) => selector,
        Err(response) => return *response,
    };
    let keys = state.store.read().map(|s| s.pod_keys()).unwrap_or_default();
    let items = keys
        .iter()
        .filter(|(ns, _)| namespace.is_none_or(|wanted| wanted == ns))
        .filter(|(ns, name)| selector.matches(&pod_labels(state, ns, name).unwrap_or_default()))
        .filter_map(|(ns, name)| one_pod(state, ns, name))
        .collect();
    list("PodMetricsList", items)
}

async fn list_all_pods(State(state): Shared, Query(query): Query<ListQuery>) -> Response {
    pods_in(&state, None, &query)
}

async fn list_pods(
    State(state): Shared,
    Path(namespace): Path<String>,
    Query(query): Query<ListQuery>,
) -> Response {
    pods_in(&state, Some(&namespace), &query)
}

async fn get_pod(
    State(state): Shared,
    Path((namespace, name)): Path<(String, String)>,
) -> Response {
    match one_pod(&state, &namespace, &name) {
        Some(metrics) => Json(metrics).into_response(),
        None => error(status::not_found("pods.metrics.k8s.io", &name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_metrics_have_upstreams_shape() {
        let usage = Usage {
            nano_cores: 250_000_000,
            memory: 8 << 20,
            time: jiff::Timestamp::UNIX_EPOCH,
            window: Duration::from_millis(1500),
        };
        let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
        let pod = pod_metrics("default", "web-1", Some(&labels), &[("app".into(), usage)]);
        assert_eq!(pod["kind"], "PodMetrics");
        assert_eq!(pod["metadata"]["namespace"], "default");
        assert_eq!(pod["metadata"]["labels"]["app"], "web");
        assert_eq!(pod["window"], "2s");
        assert_eq!(pod["containers"][0]["usage"]["cpu"], "250000000n");
        assert_eq!(pod["containers"][0]["usage"]["memory"], "8192Ki");
        let node = node_metrics("node-1", None, &usage);
        assert_eq!(node["usage"]["memory"], "8192Ki");
        assert!(node["metadata"].get("namespace").is_none());
    }
}
