//! The kubelet's `/portForward/{ns}/{pod}`: `kubectl port-forward`'s SPDY streams, tunnelled in
//! a WebSocket, spliced to the pod's ports.
//!
//! Kubernetes counterpart: `pkg/kubelet/cri/streaming/portforward/httpstream.go` (streams come in
//! pairs, `streamType` `error` and `data` with the same `requestID` and `port`; an error is
//! written on the error stream) and `tunneling.go` / client-go's `tools/portforward/
//! tunneling_dialer.go` (subprotocol `SPDY/3.1+portforward.k8s.io`: SPDY bytes in binary
//! WebSocket messages, message boundaries meaning nothing).
//!
//! minik simplifies: the pod's "localhost" is its loopback pod IP (minik's pods share the node's
//! network namespace), so a port is reached at `POD_IP:port`. Besides the WebSocket tunnel
//! (kubectl 1.31+'s default), a plain `Upgrade: SPDY/3.1` with `X-Stream-Protocol-Version:
//! portforward.k8s.io` is served, as older clients and `KUBECTL_PORT_FORWARD_WEBSOCKETS=false`
//! send it (`spdy_upgrade.rs`).

use std::collections::HashMap;
use std::net::Ipv4Addr;

use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

use super::spdy::Headers;
use crate::cri::{ContainerState, ContainerStatus};
use crate::server::ServerState;

/// The WebSocket subprotocol of the SPDY tunnel (`constants.WebsocketsSPDYTunnelingPrefix` +
/// `portforward.k8s.io`).
pub const TUNNEL_PROTOCOL: &str = "SPDY/3.1+portforward.k8s.io";
/// The stream protocol of a plain SPDY upgrade (`portforward.PortForwardProtocolV1Name`).
pub const PLAIN_PROTOCOL: &str = "portforward.k8s.io";

/// Where a pod's ports are and who it is (for error messages, as upstream's).
#[derive(Debug, Clone)]
pub struct Target {
    /// `name` of the pod.
    pub pod: String,
    /// Its uid.
    pub uid: String,
    /// Its IP, where its containers listen.
    pub ip: Ipv4Addr,
}

/// `GET /portForward/{ns}/{pod}`: answers the tunnel's upgrade and serves the SPDY session.
pub async fn port_forward(
    State(state): State<ServerState>,
    Path((namespace, pod)): Path<(String, String)>,
    request: Request,
) -> Response {
    let plain = super::spdy_upgrade::is_spdy(request.headers());
    let accept = match plain {
        true => super::spdy_upgrade::negotiate(request.headers(), &[PLAIN_PROTOCOL])
            .map(|_| String::new()),
        false => handshake(request.headers()),
    };
    let accept = match accept {
        Ok(accept) => accept,
        Err(message) => return (StatusCode::BAD_REQUEST, message).into_response(),
    };
    let key = format!("{namespace}/{pod}");
    let Some(target) = target(&state.runtime.list_containers(), &key, &pod) else {
        let message = format!("pod \"{pod}\" has no running container to forward to");
        return (StatusCode::NOT_FOUND, message).into_response();
    };
    tracing::info!(pod = %key, ip = %target.ip, plain, "port-forward started");
    let shutdown = state.shutdown.clone();
    let upgrade = hyper::upgrade::on(request);
    if plain {
        tokio::spawn(async move {
            let Ok(upgraded) = upgrade.await else { return };
            let io = TokioIo::new(upgraded);
            let requests = super::portforward_session::run_plain(io, target, shutdown).await;
            tracing::info!(pod = %key, requests, "port-forward ended");
        });
        return super::spdy_upgrade::switching_protocols(PLAIN_PROTOCOL);
    }
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        let requests = super::portforward_session::run(ws, target, shutdown).await;
        tracing::info!(pod = %key, requests, "port-forward ended");
    });
    let mut response = StatusCode::SWITCHING_PROTOCOLS.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    let protocol = HeaderValue::from_static(TUNNEL_PROTOCOL);
    headers.insert(header::SEC_WEBSOCKET_PROTOCOL, protocol);
    if let Ok(value) = HeaderValue::from_str(&accept) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, value);
    }
    response
}

/// Checks the tunnel's upgrade request: the `Sec-WebSocket-Accept` answer.
pub fn handshake(headers: &HeaderMap) -> Result<String, String> {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    if !text(header::UPGRADE).eq_ignore_ascii_case("websocket") {
        return Err(format!(
            "Upgrade request required: only WebSocket ({TUNNEL_PROTOCOL}) is served"
        ));
    }
    let key = text(header::SEC_WEBSOCKET_KEY);
    if key.is_empty() {
        return Err("missing Sec-WebSocket-Key".into());
    }
    let offered = text(header::SEC_WEBSOCKET_PROTOCOL);
    if !offered.split(',').any(|p| p.trim() == TUNNEL_PROTOCOL) {
        return Err(format!(
            "none of the offered subprotocols {offered:?} is served"
        ));
    }
    Ok(derive_accept_key(key.as_bytes()))
}

/// The pod's IP and uid, from any of its running containers (`POD_IP` is in each one's env).
pub fn target(containers: &[ContainerStatus], key: &str, pod: &str) -> Option<Target> {
    containers
        .iter()
        .filter(|c| c.config.pod_key == key)
        .filter(|c| matches!(c.state, ContainerState::Running { .. }))
        .find_map(|c| {
            let ip = c.config.env.get("POD_IP")?.parse().ok()?;
            let uid = c.config.pod_uid.clone();
            Some(Target {
                pod: pod.to_string(),
                uid,
                ip,
            })
        })
}

/// Which half of a forwarding request a stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamType {
    /// Carries the connection's bytes both ways.
    Data,
    /// Carries an error message from the kubelet, then ends.
    Error,
}

/// A stream's request headers (`streamType`, `port`, `requestID`; SPDY lower-cases names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRequest {
    /// Data or error.
    pub kind: StreamType,
    /// The pod's port.
    pub port: u16,
    /// Pairs the two streams of one connection.
    pub request_id: String,
}

/// Reads a SYN_STREAM's headers; the message says what is wrong (upstream's wording).
pub fn stream_request(headers: &Headers) -> Result<StreamRequest, String> {
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let kind = match get("streamtype") {
        Some("data") => StreamType::Data,
        Some("error") => StreamType::Error,
        other => return Err(format!("invalid stream type {other:?}")),
    };
    let port = get("port").ok_or("port header is missing")?;
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("invalid port {port:?}"))?;
    let request_id = get("requestid").unwrap_or_default().to_string();
    Ok(StreamRequest {
        kind,
        port,
        request_id,
    })
}

/// Both streams of one request, ready to forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The pod's port.
    pub port: u16,
    /// The data stream's id.
    pub data: u32,
    /// The error stream's id.
    pub error: u32,
}

/// Streams waiting for their other half, by request id.
#[derive(Debug, Default)]
pub struct Pairing {
    waiting: HashMap<String, (Option<u32>, Option<u32>)>,
}

impl Pairing {
    /// Records stream `id`; the pair once both halves are there.
    pub fn add(&mut self, id: u32, request: &StreamRequest) -> Option<Pair> {
        let entry = self.waiting.entry(request.request_id.clone()).or_default();
        match request.kind {
            StreamType::Data => entry.0 = Some(id),
            StreamType::Error => entry.1 = Some(id),
        }
        let (Some(data), Some(error)) = *entry else {
            return None;
        };
        self.waiting.remove(&request.request_id);
        Some(Pair {
            port: request.port,
            data,
            error,
        })
    }
}

/// The error stream's message when the pod's port cannot be reached (`httpstream.go`).
pub fn forward_error(target: &Target, port: u16, error: &std::io::Error) -> String {
    format!(
        "error forwarding port {port} to pod {}, uid {}: failed to connect to {}:{port}: {error}",
        target.pod, target.uid, target.ip
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(kind: &str, port: &str, id: &str) -> Headers {
        [("streamtype", kind), ("port", port), ("requestid", id)]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn stream_headers_name_the_half_the_port_and_the_request() {
        let data = stream_request(&request("data", "8080", "3")).unwrap();
        assert_eq!(data.kind, StreamType::Data);
        assert_eq!((data.port, data.request_id.as_str()), (8080, "3"));
        assert!(stream_request(&request("stdin", "80", "1")).is_err());
        assert!(stream_request(&request("data", "0", "1")).is_err());
        assert!(stream_request(&request("data", "http", "1")).is_err());
    }

    #[test]
    fn streams_pair_by_request_id_in_either_order() {
        let mut pairing = Pairing::default();
        let error = stream_request(&request("error", "80", "0")).unwrap();
        let other = stream_request(&request("error", "81", "1")).unwrap();
        let data = stream_request(&request("data", "80", "0")).unwrap();
        assert_eq!(pairing.add(1, &error), None);
        assert_eq!(pairing.add(3, &other), None);
        assert_eq!(
            pairing.add(5, &data),
            Some(Pair {
                port: 80,
                data: 5,
                error: 1
            })
        );
        assert_eq!(pairing.waiting.len(), 1);
    }

    #[test]
    fn only_the_tunnel_subprotocol_is_answered() {
        let mut headers = HeaderMap::new();
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        headers.insert(
            header::SEC_WEBSOCKET_KEY,
            HeaderValue::from_static("dGhlIHNhbXBsZSBub25jZQ=="),
        );
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("SPDY/3.1+portforward.k8s.io"),
        );
        assert_eq!(handshake(&headers).unwrap(), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("v5.channel.k8s.io"),
        );
        assert!(handshake(&headers).is_err());
        headers.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
        assert!(handshake(&headers).is_err());
    }
}
