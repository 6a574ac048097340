//! In-memory storage: a `BTreeMap` plus the shared event log. For handler tests and `--storage memory`.
//!
//! Kubernetes counterpart: none shipped, but it plays the role etcd's in-process test cluster
//! (`integration.NewClusterV3`) plays for apiserver tests: the same semantics as the durable store
//! (revisions, compare-and-swap, watch from a revision, 410 after the window) with nothing on disk.
//!
//! One mutex guards the map *and* the choice of the next revision, and the event is published to
//! the [`EventLog`] before that mutex is released. So revisions are handed out in the order writes
//! become visible, a list is consistent at the revision it reports, and events reach watchers in
//! revision order. Writes are "durable" the moment they return, since there is no disk.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;

use super::events::{stamp_revision, EventLog, DEFAULT_WATCHER_BUFFER};
use super::{Error, Event, EventType, Record, Result, Revision, Storage, WatchStream};

/// A [`Storage`] that lives in memory only.
#[derive(Debug)]
pub struct MemoryStorage {
    objects: Mutex<BTreeMap<String, Record>>,
    log: EventLog,
}

impl MemoryStorage {
    /// An empty store keeping the last `window` events for watches.
    pub fn new(window: usize) -> Self {
        Self::with_watcher_buffer(window, DEFAULT_WATCHER_BUFFER)
    }

    /// Like [`MemoryStorage::new`], with `buffer` live events per watcher before it is cut off.
    pub fn with_watcher_buffer(window: usize, buffer: usize) -> Self {
        MemoryStorage {
            objects: Mutex::new(BTreeMap::new()),
            log: EventLog::new(0, window, buffer),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Record>> {
        self.objects
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Applies one write under the map lock: `decide` sees the current record and returns the new
    /// state (`None` = delete) and the event type, or an error that aborts the write.
    fn write(
        &self,
        key: &str,
        decide: impl FnOnce(Option<&Record>) -> Result<(Option<Value>, EventType)>,
    ) -> Result<Record> {
        let mut objects = self.lock();
        let prev = objects.get(key);
        let prev_value = prev.map(|r| r.value.clone());
        let (next, event_type) = decide(prev)?;
        let revision = self.log.current() + 1;
        let mut value = match next {
            Some(value) => value,
            // A delete: the last state, stamped with the delete's revision.
            None => prev_value
                .as_deref()
                .cloned()
                .ok_or_else(|| Error::NotFound(key.into()))?,
        };
        stamp_revision(&mut value, revision);
        let record = Record {
            key: key.to_string(),
            value: Arc::new(value),
            revision,
        };
        if event_type == EventType::Deleted {
            objects.remove(key);
        } else {
            objects.insert(key.to_string(), record.clone());
        }
        self.log.publish(Event {
            revision,
            event_type,
            key: key.to_string(),
            object: record.value.clone(),
            prev: prev_value,
            encoded: Default::default(),
        });
        Ok(record)
    }
}

/// Fails with `Conflict` unless `current` is at `expected` (when the caller gave one).
pub(crate) fn check_expected(
    key: &str,
    current: Revision,
    expected: Option<Revision>,
) -> Result<()> {
    match expected {
        Some(expected) if expected != current => Err(Error::Conflict {
            key: key.to_string(),
            expected,
            actual: current,
        }),
        _ => Ok(()),
    }
}

impl Storage for MemoryStorage {
    fn get(&self, key: &str) -> Result<Option<Record>> {
        Ok(self.lock().get(key).cloned())
    }

    fn list(&self, prefix: &str) -> Result<(Vec<Record>, Revision)> {
        let objects = self.lock();
        let items = objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, r)| r.clone())
            .collect();
        // Every write publishes before releasing the map lock, so this is consistent.
        Ok((items, self.log.current()))
    }

    fn create(&self, key: &str, value: Value) -> BoxFuture<'_, Result<Record>> {
        let result = self.write(key, |prev| match prev {
            Some(_) => Err(Error::AlreadyExists(key.to_string())),
            None => Ok((Some(value), EventType::Added)),
        });
        futures::future::ready(result).boxed()
    }

    fn update(
        &self,
        key: &str,
        value: Value,
        expected: Option<Revision>,
    ) -> BoxFuture<'_, Result<Record>> {
        let result = self.write(key, |prev| {
            let prev = prev.ok_or_else(|| Error::NotFound(key.to_string()))?;
            check_expected(key, prev.revision, expected)?;
            Ok((Some(value), EventType::Modified))
        });
        futures::future::ready(result).boxed()
    }

    fn delete(&self, key: &str, expected: Option<Revision>) -> BoxFuture<'_, Result<Record>> {
        let result = self.write(key, |prev| {
            let prev = prev.ok_or_else(|| Error::NotFound(key.to_string()))?;
            check_expected(key, prev.revision, expected)?;
            Ok((None, EventType::Deleted))
        });
        futures::future::ready(result).boxed()
    }

    fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        self.log.watch(prefix, after)
    }

    fn current_revision(&self) -> Revision {
        self.log.current()
    }
}
