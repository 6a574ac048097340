//! `attach`: a running container's output, live, on the exec channels.
//!
//! Kubernetes counterpart: CRI `Attach` (containerd's `container_attach.go`), which connects the
//! client to the container's own stdio. minik's containers write their stdout and stderr through
//! the shim into the CRI log file, so attach follows that file from its current end (every 100 ms,
//! as `logs -f`) and sends each record on channel 1 or 2; when the container exits, its exit code
//! goes on the error channel as for exec. With `-i`, stdin frames go into the container's stdin
//! FIFO (`attach_stdin.rs`). A `tty: true` container's output is its terminal's, logged by
//! the shim as it comes (a prompt before its newline), and followed every 20 ms; resizes
//! (channel 4) go into its shim's control FIFO as `1 HEIGHT WIDTH` (`shim/tty.rs`).

use std::io::SeekFrom;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncSeekExt, AsyncWrite};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::channels;
use crate::cri::{ContainerState, ContainerStatus};
use crate::server::ServerState;

/// How often new output is looked for.
const POLL: Duration = Duration::from_millis(100);
/// How often for a terminal, where a person types and waits for the echo.
const TERMINAL_POLL: Duration = Duration::from_millis(20);

/// Splits CRI log records into (channel, bytes); returns them and how many bytes were whole
/// records (a half-written last record waits for the next read).
pub fn records(raw: &[u8]) -> (Vec<(u8, Vec<u8>)>, usize) {
    let complete = raw.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let mut out = Vec::new();
    for record in raw[..complete]
        .split(|b| *b == b'\n')
        .filter(|r| !r.is_empty())
    {
        let mut parts = record.splitn(4, |b| *b == b' ');
        let (_time, stream, tag) = (parts.next(), parts.next(), parts.next());
        let mut content = parts.next().unwrap_or_default().to_vec();
        if tag != Some(b"P".as_slice()) {
            content.push(b'\n');
        }
        let channel = if stream == Some(b"stderr".as_slice()) {
            channels::STDERR
        } else {
            channels::STDOUT
        };
        out.push((channel, content));
    }
    (out, complete)
}

/// Runs one attach session until the container exits, the client leaves or the kubelet stops.
pub async fn run<S>(
    ws: WebSocketStream<S>,
    state: ServerState,
    target: ContainerStatus,
    stdin: Option<tokio::net::unix::pipe::Sender>,
    control: Option<tokio::net::unix::pipe::Sender>,
) -> Option<i32>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sink, source) = ws.split();
    run_on(sink, source, state, target, stdin, control).await
}

/// The session on any carrier of channel messages (a WebSocket, or SPDY through
/// `spdy_channels.rs`).
pub async fn run_on<K, R, E>(
    mut sink: K,
    mut source: R,
    state: ServerState,
    target: ContainerStatus,
    mut stdin: Option<tokio::net::unix::pipe::Sender>,
    mut control: Option<tokio::net::unix::pipe::Sender>,
) -> Option<i32>
where
    K: futures::Sink<Message> + Unpin,
    R: futures::Stream<Item = Result<Message, E>> + Unpin,
{
    let mut file = tokio::fs::File::open(&target.config.log_path).await.ok()?;
    let _ = file.seek(SeekFrom::End(0)).await;
    let _ = sink
        .send(Message::binary(channels::frame(channels::STDOUT, &[])))
        .await;
    let mut pending = Vec::new();
    let poll = if target.config.tty {
        TERMINAL_POLL
    } else {
        POLL
    };
    loop {
        let status = state.runtime.container_status(&target.id).map(|c| c.state);
        let _ = file.read_to_end(&mut pending).await;
        let (frames, consumed) = records(&pending);
        pending.drain(..consumed);
        for (channel, data) in frames {
            if sink
                .send(Message::binary(channels::frame(channel, &data)))
                .await
                .is_err()
            {
                return None;
            }
        }
        if !matches!(status, Some(ContainerState::Running { .. })) {
            let code = match status {
                Some(ContainerState::Exited { exit_code, .. }) => exit_code,
                _ => 137,
            };
            let status = channels::exit_status(code).to_string();
            let _ = sink
                .send(Message::binary(channels::frame(
                    channels::ERROR,
                    status.as_bytes(),
                )))
                .await;
            let _ = sink.send(channels::normal_close()).await;
            return Some(code);
        }
        tokio::select! {
            _ = state.shutdown.cancelled() => return None,
            message = source.next() => match message {
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return None,
                Some(Ok(Message::Binary(data))) => match channels::decode(&data) {
                    channels::Incoming::Stdin(bytes) => {
                        if let Some(sender) = stdin.as_mut() {
                            if !super::attach_stdin::write(sender, bytes).await { stdin = None; }
                        }
                    }
                    channels::Incoming::Close(channels::STDIN) => stdin = None,
                    channels::Incoming::Resize(width, height) => {
                        if let Some(sender) = control.as_mut() {
                            let line = crate::shim::tty::resize_line(width, height);
                            if !super::attach_stdin::write(sender, line.as_bytes()).await { control = None; }
                        }
                    }
                    _ => {}
                },
                Some(Ok(_)) => {}
            },
            _ = tokio::time::sleep(poll) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_go_to_their_stream_and_partial_lines_join() {
        let raw = b"2024-01-01T00:00:00Z stdout F hello\n2024-01-01T00:00:00Z stderr P par\n2024-01-01T00:00:00Z stdout F ha";
        let (frames, consumed) = records(raw);
        assert_eq!(
            frames,
            vec![
                (channels::STDOUT, b"hello\n".to_vec()),
                (channels::STDERR, b"par".to_vec())
            ]
        );
        assert_eq!(
            consumed,
            raw.len() - "2024-01-01T00:00:00Z stdout F ha".len()
        );
    }
}
