//! The kubelet's streaming endpoint: `/exec/{ns}/{pod}/{container}` over WebSocket.
//!
//! Kubernetes counterpart: `pkg/kubelet/server/server.go` (`getExec`) and the CRI streaming
//! server (`pkg/kubelet/cri/streaming/`): the apiserver proxies a client's upgraded request here,
//! with the query already rewritten to `command=…&input=1&output=1&error=1&tty=1`.
//!
//! minik simplifies: the kubelet serves the WebSocket itself (no separate streaming server),
//! with the `v5.channel.k8s.io` and `v4.channel.k8s.io` subprotocols; a plain SPDY/3.1 upgrade
//! (`spdy_upgrade.rs`) is translated into the same channel messages (`spdy_channels.rs`).
//! `/portForward/{ns}/{pod}` serves kubectl's SPDY-in-WebSocket tunnel (`portforward.rs`).

pub mod attach;
pub mod attach_stdin;
pub mod channels;
pub mod portforward;
pub mod portforward_session;
pub mod session;
pub mod spawn;
pub mod spdy;
pub mod spdy_channels;
pub mod spdy_dictionary;
pub mod spdy_upgrade;

use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

use crate::cri::{ContainerState, ContainerStatus};
use crate::server::ServerState;
use spawn::ExecRequest;

/// The exec options of a query (`command` repeated, the flags as `1`/`true`).
pub fn exec_request(pairs: &[(String, String)]) -> ExecRequest {
    let flag = |key: &str| {
        pairs
            .iter()
            .any(|(k, v)| k == key && matches!(v.as_str(), "1" | "true"))
    };
    ExecRequest {
        argv: pairs
            .iter()
            .filter(|(k, _)| k == "command")
            .map(|(_, v)| v.clone())
            .collect(),
        stdin: flag("input"),
        tty: flag("tty"),
    }
}

/// The running attempt of `container` in pod `namespace/pod`.
pub fn running_container(
    containers: &[ContainerStatus],
    key: &str,
    container: &str,
) -> Option<(ContainerStatus, u32)> {
    containers
        .iter()
        .filter(|c| c.config.pod_key == key && c.config.name == container)
        .find_map(|c| match c.state {
            ContainerState::Running { pid, .. } => Some((c.clone(), pid)),
            ContainerState::Exited { .. } => None,
        })
}

/// `GET /exec/{ns}/{pod}/{container}`: starts the command, then answers the WebSocket upgrade
/// and runs the session on the upgraded connection.
pub async fn exec(
    State(state): State<ServerState>,
    Path((namespace, pod, container)): Path<(String, String, String)>,
    Query(pairs): Query<Vec<(String, String)>>,
    request: Request,
) -> Response {
    let carrier = match Carrier::of(request.headers(), &pairs) {
        Ok(carrier) => carrier,
        Err(message) => return (StatusCode::BAD_REQUEST, message).into_response(),
    };
    let exec = exec_request(&pairs);
    let key = format!("{namespace}/{pod}");
    let Some((target, pid)) = running_container(&state.runtime.list_containers(), &key, &container)
    else {
        let message = format!("container \"{container}\" in pod \"{pod}\" is not running");
        return (StatusCode::NOT_FOUND, message).into_response();
    };
    let started = match spawn::spawn(&target.config, pid, &exec) {
        Ok(started) => started,
        Err(error) => {
            let message = format!("exec {:?} in {key}/{container}: {error}", exec.argv);
            return (StatusCode::INTERNAL_SERVER_ERROR, message).into_response();
        }
    };
    tracing::info!(pod = %key, %container, command = ?exec.argv, tty = exec.tty, protocol = carrier.protocol(), "exec started");
    let shutdown = state.shutdown.clone();
    let upgrade = hyper::upgrade::on(request);
    let response = carrier.switching_protocols();
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let io = TokioIo::new(upgraded);
        let code = match carrier {
            Carrier::WebSocket { .. } => {
                let ws = WebSocketStream::from_raw_socket(io, Role::Server, None).await;
                session::run(ws, started, shutdown).await
            }
            Carrier::Spdy { expected, .. } => match spdy_channels::bridge(io, expected).await {
                Ok((sink, source)) => session::run_on(sink, source, started, shutdown).await,
                Err(error) => {
                    tracing::info!(pod = %key, %container, %error, "exec over SPDY not set up");
                    None
                }
            },
        };
        tracing::info!(pod = %key, %container, exit_code = ?code, "exec ended");
    });
    response
}

/// What carries a session's channel messages: a WebSocket, or a plain SPDY/3.1 connection.
pub enum Carrier {
    /// The `Sec-WebSocket-Accept` answer and the subprotocol.
    WebSocket {
        accept: String,
        protocol: &'static str,
    },
    /// The stream protocol chosen and the stream types to wait for.
    Spdy {
        protocol: &'static str,
        expected: Vec<&'static str>,
    },
}

impl Carrier {
    /// The carrier the upgrade request asks for, or why it cannot be served.
    pub fn of(headers: &HeaderMap, pairs: &[(String, String)]) -> Result<Self, String> {
        if !spdy_upgrade::is_spdy(headers) {
            let (accept, protocol) = handshake(headers)?;
            return Ok(Carrier::WebSocket { accept, protocol });
        }
        let protocol = spdy_upgrade::negotiate(headers, &[channels::V5, channels::V4])?;
        let expected = spdy_channels::expected_streams(pairs);
        Ok(Carrier::Spdy { protocol, expected })
    }

    fn protocol(&self) -> &'static str {
        match self {
            Carrier::WebSocket { protocol, .. } | Carrier::Spdy { protocol, .. } => protocol,
        }
    }

    fn switching_protocols(&self) -> Response {
        match self {
            Carrier::WebSocket { accept, protocol } => switching_protocols(accept, protocol),
            Carrier::Spdy { protocol, .. } => spdy_upgrade::switching_protocols(protocol),
        }
    }
}

/// `GET /attach/{ns}/{pod}/{container}`: the container's output from now on (`attach.rs`).
pub async fn attach(
    State(state): State<ServerState>,
    Path((namespace, pod, container)): Path<(String, String, String)>,
    Query(pairs): Query<Vec<(String, String)>>,
    request: Request,
) -> Response {
    let carrier = match Carrier::of(request.headers(), &pairs) {
        Ok(carrier) => carrier,
        Err(message) => return (StatusCode::BAD_REQUEST, message).into_response(),
    };
    let key = format!("{namespace}/{pod}");
    let Some((target, _pid)) =
        running_container(&state.runtime.list_containers(), &key, &container)
    else {
        let message = format!("container \"{container}\" in pod \"{pod}\" is not running");
        return (StatusCode::NOT_FOUND, message).into_response();
    };
    let input = exec_request(&pairs).stdin;
    tracing::info!(pod = %key, %container, protocol = carrier.protocol(), input, tty = target.config.tty, "attach started");
    let upgrade = hyper::upgrade::on(request);
    let response = carrier.switching_protocols();
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let io = TokioIo::new(upgraded);
        let stdin = match input {
            true => attach_stdin::open(state.runtime.as_ref(), &target.id).await,
            false => None,
        };
        let control = attach_stdin::open_control(state.runtime.as_ref(), &target.id).await;
        let code = match carrier {
            Carrier::WebSocket { .. } => {
                let ws = WebSocketStream::from_raw_socket(io, Role::Server, None).await;
                attach::run(ws, state, target, stdin, control).await
            }
            Carrier::Spdy { expected, .. } => match spdy_channels::bridge(io, expected).await {
                Ok((sink, source)) => {
                    attach::run_on(sink, source, state, target, stdin, control).await
                }
                Err(error) => {
                    tracing::info!(pod = %key, %container, %error, "attach over SPDY not set up");
                    None
                }
            },
        };
        tracing::info!(pod = %key, %container, exit_code = ?code, "attach ended");
    });
    response
}

/// Checks a WebSocket upgrade request: (the `Sec-WebSocket-Accept` answer, the subprotocol).
pub fn handshake(headers: &HeaderMap) -> Result<(String, &'static str), String> {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    if !text(header::UPGRADE).eq_ignore_ascii_case("websocket") {
        return Err("Upgrade request required: only WebSocket (v5.channel.k8s.io, v4.channel.k8s.io) is served".into());
    }
    let key = text(header::SEC_WEBSOCKET_KEY);
    if key.is_empty() {
        return Err("missing Sec-WebSocket-Key".into());
    }
    let offered = text(header::SEC_WEBSOCKET_PROTOCOL);
    let protocol = channels::negotiate(offered)
        .ok_or_else(|| format!("none of the offered subprotocols {offered:?} is served"))?;
    Ok((derive_accept_key(key.as_bytes()), protocol))
}

fn switching_protocols(accept: &str, protocol: &'static str) -> Response {
    let mut response = StatusCode::SWITCHING_PROTOCOLS.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(
        header::SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_static(protocol),
    );
    if let Ok(value) = HeaderValue::from_str(accept) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_names_the_command_in_order_and_the_streams() {
        let pairs: Vec<(String, String)> = [
            ("command", "sh"),
            ("input", "1"),
            ("command", "-c"),
            ("tty", "1"),
            ("command", "exit 3"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let request = exec_request(&pairs);
        assert_eq!(request.argv, ["sh", "-c", "exit 3"]);
        assert!(request.stdin && request.tty);
    }

    #[test]
    fn only_websocket_upgrades_with_a_known_protocol_are_answered() {
        let mut headers = HeaderMap::new();
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        headers.insert(
            header::SEC_WEBSOCKET_KEY,
            HeaderValue::from_static("dGhlIHNhbXBsZSBub25jZQ=="),
        );
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("v5.channel.k8s.io"),
        );
        let (accept, protocol) = handshake(&headers).unwrap();
        // RFC 6455's own example key and answer.
        assert_eq!(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_eq!(protocol, channels::V5);
        headers.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
        assert!(handshake(&headers).is_err());
    }
}
