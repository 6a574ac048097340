//! The event log: minik's watch cache, shared by every storage backend.
//!
//! Kubernetes counterpart: etcd's MVCC history (`server/mvcc/watchable_store.go`) as seen through
//! kube-apiserver's watch cache (`k8s.io/apiserver/pkg/storage/cacher/{cacher.go,watch_cache.go}`),
//! and kine's single-table log (`k3s-io/kine:docs/flow.md`).
//!
//! How the real pieces work:
//!
//! - **Revision.** etcd numbers every write with one cluster-wide, ever-growing revision. An object's
//!   `resourceVersion` is the revision of the write that produced it, and a list is "consistent at"
//!   a revision: every change after it is a watch event with a larger revision. kine gets the same
//!   from an auto-increment primary key in one SQL table.
//! - **Compaction → 410.** etcd keeps history only back to its compaction point (Kubernetes compacts
//!   every 5 minutes). A watch asking to start before it is refused (`ErrCompacted`), which
//!   kube-apiserver turns into `410 Gone` / `Expired`: the client must list again.
//! - **Watch cache.** kube-apiserver opens one etcd watch per resource and keeps the last events in
//!   a ring (`watchCache`, 100 to 102,400 events). A new watch replays the ring after its start
//!   revision, then receives live events; each watcher has a small buffer, and a watcher that cannot
//!   keep up is closed ("Forcing watcher close due to unresponsiveness") rather than waited on.
//!
//! minik keeps exactly that shape in memory: a bounded `VecDeque` of the last `capacity` events
//! (the "window", standing for both etcd's history and the watch cache), one bounded channel per
//! watcher, and one lock. [`EventLog::publish`] appends under the lock and offers the event to every
//! watcher with a non-blocking `try_send`; [`EventLog::watch`] copies the replay out of the window
//! and registers the watcher under the same lock, so there is neither a gap nor a duplicate at the
//! seam between replay and live events. A watcher whose buffer is full is dropped and its stream just
//! ends after what it had buffered, so a slow reader never blocks a writer or another watcher; as
//! after the cacher's forced close, its client watches again from the last revision it saw, which the
//! window usually still holds (only a watch from before the window gets `Expired`, and relists).
//!
//! Simplifications: history lives only in memory, so after a restart the oldest revision a watch may
//! start from is the current one (as kube-apiserver after a relist: list RV + 1); and watches are
//! filtered by key prefix only (selectors are the HTTP layer's job).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Error, Event, Result, Revision, WatchStream};

/// Default number of live events a watcher may fall behind before it is closed.
pub const DEFAULT_WATCHER_BUFFER: usize = 1_024;

/// The bounded history of writes plus the registered watchers.
#[derive(Debug)]
pub struct EventLog {
    inner: Mutex<Inner>,
    capacity: usize,
    watcher_buffer: usize,
}

#[derive(Debug)]
struct Inner {
    /// The revision of the last published event (or the start revision after a restart).
    current: Revision,
    /// The last `capacity` events, oldest first, in revision order (consecutive but for etcd).
    window: VecDeque<Event>,
    watchers: Vec<Watcher>,
}

/// One live watch, as the log sees it.
#[derive(Debug)]
struct Watcher {
    prefix: String,
    /// Only events after this revision are sent (a watch may start ahead of the log).
    after: Revision,
    tx: mpsc::Sender<Event>,
    /// Set when the window restarts under the watcher: `(requested, oldest)` for its `Expired`.
    cut: Arc<OnceLock<(Revision, Revision)>>,
}

impl EventLog {
    /// An empty log whose last revision is `current` (0 for a new store, the stored revision after
    /// a restart), keeping `capacity` events and `watcher_buffer` live events per watcher.
    pub fn new(current: Revision, capacity: usize, watcher_buffer: usize) -> Self {
        EventLog {
            inner: Mutex::new(Inner {
                current,
                window: VecDeque::new(),
                watchers: Vec::new(),
            }),
            capacity: capacity.max(1),
            watcher_buffer: watcher_buffer.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the log half-updated in a way that matters
        // more than stopping the server would, so keep going with the inner value.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The revision of the last published event.
    pub fn current(&self) -> Revision {
        self.lock().current
    }

    /// The oldest `after` a watch may start from right now.
    #[cfg(test)]
    pub fn oldest_valid(&self) -> Revision {
        self.lock().oldest_valid()
    }

    /// Appends the next event (its revision must be `current + 1`), trims the window and offers the
    /// event to every matching watcher without ever waiting for one.
    pub fn publish(&self, event: Event) {
        let mut inner = self.lock();
        // Consecutive for sled and memory; etcd's revisions may skip writes outside the prefix.
        debug_assert!(
            event.revision > inner.current,
            "events are published in revision order"
        );
        inner.current = event.revision;
        // The window gets its own encoding slot: live watchers share the event's slot, which is
        // freed once the last of them has sent it, so the window does not keep 10,000 encodings
        // alive; replays (rarer) share the window's slot among themselves.
        inner.window.push_back(Event {
            encoded: Default::default(),
            ..event.clone()
        });
        while inner.window.len() > self.capacity {
            inner.window.pop_front();
        }
        inner.watchers.retain(|w| w.offer(&event));
    }

    /// Starts over at `current` with an empty window (the etcd mirror relisted after a
    /// compaction): every open watch ends with `Expired`, as the cacher ends its watchers.
    pub fn restart(&self, current: Revision) {
        let mut inner = self.lock();
        inner.current = current;
        inner.window.clear();
        for watcher in inner.watchers.drain(..) {
            let _ = watcher.cut.set((watcher.after, current));
        }
    }

    /// The events for keys under `prefix` with revision > `after`: first the ones still in the
    /// window, then live ones. `Expired` if the window no longer reaches back to `after + 1`.
    pub fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        let mut inner = self.lock();
        let oldest = inner.oldest_valid();
        if after < oldest {
            return Err(Error::Expired {
                requested: after,
                oldest,
            });
        }
        let replay: Vec<Event> = inner
            .window
            .iter()
            .filter(|e| e.revision > after && e.key.starts_with(prefix))
            .cloned()
            .collect();
        let (tx, rx) = mpsc::channel(self.watcher_buffer);
        let cut = Arc::new(OnceLock::new());
        inner.watchers.push(Watcher {
            prefix: prefix.to_string(),
            after,
            tx,
            cut: cut.clone(),
        });
        drop(inner);

        let replay = futures::stream::iter(replay.into_iter().map(Ok));
        Ok(replay.chain(live_stream(rx, cut)).boxed())
    }
}

impl Inner {
    /// The window holds events `front..=current`, so a watch may start from `front - 1`; with an
    /// empty window (new store, or just restarted) only from `current`.
    fn oldest_valid(&self) -> Revision {
        match self.window.front() {
            Some(first) => first.revision - 1,
            None => self.current,
        }
    }
}

impl Watcher {
    /// Offers `event` to this watcher; `false` means "forget this watcher" (it went away, or it
    /// lagged past its buffer and is now closed).
    fn offer(&self, event: &Event) -> bool {
        if event.revision <= self.after || !event.key.starts_with(&self.prefix) {
            return !self.tx.is_closed();
        }
        match self.tx.try_send(event.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Closed(_)) => false,
            Err(mpsc::error::TrySendError::Full(_)) => {
                // Upstream's cacher closes an unresponsive watcher without an error ("Forcing
                // watcher close due to unresponsiveness"): the stream ends after what it has
                // buffered, and the client resumes from its last revision instead of relisting.
                false
            }
        }
    }
}

/// Live events from the watcher's channel, then the end once the log drops the sender: quietly
/// if the watcher lagged, with one final `Err(Expired)` if the window restarted under it.
fn live_stream(
    rx: mpsc::Receiver<Event>,
    cut: Arc<OnceLock<(Revision, Revision)>>,
) -> impl futures::Stream<Item = Result<Event>> + Send + 'static {
    futures::stream::unfold(Some(rx), move |state| {
        let cut = cut.clone();
        async move {
            let mut rx = state?;
            match rx.recv().await {
                Some(event) => Some((Ok(event), Some(rx))),
                None => cut
                    .get()
                    .map(|&(requested, oldest)| (Err(Error::Expired { requested, oldest }), None)),
            }
        }
    })
}

/// Writes `revision` into `value.metadata.resourceVersion` (as Kubernetes' decimal string),
/// creating `metadata` if needed. Non-object values are left alone.
pub fn stamp_revision(value: &mut Value, revision: Revision) {
    if let Value::Object(object) = value {
        let metadata = object
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if !metadata.is_object() {
            *metadata = Value::Object(Default::default());
        }
        if let Value::Object(metadata) = metadata {
            metadata.insert(
                "resourceVersion".into(),
                Value::String(revision.to_string()),
            );
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::storage::EventType;
    use serde_json::json;

    fn event(revision: Revision, key: &str) -> Event {
        Event {
            revision,
            event_type: EventType::Added,
            key: key.into(),
            object: Arc::new(json!({})),
            prev: None,
            encoded: Default::default(),
        }
    }

    #[test]
    fn oldest_valid_start_is_current_revision_when_window_is_empty() {
        let log = EventLog::new(42, 10, 10);
        assert_eq!(log.oldest_valid(), 42);
        assert!(log.watch("", 42).is_ok());
        assert!(matches!(
            log.watch("", 41),
            Err(Error::Expired {
                requested: 41,
                oldest: 42
            })
        ));
    }

    #[test]
    fn window_is_trimmed_to_capacity() {
        let log = EventLog::new(0, 3, 10);
        for rev in 1..=5 {
            log.publish(event(rev, "/a"));
        }
        assert_eq!(log.current(), 5);
        assert_eq!(log.oldest_valid(), 2);
        assert!(log.watch("", 2).is_ok());
        assert!(matches!(log.watch("", 1), Err(Error::Expired { .. })));
    }

    #[test]
    fn stamp_revision_sets_resource_version_string() {
        let mut v = json!({"kind": "Pod"});
        stamp_revision(&mut v, 7);
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        let mut v = json!({"metadata": {"name": "a", "resourceVersion": "1"}});
        stamp_revision(&mut v, 8);
        assert_eq!(
            v,
            json!({"metadata": {"name": "a", "resourceVersion": "8"}})
        );
    }

    #[tokio::test]
    async fn dropped_watchers_are_forgotten() {
        let log = EventLog::new(0, 10, 10);
        let stream = log.watch("/never/", 0).expect("watch");
        drop(stream);
        log.publish(event(1, "/a"));
        assert!(log.lock().watchers.is_empty());
    }
}
