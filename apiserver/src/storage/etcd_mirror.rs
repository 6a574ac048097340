//! The etcd backend's local mirror: every object under the prefix plus the event log, fed by one
//! etcd watch.
//!
//! Kubernetes counterpart: the watch cache (`k8s.io/apiserver/pkg/storage/cacher`): kube-apiserver
//! lists a resource from etcd once, then keeps a copy current from one etcd watch starting at the
//! list's revision, and serves gets, lists and watches from that copy. minik does the same for the
//! whole `/registry/` prefix at once. The mirror's revision only moves forward; a write waits until
//! the mirror has seen its own revision before it returns, so a client reads its writes.
//!
//! If etcd compacted past what the mirror has seen (the watch is answered with a compact
//! revision), the mirror relists and every open watch ends with `Expired` (410), as the cacher does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use etcd_client::{EventType as EtcdEventType, KeyValue};
use serde_json::Value;
use tokio::sync::watch;

use super::events::{stamp_revision, EventLog};
use super::{Error, Event, EventType, Record, Result, Revision, WatchStream};

/// How long a write waits for its own event to come back through the watch.
const CATCH_UP: Duration = Duration::from_secs(30);

/// The objects as last seen through the watch, and the watch events as an [`EventLog`].
#[derive(Debug)]
pub(super) struct Mirror {
    /// The etcd key prefix stripped from every key (`""` or `/minik-a`).
    prefix: String,
    objects: Mutex<BTreeMap<String, Record>>,
    log: EventLog,
    seen: watch::Sender<Revision>,
}

impl Mirror {
    /// An empty mirror at `revision`, keeping `window` events and `buffer` per watcher.
    pub fn new(prefix: &str, revision: Revision, window: usize, buffer: usize) -> Self {
        Mirror {
            prefix: prefix.to_string(),
            objects: Mutex::new(BTreeMap::new()),
            log: EventLog::new(revision, window, buffer),
            seen: watch::channel(revision).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Record>> {
        self.objects
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Replaces every object by a list taken at `revision` (start, or relist after compaction).
    /// Open watches end with `Expired`: they cannot be told what happened in between.
    pub fn reset(&self, kvs: &[KeyValue], revision: Revision) -> Result<()> {
        let mut objects = self.lock();
        objects.clear();
        for kv in kvs {
            let record = self.decode(kv, kv.mod_revision() as Revision)?;
            objects.insert(record.key.clone(), record);
        }
        self.log.restart(revision);
        drop(objects);
        self.seen.send_replace(revision);
        Ok(())
    }

    /// A stored key/value as a [`Record`] at `revision`, with the prefix stripped.
    pub fn decode(&self, kv: &KeyValue, revision: Revision) -> Result<Record> {
        let key = kv
            .key_str()
            .map_err(|e| Error::Backend(format!("etcd key: {e}")))?;
        let key = key.strip_prefix(self.prefix.as_str()).unwrap_or(key);
        let mut value: Value = serde_json::from_slice(kv.value())
            .map_err(|e| Error::Backend(format!("etcd value of {key}: {e}")))?;
        stamp_revision(&mut value, revision);
        Ok(Record {
            key: key.to_string(),
            value: Arc::new(value),
            revision,
        })
    }

    /// Applies one etcd watch event: updates the objects and publishes the event to the log.
    pub fn apply(&self, event: &etcd_client::Event) -> Result<()> {
        let Some(kv) = event.kv() else { return Ok(()) };
        let revision = kv.mod_revision() as Revision;
        let mut objects = self.lock();
        if revision <= self.log.current() {
            return Ok(()); // Already seen (a watch restarted from an earlier revision).
        }
        let (event_type, record, prev) = match event.event_type() {
            EtcdEventType::Put => {
                let record = self.decode(kv, revision)?;
                let prev = objects.insert(record.key.clone(), record.clone());
                let event_type = match prev {
                    Some(_) => EventType::Modified,
                    None => EventType::Added,
                };
                (event_type, record, prev.map(|p| p.value))
            }
            EtcdEventType::Delete => {
                let key = String::from_utf8_lossy(kv.key());
                let key = key.strip_prefix(self.prefix.as_str()).unwrap_or(&key);
                let Some(prev) = objects.remove(key) else {
                    return Ok(());
                };
                // The last state, stamped with the delete's revision (as the other backends).
                let mut value = (*prev.value).clone();
                stamp_revision(&mut value, revision);
                let record = Record {
                    key: prev.key.clone(),
                    value: Arc::new(value),
                    revision,
                };
                (EventType::Deleted, record, Some(prev.value))
            }
        };
        self.log.publish(Event {
            revision,
            event_type,
            key: record.key,
            object: record.value,
            prev,
            encoded: Default::default(),
        });
        drop(objects);
        self.seen.send_replace(revision);
        Ok(())
    }

    /// Waits until the mirror has seen `revision` (a write's own), so the caller reads its write.
    pub async fn caught_up(&self, revision: Revision) -> Result<()> {
        let mut seen = self.seen.subscribe();
        let reached = tokio::time::timeout(CATCH_UP, async {
            seen.wait_for(|seen| *seen >= revision).await.is_ok()
        })
        .await;
        match reached {
            Ok(true) => Ok(()),
            _ => Err(Error::Backend(format!(
                "the etcd watch did not deliver revision {revision} within {CATCH_UP:?}"
            ))),
        }
    }

    /// The revision the mirror is at.
    pub fn revision(&self) -> Revision {
        *self.seen.borrow()
    }

    pub fn get(&self, key: &str) -> Option<Record> {
        self.lock().get(key).cloned()
    }

    pub fn list(&self, prefix: &str) -> (Vec<Record>, Revision) {
        let objects = self.lock();
        let items = objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, r)| r.clone())
            .collect();
        // Events are published under the objects lock, so the log's revision matches the map.
        (items, self.log.current())
    }

    pub fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        self.log.watch(prefix, after)
    }

    pub fn current(&self) -> Revision {
        self.log.current()
    }
}
