//! The HTTP serving loop: accept, serve each connection with hyper, drain on shutdown.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/server/secure_serving.go` (Go's `http.Server`
//! with `ReadHeaderTimeout`, and a graceful drain when the stop channel closes).
//!
//! `axum::serve` would do, but it offers no header-read timeout, and hyper silently disables its
//! own when no timer is configured (docs/security.md#h10: a client sending half a request would
//! hold its socket forever). So connections are served here with an explicit timer and timeout,
//! and [`read_body_in_time`] bounds the body the same way (upstream's `ReadHeaderTimeout` and
//! request deadline). On
//! shutdown each connection is asked to finish gracefully; watch streams end on the same token, so
//! the drain completes.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use minik_api::status;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;
use tracing::{debug, info, warn};

use crate::error::ApiError;
use crate::{tls, AppState};

/// How long shutdown waits for in-flight requests before giving up on them.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts connections until `shutdown`, then waits (bounded) for the open ones to finish. With
/// an `acceptor`, each connection first completes a TLS handshake (`tls.rs`).
pub async fn serve_connections(
    listener: TcpListener,
    app: Router,
    acceptor: Option<TlsAcceptor>,
    max_connections: usize,
    header_read_timeout: Duration,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let connections = TaskTracker::new();
    // A connection holds a permit until it closes; at the cap, new clients wait in the backlog.
    let permits = Arc::new(Semaphore::new(max_connections.max(1)));
    loop {
        let permit = tokio::select! {
            _ = shutdown.cancelled() => break,
            permit = permits.clone().acquire_owned() => permit.expect("never closed"),
        };
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let acceptor = acceptor.clone();
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            let _permit = permit;
            let result = match acceptor {
                None => serve_one(TokioIo::new(stream), app, header_read_timeout, shutdown).await,
                Some(acceptor) => {
                    let Some((stream, user)) =
                        tls::handshake(&acceptor, stream, header_read_timeout).await
                    else {
                        return;
                    };
                    // Every request on this connection carries the certificate's user.
                    let app = app.map_request(move |mut request: Request<Incoming>| {
                        request.extensions_mut().insert(user.clone());
                        request
                    });
                    serve_one(TokioIo::new(stream), app, header_read_timeout, shutdown).await
                }
            };
            if let Err(e) = result {
                debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    connections.close();
    if tokio::time::timeout(DRAIN_TIMEOUT, connections.wait())
        .await
        .is_err()
    {
        warn!(
            open = connections.len(),
            "connections still open after the drain timeout"
        );
    }
    info!("apiserver stopped");
    Ok(())
}

/// Serves one connection with hyper, with the header-read timer, until it ends or `shutdown`.
async fn serve_one<I, S>(
    io: I,
    service: S,
    header_read_timeout: Duration,
    shutdown: CancellationToken,
) -> hyper::Result<()>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: tower::Service<Request<Incoming>, Response = Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let connection = builder
        .serve_connection(io, TowerToHyperService::new(service))
        .with_upgrades();
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => result,
        _ = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    }
}

/// Reads the whole request body within the server's body-read timeout before any handler runs
/// (docs/security.md#h10): a client that sends its headers and then trickles the body, a byte
/// every few seconds, gets 408 and loses the connection instead of holding it for ever. The
/// body limit layer runs first, so the read also stops at 3 MiB (413).
pub async fn read_body_in_time(
    State(state): State<AppState>,
    request: Request<Body>,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, usize::MAX);
    let bytes = match tokio::time::timeout(state.body_read_timeout, read).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(error)) => {
            let too_large = is_length_limit(&error);
            let status = if too_large {
                status::too_large("Request entity too large: limit is 3145728")
            } else {
                status::bad_request(format!("reading the request body: {error}"))
            };
            return ApiError::from(status).into_response();
        }
        Err(_) => {
            debug!(path = %parts.uri.path(), "request body not received in time");
            let message = format!(
                "the request body was not received within {:?}",
                state.body_read_timeout
            );
            let mut response =
                ApiError::from(status::failure(408, "Timeout", message)).into_response();
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Whether a body error is the body limit's, however deep it is wrapped (axum boxes the limit
/// layer's boxed error again).
fn is_length_limit(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        // The error's own Display, for when it arrives boxed inside another box.
        if error.is::<http_body_util::LengthLimitError>()
            || error.to_string() == "length limit exceeded"
        {
            return true;
        }
        current = error.source();
    }
    false
}

/// Turns the plain-text errors produced outside the handlers (413 from the body limit, 405 from a
/// route, a rejected extractor) into `Status` bodies, which every client expects.
pub async fn plain_errors_as_status(response: Response) -> Response {
    let code = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if code.as_u16() < 400 || is_json {
        return response;
    }
    let status = match code {
        StatusCode::PAYLOAD_TOO_LARGE => {
            status::too_large("Request entity too large: limit is 3145728")
        }
        StatusCode::METHOD_NOT_ALLOWED => status::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ),
        StatusCode::NOT_FOUND => status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => status::unsupported_media_type(""),
        code if code.is_client_error() => status::bad_request(format!("bad request ({code})")),
        code => status::internal(format!("internal error ({code})")),
    };
    ApiError::from(status).into_response()
}
