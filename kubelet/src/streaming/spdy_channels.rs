//! exec and attach over a plain SPDY/3.1 connection, translated to and from the channel messages
//! the WebSocket sessions speak (`channels.rs`), so `session.rs` and `attach.rs` serve both.
//!
//! Kubernetes counterpart: `pkg/kubelet/cri/streaming/remotecommand/httpstream.go`
//! (`createHTTPStreamStreams`, `v4ProtocolHandler`): the client opens one SPDY stream per
//! stream type (header `streamType`: `error`, `stdin`, `stdout`, `stderr`, `resize`), each
//! answered with SYN_REPLY; the session starts once all expected ones are there (the error
//! stream; stdin, stdout and stderr as asked, stderr never with a terminal; resize with one).
//! Bytes on `stdin` and its FIN, and the JSON sizes on `resize`, become channel-0, `[255, 0]`
//! and channel-4 messages; channel 1, 2 and 3 messages become data on `stdout`, `stderr` and
//! `error`; the session's close becomes a FIN on each and the end of the connection. Upstream's
//! apiserver does the reverse translation for WebSocket clients (`streamtranslator.go`).
//!
//! minik simplifies: v5 and v4 only (v5 adds nothing on SPDY, whose streams half-close),
//! no flow control, as for port-forward.

use std::collections::HashMap;
use std::time::Duration;

use futures::channel::mpsc as fmpsc;
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use super::channels;
use super::spdy::{Decoder, Encoder, Frame, FLAG_FIN};

/// How long the client may take to open its streams (upstream's `streamCreationTimeout`).
const STREAM_CREATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The stream types a session waits for, from the kubelet's query (`input`, `output`,
/// `error`, `tty`).
pub fn expected_streams(pairs: &[(String, String)]) -> Vec<&'static str> {
    let on = |key: &str| {
        pairs
            .iter()
            .any(|(k, v)| k == key && (v == "1" || v == "true"))
    };
    let mut expected = vec!["error"];
    for (wanted, kind) in [
        (on("input"), "stdin"),
        (on("output"), "stdout"),
        (on("error") && !on("tty"), "stderr"),
        (on("tty"), "resize"),
    ] {
        if wanted {
            expected.push(kind);
        }
    }
    expected
}

/// The channel of a stream type.
fn channel_of(kind: &str) -> Option<u8> {
    Some(match kind {
        "stdin" => channels::STDIN,
        "stdout" => channels::STDOUT,
        "stderr" => channels::STDERR,
        "error" => channels::ERROR,
        "resize" => channels::RESIZE,
        _ => return None,
    })
}

/// The session's side of the bridge: a sink of channel messages and a stream of them.
pub type Bridge = (
    fmpsc::Sender<Message>,
    fmpsc::Receiver<Result<Message, std::convert::Infallible>>,
);

/// Waits for the client's streams on `io`, then translates until either side ends.
pub async fn bridge<S>(io: S, expected: Vec<&'static str>) -> Result<Bridge, String>
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut reader, mut writer) = tokio::io::split(io);
    let (frames_tx, mut frames_rx) = mpsc::channel::<Frame>(64);
    tokio::spawn(async move {
        let mut encoder = Encoder::default();
        while let Some(frame) = frames_rx.recv().await {
            let last = matches!(frame, Frame::GoAway { .. });
            if writer.write_all(&encoder.encode(&frame)).await.is_err() || last {
                break;
            }
        }
        let _ = writer.shutdown().await;
    });
    let mut decoder = Decoder::default();
    let opening = open_streams(&mut reader, &mut decoder, &frames_tx, &expected);
    let streams = tokio::time::timeout(STREAM_CREATION_TIMEOUT, opening)
        .await
        .map_err(|_| format!("timed out waiting for the client's streams {expected:?}"))??;
    let (in_tx, in_rx) = fmpsc::channel(16);
    let (out_tx, out_rx) = fmpsc::channel(16);
    let ids: HashMap<u8, u32> = streams.iter().map(|(id, ch)| (*ch, *id)).collect();
    tokio::spawn(read_frames(
        reader,
        decoder,
        streams,
        frames_tx.clone(),
        in_tx,
    ));
    tokio::spawn(write_messages(out_rx, ids, frames_tx));
    Ok((out_tx, in_rx))
}

/// Answers SYN_STREAMs until every expected stream type is open: (stream id, channel).
async fn open_streams<R: AsyncRead + Unpin>(
    reader: &mut R,
    decoder: &mut Decoder,
    frames: &mpsc::Sender<Frame>,
    expected: &[&'static str],
) -> Result<HashMap<u32, u8>, String> {
    let mut streams = HashMap::new();
    let mut buf = vec![0u8; 16 * 1024];
    while streams.len() < expected.len() {
        while let Some(frame) = decoder.next_frame().map_err(|e| e.to_string())? {
            if let Frame::SynStream {
                stream_id, headers, ..
            } = frame
            {
                let kind = headers
                    .iter()
                    .find(|(k, _)| k == "streamtype")
                    .map(|(_, v)| v.as_str());
                let channel = kind
                    .and_then(channel_of)
                    .ok_or("a stream without a known streamType")?;
                let reply = Frame::SynReply {
                    stream_id,
                    flags: 0,
                    headers: Vec::new(),
                };
                frames.send(reply).await.map_err(|e| e.to_string())?;
                streams.insert(stream_id, channel);
            } else if let Frame::Ping { id } = frame {
                let _ = frames.send(Frame::Ping { id }).await;
            }
        }
        if streams.len() >= expected.len() {
            break;
        }
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return Err("the client went away before opening its streams".into()),
            Ok(n) => decoder.feed(&buf[..n]),
        }
    }
    Ok(streams)
}

/// The client's frames, as channel messages; the connection's end is a close.
async fn read_frames<S: AsyncRead>(
    mut reader: ReadHalf<S>,
    mut decoder: Decoder,
    streams: HashMap<u32, u8>,
    frames: mpsc::Sender<Frame>,
    mut session: fmpsc::Sender<Result<Message, std::convert::Infallible>>,
) {
    let mut resize = Vec::new();
    let mut buf = vec![0u8; 32 * 1024];
    'connection: loop {
        while let Ok(Some(frame)) = decoder.next_frame() {
            let messages = match frame {
                Frame::Data {
                    stream_id,
                    flags,
                    data,
                } => incoming(streams.get(&stream_id).copied(), flags, data, &mut resize),
                Frame::Ping { id } => {
                    let _ = frames.send(Frame::Ping { id }).await;
                    Vec::new()
                }
                Frame::GoAway { .. } => break 'connection,
                _ => Vec::new(),
            };
            for message in messages {
                if session.send(Ok(Message::binary(message))).await.is_err() {
                    return;
                }
            }
        }
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => decoder.feed(&buf[..n]),
        }
    }
    let _ = session.send(Ok(Message::Close(None))).await;
}

/// The channel messages one data frame of the client makes: stdin bytes (and its end), or the
/// complete JSON sizes on the resize stream (they may arrive in pieces).
pub fn incoming(
    channel: Option<u8>,
    flags: u8,
    data: Vec<u8>,
    resize: &mut Vec<u8>,
) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    match channel {
        Some(channels::STDIN) => {
            if !data.is_empty() {
                out.push(channels::frame(channels::STDIN, &data));
            }
            if flags & FLAG_FIN != 0 {
                out.push(vec![channels::CLOSE, channels::STDIN]);
            }
        }
        Some(channels::RESIZE) => {
            resize.extend_from_slice(&data);
            let mut sizes =
                serde_json::Deserializer::from_slice(resize).into_iter::<serde_json::Value>();
            let mut used = 0;
            while let Some(Ok(size)) = sizes.next() {
                used = sizes.byte_offset();
                out.push(channels::frame(
                    channels::RESIZE,
                    size.to_string().as_bytes(),
                ));
            }
            resize.drain(..used);
        }
        _ => {}
    }
    out
}

/// The session's channel messages, as data on the client's streams; its close ends them all.
async fn write_messages(
    mut messages: fmpsc::Receiver<Message>,
    ids: HashMap<u8, u32>,
    frames: mpsc::Sender<Frame>,
) {
    while let Some(message) = messages.next().await {
        let Message::Binary(bytes) = message else {
            break;
        };
        let Some((channel, data)) = bytes.split_first() else {
            continue;
        };
        let Some(&stream_id) = ids.get(channel) else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        let frame = Frame::Data {
            stream_id,
            flags: 0,
            data: data.to_vec(),
        };
        if frames.send(frame).await.is_err() {
            return;
        }
    }
    for channel in [channels::STDOUT, channels::STDERR, channels::ERROR] {
        if let Some(&stream_id) = ids.get(&channel) {
            let fin = Frame::Data {
                stream_id,
                flags: FLAG_FIN,
                data: Vec::new(),
            };
            let _ = frames.send(fin).await;
        }
    }
    // As spdystream's Close: GOAWAY, after which the writer shuts the connection down.
    let _ = frames
        .send(Frame::GoAway {
            last_good: 0,
            status: 0,
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(query: &[(&str, &str)]) -> Vec<(String, String)> {
        query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_expected_streams_follow_the_query_and_a_terminal_has_no_stderr() {
        let piped = pairs(&[("input", "1"), ("output", "1"), ("error", "1")]);
        assert_eq!(
            expected_streams(&piped),
            ["error", "stdin", "stdout", "stderr"]
        );
        let tty = pairs(&[
            ("input", "1"),
            ("output", "1"),
            ("error", "1"),
            ("tty", "1"),
        ]);
        assert_eq!(
            expected_streams(&tty),
            ["error", "stdin", "stdout", "resize"]
        );
    }

    #[test]
    fn stdin_data_its_fin_and_pieces_of_sizes_become_channel_messages() {
        let mut resize = Vec::new();
        let stdin = incoming(Some(channels::STDIN), FLAG_FIN, b"hi".to_vec(), &mut resize);
        assert_eq!(stdin, vec![vec![0, b'h', b'i'], vec![255, 0]]);
        let half = incoming(
            Some(channels::RESIZE),
            0,
            br#"{"Width":80,"#.to_vec(),
            &mut resize,
        );
        assert!(half.is_empty());
        let whole = incoming(
            Some(channels::RESIZE),
            0,
            br#""Height":24}"#.to_vec(),
            &mut resize,
        );
        assert_eq!(whole.len(), 1);
        assert_eq!(
            channels::decode(&whole[0]),
            channels::Incoming::Resize(80, 24)
        );
        assert!(resize.is_empty());
    }

    #[tokio::test]
    async fn the_clients_streams_are_answered_and_carry_channel_messages_both_ways() {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let bridged = tokio::spawn(bridge(server, vec!["error", "stdin", "stdout"]));
        let (mut from_server, mut to_server) = tokio::io::split(client);
        let mut encoder = Encoder::default();
        for (stream_id, kind) in [(1, "error"), (3, "stdin"), (5, "stdout")] {
            let headers = vec![("streamtype".to_string(), kind.to_string())];
            let open = Frame::SynStream {
                stream_id,
                associated_to: 0,
                priority: 0,
                flags: 0,
                headers,
            };
            to_server.write_all(&encoder.encode(&open)).await.unwrap();
        }
        let (mut sink, mut source) = bridged.await.unwrap().unwrap();
        let stdin = Frame::Data {
            stream_id: 3,
            flags: FLAG_FIN,
            data: b"hi".to_vec(),
        };
        to_server.write_all(&encoder.encode(&stdin)).await.unwrap();
        assert_eq!(
            source.next().await,
            Some(Ok(Message::binary(vec![0, b'h', b'i'])))
        );
        assert_eq!(source.next().await, Some(Ok(Message::binary(vec![255, 0]))));
        sink.send(Message::binary(vec![1, b'o'])).await.unwrap();
        sink.send(Message::binary(b"\x03{}".to_vec()))
            .await
            .unwrap();
        drop(sink); // the session's end

        let mut wire = Vec::new();
        from_server.read_to_end(&mut wire).await.unwrap();
        let mut decoder = Decoder::default();
        decoder.feed(&wire);
        let mut frames = Vec::new();
        while let Some(frame) = decoder.next_frame().unwrap() {
            frames.push(frame);
        }
        let replies = frames
            .iter()
            .filter(|f| matches!(f, Frame::SynReply { .. }))
            .count();
        assert_eq!(replies, 3);
        let data: Vec<_> = frames
            .iter()
            .filter_map(|f| match f {
                Frame::Data {
                    stream_id,
                    flags,
                    data,
                } => Some((*stream_id, *flags, data.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            data,
            vec![
                (5, 0, b"o".to_vec()),
                (1, 0, b"{}".to_vec()),
                (5, FLAG_FIN, Vec::new()),
                (1, FLAG_FIN, Vec::new()),
            ]
        );
        assert!(matches!(frames.last(), Some(Frame::GoAway { .. })));
    }
}
