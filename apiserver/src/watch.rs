//! Watch: a long-lived chunked response with one JSON event per line.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/watch.go` (`serveWatch`: one
//! `{"type","object"}` line per event, flushed each time) fed by the watch cache
//! (`pkg/storage/cacher/cacher.go`, `watch_cache.go`). The rules (docs/kubernetes-rules.md#watch):
//!
//! - start point: `resourceVersion` unset or `"0"` → a synthetic ADDED for every current match,
//!   then live events; `N` → every event after N, in order; older than the event log → one ERROR
//!   event carrying a 410 `Expired` Status, then the stream ends (the client relists);
//! - `sendInitialEvents=true` → the ADDEDs, then a BOOKMARK annotated
//!   `k8s.io/initial-events-end: "true"` (the streaming list kube-rs uses);
//! - selectors filter the stream, and an object that stops matching arrives as DELETED, one that
//!   starts matching as ADDED;
//! - `allowWatchBookmarks=true` → a periodic BOOKMARK with the last revision this watch has passed;
//! - `timeoutSeconds`, else a random 30-60 minute lifetime; the stream also ends on shutdown.
//!
//! A slow client never blocks writers: the storage hands each watch a bounded buffer and closes a
//! watch that falls behind, without an error, as the cacher does (W10): its client watches again
//! from the last resourceVersion it saw, and relists only if the window no longer holds it.
//!
//! Each storage event is encoded once for all its watches, as the cacher's `cachingObject` does
//! (`watch_encode.rs`); only Table output and objects made for one watch are encoded per watch.
//! The loop below runs inside the response body, on the connection's task (`watch_body.rs`), so a
//! client that goes away drops it with the body.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::{FutureExt, StreamExt};
use minik_api::{status, ResourceInfo};
use rand::Rng;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::error::{ApiError, ApiResult};
use crate::request::query::ListOptions;
use crate::request::selection::{check_field_selector, matches};
use crate::request::Target;
use crate::storage::{self, Event, EventType, Record, Revision, Storage, WatchStream};
use crate::table::{table, Output};
use crate::watch_body::WatchBody;
use crate::watch_encode::{owned_line, LineObject};
use crate::AppState;

/// Lines queued between the watch loop and the HTTP body.
const LINE_BUFFER: usize = 64;

/// Everything a running watch needs.
struct WatchTask {
    info: &'static ResourceInfo,
    options: ListOptions,
    initial: Vec<Record>,
    start: Revision,
    lifetime: Duration,
    bookmark_interval: Duration,
    shutdown: CancellationToken,
    tx: mpsc::Sender<Bytes>,
    /// Plain objects, or one-row Tables for `kubectl get -w`.
    output: Output,
    /// Whether a Table with column definitions was sent already.
    headers_sent: AtomicBool,
    /// Set when the client named the start revision (it may be ahead of the store, see below).
    explicit_start: bool,
    storage: Arc<dyn Storage>,
}

/// Starts a watch for a list path and returns the streaming response.
pub fn serve_watch(
    state: &AppState,
    target: &Target,
    options: ListOptions,
    output: Output,
) -> ApiResult<Response> {
    check_field_selector(target.info.kind, &options.fields)?;
    let prefix = target.prefix();
    let storage_error = |e| ApiError::from_storage(e, &target.info.group_resource(), "");
    let from_now = options.send_initial_events
        || matches!(options.resource_version.as_deref(), None | Some("0"));
    let (initial, start) = if from_now {
        state.storage.list(&prefix).map_err(storage_error)?
    } else {
        let text = options.resource_version.as_deref().unwrap_or("");
        let revision = text.parse::<Revision>().map_err(|_| {
            ApiError::bad_request(format!(
                "invalid resourceVersion {text:?} for watch: not a number"
            ))
        })?;
        (Vec::new(), revision)
    };
    let events = state.storage.watch(&prefix, start);
    let lifetime = match options.timeout_seconds {
        Some(seconds) => Duration::from_secs(seconds),
        None => Duration::from_secs(rand::rng().random_range(1800..3600)),
    };
    let (tx, rx) = mpsc::channel(LINE_BUFFER);
    let task = WatchTask {
        info: target.info,
        options,
        initial,
        start,
        lifetime,
        bookmark_interval: state.bookmark_interval,
        shutdown: state.shutdown.clone(),
        tx,
        output,
        headers_sent: AtomicBool::new(false),
        explicit_start: !from_now,
        storage: state.storage.clone(),
    };
    debug!(prefix = %prefix, start, "watch started");
    // The loop runs inside the body, on the connection's task (`watch_body.rs`).
    let body = Body::from_stream(WatchBody::new(run_watch(task, events).boxed(), rx));
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(response)
}

impl WatchTask {
    /// Sends a storage event's line; false when the client is gone or the server stops. Plain
    /// JSON output shares the event's one encoding with every other watch.
    async fn send_event(&self, event_type: &'static str, object: &LineObject<'_>) -> bool {
        match self.output {
            Output::Object => self.push(object.line(event_type)).await,
            Output::Table { .. } => self.send(event_type, object.value()).await,
        }
    }

    /// Sends one line encoded for this watch alone (a Table row, a bookmark, an error, an initial
    /// ADDED); false when the client is gone or the server stops.
    async fn send(&self, event_type: &'static str, object: &Value) -> bool {
        let converted;
        let object = match self.output {
            Output::Table {
                api_version,
                include,
            } if matches!(event_type, "ADDED" | "MODIFIED" | "DELETED") => {
                let headers = !self.headers_sent.swap(true, Ordering::Relaxed);
                let metadata =
                    json!({"resourceVersion": object["metadata"]["resourceVersion"].clone()});
                converted = table(
                    self.info.kind,
                    &[object],
                    metadata,
                    api_version,
                    include,
                    headers,
                );
                &converted
            }
            _ => object,
        };
        self.push(owned_line(event_type, object)).await
    }

    /// Queues one line for the HTTP body, waiting while the client's buffer is full. (The
    /// shutdown token is shared by every watch: waiting on it only when the buffer is full keeps
    /// its lock out of the per-event path.)
    async fn push(&self, line: Bytes) -> bool {
        let line = match self.tx.try_send(line) {
            Ok(()) => return true,
            Err(mpsc::error::TrySendError::Closed(_)) => return false,
            Err(mpsc::error::TrySendError::Full(line)) => line,
        };
        tokio::select! {
            sent = self.tx.send(line) => sent.is_ok(),
            _ = self.shutdown.cancelled() => false,
        }
    }

    /// A BOOKMARK: only the kind and the revision (plus annotations for the initial-events end).
    async fn bookmark(&self, revision: Revision, initial_end: bool) -> bool {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object = json!({"kind": self.info.kind, "apiVersion": self.info.api_version, "metadata": metadata});
        self.send("BOOKMARK", &object).await
    }

    /// The ERROR event that ends a watch.
    async fn error(&self, error: &storage::Error) {
        let status = match error {
            storage::Error::Expired { requested, oldest } => {
                status::expired(format!("too old resource version: {requested} ({oldest})"))
            }
            other => status::internal(other.to_string()),
        };
        if let Ok(object) = serde_json::to_value(&status) {
            self.send("ERROR", &object).await;
        }
    }
}

/// How long a watch from a revision the store has not reached yet waits for it (upstream: 3 s).
const TOO_LARGE_WAIT: Duration = Duration::from_secs(3);

/// Waits, by watching the whole store, until it has published `target`; false after `limit`.
async fn wait_for_revision(storage: &dyn Storage, target: Revision, limit: Duration) -> bool {
    let current = storage.current_revision();
    if current >= target {
        return true;
    }
    let Ok(mut events) = storage.watch("", current) else {
        return false;
    };
    let reached = async {
        while let Some(Ok(event)) = events.next().await {
            if event.revision >= target {
                return true;
            }
        }
        false
    };
    tokio::time::timeout(limit, reached).await.unwrap_or(false)
}

/// The ERROR a watch from a revision the store never reached gets (`ResourceVersionTooLarge`):
/// typically a client that kept a revision across a wiped data directory; it must relist.
fn too_large(requested: Revision, current: Revision) -> Value {
    let mut status = status::failure(
        504,
        "Timeout",
        format!("Too large resource version: {requested}, current: {current}"),
    );
    status.details = Some(minik_api::meta::StatusDetails {
        causes: Some(vec![status::cause(
            "",
            "ResourceVersionTooLarge",
            "Too large resource version",
        )]),
        retry_after_seconds: Some(1),
        ..Default::default()
    });
    serde_json::to_value(status).unwrap_or(Value::Null)
}

async fn run_watch(mut task: WatchTask, events: storage::Result<WatchStream>) {
    let deadline = tokio::time::sleep(task.lifetime);
    tokio::pin!(deadline);
    if task.explicit_start
        && !wait_for_revision(task.storage.as_ref(), task.start, TOO_LARGE_WAIT).await
    {
        task.send(
            "ERROR",
            &too_large(task.start, task.storage.current_revision()),
        )
        .await;
        return;
    }
    for record in std::mem::take(&mut task.initial) {
        if matches(&task.options, &record.value) && !task.send("ADDED", &record.value).await {
            return;
        }
    }
    if task.options.send_initial_events && !task.bookmark(task.start, true).await {
        return;
    }
    let mut events = match events {
        Ok(events) => events,
        Err(error) => return task.error(&error).await,
    };
    let mut last = task.start;
    let period = task.bookmark_interval;
    let mut bookmark_due = tokio::time::Instant::now() + period;
    let mut ticker = tokio::time::interval_at(bookmark_due, period);
    loop {
        if only_events_due(&task, deadline.deadline(), bookmark_due) {
            if let Some(next) = events.next().now_or_never() {
                if !deliver(&task, next, &mut last).await {
                    break;
                }
                continue;
            }
        }
        let next = tokio::select! {
            _ = task.shutdown.cancelled() => break,
            _ = &mut deadline => break,
            due = ticker.tick(), if task.options.bookmarks => {
                bookmark_due = due + period;
                match bookmark_revision(&task, &mut events, &mut last).await {
                    Some(revision) if task.bookmark(revision, false).await => continue,
                    _ => break,
                }
            }
            next = events.next() => next,
        };
        if !deliver(&task, next, &mut last).await {
            break;
        }
    }
    debug!(kind = task.info.kind, last, "watch ended");
}

/// Whether the next queued event is all that can be due: the server runs, the client is there, and
/// neither the watch's end nor its next bookmark has come. Only atomics and the clock, so a watch
/// with an event already queued skips the `select!` above, whose shutdown branch would take the
/// lock of a token shared by every watch, once per event per watch.
fn only_events_due(
    task: &WatchTask,
    end: tokio::time::Instant,
    bookmark_due: tokio::time::Instant,
) -> bool {
    let now = tokio::time::Instant::now();
    !task.shutdown.is_cancelled()
        && !task.tx.is_closed()
        && now < end
        && (!task.options.bookmarks || now < bookmark_due)
}

/// Sends what one storage event means for this watch; false when the watch must end.
async fn deliver(
    task: &WatchTask,
    next: Option<storage::Result<Event>>,
    last: &mut Revision,
) -> bool {
    match next {
        Some(Ok(event)) => {
            *last = event.revision;
            match convert(&event, &task.options) {
                Some((event_type, object)) => task.send_event(event_type, &object).await,
                None => true,
            }
        }
        Some(Err(error)) => {
            task.error(&error).await;
            false
        }
        None => false,
    }
}

/// The revision a bookmark may announce: the store's current revision, once every event up to it
/// that is already queued for this watch has been delivered. (The event log offers each event to
/// every watcher before it advances its current revision, so after reading `current`, whatever
/// this watch still has to see up to it is already in its queue.) `None` if the watch ended.
async fn bookmark_revision(
    task: &WatchTask,
    events: &mut WatchStream,
    last: &mut Revision,
) -> Option<Revision> {
    let current = task.storage.current_revision();
    while let Some(next) = events.next().now_or_never() {
        if !deliver(task, next, last).await {
            return None;
        }
    }
    Some(current.max(*last))
}

/// The event a selector-filtered watch sees for one storage event (docs/kubernetes-rules.md#w4), if
/// any. Its object is the event's own (shared encoding) unless it is the last matching state.
fn convert<'a>(event: &'a Event, options: &ListOptions) -> Option<(&'static str, LineObject<'a>)> {
    let unfiltered = options.labels.is_empty() && options.fields.is_empty();
    let now = unfiltered || matches(options, &event.object);
    let before = event
        .prev
        .as_ref()
        .is_some_and(|prev| unfiltered || matches(options, prev));
    match (event.event_type, before, now) {
        (EventType::Added, _, true) => Some(("ADDED", LineObject::Shared(event))),
        (EventType::Modified, true, true) => Some(("MODIFIED", LineObject::Shared(event))),
        (EventType::Modified, false, true) => Some(("ADDED", LineObject::Shared(event))),
        (EventType::Modified, true, false) => {
            // The last state that matched, stamped with this event's revision (as the cacher does).
            let mut last = event.prev.as_deref().cloned().unwrap_or(Value::Null);
            if let Some(meta) = last.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert(
                    "resourceVersion".into(),
                    Value::String(event.revision.to_string()),
                );
            }
            Some(("DELETED", LineObject::Owned(last)))
        }
        (EventType::Deleted, _, true) => Some(("DELETED", LineObject::Shared(event))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_api::selector::LabelSelector;
    use std::sync::Arc;

    fn pod(app: &str, rv: u64) -> Arc<Value> {
        Arc::new(
            json!({"metadata": {"name": "web", "labels": {"app": app}, "resourceVersion": rv.to_string()}}),
        )
    }

    fn modified(before: &str, after: &str) -> Event {
        Event {
            revision: 5,
            event_type: EventType::Modified,
            key: "k".into(),
            object: pod(after, 5),
            prev: Some(pod(before, 4)),
            encoded: Default::default(),
        }
    }

    fn selecting(labels: &str) -> ListOptions {
        ListOptions {
            labels: LabelSelector::parse(labels).unwrap(),
            ..Default::default()
        }
    }

    fn parse(line: &[u8]) -> Value {
        assert_eq!(line.last(), Some(&b'\n'), "one event per line");
        serde_json::from_slice(line).expect("a line is one JSON object")
    }

    #[test]
    fn objects_leaving_a_selector_arrive_as_deleted_and_entering_as_added() {
        let options = selecting("app=web");
        assert_eq!(
            convert(&modified("web", "web"), &options).unwrap().0,
            "MODIFIED"
        );
        let left = modified("web", "db");
        let (event_type, object) = convert(&left, &options).unwrap();
        assert_eq!(
            (
                event_type,
                object.value()["metadata"]["labels"]["app"].as_str(),
                object.value()["metadata"]["resourceVersion"].as_str()
            ),
            ("DELETED", Some("web"), Some("5"))
        );
        assert_eq!(
            convert(&modified("db", "web"), &options).unwrap().0,
            "ADDED"
        );
        assert!(convert(&modified("db", "db"), &options).is_none());
    }

    #[test]
    fn a_selector_that_turns_modified_into_added_wraps_the_same_shared_object() {
        let event = modified("db", "web");
        let (plain_type, plain) = convert(&event, &ListOptions::default()).unwrap();
        let (selected_type, selected) = convert(&event, &selecting("app=web")).unwrap();
        let plain_line = plain.line(plain_type);
        let selected_line = selected.line(selected_type);

        assert_eq!(
            parse(&plain_line),
            json!({"type": "MODIFIED", "object": *event.object})
        );
        assert_eq!(
            parse(&selected_line),
            json!({"type": "ADDED", "object": *event.object})
        );
        let object = crate::watch_encode::shared_object(&event);
        assert!(plain_line.ends_with(&[&object[..], b"}\n"].concat()));
        assert!(selected_line.ends_with(&[&object[..], b"}\n"].concat()));
        assert_eq!(
            crate::watch_encode::shared_object(&event.clone()).as_ptr(),
            object.as_ptr(),
            "every watch of the event reads the one encoding"
        );
    }

    #[test]
    fn an_object_leaving_a_selector_is_sent_as_its_last_matching_state() {
        let event = modified("web", "db");
        let (event_type, object) = convert(&event, &selecting("app=web")).unwrap();
        let line = parse(&object.line(event_type));
        assert_eq!(line["type"], "DELETED");
        assert_eq!(
            line["object"]["metadata"],
            json!({"name": "web", "labels": {"app": "web"}, "resourceVersion": "5"})
        );
    }
}
