//! A steady stream of requests through the proxy, each one counted as answered or failed.
//!
//! Kubernetes counterpart: none; this is the user in the seeds' story, the client whose requests
//! are dropped while a deleted pod is still listed by a consumer of its endpoints. Each request
//! opens a new TCP connection (as a client without keep-alive does), sends `GET /` and reads the
//! answer: the `minik/web` program answers with its pod name, so every outcome also says which
//! replica served it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// What happened to one request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    /// When it was sent, in milliseconds after the load started.
    pub t_ms: f64,
    /// The pod that answered, or `None` if the request failed.
    pub served_by: Option<String>,
    /// Why it failed (`connection refused`, `connection reset`, `timeout` …).
    pub error: Option<String>,
}

impl Outcome {
    /// Whether the request got a 200 answer.
    pub fn ok(&self) -> bool {
        self.served_by.is_some()
    }
}

/// Requests sent and failed so far, for a live view.
#[derive(Debug, Default)]
pub struct Tally {
    /// Requests answered or failed so far.
    pub done: AtomicUsize,
    /// Requests failed so far.
    pub failed: AtomicUsize,
}

impl Tally {
    /// `N requests, F failed` (nothing before the first request).
    pub fn summary(&self) -> String {
        if self.done.load(Ordering::Relaxed) == 0 {
            return String::new();
        }
        format!(
            "{} requests, {} failed",
            self.done.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed)
        )
    }
}

/// Sends `rate` requests per second to `target` until `stop` fires, then waits for the ones in
/// flight and returns every outcome in sending order, counting them in `tally` as they come.
/// `started` is the moment `t_ms` counts from.
pub async fn run_tallied(
    target: SocketAddr,
    rate: u32,
    started: Instant,
    stop: CancellationToken,
    tally: Arc<Tally>,
) -> Vec<Outcome> {
    run_to_host(target, "demo".into(), rate, started, stop, tally).await
}

/// [`run_tallied`] with `host` in the `Host` header (an ingress routes by it).
pub async fn run_to_host(
    target: SocketAddr,
    host: String,
    rate: u32,
    started: Instant,
    stop: CancellationToken,
    tally: Arc<Tally>,
) -> Vec<Outcome> {
    let host: Arc<str> = Arc::from(host.as_str());
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let tracker = tokio_util::task::TaskTracker::new();
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate.max(1))));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = ticker.tick() => {
                let outcomes = outcomes.clone();
                let tally = tally.clone();
                let host = host.clone();
                let t_ms = started.elapsed().as_secs_f64() * 1000.0;
                tracker.spawn(async move {
                    let outcome = match request(target, &host).await {
                        Ok(pod) => Outcome { t_ms, served_by: Some(pod), error: None },
                        Err(error) => Outcome { t_ms, served_by: None, error: Some(error) },
                    };
                    tally.done.fetch_add(1, Ordering::Relaxed);
                    if !outcome.ok() {
                        tally.failed.fetch_add(1, Ordering::Relaxed);
                    }
                    outcomes.lock().await.push(outcome);
                });
            }
        }
    }
    tracker.close();
    tracker.wait().await;
    let mut outcomes = std::mem::take(&mut *outcomes.lock().await);
    outcomes.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
    outcomes
}

/// One request on a fresh connection; the answer's body is the pod name.
async fn request(target: SocketAddr, host: &str) -> Result<String, String> {
    let exchange = async {
        let mut stream = TcpStream::connect(target).await.map_err(describe)?;
        stream.set_nodelay(true).map_err(describe)?;
        stream
            .write_all(
                format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
            )
            .await
            .map_err(describe)?;
        let mut answer = Vec::with_capacity(256);
        stream.read_to_end(&mut answer).await.map_err(describe)?;
        parse_answer(&answer)
    };
    match tokio::time::timeout(Duration::from_secs(3), exchange).await {
        Ok(result) => result,
        Err(_) => Err("timeout".to_string()),
    }
}

/// The pod name from a `200 OK` answer; anything else is a failure.
fn parse_answer(answer: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(answer);
    if text.is_empty() {
        return Err("connection closed without an answer".to_string());
    }
    let status_line = text.lines().next().unwrap_or_default();
    if !status_line.contains(" 200 ") {
        return Err(format!("answered {status_line:?}"));
    }
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.trim())
        .unwrap_or_default();
    Ok(body.to_string())
}

fn describe(error: std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
        std::io::ErrorKind::ConnectionReset => "connection reset".to_string(),
        _ => error.to_string(),
    }
}

/// Successes and failures per bucket of `bucket_ms`, from the first to the last outcome (times
/// may be negative: requests sent before the reference moment).
pub fn buckets(outcomes: &[Outcome], bucket_ms: f64) -> Vec<(f64, usize, usize)> {
    let times = outcomes.iter().map(|outcome| outcome.t_ms);
    let (Some(first), Some(last)) = (times.clone().reduce(f64::min), times.reduce(f64::max)) else {
        return Vec::new();
    };
    let start = (first / bucket_ms).floor() * bucket_ms;
    let count = ((last - start) / bucket_ms).floor() as usize + 1;
    let mut rows: Vec<(f64, usize, usize)> = (0..count)
        .map(|i| (start + i as f64 * bucket_ms, 0, 0))
        .collect();
    for outcome in outcomes {
        let row = &mut rows[((outcome.t_ms - start) / bucket_ms).floor() as usize];
        if outcome.ok() {
            row.1 += 1;
        } else {
            row.2 += 1;
        }
    }
    rows
}

/// The span `[first, last]` of sending times of failed requests, if any failed.
pub fn failure_window(outcomes: &[Outcome]) -> Option<(f64, f64)> {
    let mut failed = outcomes
        .iter()
        .filter(|outcome| !outcome.ok())
        .map(|outcome| outcome.t_ms);
    let first = failed.next()?;
    Some(failed.fold((first, first), |(low, high), t| (low.min(t), high.max(t))))
}

/// One request, for the demo's "the proxy routes to it" step.
pub async fn run_once(target: SocketAddr) -> Result<String, String> {
    request(target, "demo").await
}

/// One request with `host` in the `Host` header.
pub async fn run_once_to(target: SocketAddr, host: &str) -> Result<String, String> {
    request(target, host).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(t_ms: f64, ok: bool) -> Outcome {
        Outcome {
            t_ms,
            served_by: ok.then(|| "web-1".to_string()),
            error: (!ok).then(|| "connection refused".to_string()),
        }
    }

    #[test]
    fn answers_are_read_as_the_pod_that_served_them() {
        assert_eq!(
            parse_answer(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nweb-1\n"),
            Ok("web-1".to_string())
        );
        assert!(parse_answer(b"HTTP/1.1 503 Service Unavailable\r\n\r\n").is_err());
        assert!(parse_answer(b"").is_err());
    }

    #[test]
    fn outcomes_are_bucketed_per_interval() {
        let outcomes = [
            outcome(10.0, true),
            outcome(90.0, false),
            outcome(150.0, true),
            outcome(310.0, false),
        ];
        assert_eq!(
            buckets(&outcomes, 100.0),
            vec![(0.0, 1, 1), (100.0, 1, 0), (200.0, 0, 0), (300.0, 0, 1)]
        );
        let early = [outcome(-150.0, true), outcome(20.0, false)];
        assert_eq!(
            buckets(&early, 100.0),
            vec![(-200.0, 1, 0), (-100.0, 0, 0), (0.0, 0, 1)]
        );
    }

    #[test]
    fn failure_window_spans_the_failed_requests() {
        let outcomes = [
            outcome(10.0, true),
            outcome(90.0, false),
            outcome(150.0, true),
            outcome(310.0, false),
        ];
        assert_eq!(failure_window(&outcomes), Some((90.0, 310.0)));
        assert_eq!(failure_window(&outcomes[..1]), None);
    }
}
