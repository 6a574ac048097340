//! Long-lived connections: clients that each hold a streaming HTTP answer open, reconnecting
//! when it ends, and count the ones cut short.
//!
//! Kubernetes counterpart: none; these are seed 002's WebSocket users. Each client asks
//! `GET /stream?ms=D` of the `minik/web` program (through the ingress, with its `Host`), which
//! sends a line with its pod name every tick and `done` after D ms. A stream that ends without
//! `done` was cut (its pod exited under it). The first stream of client `i` lasts `D·(i+1)/N`, so
//! the clients are out of step, as real users are; later ones last D. Which pod serves each open
//! stream is kept up to date, so the rainbow demo knows when the old release has drained.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::load::Outcome;

/// How one stream ended.
#[derive(Clone, Debug, Serialize)]
pub struct StreamEnd {
    /// When it was opened, ms after the clients started.
    pub opened_ms: f64,
    /// When it ended.
    pub ended_ms: f64,
    /// The pod that served it (`None`: no answer at all).
    pub pod: Option<String>,
    /// It ran to `done`.
    pub completed: bool,
    /// Why it ended early, if it did.
    pub error: Option<String>,
}

impl StreamEnd {
    /// A stream that was open on a pod and ended without `done`.
    pub fn cut(&self) -> bool {
        self.pod.is_some() && !self.completed
    }

    /// As a request outcome at its end (completed = answered, cut or refused = failed), for the
    /// chart's bars.
    pub fn as_outcome(&self) -> Outcome {
        Outcome {
            t_ms: self.ended_ms,
            served_by: self.completed.then(|| self.pod.clone().unwrap_or_default()),
            error: self.error.clone(),
        }
    }
}

/// The pod each client's open stream is on.
pub type Open = Arc<Mutex<BTreeMap<usize, String>>>;

/// What the clients are aimed at and for how long.
#[derive(Clone, Debug)]
pub struct Clients {
    /// The ingress.
    pub target: SocketAddr,
    /// The Ingress rule's host.
    pub host: String,
    /// How many clients.
    pub count: usize,
    /// How long a stream lasts.
    pub duration: Duration,
}

/// Starts the clients; they run until `stop` fires. Returns the open streams, and a task that
/// gives every stream that ended (streams still open at the stop are left out).
pub fn start(
    clients: &Clients,
    started: Instant,
    stop: CancellationToken,
) -> (Open, tokio::task::JoinHandle<Vec<StreamEnd>>) {
    let open: Open = Arc::default();
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap_or_default();
    let tasks: Vec<_> = (0..clients.count)
        .map(|i| {
            let first = clients
                .duration
                .mul_f64((i + 1) as f64 / clients.count as f64);
            let client = Client {
                id: i,
                http: http.clone(),
                url: format!("http://{}/stream", clients.target),
                host: clients.host.clone(),
                open: open.clone(),
                started,
            };
            tokio::spawn(client.run(first, clients.duration, stop.clone()))
        })
        .collect();
    let all = tokio::spawn(async move {
        let mut ends = Vec::new();
        for task in tasks {
            ends.extend(task.await.unwrap_or_default());
        }
        ends.sort_by(|a, b| a.ended_ms.total_cmp(&b.ended_ms));
        ends
    });
    (open, all)
}

struct Client {
    id: usize,
    http: reqwest::Client,
    url: String,
    host: String,
    open: Open,
    started: Instant,
}

impl Client {
    /// Streams one after another until `stop`.
    async fn run(
        self,
        first: Duration,
        duration: Duration,
        stop: CancellationToken,
    ) -> Vec<StreamEnd> {
        let mut ends = Vec::new();
        let mut length = first;
        while !stop.is_cancelled() {
            let opened_ms = self.ms();
            let mut pod = None;
            let outcome = tokio::select! {
                _ = stop.cancelled() => None,
                outcome = self.stream(length, &mut pod) => Some(outcome),
            };
            self.open
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&self.id);
            let Some(outcome) = outcome else { break };
            let end = StreamEnd {
                opened_ms,
                ended_ms: self.ms(),
                pod,
                completed: outcome.is_ok(),
                error: outcome.err(),
            };
            if !end.completed {
                // A refused or cut client retries after a moment, as a browser does.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            ends.push(end);
            length = duration;
        }
        ends
    }

    /// One stream: `Ok` once `done` arrived; the pod is set from the first line.
    async fn stream(&self, length: Duration, pod: &mut Option<String>) -> Result<(), String> {
        let answer = self
            .http
            .get(&self.url)
            .query(&[("ms", length.as_millis() as u64), ("every", 200)])
            .header(reqwest::header::HOST, &self.host)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !answer.status().is_success() {
            return Err(format!("answered {}", answer.status()));
        }
        let mut body = answer.bytes_stream();
        let mut text = String::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| format!("cut: {e}"))?;
            text.push_str(&String::from_utf8_lossy(&chunk));
            if pod.is_none() {
                if let Some((name, _)) = text.split_once(' ') {
                    *pod = Some(name.to_string());
                    self.open
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(self.id, name.to_string());
                }
            }
            if text.ends_with("done\n") {
                return Ok(());
            }
        }
        Err("cut: the stream ended without done".to_string())
    }

    fn ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1000.0
    }
}

/// How many open streams are on pods whose name starts with `prefix`.
pub fn open_on(open: &Open, prefix: &str) -> usize {
    open.lock()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .filter(|pod| pod.starts_with(prefix))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_stream_open_on_a_pod_and_not_done_counts_as_cut() {
        let end = |pod: Option<&str>, completed| StreamEnd {
            opened_ms: 0.0,
            ended_ms: 10.0,
            pod: pod.map(String::from),
            completed,
            error: (!completed).then(|| "x".to_string()),
        };
        assert!(end(Some("web-1"), false).cut());
        assert!(!end(Some("web-1"), true).cut());
        assert!(!end(None, false).cut(), "refused, never opened");
        assert!(end(Some("web-1"), true).as_outcome().ok());
        assert!(!end(Some("web-1"), false).as_outcome().ok());
    }
}
