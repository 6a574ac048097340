//! The container log: stdout and stderr copied line by line into one file in CRI format.
//!
//! Kubernetes counterpart: the CRI log format (`kubernetes/cri-api` "container log"; written by
//! containerd's `pkg/cri/io/logger.go`, read by the kubelet's `pkg/kubelet/kuberuntime/logs`):
//! `TIMESTAMP STREAM TAG CONTENT`, TAG `F` for a full line or `P` for a piece of a longer one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use jiff::Timestamp;

/// A CRI log line is split into `P` (partial) records past this many bytes.
const MAX_LOG_LINE: u64 = 16 * 1024;

pub(super) fn open_log(path: &Path) -> io::Result<File> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o640)
        .open(path)
}

/// Copies one stream into the log file, one CRI record per line.
pub(super) fn spawn_copier(
    reader: impl Read + Send + 'static,
    stream: &'static str,
    log: Arc<Mutex<File>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::with_capacity(64 * 1024, reader);
        let mut line = Vec::with_capacity(256);
        loop {
            line.clear();
            match reader
                .by_ref()
                .take(MAX_LOG_LINE)
                .read_until(b'\n', &mut line)
            {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let record = cri_log_record(Timestamp::now(), stream, &line);
            if let Ok(mut file) = log.lock() {
                let _ = file.write_all(&record);
            }
        }
    })
}

/// One CRI log record: `TIMESTAMP STREAM TAG CONTENT\n`, TAG `F` for a full line, `P` for a piece
/// of a longer one (the kubelet's log reader joins them).
pub fn cri_log_record(at: Timestamp, stream: &str, chunk: &[u8]) -> Vec<u8> {
    let (content, tag) = match chunk.strip_suffix(b"\n") {
        Some(content) => (content, "F"),
        None if chunk.len() as u64 >= MAX_LOG_LINE => (chunk, "P"),
        None => (chunk, "F"), // the stream ended without a newline
    };
    let mut record = format!("{} {stream} {tag} ", rfc3339_nanos(at)).into_bytes();
    record.extend_from_slice(content);
    record.push(b'\n');
    record
}

/// RFC 3339 with exactly nine fractional digits, as in CRI logs: `2026-11-22T02:30:00.123456789Z`.
pub fn rfc3339_nanos(at: Timestamp) -> String {
    jiff::fmt::temporal::DateTimePrinter::new()
        .precision(Some(9))
        .timestamp_to_string(&at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cri_records_mark_full_and_partial_lines() {
        let at: Timestamp = "2026-11-22T02:30:00.123Z".parse().unwrap();
        assert_eq!(
            cri_log_record(at, "stdout", b"hello\n"),
            b"2026-11-22T02:30:00.123000000Z stdout F hello\n"
        );
        let long = vec![b'x'; MAX_LOG_LINE as usize];
        assert!(cri_log_record(at, "stderr", &long)
            .starts_with(b"2026-11-22T02:30:00.123000000Z stderr P xxx"));
        assert_eq!(
            cri_log_record(at, "stdout", b"tail"),
            b"2026-11-22T02:30:00.123000000Z stdout F tail\n"
        );
    }
}
