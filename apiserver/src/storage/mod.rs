//! Storage: the apiserver's tiny etcd. Only the apiserver crate can name it.
//!
//! Kubernetes counterpart: etcd behind `k8s.io/apiserver/pkg/storage` (`storage.Interface`: Get,
//! GetList, Create, GuaranteedUpdate, Delete, Watch) and kine's single-table event log. minik keeps
//! the same contract with less machinery:
//!
//! - one global **revision** counter; every write takes the next revision, which becomes the
//!   object's `metadata.resourceVersion` (written into the stored JSON by the storage layer);
//! - updates and deletes are **compare-and-swap** on that revision when the caller gives one;
//! - a bounded in-memory **event log** (revision → type, key, object) feeds watches, so a watch can
//!   resume from any revision still in the window and gets `Expired` (410) for an older one;
//! - a write is acknowledged only once it is **on disk** (writers are grouped into one flush).
//!
//! Implementations: `sled.rs` (durable, the default), `memory.rs` (handler tests, `--storage
//! memory`) and `etcd.rs` (an etcd v3 cluster, read through `etcd_mirror.rs`); `spec.rs` parses
//! the `--storage` flag that picks one.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;

pub mod etcd;
mod etcd_mirror;
#[cfg(test)]
mod etcd_server;
#[cfg(test)]
mod etcd_tests;
pub mod events;
pub mod memory;
mod object_cache;
pub mod sled;
pub mod spec;
#[cfg(test)]
mod tests;

/// A position in the cluster's history: the number of writes so far.
pub type Revision = u64;

/// Storage failures. The HTTP layer maps each to a Kubernetes `Status`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `create` of a key that exists (409 AlreadyExists).
    #[error("key {0} already exists")]
    AlreadyExists(String),
    /// `update`/`delete` of a key that does not exist (404 NotFound).
    #[error("key {0} not found")]
    NotFound(String),
    /// The expected revision did not match the stored one (409 Conflict).
    #[error("key {key} is at revision {actual}, not {expected}")]
    Conflict {
        /// The key written.
        key: String,
        /// The revision the caller expected.
        expected: Revision,
        /// The revision stored.
        actual: Revision,
    },
    /// A watch asked for history the event log no longer holds, or fell too far behind (410).
    #[error("too old resource version: {requested} ({oldest})")]
    Expired {
        /// The revision asked for.
        requested: Revision,
        /// The oldest revision a watch may start from now.
        oldest: Revision,
    },
    /// The backing store failed (500: never caused by client input).
    #[error("storage backend: {0}")]
    Backend(String),
}

/// Result with the storage [`Error`] as default.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One stored object. `value.metadata.resourceVersion` equals `revision` as a decimal string.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// `/registry/{plural}/{namespace}/{name}` or `/registry/{plural}/{name}` (cluster-scoped).
    pub key: String,
    /// The object as JSON.
    pub value: Arc<Value>,
    /// The revision of the write that produced this state (its mod revision, in etcd's words).
    pub revision: Revision,
}

/// What happened to a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// The key was created.
    Added,
    /// The key was updated.
    Modified,
    /// The key was deleted.
    Deleted,
}

/// One entry of the event log, as watches receive it.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The revision of this write.
    pub revision: Revision,
    /// Created, updated or deleted.
    pub event_type: EventType,
    /// The key written.
    pub key: String,
    /// The new state; for a delete, the last state with `resourceVersion` set to this revision.
    pub object: Arc<Value>,
    /// The state before this write (`None` for a create). Lets a selector-filtered watch turn an
    /// object that stopped matching into DELETED, as Kubernetes' watch cache does.
    pub prev: Option<Arc<Value>>,
    /// The event encoded for watches, filled by the first watch that sends it and shared by every
    /// clone (create it empty: `Default::default()`).
    pub encoded: SharedEncoding,
}

/// A once-filled slot for bytes every watch of one event can send: clones of an [`Event`] share
/// it, so with N watchers the event's object is encoded once, not N times. Kubernetes wraps the
/// objects in its watch cache the same way (`cachingObject`, `pkg/storage/cacher/caching_object.go`).
/// What the bytes are is the watch layer's business (`watch_encode.rs`); storage only carries them.
/// Events compare equal whether or not the slot is filled yet.
#[derive(Clone, Default)]
pub struct SharedEncoding(Arc<OnceLock<Bytes>>);

impl SharedEncoding {
    /// The bytes, encoding them with `encode` if no clone of this event has yet.
    pub fn get_or_init(&self, encode: impl FnOnce() -> Bytes) -> &Bytes {
        self.0.get_or_init(encode)
    }

    /// The bytes, if some watch encoded them already.
    pub fn get(&self) -> Option<&Bytes> {
        self.0.get()
    }
}

impl PartialEq for SharedEncoding {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for SharedEncoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.get() {
            Some(bytes) => write!(f, "SharedEncoding({} bytes)", bytes.len()),
            None => f.write_str("SharedEncoding(empty)"),
        }
    }
}

/// A live watch: the events after the start revision, in revision order, with none missed. It ends
/// with `Err(Expired)` if the watcher falls further behind than its buffer allows.
pub type WatchStream = BoxStream<'static, Result<Event>>;

/// The contract every backend keeps. Object-safe, so the server holds an `Arc<dyn Storage>`.
/// Reads are synchronous and short; writes return once durable.
pub trait Storage: Send + Sync + 'static {
    /// The object at `key`, if any.
    fn get(&self, key: &str) -> Result<Option<Record>>;

    /// Every object whose key starts with `prefix`, in key order, and the revision the list is
    /// consistent at (≥ every item's revision).
    fn list(&self, prefix: &str) -> Result<(Vec<Record>, Revision)>;

    /// Stores a new object; fails with `AlreadyExists` if the key is taken.
    fn create(&self, key: &str, value: Value) -> BoxFuture<'_, Result<Record>>;

    /// Replaces an object; with `expected`, only if it is still at that revision.
    fn update(
        &self,
        key: &str,
        value: Value,
        expected: Option<Revision>,
    ) -> BoxFuture<'_, Result<Record>>;

    /// Removes an object; with `expected`, only if it is still at that revision. Returns the last
    /// state (with the delete's revision as its `resourceVersion`).
    fn delete(&self, key: &str, expected: Option<Revision>) -> BoxFuture<'_, Result<Record>>;

    /// The events for keys under `prefix` with revision > `after`. Fails with `Expired` if `after`
    /// is older than the oldest revision the log still holds.
    fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream>;

    /// The revision of the latest acknowledged write.
    fn current_revision(&self) -> Revision;
}
