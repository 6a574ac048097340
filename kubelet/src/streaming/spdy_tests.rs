//! The SPDY codec without I/O: every frame type round-trips, header blocks share one zlib stream
//! per direction, and frames split or joined across WebSocket messages decode the same.

use super::*;

fn headers(pairs: &[(&str, &str)]) -> Headers {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn round_trip(frames: &[Frame]) -> Vec<Frame> {
    let mut encoder = Encoder::default();
    let mut decoder = Decoder::default();
    for frame in frames {
        decoder.feed(&encoder.encode(frame));
    }
    std::iter::from_fn(|| decoder.next_frame().expect("valid frames")).collect()
}

#[test]
fn every_frame_type_round_trips() {
    let request = headers(&[("streamtype", "data"), ("port", "8080"), ("requestid", "0")]);
    let frames = vec![
        Frame::SynStream {
            stream_id: 1,
            associated_to: 0,
            priority: 3,
            flags: 0,
            headers: request.clone(),
        },
        Frame::SynReply {
            stream_id: 1,
            flags: 0,
            headers: vec![],
        },
        Frame::Headers {
            stream_id: 1,
            flags: FLAG_FIN,
            headers: headers(&[("a", "b\0c")]),
        },
        Frame::Data {
            stream_id: 1,
            flags: FLAG_FIN,
            data: b"GET / HTTP/1.1\r\n\r\n".to_vec(),
        },
        Frame::RstStream {
            stream_id: 3,
            status: PROTOCOL_ERROR,
        },
        Frame::Settings {
            entries: vec![(1, 7, 65536)],
        },
        Frame::Ping { id: 5 },
        Frame::GoAway {
            last_good: 3,
            status: 0,
        },
        Frame::WindowUpdate {
            stream_id: 1,
            delta: 4096,
        },
        Frame::Unknown { kind: 10 },
    ];
    assert_eq!(round_trip(&frames), frames);
}

#[test]
fn the_same_headers_compress_smaller_the_second_time() {
    let mut encoder = Encoder::default();
    let request = headers(&[("streamtype", "error"), ("port", "80"), ("requestid", "12")]);
    let frame = |stream_id| Frame::SynStream {
        stream_id,
        associated_to: 0,
        priority: 0,
        flags: 0,
        headers: request.clone(),
    };
    let first = encoder.encode(&frame(1));
    let second = encoder.encode(&frame(3));
    // The first block carries the zlib header with the dictionary's id (FDICT set)...
    assert_eq!(first[19] & 0x20, 0x20, "{first:02x?}");
    // ... and later ones refer back into the same stream's window.
    assert!(
        second.len() < first.len(),
        "{} vs {}",
        second.len(),
        first.len()
    );
}

#[test]
fn frames_split_and_joined_across_messages_decode_the_same() {
    let mut encoder = Encoder::default();
    let mut wire = encoder.encode(&Frame::SynStream {
        stream_id: 1,
        associated_to: 0,
        priority: 0,
        flags: 0,
        headers: headers(&[("streamtype", "error")]),
    });
    wire.extend(encoder.encode(&Frame::Data {
        stream_id: 1,
        flags: 0,
        data: vec![7; 300],
    }));
    let mut decoder = Decoder::default();
    let mut seen = Vec::new();
    // Go's framer writes each field with its own Write: one WebSocket message per few bytes.
    for chunk in wire.chunks(3) {
        decoder.feed(chunk);
        while let Some(frame) = decoder.next_frame().unwrap() {
            seen.push(frame);
        }
    }
    assert_eq!(seen.len(), 2);
    assert!(matches!(&seen[1], Frame::Data { data, .. } if data.len() == 300));
}

#[test]
fn a_header_block_without_the_dictionary_or_of_another_version_is_an_error() {
    // A block deflated with no dictionary: zlib reads it, but the pairs are cut short.
    let mut decoder = Decoder::default();
    let mut frame = control(2, 0, &[0, 0, 0, 1, 0x78, 0x9c, 0xff]);
    decoder.feed(&frame);
    assert!(matches!(
        decoder.next_frame(),
        Err(SpdyError::HeaderBlock(_))
    ));
    frame = control(6, 0, &[0, 0, 0, 1]);
    frame[1] = 2; // SPDY/2
    let mut decoder = Decoder::default();
    decoder.feed(&frame);
    assert!(matches!(decoder.next_frame(), Err(SpdyError::Version(2))));
}

#[test]
fn plain_header_blocks_parse_and_refuse_truncation() {
    let block = header_block(&headers(&[("Port", "80"), ("requestid", "1")]));
    assert_eq!(&block[..4], &[0, 0, 0, 2]);
    assert_eq!(
        parse_header_block(&block),
        Some(headers(&[("port", "80"), ("requestid", "1")]))
    );
    assert_eq!(parse_header_block(&block[..block.len() - 1]), None);
}
