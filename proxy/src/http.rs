//! The proxy's own HTTP server: `/metrics` (Prometheus text), `/proxies` (where each service port
//! listens), `/applied` (when each endpoint change was applied) and `/healthz`.
//!
//! Kubernetes counterpart: kube-proxy serves `/metrics` on `--metrics-bind-address` (default
//! `127.0.0.1:10249`) and `/healthz` on `--healthz-bind-address` (`cmd/kube-proxy/app/server.go`).
//! `/proxies` and `/applied` are minik's own: the first replaces the iptables rules that hid the
//! userspace proxy's ports, the second gives tests and `minik demo` the proxy's exact timeline.
//!
//! minik simplifies: one listener for everything, on loopback only.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::state::ProxyState;

/// The routes, as a value so tests can call them without a socket.
pub fn router(state: Arc<ProxyState>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/proxies", get(proxies))
        .route("/applied", get(applied))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(state)
}

/// Serves [`router`] on `listener` until `shutdown` fires.
pub async fn serve(listener: TcpListener, state: Arc<ProxyState>, shutdown: CancellationToken) {
    let server = axum::serve(listener, router(state))
        .with_graceful_shutdown(async move { shutdown.cancelled().await });
    if let Err(error) = server.await {
        warn!(%error, "metrics server stopped");
    }
}

/// `GET /metrics`: the counters in the Prometheus text format.
async fn metrics(State(state): State<Arc<ProxyState>>) -> impl IntoResponse {
    let content_type = "text/plain; version=0.0.4; charset=utf-8";
    (
        [(header::CONTENT_TYPE, content_type)],
        state.metrics.render(),
    )
}

/// `GET /proxies`: `{"default/web:http": {"listenAddress": "127.96.0.10:80", "fallback": false, …}}`.
async fn proxies(State(state): State<Arc<ProxyState>>) -> impl IntoResponse {
    Json(state.proxies())
}

/// `GET /applied`: every applied endpoint change still in memory, oldest first.
async fn applied(State(state): State<Arc<ProxyState>>) -> impl IntoResponse {
    Json(state.applied())
}
