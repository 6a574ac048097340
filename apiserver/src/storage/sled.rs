//! Durable storage on sled, with group commit: minik's etcd.
//!
//! Kubernetes counterpart: etcd (`server/storage/mvcc/kvstore.go`, `server/storage/wal`) behind
//! `k8s.io/apiserver/pkg/storage/etcd3/store.go`, and kine's SQL log (`k3s-io/kine`).
//!
//! How etcd makes a write durable: the leader appends it to the WAL, calls `fdatasync`, applies it
//! to the MVCC store under the next revision, and only then answers the client and notifies
//! watchers. Fsync costs milliseconds, so etcd *batches*: every write that arrives while one fsync is
//! running rides on the next one. (etcd #14370: a one-member cluster once answered before its WAL
//! fsync and lost acknowledged writes on a crash; minik keeps the fixed order.)
//!
//! minik does the same on sled:
//!
//! 1. Under one mutex, a writer checks its precondition (exists / compare-and-swap on the
//!    revision), takes the next revision and writes the object, which carries it (a removal writes
//!    the revision counter too, in one sled transaction), so after a restart revisions keep growing
//!    above every write. The event is queued as "pending".
//! 2. The writer then waits until its revision is durable. If no flush is running it starts one
//!    (a "flush epoch": a task that runs sled's `flush` on the blocking pool, which syncs
//!    everything written so far);
//!    otherwise it waits for the running epoch and, if that did not cover it, the next one. So N
//!    concurrent writers share one fsync.
//! 3. After the flush, the epoch publishes the pending events it covered to the [`EventLog`], in
//!    revision order, and wakes the writers. A watcher therefore never sees a write that a crash
//!    could still take back.
//!
//! sled's own `watch_prefix` is not used: it cannot replay from a revision, orders events per key
//! only, and blocks writers when a subscriber is slow (docs/reliability.md#storage).
//!
//! Reads never touch sled: `get` and `list` are served from the decoded objects kept beside it
//! ([`ObjectCache`], upstream's watch cache), filled when the database is opened and updated by
//! every write under the write lock. Simplifications: a `get`/`list` may see a write a few
//! milliseconds before it is acknowledged (as sled's own reads did); history is not persisted (after a restart watches start at the
//! stored revision); one tree holds every resource.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;
use sled::Transactional;
use tokio::sync::watch;

use super::events::{stamp_revision, EventLog, DEFAULT_WATCHER_BUFFER};
use super::memory::check_expected;
use super::object_cache::ObjectCache;
use super::{Error, Event, EventType, Record, Result, Revision, Storage, WatchStream};

/// sled's page cache; its default is 1 GiB and real use is several times the setting.
const CACHE_CAPACITY: u64 = 64 * 1024 * 1024;
/// The key, in the `meta` tree, of the last removal's revision.
const REVISION_KEY: &[u8] = b"revision";

/// A [`Storage`] kept in a sled database directory. Cheap to clone.
#[derive(Clone, Debug)]
pub struct SledStorage {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    db: sled::Db,
    /// Storage key → 8-byte big-endian revision followed by the object's JSON.
    objects: sled::Tree,
    /// `REVISION_KEY` → the revision of the last removal, big-endian.
    meta: sled::Tree,
    /// What `objects` holds, decoded: every read is served from here.
    cache: ObjectCache,
    state: Mutex<WriteState>,
    /// Bumped whenever a flush epoch ends, to wake the writers waiting for it.
    epoch: watch::Sender<u64>,
    log: EventLog,
}

#[derive(Debug)]
struct WriteState {
    /// The last revision written to sled (maybe not flushed yet).
    written: Revision,
    /// The last revision flushed and published.
    durable: Revision,
    /// Written but not yet flushed, in revision order.
    pending: Vec<Event>,
    /// Whether a flush epoch is running.
    flushing: bool,
    /// Set forever once a flush failed: the disk can no longer be trusted.
    failed: Option<String>,
}

fn backend(e: impl std::fmt::Display) -> Error {
    Error::Backend(e.to_string())
}

impl SledStorage {
    /// Opens (or creates) the database in `dir`, keeping the last `window` events for watches.
    pub fn open(dir: &Path, window: usize) -> Result<SledStorage> {
        Self::open_with(dir, window, DEFAULT_WATCHER_BUFFER)
    }

    /// Like [`SledStorage::open`], with `buffer` live events per watcher before it is cut off.
    pub fn open_with(dir: &Path, window: usize, buffer: usize) -> Result<SledStorage> {
        let db = open_db(dir)?;
        let objects = db.open_tree("objects").map_err(backend)?;
        let meta = db.open_tree("meta").map_err(backend)?;
        let (records, current) = load(&objects, &meta)?;
        tracing::info!(dir = %dir.display(), revision = current, "opened sled storage");
        let state = WriteState {
            written: current,
            durable: current,
            pending: Vec::new(),
            flushing: false,
            failed: None,
        };
        let inner = Inner {
            db,
            objects,
            meta,
            cache: ObjectCache::new(records),
            state: Mutex::new(state),
            epoch: watch::Sender::new(0),
            log: EventLog::new(current, window, buffer),
        };
        Ok(SledStorage {
            inner: Arc::new(inner),
        })
    }
}

/// How long [`open_db`] waits for the database's file lock to be released.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// Opens the sled database, waiting a little for its file lock. sled releases the lock when its
/// last handle is dropped, and that can happen on sled's own flush threads a moment after our last
/// reference went (a storage reopened in the same process); a previous apiserver process may also
/// still be exiting. Another live apiserver on the same directory is still refused, after the wait.
fn open_db(dir: &Path) -> Result<sled::Db> {
    let deadline = std::time::Instant::now() + LOCK_PATIENCE;
    loop {
        match sled::Config::new()
            .path(dir)
            .cache_capacity(CACHE_CAPACITY)
            .open()
        {
            // sled says it with ErrorKind::Other and this message (sled 0.34, `config.rs`).
            Err(sled::Error::Io(e))
                if e.to_string().starts_with("could not acquire lock")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            opened => return opened.map_err(backend),
        }
    }
}

/// Every stored object, decoded, and the revision to continue from: the stored counter, or a
/// newer object if there were one.
fn load(objects: &sled::Tree, meta: &sled::Tree) -> Result<(Vec<Record>, Revision)> {
    let mut current = match meta.get(REVISION_KEY).map_err(backend)? {
        Some(bytes) => decode_revision(&bytes)?,
        None => 0,
    };
    let mut records = Vec::new();
    for entry in objects.iter() {
        let (key, bytes) = entry.map_err(backend)?;
        let record = decode(&key, &bytes)?;
        current = current.max(record.revision);
        records.push(record);
    }
    Ok((records, current))
}

fn decode_revision(bytes: &[u8]) -> Result<Revision> {
    let head: [u8; 8] = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| backend("short record"))?;
    Ok(Revision::from_be_bytes(head))
}

fn decode(key: &[u8], bytes: &[u8]) -> Result<Record> {
    let revision = decode_revision(bytes)?;
    let value: Value = serde_json::from_slice(&bytes[8..]).map_err(backend)?;
    let key = String::from_utf8(key.to_vec()).map_err(backend)?;
    Ok(Record {
        key,
        value: Arc::new(value),
        revision,
    })
}

fn encode(record: &Record) -> Result<Vec<u8>> {
    let mut bytes = record.revision.to_be_bytes().to_vec();
    serde_json::to_writer(&mut bytes, &*record.value).map_err(backend)?;
    Ok(bytes)
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, WriteState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Step 1: check, take the next revision, write object + counter in one transaction, queue
    /// the event. `decide` works as in `MemoryStorage::write`.
    fn apply(
        &self,
        key: &str,
        decide: impl FnOnce(Option<&Record>) -> Result<(Option<Value>, EventType)>,
    ) -> Result<Record> {
        let mut state = self.lock();
        if let Some(reason) = &state.failed {
            return Err(backend(reason));
        }
        let prev = self.cache.get(key);
        let (next, event_type) = decide(prev.as_ref())?;
        let revision = state.written + 1;
        let mut value = match next {
            Some(value) => value,
            None => prev
                .as_ref()
                .map(|p| (*p.value).clone())
                .ok_or_else(|| Error::NotFound(key.into()))?,
        };
        stamp_revision(&mut value, revision);
        let record = Record {
            key: key.to_string(),
            value: Arc::new(value),
            revision,
        };
        let bytes = (event_type != EventType::Deleted)
            .then(|| encode(&record))
            .transpose()?;
        self.store(key, bytes, revision)?;
        let kept = (event_type != EventType::Deleted).then(|| record.clone());
        self.cache.set(key, kept);
        state.written = revision;
        state.pending.push(Event {
            revision,
            event_type,
            key: key.to_string(),
            object: record.value.clone(),
            prev: prev.map(|p| p.value),
            encoded: Default::default(),
        });
        Ok(record)
    }
}

impl Inner {
    /// Writes one record (or removes it). A stored object carries its own revision, so only a
    /// removal also writes the counter, in the same transaction: after a restart the current
    /// revision is the larger of the counter and every stored object's (`stored_revision`), which
    /// is the last write's either way. (A plain insert skips sled's transaction machinery, which
    /// the profile showed on every create.)
    fn store(&self, key: &str, bytes: Option<Vec<u8>>, revision: Revision) -> Result<()> {
        match bytes {
            Some(bytes) => self
                .objects
                .insert(key.as_bytes(), bytes)
                .map(drop)
                .map_err(backend),
            None => (&self.objects, &self.meta)
                .transaction(|(objects, meta)| {
                    objects.remove(key.as_bytes())?;
                    meta.insert(REVISION_KEY, &revision.to_be_bytes())?;
                    Ok(())
                })
                .map_err(|e: sled::transaction::TransactionError<()>| backend(format!("{e:?}"))),
        }
    }
}

/// Step 2: returns once `revision` is flushed (and published), starting flush epochs as needed.
async fn wait_durable(inner: &Arc<Inner>, revision: Revision) -> Result<()> {
    loop {
        // Subscribe before looking, so an epoch ending in between still wakes us.
        let mut epoch = inner.epoch.subscribe();
        let start = {
            let mut state = inner.lock();
            if let Some(reason) = &state.failed {
                return Err(backend(reason));
            }
            if state.durable >= revision {
                return Ok(());
            }
            !std::mem::replace(&mut state.flushing, true)
        };
        if start {
            // A task, not inline: if this writer's request is cancelled the epoch still finishes.
            tokio::spawn(flush_epoch(inner.clone()))
                .await
                .map_err(|e| backend(format!("flush task: {e}")))?;
        } else {
            epoch.changed().await.map_err(backend)?;
        }
    }
}

/// Step 3: one flush covering everything written so far, then publish what it covered.
async fn flush_epoch(inner: Arc<Inner>) {
    let target = inner.lock().written;
    // On tokio's blocking pool, not `flush_async`: sled's pool queues the job with a `notify_all`
    // that wakes every one of its idle threads (seven or more) per flush, which the profile showed.
    let db = inner.db.clone();
    let flushed = tokio::task::spawn_blocking(move || db.flush())
        .await
        .unwrap_or_else(|e| Err(sled::Error::ReportableBug(format!("flush task: {e}"))));
    let covered = {
        let mut state = inner.lock();
        match flushed {
            Ok(_) => {
                state.durable = target;
                let split = state.pending.partition_point(|e| e.revision <= target);
                state.pending.drain(..split).collect::<Vec<_>>()
            }
            Err(e) => {
                tracing::error!(error = %e, "sled flush failed; refusing further writes");
                state.failed = Some(format!("flush failed: {e}"));
                Vec::new()
            }
        }
    };
    // Still the only epoch (flushing is set), so events are published in revision order.
    for event in covered {
        inner.log.publish(event);
    }
    inner.lock().flushing = false;
    // Let go of the database before waking writers, so a caller that drops the storage right
    // after its write returns really closes it.
    let epoch = inner.epoch.clone();
    drop(inner);
    epoch.send_modify(|n| *n += 1);
}

impl SledStorage {
    fn write(
        &self,
        key: &str,
        decide: impl FnOnce(Option<&Record>) -> Result<(Option<Value>, EventType)>,
    ) -> BoxFuture<'_, Result<Record>> {
        let applied = self.inner.apply(key, decide);
        async move {
            let record = applied?;
            wait_durable(&self.inner, record.revision).await?;
            Ok(record)
        }
        .boxed()
    }
}

impl Storage for SledStorage {
    fn get(&self, key: &str) -> Result<Option<Record>> {
        Ok(self.inner.cache.get(key))
    }

    fn list(&self, prefix: &str) -> Result<(Vec<Record>, Revision)> {
        // Holding the write lock makes the scan a consistent snapshot at `written`.
        let state = self.inner.lock();
        Ok((self.inner.cache.scan_prefix(prefix), state.written))
    }

    fn create(&self, key: &str, value: Value) -> BoxFuture<'_, Result<Record>> {
        self.write(key, |prev| match prev {
            Some(_) => Err(Error::AlreadyExists(key.to_string())),
            None => Ok((Some(value), EventType::Added)),
        })
    }

    fn update(
        &self,
        key: &str,
        value: Value,
        expected: Option<Revision>,
    ) -> BoxFuture<'_, Result<Record>> {
        self.write(key, |prev| {
            let prev = prev.ok_or_else(|| Error::NotFound(key.to_string()))?;
            check_expected(key, prev.revision, expected)?;
            Ok((Some(value), EventType::Modified))
        })
    }

    fn delete(&self, key: &str, expected: Option<Revision>) -> BoxFuture<'_, Result<Record>> {
        self.write(key, |prev| {
            let prev = prev.ok_or_else(|| Error::NotFound(key.to_string()))?;
            check_expected(key, prev.revision, expected)?;
            Ok((None, EventType::Deleted))
        })
    }

    fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        self.inner.log.watch(prefix, after)
    }

    fn current_revision(&self) -> Revision {
        self.inner.log.current()
    }
}

#[cfg(test)]
#[path = "sled_tests.rs"]
mod unit;
