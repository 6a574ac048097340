//! A SPDY/3.1 frame codec: the framing `kubectl port-forward` speaks inside its WebSocket tunnel.
//!
//! Kubernetes counterpart: `github.com/moby/spdystream/spdy` (`read.go`, `write.go`, `types.go`),
//! the framer under client-go's `httpstream/spdy`. Control frames are `[1|version:15][type:16]
//! [flags:8][length:24]`, data frames `[0|stream:31][flags:8][length:24]`. Header blocks (in
//! SYN_STREAM, SYN_REPLY, HEADERS) are one zlib stream per direction for the whole connection,
//! flushed after each block, started with SPDY/3's fixed dictionary (`spdy_dictionary.rs`).
//!
//! minik simplifies: no flow control (spdystream sends no WINDOW_UPDATE and honours none either),
//! no server push, CREDENTIAL and unknown control frames are decoded as `Unknown` and ignored.
//! Pure: bytes in, frames out, no I/O.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::spdy_dictionary::dictionary;

/// The only version spoken.
pub const VERSION: u16 = 3;
/// FIN: the sender's last frame on this stream.
pub const FLAG_FIN: u8 = 0x01;
/// RST_STREAM status: a stream the receiver does not know or cannot serve.
pub const PROTOCOL_ERROR: u32 = 1;

/// A header block: lower-case names; several values of one name are joined by NUL.
pub type Headers = Vec<(String, String)>;

/// One frame, decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// Opens a stream (type 1).
    SynStream {
        stream_id: u32,
        associated_to: u32,
        priority: u8,
        flags: u8,
        headers: Headers,
    },
    /// Accepts a stream (type 2).
    SynReply {
        stream_id: u32,
        flags: u8,
        headers: Headers,
    },
    /// Aborts a stream (type 3).
    RstStream { stream_id: u32, status: u32 },
    /// Connection settings (type 4): (flags, id, value) entries.
    Settings { entries: Vec<(u8, u32, u32)> },
    /// A liveness check, echoed back by the receiver (type 6).
    Ping { id: u32 },
    /// The sender stops (type 7).
    GoAway { last_good: u32, status: u32 },
    /// More headers on a stream (type 8).
    Headers {
        stream_id: u32,
        flags: u8,
        headers: Headers,
    },
    /// Flow control (type 9), ignored.
    WindowUpdate { stream_id: u32, delta: u32 },
    /// Stream bytes.
    Data {
        stream_id: u32,
        flags: u8,
        data: Vec<u8>,
    },
    /// A control frame of another type, skipped.
    Unknown { kind: u16 },
}

/// What makes a connection unusable.
#[derive(Debug, thiserror::Error)]
pub enum SpdyError {
    /// A control frame of another version.
    #[error("unsupported SPDY version {0}")]
    Version(u16),
    /// A frame shorter than its type needs.
    #[error("truncated {0} frame")]
    Truncated(&'static str),
    /// The header block does not inflate or parse.
    #[error("invalid header block: {0}")]
    HeaderBlock(String),
}

/// Encodes frames; owns the sending direction's header compressor.
pub struct Encoder {
    zlib: Compress,
}

impl Default for Encoder {
    fn default() -> Self {
        let mut zlib = Compress::new(Compression::default(), true);
        zlib.set_dictionary(dictionary())
            .expect("a fresh deflate stream takes a dictionary");
        Self { zlib }
    }
}

impl Encoder {
    /// The frame's bytes on the wire.
    pub fn encode(&mut self, frame: &Frame) -> Vec<u8> {
        match frame {
            Frame::Data {
                stream_id,
                flags,
                data,
            } => {
                let mut out = word(stream_id & 0x7fff_ffff).to_vec();
                out.extend(flags_and_length(*flags, data.len()));
                out.extend(data);
                out
            }
            Frame::SynStream {
                stream_id,
                associated_to,
                priority,
                flags,
                headers,
            } => {
                let mut body = word(*stream_id).to_vec();
                body.extend(word(*associated_to));
                body.extend([priority << 5, 0]);
                body.extend(self.compress(headers));
                control(1, *flags, &body)
            }
            Frame::SynReply {
                stream_id,
                flags,
                headers,
            } => self.with_headers(2, *stream_id, *flags, headers),
            Frame::Headers {
                stream_id,
                flags,
                headers,
            } => self.with_headers(8, *stream_id, *flags, headers),
            Frame::RstStream { stream_id, status } => control(3, 0, &pair(*stream_id, *status)),
            Frame::Settings { entries } => {
                let mut body = word(entries.len() as u32).to_vec();
                for (flags, id, value) in entries {
                    body.extend(word(u32::from(*flags) << 24 | (id & 0xff_ffff)));
                    body.extend(word(*value));
                }
                control(4, 0, &body)
            }
            Frame::Ping { id } => control(6, 0, &word(*id)),
            Frame::GoAway { last_good, status } => control(7, 0, &pair(*last_good, *status)),
            Frame::WindowUpdate { stream_id, delta } => control(9, 0, &pair(*stream_id, *delta)),
            Frame::Unknown { kind } => control(*kind, 0, &[]),
        }
    }

    fn with_headers(&mut self, kind: u16, stream_id: u32, flags: u8, headers: &Headers) -> Vec<u8> {
        let mut body = word(stream_id).to_vec();
        body.extend(self.compress(headers));
        control(kind, flags, &body)
    }

    /// The block deflated on the connection's stream and sync-flushed, as Go's `zlib.Writer.Flush`.
    fn compress(&mut self, headers: &Headers) -> Vec<u8> {
        let plain = header_block(headers);
        let start = self.zlib.total_in();
        let mut out = Vec::with_capacity(plain.len() + 64);
        loop {
            let consumed = (self.zlib.total_in() - start) as usize;
            if out.len() == out.capacity() {
                out.reserve(256);
            }
            let status = self
                .zlib
                .compress_vec(&plain[consumed..], &mut out, FlushCompress::Sync)
                .expect("deflate of an in-memory buffer");
            let done = (self.zlib.total_in() - start) as usize == plain.len();
            if (done && out.len() < out.capacity()) || status == Status::StreamEnd {
                return out;
            }
        }
    }
}

/// Decodes frames from the bytes received so far; owns the receiving direction's inflater.
pub struct Decoder {
    zlib: Decompress,
    buffer: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Self {
            zlib: Decompress::new(true),
            buffer: Vec::new(),
        }
    }
}

impl Decoder {
    /// Appends received bytes (frames may span WebSocket messages, and messages frames).
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next whole frame, `None` until enough bytes have arrived.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, SpdyError> {
        if self.buffer.len() < 8 {
            return Ok(None);
        }
        let length = u32::from_be_bytes([0, self.buffer[5], self.buffer[6], self.buffer[7]]);
        let end = 8 + length as usize;
        if self.buffer.len() < end {
            return Ok(None);
        }
        let frame: Vec<u8> = self.buffer.drain(..end).collect();
        let flags = frame[4];
        let body = &frame[8..];
        if frame[0] & 0x80 == 0 {
            let stream_id = read_word(&frame, 0) & 0x7fff_ffff;
            let data = body.to_vec();
            return Ok(Some(Frame::Data {
                stream_id,
                flags,
                data,
            }));
        }
        let version = u16::from_be_bytes([frame[0] & 0x7f, frame[1]]);
        if version != VERSION {
            return Err(SpdyError::Version(version));
        }
        let kind = u16::from_be_bytes([frame[2], frame[3]]);
        self.control(kind, flags, body).map(Some)
    }

    fn control(&mut self, kind: u16, flags: u8, body: &[u8]) -> Result<Frame, SpdyError> {
        let need = |n: usize, name| {
            (body.len() >= n)
                .then_some(())
                .ok_or(SpdyError::Truncated(name))
        };
        Ok(match kind {
            1 => {
                need(10, "SYN_STREAM")?;
                Frame::SynStream {
                    stream_id: read_word(body, 0) & 0x7fff_ffff,
                    associated_to: read_word(body, 4) & 0x7fff_ffff,
                    priority: body[8] >> 5,
                    flags,
                    headers: self.headers(&body[10..])?,
                }
            }
            2 | 8 => {
                need(4, "SYN_REPLY")?;
                let (stream_id, headers) =
                    (read_word(body, 0) & 0x7fff_ffff, self.headers(&body[4..])?);
                match kind {
                    2 => Frame::SynReply {
                        stream_id,
                        flags,
                        headers,
                    },
                    _ => Frame::Headers {
                        stream_id,
                        flags,
                        headers,
                    },
                }
            }
            3 => {
                need(8, "RST_STREAM")?;
                Frame::RstStream {
                    stream_id: read_word(body, 0) & 0x7fff_ffff,
                    status: read_word(body, 4),
                }
            }
            4 => {
                need(4, "SETTINGS")?;
                let count = read_word(body, 0) as usize;
                need(4 + count.saturating_mul(8), "SETTINGS")?;
                let entries = (0..count)
                    .map(|i| {
                        let flag_id = read_word(body, 4 + i * 8);
                        (
                            (flag_id >> 24) as u8,
                            flag_id & 0xff_ffff,
                            read_word(body, 8 + i * 8),
                        )
                    })
                    .collect();
                Frame::Settings { entries }
            }
            6 => {
                need(4, "PING")?;
                Frame::Ping {
                    id: read_word(body, 0),
                }
            }
            7 => {
                need(8, "GOAWAY")?;
                Frame::GoAway {
                    last_good: read_word(body, 0) & 0x7fff_ffff,
                    status: read_word(body, 4),
                }
            }
            9 => {
                need(8, "WINDOW_UPDATE")?;
                Frame::WindowUpdate {
                    stream_id: read_word(body, 0) & 0x7fff_ffff,
                    delta: read_word(body, 4) & 0x7fff_ffff,
                }
            }
            kind => Frame::Unknown { kind },
        })
    }

    /// Inflates one block on the connection's stream; the dictionary is given when zlib asks.
    fn headers(&mut self, block: &[u8]) -> Result<Headers, SpdyError> {
        let invalid = |e: &dyn std::fmt::Display| SpdyError::HeaderBlock(e.to_string());
        let start = self.zlib.total_in();
        let mut out = Vec::with_capacity(block.len() * 4 + 64);
        loop {
            let consumed = (self.zlib.total_in() - start) as usize;
            if out.len() == out.capacity() {
                out.reserve(out.capacity());
            }
            let produced = out.len();
            match self
                .zlib
                .decompress_vec(&block[consumed..], &mut out, FlushDecompress::Sync)
            {
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.zlib
                        .set_dictionary(dictionary())
                        .map_err(|e| invalid(&e))?;
                    continue;
                }
                Err(e) => return Err(invalid(&e)),
            }
            let now = (self.zlib.total_in() - start) as usize;
            let stalled = now == consumed && out.len() == produced;
            if (now == block.len() && out.len() < out.capacity()) || stalled {
                break;
            }
        }
        parse_header_block(&out).ok_or_else(|| invalid(&"malformed name/value pairs"))
    }
}

/// The uncompressed block: `count`, then `len name len value` for each pair (32-bit lengths).
pub fn header_block(headers: &Headers) -> Vec<u8> {
    let mut out = word(headers.len() as u32).to_vec();
    for (name, value) in headers {
        out.extend(word(name.len() as u32));
        out.extend(name.to_ascii_lowercase().as_bytes());
        out.extend(word(value.len() as u32));
        out.extend(value.as_bytes());
    }
    out
}

/// The pairs of an uncompressed block, `None` when it is cut short.
pub fn parse_header_block(block: &[u8]) -> Option<Headers> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Option<&[u8]> {
        let slice = block.get(at..at.checked_add(n)?)?;
        at += n;
        Some(slice)
    };
    let length = |bytes: &[u8]| u32::from_be_bytes(bytes.try_into().expect("4 bytes")) as usize;
    let count = length(take(4)?);
    let mut headers = Vec::with_capacity(count.min(64));
    for _ in 0..count {
        let n = length(take(4)?);
        let name = String::from_utf8_lossy(take(n)?).into_owned();
        let n = length(take(4)?);
        let value = String::from_utf8_lossy(take(n)?).into_owned();
        headers.push((name, value));
    }
    Some(headers)
}

fn control(kind: u16, flags: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + body.len());
    out.extend((0x8000 | VERSION).to_be_bytes());
    out.extend(kind.to_be_bytes());
    out.extend(flags_and_length(flags, body.len()));
    out.extend(body);
    out
}

fn flags_and_length(flags: u8, length: usize) -> [u8; 4] {
    word(u32::from(flags) << 24 | (length as u32 & 0xff_ffff))
}

fn word(value: u32) -> [u8; 4] {
    value.to_be_bytes()
}

fn pair(a: u32, b: u32) -> [u8; 8] {
    let mut out = [0; 8];
    out[..4].copy_from_slice(&word(a));
    out[4..].copy_from_slice(&word(b));
    out
}

fn read_word(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().expect("checked length"))
}

#[cfg(test)]
#[path = "spdy_tests.rs"]
mod tests;
