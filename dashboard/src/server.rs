//! The HTTP side: the page, its Server-Sent Events, and the three confirmed actions.
//!
//! Kubernetes counterpart: the Kubernetes Dashboard's API backend (`modules/api`), here a thin
//! layer over `minik_client`. Routes, every one behind the guard ([`crate::security`]):
//!
//! - `GET /` the page (the CSRF token written into it), `/app.js`, `/app.css`: embedded files;
//! - `GET /updates` an SSE stream: a snapshot, then one patch per batch ([`crate::hub`]);
//! - `POST /api/pods/{ns}/{name}/delete` `{"confirm": NAME, "gracePeriodSeconds": N}`;
//! - `POST /api/deployments/{ns}/{name}/scale` `{"confirm": NAME, "replicas": N}`;
//! - `POST /api/nodes/{name}/cordon` `{"confirm": NAME, "unschedulable": true|false}`.
//!
//! Each action must name its object again in `confirm` (the page asks in a dialog). Errors are
//! Kubernetes `Status` objects: the apiserver's own, passed on, or 400/415/422 for bad input.
//! minik simplifies: no compression; the page asks for the whole state on reconnect.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use minik_api::meta::Status;
use minik_api::status;
use minik_client::{Api, Client, DeleteParams, Patch};
use serde::Deserialize;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::hub::Shared;
use crate::security::{Guard, RequestParts, Verdict};
use crate::{Error, Result};

const INDEX: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// Only this page's own files, no framing (clickjacking a confirm button), no referrer (the token).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    client: Client,
    hub: Shared,
    guard: Arc<Guard>,
    shutdown: CancellationToken,
}

impl AppState {
    /// The state of a dashboard.
    pub fn new(client: Client, hub: Shared, guard: Guard, shutdown: CancellationToken) -> AppState {
        AppState {
            client,
            hub,
            guard: Arc::new(guard),
            shutdown,
        }
    }
}

/// Binds `address`, which must be loopback.
pub async fn bind(address: SocketAddr) -> Result<TcpListener> {
    let error = |message: String| Error::Listen { address, message };
    if !address.ip().is_loopback() {
        return Err(error("the dashboard binds loopback addresses only".into()));
    }
    TcpListener::bind(address)
        .await
        .map_err(|e| error(e.to_string()))
}

/// Serves until `shutdown` (open event streams end with it).
pub async fn serve(listener: TcpListener, state: AppState) {
    let shutdown = state.shutdown.clone();
    let app = router(state);
    if let Err(error) = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
    {
        tracing::warn!(%error, "the dashboard's server stopped");
    }
}

/// The routes, behind the guard.
pub fn router(state: AppState) -> axum::Router {
    axum::Router::new()
        .route("/", get(index))
        .route(
            "/app.js",
            get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/app.css",
            get(|| async { asset(APP_CSS, "text/css; charset=utf-8") }),
        )
        .route("/updates", get(updates))
        .route("/api/pods/{ns}/{name}/delete", post(delete_pod))
        .route("/api/deployments/{ns}/{name}/scale", post(scale))
        .route("/api/nodes/{name}/cordon", post(cordon))
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn url_token(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

/// The guard as a middleware: 403/401 as a Status, or the request with the cookie set.
async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let parts = RequestParts {
        method: request.method().as_str(),
        host: header_str(headers, "host"),
        url_token: url_token(request.uri().query()),
        cookie: header_str(headers, "cookie"),
        csrf: header_str(headers, "x-csrf-token"),
        origin: header_str(headers, "origin"),
        fetch_site: header_str(headers, "sec-fetch-site"),
    };
    let verdict = state.guard.check(&parts);
    let refuse = |code: u16, reason: &str, message: &str| {
        info!(method = %parts.method, path = %request.uri().path(), code, "refused");
        failure(status::failure(code, reason, message))
    };
    let set_cookie = match verdict {
        Verdict::Allow => false,
        Verdict::AllowAndSetCookie => true,
        Verdict::Unauthorized(why) => return refuse(401, "Unauthorized", why),
        Verdict::Forbidden(why) => return refuse(403, "Forbidden", why),
    };
    let cookie = state.guard.set_cookie();
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if set_cookie {
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            headers.insert(header::SET_COOKIE, value);
        }
    }
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn index(State(state): State<AppState>) -> Response {
    let page = INDEX.replace("{{CSRF}}", state.guard.csrf());
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

/// A snapshot, then every patch; a page that fell behind gets a fresh snapshot.
async fn updates(
    State(state): State<AppState>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let (snapshot, receiver) = state.hub.subscribe();
    info!("page connected");
    let start = (Some(snapshot), receiver, state.hub.clone());
    let stream = futures::stream::unfold(start, |(first, mut receiver, hub)| async move {
        if let Some(snapshot) = first {
            return Some((snapshot, (None, receiver, hub)));
        }
        match receiver.recv().await {
            Ok(patch) => Some((patch.to_string(), (None, receiver, hub))),
            Err(RecvError::Lagged(_)) => {
                let (snapshot, receiver) = hub.subscribe();
                Some((snapshot, (None, receiver, hub)))
            }
            Err(RecvError::Closed) => None,
        }
    })
    .map(|data| Ok(SseEvent::default().data(data)))
    .take_until(state.shutdown.clone().cancelled_owned());
    Sse::new(stream).keep_alive(KeepAlive::default())
}

fn failure(status: Status) -> Response {
    let code = status
        .code
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(500);
    let code = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (code, axum::Json(status)).into_response()
}

/// The API's own Status, or 502 when the apiserver could not be reached.
fn api_failure(error: minik_client::Error) -> Response {
    match error {
        minik_client::Error::Api(status) => failure(status),
        other => failure(status::failure(502, "BadGateway", other.to_string())),
    }
}

/// Parses an action's JSON body: 415 unless JSON, 400 if malformed, 422 unless confirmed.
// The error is the HTTP answer itself, sent at once: boxing it would gain nothing.
#[allow(clippy::result_large_err)]
fn action<T: for<'de> Deserialize<'de> + Confirmed>(
    headers: &HeaderMap,
    body: &Bytes,
    kind: &str,
    name: &str,
) -> std::result::Result<T, Response> {
    let content_type = header_str(headers, "content-type").unwrap_or_default();
    if !content_type.starts_with("application/json") {
        return Err(failure(status::unsupported_media_type(content_type)));
    }
    let parsed: T = serde_json::from_slice(body)
        .map_err(|e| failure(status::bad_request(format!("bad JSON body: {e}"))))?;
    if parsed.confirm() != name {
        let cause = status::cause(
            "confirm",
            "FieldValueInvalid",
            format!("must repeat the name {name:?} to confirm"),
        );
        return Err(failure(status::invalid(kind, name, vec![cause])));
    }
    parsed.validate().map_err(|(field, message)| {
        failure(status::invalid(
            kind,
            name,
            vec![status::cause(field, "FieldValueInvalid", message)],
        ))
    })?;
    Ok(parsed)
}

/// An action body that names its object again.
trait Confirmed {
    fn confirm(&self) -> &str;
    fn validate(&self) -> std::result::Result<(), (&'static str, String)> {
        Ok(())
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeleteBody {
    #[serde(default)]
    confirm: String,
    grace_period_seconds: Option<i64>,
}

impl Confirmed for DeleteBody {
    fn confirm(&self) -> &str {
        &self.confirm
    }
    fn validate(&self) -> std::result::Result<(), (&'static str, String)> {
        match self.grace_period_seconds {
            Some(n) if n < 0 => Err(("gracePeriodSeconds", "must be 0 or more".into())),
            _ => Ok(()),
        }
    }
}

async fn delete_pod(
    State(state): State<AppState>,
    Path((ns, name)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: DeleteBody = match action(&headers, &body, "Pod", &name) {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    info!(pod = %format!("{ns}/{name}"), grace = ?body.grace_period_seconds, "deleting pod");
    let params = DeleteParams {
        grace_period_seconds: body.grace_period_seconds,
        ..DeleteParams::default()
    };
    match Api::<Pod>::namespaced(state.client.clone(), &ns)
        .delete(&name, &params)
        .await
    {
        Ok(_) => axum::Json(status::success("pods", &name)).into_response(),
        Err(error) => api_failure(error),
    }
}

#[derive(Deserialize)]
struct ScaleBody {
    #[serde(default)]
    confirm: String,
    replicas: i32,
}

impl Confirmed for ScaleBody {
    fn confirm(&self) -> &str {
        &self.confirm
    }
    fn validate(&self) -> std::result::Result<(), (&'static str, String)> {
        if self.replicas < 0 {
            return Err(("replicas", "must be 0 or more".into()));
        }
        Ok(())
    }
}

async fn scale(
    State(state): State<AppState>,
    Path((ns, name)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: ScaleBody = match action(&headers, &body, "Deployment", &name) {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    info!(deployment = %format!("{ns}/{name}"), replicas = body.replicas, "scaling deployment");
    let patch = Patch::Merge(json!({"spec": {"replicas": body.replicas}}));
    match Api::<Deployment>::namespaced(state.client.clone(), &ns)
        .patch(&name, &patch)
        .await
    {
        Ok(_) => axum::Json(status::success("deployments.apps", &name)).into_response(),
        Err(error) => api_failure(error),
    }
}

#[derive(Deserialize)]
struct CordonBody {
    #[serde(default)]
    confirm: String,
    unschedulable: bool,
}

impl Confirmed for CordonBody {
    fn confirm(&self) -> &str {
        &self.confirm
    }
}

async fn cordon(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: CordonBody = match action(&headers, &body, "Node", &name) {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    info!(node = %name, unschedulable = body.unschedulable, "cordoning node");
    let patch = Patch::Merge(json!({"spec": {"unschedulable": body.unschedulable}}));
    match Api::<Node>::all(state.client.clone())
        .patch(&name, &patch)
        .await
    {
        Ok(_) => axum::Json(status::success("nodes", &name)).into_response(),
        Err(error) => api_failure(error),
    }
}
