//! The data path: each HTTP request is routed by the current table and forwarded to an endpoint.
//!
//! Kubernetes counterpart: the nginx configuration ingress-nginx renders (`proxy_pass` to an
//! upstream of endpoint addresses, `proxy_next_upstream error timeout` with 3 tries, a default
//! server whose backend answers 404, and 503 for an upstream without endpoints) plus its
//! `/metrics` and `/healthz` endpoints on a port of their own (10254 upstream).
//!
//! minik simplifies: plain HTTP/1.1 only (no TLS, no websockets upgrade); the request body is
//! read whole before it is forwarded (nginx's `proxy_request_buffering on`, which is what makes
//! a retry possible), the answer is streamed back.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::StreamExt;
use minik_client::connections::{ConnectionGuard, ConnectionTracker};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::metrics::SyncMetrics;
use crate::routes::{Decision, RouteTable};

/// The largest request body forwarded (nginx's `client_max_body_size` is 1 MiB by default).
const MAX_BODY: usize = 1024 * 1024;
/// How many endpoints a request tries (`proxy-next-upstream-tries`).
const TRIES: usize = 3;

/// What the request path shares with the sync loop: the table it swaps in.
#[derive(Debug, Default)]
pub struct Shared {
    /// The current route table.
    pub table: RwLock<Arc<RouteTable>>,
    /// Requests in flight per pod IP (a streamed answer counts until its last byte), published
    /// for the idle rule (`minik_client::connections`).
    pub connections: Arc<ConnectionTracker>,
}

impl Shared {
    /// The table requests are routed by right now.
    pub fn current(&self) -> Arc<RouteTable> {
        self.table.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Swaps in a new table; returns whether it differs from the old one.
    pub fn install(&self, table: RouteTable) -> bool {
        let mut slot = self.table.write().unwrap_or_else(|p| p.into_inner());
        let changed = **slot != table;
        *slot = Arc::new(table);
        changed
    }
}

struct Proxy {
    shared: Arc<Shared>,
    http: reqwest::Client,
}

/// Serves the ingress on `listener` until `shutdown` fires.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, shutdown: CancellationToken) {
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(1))
        .build()
        .unwrap_or_default();
    let app = Router::new()
        .fallback(forward)
        .with_state(Arc::new(Proxy { shared, http }));
    let server = axum::serve(listener, app).with_graceful_shutdown(shutdown.cancelled_owned());
    if let Err(error) = server.await {
        warn!(%error, "ingress server stopped");
    }
}

/// Serves `/metrics` and `/healthz` on `listener` until `shutdown` fires.
pub async fn serve_metrics(
    listener: TcpListener,
    metrics: Arc<SyncMetrics>,
    shutdown: CancellationToken,
) {
    let app = Router::new()
        .route(
            "/metrics",
            get(|State(m): State<Arc<SyncMetrics>>| async move {
                let content_type = "text/plain; version=0.0.4; charset=utf-8";
                ([(header::CONTENT_TYPE, content_type)], m.render())
            }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .with_state(metrics);
    let server = axum::serve(listener, app).with_graceful_shutdown(shutdown.cancelled_owned());
    if let Err(error) = server.await {
        warn!(%error, "metrics server stopped");
    }
}

/// The request's host, without its port (the `Host` header, else the URI's authority).
fn host_of(request: &Request) -> String {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().host())
        .unwrap_or("");
    host.rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(host, |(name, _)| name)
        .to_string()
}

async fn forward(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    let host = host_of(&request);
    let table = proxy.shared.current();
    let backend = match table.route(&host, request.uri().path()) {
        Decision::Backend(backend) => backend.clone(),
        // ingress-nginx's default backend answers every unmatched request with a 404.
        Decision::NotFound => {
            return (StatusCode::NOT_FOUND, "default backend - 404\n").into_response()
        }
    };
    let endpoints = backend.rotation();
    if endpoints.is_empty() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "503 Service Temporarily Unavailable\n",
        )
            .into_response();
    }
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            "413 Request Entity Too Large\n",
        )
            .into_response();
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    for endpoint in endpoints.iter().take(TRIES) {
        let url = format!("http://{endpoint}{path}");
        let mut headers = forwarded_headers(&parts.headers, &host);
        headers.remove(header::HOST);
        let open = proxy.shared.connections.open(endpoint.ip());
        let sent = proxy
            .http
            .request(parts.method.clone(), url)
            .headers(headers)
            .body(body.clone())
            .send()
            .await;
        match sent {
            Ok(answer) => return relay(answer, open),
            // Only a failed connection is retried: the request never reached the endpoint.
            Err(error) if error.is_connect() => {
                debug!(%endpoint, %error, "endpoint refused the connection; trying the next");
            }
            Err(error) => {
                warn!(%endpoint, %error, "upstream failed");
                return (StatusCode::BAD_GATEWAY, "502 Bad Gateway\n").into_response();
            }
        }
    }
    (StatusCode::BAD_GATEWAY, "502 Bad Gateway\n").into_response()
}

/// The request's headers minus the hop-by-hop ones, plus `X-Forwarded-Host`.
fn forwarded_headers(headers: &HeaderMap, host: &str) -> HeaderMap {
    let mut out = headers.clone();
    for hop in [
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        header::TE,
    ] {
        out.remove(hop);
    }
    if let Ok(value) = HeaderValue::from_str(host) {
        out.insert("x-forwarded-host", value);
    }
    out
}

/// The endpoint's answer, streamed back to the client.
fn relay(answer: reqwest::Response, open: ConnectionGuard) -> Response {
    let status = answer.status();
    let mut headers = answer.headers().clone();
    for hop in [header::CONNECTION, header::TRANSFER_ENCODING] {
        headers.remove(hop);
    }
    // The guard lives in the stream: the pod's connection is counted until the answer is sent.
    let body = answer.bytes_stream().map(move |chunk| {
        let _held = &open;
        chunk
    });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// The address to report for a listener (its local address, else what was asked for).
pub fn local_address(listener: &TcpListener, asked: SocketAddr) -> SocketAddr {
    listener.local_addr().unwrap_or(asked)
}
