//! The channel protocol of exec and attach over WebSocket: subprotocols, frames, the status.
//!
//! Kubernetes counterpart: `k8s.io/apimachinery/pkg/util/remotecommand/constants.go` and
//! `httpstream/wsstream/conn.go`. Every binary message is `[channel][payload]`: 0 stdin, 1 stdout,
//! 2 stderr, 3 error (one JSON `Status` at the end), 4 resize (`{"Width":W,"Height":H}`);
//! `v5.channel.k8s.io` adds 255, `[255, channel]`, which half-closes a stream (kubectl sends
//! `[255, 0]` at the end of its stdin, which `kubectl cp` needs). minik serves v5 and v4 (the
//! same frames without the close); the base64 text variants are left out.

use serde_json::{json, Value};

/// `v5.channel.k8s.io`: v4 plus the close message.
pub const V5: &str = "v5.channel.k8s.io";
/// `v4.channel.k8s.io`: the JSON status on the error channel.
pub const V4: &str = "v4.channel.k8s.io";

/// Channel numbers.
pub const STDIN: u8 = 0;
/// Output of the process.
pub const STDOUT: u8 = 1;
/// Its error output.
pub const STDERR: u8 = 2;
/// The final `Status`.
pub const ERROR: u8 = 3;
/// Terminal size changes.
pub const RESIZE: u8 = 4;
/// v5's close message.
pub const CLOSE: u8 = 255;

/// The subprotocol to answer with, from the client's `Sec-WebSocket-Protocol` offers (the newest
/// one both sides know, as upstream's `wsstream` picks).
pub fn negotiate(offered: &str) -> Option<&'static str> {
    let offers: Vec<&str> = offered.split(',').map(str::trim).collect();
    [V5, V4].into_iter().find(|p| offers.contains(p))
}

/// A message the client sent, decoded.
#[derive(Debug, PartialEq)]
pub enum Incoming<'a> {
    /// Bytes for the process' stdin.
    Stdin(&'a [u8]),
    /// The terminal's new size (width, height).
    Resize(u16, u16),
    /// The client closed one of its streams (v5).
    Close(u8),
    /// Something else (unknown channel, bad resize): ignored, as upstream does.
    Ignored,
}

/// Decodes one binary message.
pub fn decode(message: &[u8]) -> Incoming<'_> {
    match message.split_first() {
        Some((&STDIN, data)) => Incoming::Stdin(data),
        Some((&RESIZE, data)) => {
            resize(data).map_or(Incoming::Ignored, |(w, h)| Incoming::Resize(w, h))
        }
        Some((&CLOSE, [channel, ..])) => Incoming::Close(*channel),
        _ => Incoming::Ignored,
    }
}

fn resize(data: &[u8]) -> Option<(u16, u16)> {
    let value: Value = serde_json::from_slice(data).ok()?;
    let side = |key: &str| value.get(key)?.as_u64().and_then(|n| u16::try_from(n).ok());
    Some((side("Width")?, side("Height")?))
}

/// A frame for channel `channel`.
pub fn frame(channel: u8, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 1);
    out.push(channel);
    out.extend_from_slice(data);
    out
}

/// The status written on the error channel when the process has exited: Success, or Failure with
/// reason `NonZeroExitCode` and the code as the `ExitCode` cause (`remotecommand/exec.go`), which
/// kubectl turns into its own exit code.
pub fn exit_status(exit_code: i32) -> Value {
    if exit_code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("command terminated with non-zero exit code: error executing command, exit code {exit_code}"),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": exit_code.to_string()}]},
    })
}

/// The close that ends a session: code 1000, which client-go reads as the end of every stream
/// (a close without a code, 1005, is an error to it).
pub fn normal_close() -> tokio_tungstenite::tungstenite::Message {
    use tokio_tungstenite::tungstenite::protocol::{frame::coding::CloseCode, CloseFrame};
    tokio_tungstenite::tungstenite::Message::Close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_offered_protocol_wins() {
        assert_eq!(negotiate("v4.channel.k8s.io, v5.channel.k8s.io"), Some(V5));
        assert_eq!(negotiate("v4.channel.k8s.io"), Some(V4));
        assert_eq!(negotiate("channel.k8s.io"), None);
    }

    #[test]
    fn messages_decode_by_their_channel_byte() {
        assert_eq!(decode(&[0, b'h', b'i']), Incoming::Stdin(b"hi"));
        assert_eq!(
            decode(b"\x04{\"Width\":80,\"Height\":24}"),
            Incoming::Resize(80, 24)
        );
        assert_eq!(decode(&[255, 0]), Incoming::Close(0));
        assert_eq!(decode(b"\x04{\"width\":80}"), Incoming::Ignored);
        assert_eq!(decode(&[]), Incoming::Ignored);
        assert_eq!(frame(STDOUT, b"x"), vec![1, b'x']);
    }

    #[test]
    fn a_non_zero_exit_is_reported_as_kubectl_reads_it() {
        assert_eq!(exit_status(0)["status"], "Success");
        let failed = exit_status(3);
        assert_eq!(failed["reason"], "NonZeroExitCode");
        assert_eq!(failed["details"]["causes"][0]["reason"], "ExitCode");
        assert_eq!(failed["details"]["causes"][0]["message"], "3");
    }
}
