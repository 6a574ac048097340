//! One exec session: the WebSocket on one side, the process' pipes (or terminal) on the other.
//!
//! Kubernetes counterpart: `pkg/kubelet/cri/streaming/remotecommand/websocket.go` and
//! `exec.go`: copy stdin in, stdout and stderr out on their channels, resize the terminal, and
//! when the process has exited (and its output is drained) write its status on the error channel
//! and close. A client that goes away ends the session and kills what the exec started.

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

use super::channels::{self, Incoming};
use super::spawn::{self, Started};

type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// Runs the session to its end; returns the exit code (`None`: the client left first).
pub async fn run<S>(
    ws: WebSocketStream<S>,
    started: Started,
    shutdown: CancellationToken,
) -> Option<i32>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sink, source) = ws.split();
    run_on(sink, source, started, shutdown).await
}

/// The session on any carrier of channel messages (a WebSocket, or SPDY through
/// `spdy_channels.rs`).
pub async fn run_on<K, R, E>(
    mut sink: K,
    mut source: R,
    started: Started,
    shutdown: CancellationToken,
) -> Option<i32>
where
    K: futures::Sink<Message> + Unpin,
    R: futures::Stream<Item = Result<Message, E>> + Unpin,
{
    let Started { mut child, pty } = started;
    let (tx, mut output) = mpsc::channel::<Vec<u8>>(16);
    let mut stdin: Option<Writer> = None;
    if let Some(pty) = &pty {
        let reader = pty.try_clone().ok().map(tokio::fs::File::from_std);
        let writer = pty.try_clone().ok().map(tokio::fs::File::from_std);
        reader.map(|r| tokio::spawn(pump(r, channels::STDOUT, tx.clone())));
        stdin = writer.map(|w| Box::new(w) as Writer);
    } else {
        child
            .stdout
            .take()
            .map(|r| tokio::spawn(pump(r, channels::STDOUT, tx.clone())));
        child
            .stderr
            .take()
            .map(|r| tokio::spawn(pump(r, channels::STDERR, tx.clone())));
        stdin = child.stdin.take().map(|w| Box::new(w) as Writer).or(stdin);
    }
    drop(tx);
    // As upstream, an empty first frame tells the client the stream is set up.
    let _ = sink
        .send(Message::binary(channels::frame(channels::STDOUT, &[])))
        .await;
    let group = child.id();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => { kill_group(group); return None; }
            data = output.recv() => match data {
                Some(data) => { let _ = sink.send(Message::binary(data)).await; }
                None => break,
            },
            message = source.next() => match message {
                Some(Ok(Message::Binary(data))) => match channels::decode(&data) {
                    Incoming::Stdin(bytes) => {
                        if let Some(writer) = stdin.as_mut() {
                            if writer.write_all(bytes).await.is_err() || writer.flush().await.is_err() {
                                stdin = None;
                            }
                        }
                    }
                    Incoming::Close(channels::STDIN) => stdin = None,
                    Incoming::Resize(width, height) => {
                        if let Some(pty) = &pty { let _ = spawn::resize(pty, width, height); }
                    }
                    Incoming::Close(_) | Incoming::Ignored => {}
                },
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                    kill_group(group);
                    return None;
                }
                Some(Ok(_)) => {}
            },
        }
    }
    let code = match child.wait().await {
        Ok(status) => exit_code_of(status),
        Err(_) => 128,
    };
    // What the command left behind in its group goes with it.
    kill_group(group);
    let status = channels::exit_status(code).to_string();
    let _ = sink
        .send(Message::binary(channels::frame(
            channels::ERROR,
            status.as_bytes(),
        )))
        .await;
    let _ = sink.send(channels::normal_close()).await;
    Some(code)
}

/// Copies one output of the process into frames of `channel`.
async fn pump(mut reader: impl AsyncRead + Unpin, channel: u8, tx: mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; 32 * 1024];
    while let Ok(n) = reader.read(&mut buf).await {
        if n == 0 || tx.send(channels::frame(channel, &buf[..n])).await.is_err() {
            return;
        }
    }
}

/// Kills the exec's process group (its own group or session, made in the child).
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// The shell convention: the exit code, or 128 + N after death by signal N.
fn exit_code_of(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(128)
}
