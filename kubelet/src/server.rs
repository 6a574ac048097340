//! The kubelet's own HTTP server: container logs (which the apiserver proxies) and `/healthz`.
//!
//! Kubernetes counterpart: `pkg/kubelet/server/server.go` (`/containerLogs/{ns}/{pod}/{container}`
//! on port 10250) and the CRI log reader `pkg/kubelet/kuberuntime/logs/logs.go`, which parses
//! the CRI log format (`RFC3339Nano STREAM F|P CONTENT`), joins partial lines, honours
//! `tailLines`, `timestamps`, `previous` and `follow`.
//!
//! With `--tls-cert-file` (a secure cluster, the default) it serves HTTPS only, and every
//! request is authenticated by its client certificate and authorized by the apiserver
//! (`server_auth.rs`, upstream's webhook mode); without, plain HTTP on 127.0.0.1 for everyone.
//!
//! minik simplifies: no `sinceTime`/`limitBytes`. `follow` is a small tail loop that re-reads the
//! file every 100 ms (instead of inotify) and ends once the container has exited and the file is
//! drained.

use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::cri::{ContainerState, ContainerStatus, Runtime};

#[path = "server_auth.rs"]
pub mod auth;

pub use auth::{TlsFiles, Webhook};

/// How often `follow` looks for new lines.
const FOLLOW_POLL: Duration = Duration::from_millis(100);

/// What the handlers share.
#[derive(Clone)]
pub struct ServerState {
    /// Where the containers (and their log paths) are.
    pub runtime: Arc<dyn Runtime>,
    /// Ends `follow` streams when the kubelet stops.
    pub shutdown: CancellationToken,
    /// Authorize every request through the apiserver (`None`: everyone may, plain http).
    pub authorization: Option<Webhook>,
    /// The latest usage sample, for `/stats/summary`.
    pub stats: crate::stats::StatsCache,
}

/// The query of `/containerLogs`, named as the apiserver forwards it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogQuery {
    /// Keep streaming.
    #[serde(default)]
    pub follow: Option<String>,
    /// Only the last N lines.
    #[serde(default)]
    pub tail_lines: Option<i64>,
    /// The previous attempt's log.
    #[serde(default)]
    pub previous: Option<String>,
    /// Keep the RFC 3339 time in front of each line.
    #[serde(default)]
    pub timestamps: Option<String>,
}

fn flag(value: &Option<String>) -> bool {
    matches!(value.as_deref(), Some("true" | "1" | ""))
}

/// The router: `/containerLogs/{ns}/{pod}/{container}` and `/healthz`, behind the
/// authorization filter when the state has one.
pub fn router(state: ServerState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/containerLogs/{namespace}/{pod}/{container}",
            get(container_logs),
        )
        .route("/stats/summary", get(stats_summary))
        .route(
            "/exec/{namespace}/{pod}/{container}",
            get(crate::streaming::exec).post(crate::streaming::exec),
        )
        .route(
            "/attach/{namespace}/{pod}/{container}",
            get(crate::streaming::attach).post(crate::streaming::attach),
        )
        .route(
            "/portForward/{namespace}/{pod}",
            get(crate::streaming::portforward::port_forward)
                .post(crate::streaming::portforward::port_forward),
        )
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::authorize,
        ))
        .with_state(state)
}

/// Serves the router on `listener` until the state's shutdown: HTTPS with `tls`, else plain.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: ServerState,
    tls: Option<TlsFiles>,
) -> std::io::Result<()> {
    let shutdown = state.shutdown.clone();
    let app = router(state);
    match tls {
        Some(files) => {
            let acceptor = auth::acceptor(&files)?;
            auth::serve_tls(listener, app, acceptor, shutdown).await;
            Ok(())
        }
        None => {
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await
        }
    }
}

/// `GET /stats/summary`: the Summary API, from the sampler's latest reading (`stats.rs`).
async fn stats_summary(State(state): State<ServerState>) -> Response {
    axum::Json(state.stats.summary()).into_response()
}

async fn container_logs(
    State(state): State<ServerState>,
    Path((namespace, pod, container)): Path<(String, String, String)>,
    Query(query): Query<LogQuery>,
) -> Response {
    let key = format!("{namespace}/{pod}");
    let attempts = state.runtime.list_containers();
    let Some(target) = find_attempt(&attempts, &key, &container, flag(&query.previous)) else {
        let what = if flag(&query.previous) {
            "previous terminated container"
        } else {
            "container"
        };
        let message = format!("{what} \"{container}\" in pod \"{pod}\" not found");
        return (StatusCode::NOT_FOUND, message).into_response();
    };
    let timestamps = flag(&query.timestamps);
    // The file is opened once and read through that handle from then on: when the pod is
    // deleted its log is removed right after the exit, and an open handle can still be drained.
    let mut file = tokio::fs::File::open(&target.config.log_path).await.ok();
    let mut text = Vec::new();
    if let Some(file) = file.as_mut() {
        let _ = file.read_to_end(&mut text).await;
    }
    let (body, consumed) = render(&text, timestamps, query.tail_lines);
    let running = matches!(target.state, ContainerState::Running { .. });
    let Some(file) = file.filter(|_| flag(&query.follow) && running) else {
        return body.into_response();
    };
    text.drain(..consumed);
    let stream = follow(state, target, file, text, timestamps, body);
    Response::new(Body::from_stream(stream))
}

/// The attempt to read: the newest of the pod's container, or the one before it (`previous`).
pub fn find_attempt(
    all: &[ContainerStatus],
    pod_key: &str,
    name: &str,
    previous: bool,
) -> Option<ContainerStatus> {
    let mut attempts: Vec<&ContainerStatus> = all
        .iter()
        .filter(|c| c.config.pod_key == pod_key && c.config.name == name)
        .collect();
    attempts.sort_by_key(|c| (started_at(c), c.config.attempt));
    let latest = attempts.pop()?;
    if !previous {
        return Some(latest.clone());
    }
    attempts
        .into_iter()
        .filter(|c| {
            c.config.pod_uid == latest.config.pod_uid && c.config.attempt < latest.config.attempt
        })
        .max_by_key(|c| c.config.attempt)
        .cloned()
}

fn started_at(container: &ContainerStatus) -> jiff::Timestamp {
    match container.state {
        ContainerState::Running { started_at, .. } | ContainerState::Exited { started_at, .. } => {
            started_at
        }
    }
}

/// Turns CRI log records into plain lines; returns the text and how many bytes were complete
/// records (a half-written last record is left for the next read).
pub fn render(raw: &[u8], timestamps: bool, tail_lines: Option<i64>) -> (String, usize) {
    let complete = raw.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let text = String::from_utf8_lossy(&raw[..complete]);
    let mut lines: Vec<String> = Vec::new();
    let mut pending = String::new();
    for record in text.lines() {
        let Some((time, rest)) = record.split_once(' ') else {
            continue;
        };
        let Some((_stream, rest)) = rest.split_once(' ') else {
            continue;
        };
        let (tag, content) = rest.split_once(' ').unwrap_or((rest, ""));
        if pending.is_empty() && timestamps {
            pending.push_str(time);
            pending.push(' ');
        }
        pending.push_str(content);
        if tag != "P" {
            pending.push('\n');
            lines.push(std::mem::take(&mut pending));
        }
    }
    if let Some(n) = tail_lines.filter(|n| *n >= 0) {
        let skip = lines.len().saturating_sub(n as usize);
        lines.drain(..skip);
    }
    (lines.concat(), complete)
}

/// Streams what is already there, then new records until the container exits (or shutdown).
/// `pending` holds bytes already read from `file` that did not yet form a whole record.
fn follow(
    state: ServerState,
    target: ContainerStatus,
    mut file: tokio::fs::File,
    mut pending: Vec<u8>,
    timestamps: bool,
    first: String,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    async_stream_lines(move |tx| async move {
        if tx.send(Ok(Bytes::from(first))).await.is_err() {
            return;
        }
        loop {
            // Seen before reading, so the last read after the exit drains everything written.
            let exited = !matches!(
                state.runtime.container_status(&target.id).map(|c| c.state),
                Some(ContainerState::Running { .. })
            );
            let _ = file.read_to_end(&mut pending).await;
            let (text, consumed) = render(&pending, timestamps, None);
            pending.drain(..consumed);
            if !text.is_empty() && tx.send(Ok(Bytes::from(text))).await.is_err() {
                return;
            }
            if exited {
                return;
            }
            tokio::select! {
                _ = state.shutdown.cancelled() => return,
                _ = tx.closed() => return,
                _ = tokio::time::sleep(FOLLOW_POLL) => {}
            }
        }
    })
}

/// A stream fed by a task through a small channel (the task ends when the client leaves).
fn async_stream_lines<F, Fut>(
    producer: F,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(producer(tx));
    tokio_stream_from(rx)
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{exited, running};

    const LOG: &[u8] = b"2026-11-22T02:30:00.000000001Z stdout F hello\n\
2026-11-22T02:30:01.000000001Z stderr P long \n\
2026-11-22T02:30:01.000000002Z stderr F line\n\
2026-11-22T02:30:02.000000001Z stdout F bye\n\
2026-11-22T02:30:03.0000";

    #[test]
    fn cri_records_become_plain_lines_and_partials_join() {
        let (text, consumed) = render(LOG, false, None);
        assert_eq!(text, "hello\nlong line\nbye\n");
        assert_eq!(
            consumed,
            LOG.len() - "2026-11-22T02:30:03.0000".len(),
            "half a record waits"
        );
    }

    #[test]
    fn timestamps_and_tail_lines_are_honoured() {
        let (text, _) = render(LOG, true, Some(1));
        assert_eq!(text, "2026-11-22T02:30:02.000000001Z bye\n");
        let (all, _) = render(LOG, true, Some(10));
        assert!(all.starts_with("2026-11-22T02:30:00.000000001Z hello\n"));
    }

    #[test]
    fn previous_picks_the_attempt_before_the_newest() {
        let all = [
            exited("web", 0, 0, 1, 1),
            exited("web", 1, 2, 3, 1),
            running("web", 2, 4),
        ];
        assert_eq!(
            find_attempt(&all, "default/web", "web", false).map(|c| c.config.attempt),
            Some(2)
        );
        assert_eq!(
            find_attempt(&all, "default/web", "web", true).map(|c| c.config.attempt),
            Some(1)
        );
        assert!(find_attempt(&all, "default/web", "other", false).is_none());
        assert!(find_attempt(&[running("web", 0, 0)], "default/web", "web", true).is_none());
    }
}
