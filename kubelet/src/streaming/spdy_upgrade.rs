//! Plain SPDY/3.1 upgrades: `Upgrade: SPDY/3.1` with the stream protocols the client speaks in
//! `X-Stream-Protocol-Version`, answered with `101` and the one chosen; the connection is then
//! the SPDY byte stream itself (no WebSocket around it).
//!
//! Kubernetes counterpart: `apimachinery/pkg/util/httpstream/spdy/upgrade.go`
//! (`responseUpgrader.UpgradeResponse`) and `httpstream.Handshake` (the first protocol of the
//! client's list that the server also speaks; none at all offered means the oldest, which minik
//! does not serve). What client-go's `spdy.RoundTripper`, `remotecommand.NewSPDYExecutor` and
//! kubectl with `KUBECTL_PORT_FORWARD_WEBSOCKETS=false` send.

use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The header that carries the stream protocols (`httpstream.HeaderProtocolVersion`).
pub const PROTOCOL_HEADER: HeaderName = HeaderName::from_static("x-stream-protocol-version");

/// Whether the request asks for a plain SPDY/3.1 upgrade.
pub fn is_spdy(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("SPDY/3.1"))
}

/// The first of the client's protocols (in its order, each header or comma-separated) that is
/// one of `served`.
pub fn negotiate(headers: &HeaderMap, served: &[&'static str]) -> Result<&'static str, String> {
    let offered: Vec<&str> = headers
        .get_all(&PROTOCOL_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    offered
        .iter()
        .find_map(|o| served.iter().find(|s| *s == o).copied())
        .ok_or_else(|| {
            format!("unable to upgrade: none of the stream protocols {offered:?} is served (only {served:?})")
        })
}

/// The `101` of a plain SPDY upgrade, naming the chosen stream protocol.
pub fn switching_protocols(protocol: &'static str) -> Response {
    let mut response = StatusCode::SWITCHING_PROTOCOLS.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
    headers.insert(PROTOCOL_HEADER, HeaderValue::from_static(protocol));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_first_served_protocol_is_chosen() {
        let mut headers = HeaderMap::new();
        headers.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
        assert!(is_spdy(&headers));
        headers.append(
            &PROTOCOL_HEADER,
            HeaderValue::from_static("v5.channel.k8s.io"),
        );
        headers.append(
            &PROTOCOL_HEADER,
            HeaderValue::from_static("v4.channel.k8s.io, v3.channel.k8s.io"),
        );
        let served = ["v4.channel.k8s.io", "portforward.k8s.io"];
        assert_eq!(negotiate(&headers, &served), Ok("v4.channel.k8s.io"));
        assert!(negotiate(&headers, &["portforward.k8s.io"]).is_err());
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        assert!(!is_spdy(&headers));
    }
}
