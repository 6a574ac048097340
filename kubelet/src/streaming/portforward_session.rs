//! One port-forward session: SPDY frames in and out of the WebSocket tunnel, one task per
//! forwarded connection splicing its data stream with a TCP connection to the pod.
//!
//! Kubernetes counterpart: `pkg/kubelet/cri/streaming/portforward/httpstream.go`
//! (`httpStreamHandler.run`, `portForward`) over spdystream's connection: every stream is
//! answered with SYN_REPLY, pings are echoed, a pair is forwarded once both halves exist, and
//! when forwarding ends both streams are closed (a FIN data frame), the error stream after the
//! message if there is one.
//!
//! The SPDY byte stream comes either in binary WebSocket messages (kubectl 1.31+'s tunnel,
//! [`run`]) or as the upgraded connection itself (a plain `Upgrade: SPDY/3.1`, [`run_plain`]).
//!
//! minik simplifies: no SPDY flow-control windows (a bounded queue per stream holds the client
//! back instead); a half-close from the client half-closes the pod connection, and the pod's
//! answer is still delivered for a second.

use std::collections::HashMap;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

use super::portforward::{forward_error, stream_request, Pair, Pairing, Target};
use super::spdy::{Decoder, Encoder, Frame, FLAG_FIN, PROTOCOL_ERROR};

/// What the client sent on a data stream.
enum Inbound {
    Bytes(Vec<u8>),
    Fin,
}

/// Runs a session tunnelled in a WebSocket until the client goes away or the kubelet stops;
/// returns how many connections were forwarded.
pub async fn run<S>(ws: WebSocketStream<S>, target: Target, shutdown: CancellationToken) -> usize
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sink, source) = ws.split();
    // Binary messages carry the bytes; a close (or an error) ends the input.
    let input = source
        .take_while(|m| futures::future::ready(matches!(m, Ok(m) if !m.is_close())))
        .filter_map(|m| async move {
            match m {
                Ok(Message::Binary(bytes)) => Some(bytes.to_vec()),
                _ => None,
            }
        });
    let output = sink.with(|out: Out| {
        futures::future::ready(Ok::<_, tokio_tungstenite::tungstenite::Error>(match out {
            Out::Bytes(bytes) => Message::binary(bytes),
            Out::End => super::channels::normal_close(),
        }))
    });
    serve(Box::pin(input), output, target, shutdown).await
}

/// Runs a session on a plain SPDY/3.1 connection (the upgraded connection is the SPDY stream).
pub async fn run_plain<S>(io: S, target: Target, shutdown: CancellationToken) -> usize
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (reader, writer) = tokio::io::split(io);
    let input = futures::stream::unfold(reader, |mut reader| async move {
        let mut buf = vec![0u8; 32 * 1024];
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((buf, reader))
            }
        }
    });
    let output = futures::sink::unfold(writer, |mut writer, out: Out| async move {
        match out {
            Out::Bytes(bytes) => writer.write_all(&bytes).await?,
            Out::End => writer.shutdown().await?,
        }
        Ok::<_, std::io::Error>(writer)
    });
    serve(Box::pin(input), Box::pin(output), target, shutdown).await
}

/// What goes out on the transport: encoded frames, then the end of the session.
enum Out {
    Bytes(Vec<u8>),
    End,
}

/// The session over any byte transport: SPDY frames decoded from `input`, encoded into
/// `output`.
async fn serve<I, O>(mut input: I, output: O, target: Target, shutdown: CancellationToken) -> usize
where
    I: futures::Stream<Item = Vec<u8>> + Unpin,
    O: futures::Sink<Out> + Unpin + Send + 'static,
{
    let (out, frames) = mpsc::channel::<Frame>(64);
    let session = shutdown.child_token();
    let writer = tokio::spawn(write_frames(output, frames, session.clone()));
    let mut decoder = Decoder::default();
    let mut pairing = Pairing::default();
    let mut streams: HashMap<u32, mpsc::Sender<Inbound>> = HashMap::new();
    let mut forwarded = 0;
    'session: loop {
        let bytes = tokio::select! {
            _ = session.cancelled() => break,
            bytes = input.next() => match bytes {
                Some(bytes) => bytes,
                None => break,
            },
        };
        decoder.feed(&bytes);
        loop {
            let frame = match decoder.next_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(error) => {
                    tracing::info!(pod = %target.pod, %error, "port-forward protocol error");
                    break 'session;
                }
            };
            let step = Step {
                out: &out,
                target: &target,
                session: &session,
            };
            match step.frame(frame, &mut pairing, &mut streams).await {
                Flow::Continue => {}
                Flow::Forwarded => forwarded += 1,
                Flow::Stop => break 'session,
            }
        }
    }
    session.cancel();
    drop(out);
    let _ = writer.await;
    forwarded
}

enum Flow {
    Continue,
    Forwarded,
    Stop,
}

/// What handling one frame needs.
struct Step<'a> {
    out: &'a mpsc::Sender<Frame>,
    target: &'a Target,
    session: &'a CancellationToken,
}

impl Step<'_> {
    async fn frame(
        &self,
        frame: Frame,
        pairing: &mut Pairing,
        streams: &mut HashMap<u32, mpsc::Sender<Inbound>>,
    ) -> Flow {
        match frame {
            Frame::SynStream {
                stream_id, headers, ..
            } => {
                let request = match stream_request(&headers) {
                    Ok(request) => request,
                    Err(message) => {
                        tracing::info!(pod = %self.target.pod, stream_id, %message, "stream refused");
                        let reset = Frame::RstStream {
                            stream_id,
                            status: PROTOCOL_ERROR,
                        };
                        return self.send(reset).await;
                    }
                };
                let reply = Frame::SynReply {
                    stream_id,
                    flags: 0,
                    headers: Vec::new(),
                };
                if matches!(self.send(reply).await, Flow::Stop) {
                    return Flow::Stop;
                }
                let Some(pair) = pairing.add(stream_id, &request) else {
                    return Flow::Continue;
                };
                let (tx, rx) = mpsc::channel(64);
                streams.insert(pair.data, tx);
                let (target, out) = (self.target.clone(), self.out.clone());
                tokio::spawn(forward(pair, target, rx, out, self.session.clone()));
                Flow::Forwarded
            }
            Frame::Data {
                stream_id,
                flags,
                data,
            } => {
                if let Some(stream) = streams.get(&stream_id) {
                    let mut gone =
                        !data.is_empty() && stream.send(Inbound::Bytes(data)).await.is_err();
                    if flags & FLAG_FIN != 0 {
                        // The client sends no more: the queue ends after the FIN.
                        let _ = stream.send(Inbound::Fin).await;
                        gone = true;
                    }
                    if gone {
                        streams.remove(&stream_id);
                    }
                }
                Flow::Continue
            }
            // The client is done with the stream: dropping its queue ends the forwarding.
            Frame::RstStream { stream_id, .. } => {
                streams.remove(&stream_id);
                Flow::Continue
            }
            Frame::Ping { id } => self.send(Frame::Ping { id }).await,
            Frame::GoAway { .. } => Flow::Stop,
            _ => Flow::Continue,
        }
    }

    async fn send(&self, frame: Frame) -> Flow {
        match self.out.send(frame).await {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::Stop,
        }
    }
}

/// Encodes frames in order (the header compressor's stream is the wire's order) into the
/// transport, then its end (a WebSocket's normal close, a plain connection's shutdown).
async fn write_frames<S>(mut sink: S, mut frames: mpsc::Receiver<Frame>, session: CancellationToken)
where
    S: futures::Sink<Out> + Unpin,
{
    let mut encoder = Encoder::default();
    while let Some(frame) = frames.recv().await {
        if sink.send(Out::Bytes(encoder.encode(&frame))).await.is_err() {
            session.cancel();
            return;
        }
    }
    let _ = sink.send(Out::End).await;
}

/// Forwards one connection; closes both streams at the end, the error stream with the reason.
async fn forward(
    pair: Pair,
    target: Target,
    inbound: mpsc::Receiver<Inbound>,
    out: mpsc::Sender<Frame>,
    session: CancellationToken,
) {
    let fin = |stream_id| Frame::Data {
        stream_id,
        flags: FLAG_FIN,
        data: Vec::new(),
    };
    match TcpStream::connect((target.ip, pair.port)).await {
        Ok(tcp) => splice(tcp, pair.data, inbound, &out, &session).await,
        Err(error) => {
            let message = forward_error(&target, pair.port, &error);
            tracing::info!(pod = %target.pod, port = pair.port, %message, "port-forward connection failed");
            let data = message.into_bytes();
            let _ = out
                .send(Frame::Data {
                    stream_id: pair.error,
                    flags: 0,
                    data,
                })
                .await;
        }
    }
    let _ = out.send(fin(pair.data)).await;
    let _ = out.send(fin(pair.error)).await;
}

/// How long the pod may still answer once the client is done sending (containerd's
/// `PortForward` waits 1 s for the other direction, after socat).
const HALF_CLOSED_GRACE: Duration = Duration::from_secs(1);

/// Copies the pod's bytes onto the data stream and the stream's onto the pod until the pod is
/// done sending (or a second after the client is), the client resets the stream, or the
/// session ends.
async fn splice(
    tcp: TcpStream,
    stream_id: u32,
    mut inbound: mpsc::Receiver<Inbound>,
    out: &mpsc::Sender<Frame>,
    session: &CancellationToken,
) {
    let (mut from_pod, mut to_pod) = tcp.into_split();
    let mut buf = vec![0u8; 32 * 1024];
    let mut client_open = true;
    let grace = tokio::time::sleep(Duration::from_secs(24 * 3600));
    tokio::pin!(grace);
    loop {
        tokio::select! {
            _ = session.cancelled() => return,
            _ = &mut grace => return,
            read = from_pod.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let frame = Frame::Data { stream_id, flags: 0, data: buf[..n].to_vec() };
                    if out.send(frame).await.is_err() {
                        return;
                    }
                }
            },
            message = inbound.recv(), if client_open => match message {
                Some(Inbound::Bytes(bytes)) => {
                    if to_pod.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
                Some(Inbound::Fin) => {
                    client_open = false;
                    let _ = to_pod.shutdown().await;
                    grace.as_mut().reset(tokio::time::Instant::now() + HALF_CLOSED_GRACE);
                }
                None => return,
            },
        }
    }
}
