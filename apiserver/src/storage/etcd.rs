//! The etcd v3 backend: objects in an etcd cluster, read through a local mirror.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/storage/etcd3/store.go` (writes as etcd
//! transactions) behind the watch cache (`etcd_mirror.rs`). As upstream:
//!
//! - an object's `resourceVersion` is the **mod revision** of its key; the stored JSON does not
//!   carry it, it is stamped on the way out (`etcd3/store.go` `decode` → `versioner.UpdateObject`);
//! - create is a transaction "if `mod_revision(key) == 0` then put"; update and delete compare the
//!   key's mod revision with the expected one (or just that the key exists), and on failure read
//!   the key in the same transaction to tell `NotFound` from `Conflict`;
//! - reads and watches are served from the mirror, which one etcd watch keeps current; a write
//!   returns once the mirror has seen it. Several apiservers can share one etcd: each mirrors it.
//!
//! Keys are ours (`/registry/pods/ns/name`) behind an optional prefix from the flag
//! (`etcd://127.0.0.1:2379/minik-a` → `/minik-a/registry/...`), like `--etcd-prefix`.
//! Simplified: no TLS to etcd, one endpoint, no periodic compaction by the apiserver.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, KvClient, Txn, TxnOp,
    TxnOpResponse, TxnResponse, WatchOptions,
};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::etcd_mirror::Mirror;
use super::events::{stamp_revision, DEFAULT_WATCHER_BUFFER};
use super::{Error, Record, Result, Revision, Storage, WatchStream};

/// A [`Storage`] in etcd.
pub struct EtcdStorage {
    kv: KvClient,
    prefix: String,
    mirror: Arc<Mirror>,
}

fn backend(error: etcd_client::Error) -> Error {
    Error::Backend(format!("etcd: {error}"))
}

impl EtcdStorage {
    /// Connects to `endpoint`, lists everything under `prefix`/registry and starts the watch that
    /// keeps the mirror current until `shutdown`.
    pub async fn connect(
        endpoint: &str,
        prefix: &str,
        window: usize,
        shutdown: CancellationToken,
    ) -> Result<Self> {
        Self::connect_with(endpoint, prefix, window, DEFAULT_WATCHER_BUFFER, shutdown).await
    }

    /// Like [`EtcdStorage::connect`], with `buffer` live events per watcher.
    pub async fn connect_with(
        endpoint: &str,
        prefix: &str,
        window: usize,
        buffer: usize,
        shutdown: CancellationToken,
    ) -> Result<Self> {
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(30));
        let client = Client::connect([endpoint], Some(options))
            .await
            .map_err(backend)?;
        let mirror = Arc::new(Mirror::new(prefix, 0, window, buffer));
        let watched = format!("{prefix}/registry/");
        let revision = relist(&mut client.kv_client(), &mirror, &watched).await?;
        tracing::info!(endpoint, prefix, revision, "listed etcd");
        tokio::spawn(follow(client.clone(), mirror.clone(), watched, shutdown));
        Ok(EtcdStorage {
            kv: client.kv_client(),
            prefix: prefix.to_string(),
            mirror,
        })
    }

    fn etcd_key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// Runs `txn` and, once it succeeded, waits until the mirror has its revision.
    async fn commit(&self, txn: Txn) -> Result<(TxnResponse, Revision)> {
        let response = self.kv.clone().txn(txn).await.map_err(backend)?;
        let revision = response.header().map_or(0, |h| h.revision()) as Revision;
        if response.succeeded() {
            self.mirror.caught_up(revision).await?;
        }
        Ok((response, revision))
    }

    /// Update and delete: the key must be at `expected`, or merely exist.
    fn guard(&self, key: &str, expected: Option<Revision>) -> Compare {
        match expected {
            Some(rev) => Compare::mod_revision(self.etcd_key(key), CompareOp::Equal, rev as i64),
            None => Compare::mod_revision(self.etcd_key(key), CompareOp::Greater, 0),
        }
    }

    /// Why a guarded transaction failed, from the key read in its `or_else` branch.
    fn refusal(key: &str, response: &TxnResponse, expected: Option<Revision>) -> Error {
        let actual = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.mod_revision() as Revision),
            _ => None,
        });
        match (actual, expected) {
            (Some(actual), Some(expected)) => Error::Conflict {
                key: key.to_string(),
                expected,
                actual,
            },
            _ => Error::NotFound(key.to_string()),
        }
    }

    async fn create_async(&self, key: &str, value: Value) -> Result<Record> {
        let body = serde_json::to_vec(&value).map_err(|e| Error::Backend(e.to_string()))?;
        let k = self.etcd_key(key);
        let txn = Txn::new()
            .when([Compare::mod_revision(k.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(k, body, None)]);
        let (response, revision) = self.commit(txn).await?;
        if !response.succeeded() {
            return Err(Error::AlreadyExists(key.to_string()));
        }
        Ok(record(key, value, revision))
    }

    async fn update_async(
        &self,
        key: &str,
        value: Value,
        expected: Option<Revision>,
    ) -> Result<Record> {
        let body = serde_json::to_vec(&value).map_err(|e| Error::Backend(e.to_string()))?;
        let k = self.etcd_key(key);
        let txn = Txn::new()
            .when([self.guard(key, expected)])
            .and_then([TxnOp::put(k.clone(), body, None)])
            .or_else([TxnOp::get(k, None)]);
        let (response, revision) = self.commit(txn).await?;
        if !response.succeeded() {
            return Err(Self::refusal(key, &response, expected));
        }
        Ok(record(key, value, revision))
    }

    async fn delete_async(&self, key: &str, expected: Option<Revision>) -> Result<Record> {
        let k = self.etcd_key(key);
        let txn = Txn::new()
            .when([self.guard(key, expected)])
            .and_then([TxnOp::delete(
                k.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(k, None)]);
        let (response, revision) = self.commit(txn).await?;
        if !response.succeeded() {
            return Err(Self::refusal(key, &response, expected));
        }
        let prev = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Delete(mut delete) => delete.take_prev_kvs().into_iter().next(),
            _ => None,
        });
        let prev = prev.ok_or_else(|| Error::NotFound(key.to_string()))?;
        self.mirror.decode(&prev, revision)
    }
}

/// `value` stamped with `revision`, as the mirror will hold it.
fn record(key: &str, mut value: Value, revision: Revision) -> Record {
    stamp_revision(&mut value, revision);
    Record {
        key: key.to_string(),
        value: Arc::new(value),
        revision,
    }
}

/// Lists `watched` and resets the mirror to it; returns the list's revision.
async fn relist(kv: &mut KvClient, mirror: &Mirror, watched: &str) -> Result<Revision> {
    let response = kv
        .get(watched, Some(GetOptions::new().with_prefix()))
        .await
        .map_err(backend)?;
    let revision = response.header().map_or(0, |h| h.revision()) as Revision;
    mirror.reset(response.kvs(), revision)?;
    Ok(revision)
}

/// Keeps the mirror current until `shutdown`: one etcd watch from the mirror's revision + 1,
/// re-opened after an error, and a relist when etcd compacted past the mirror.
async fn follow(client: Client, mirror: Arc<Mirror>, watched: String, shutdown: CancellationToken) {
    loop {
        let outcome = tokio::select! {
            _ = shutdown.cancelled() => return,
            outcome = follow_once(client.clone(), &mirror, &watched) => outcome,
        };
        let pause = match outcome {
            Ok(()) => Duration::ZERO,
            Err(err) => {
                tracing::warn!(error = %err, revision = mirror.revision(), "etcd watch ended; re-opening");
                Duration::from_millis(200)
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

/// One etcd watch, applied to the mirror until it ends. `Ok` after a relist (compaction).
async fn follow_once(mut client: Client, mirror: &Mirror, watched: &str) -> Result<()> {
    let start = mirror.current() + 1;
    let options = WatchOptions::new()
        .with_prefix()
        .with_start_revision(start as i64);
    let mut stream = client
        .watch(watched, Some(options))
        .await
        .map_err(backend)?;
    while let Some(response) = stream.message().await.map_err(backend)? {
        if response.compact_revision() > 0 {
            // Upstream's cacher relists too: the history the mirror needs is gone.
            let revision = relist(&mut client.kv_client(), mirror, watched).await?;
            tracing::warn!(
                compacted = response.compact_revision(),
                revision,
                "etcd compacted past the mirror; relisted, watches expired"
            );
            return Ok(());
        }
        for event in response.events() {
            mirror.apply(event)?;
        }
        if response.canceled() {
            return Err(Error::Backend(format!(
                "watch canceled: {}",
                response.cancel_reason()
            )));
        }
    }
    Err(Error::Backend("watch stream closed".into()))
}

impl Storage for EtcdStorage {
    fn get(&self, key: &str) -> Result<Option<Record>> {
        Ok(self.mirror.get(key))
    }

    fn list(&self, prefix: &str) -> Result<(Vec<Record>, Revision)> {
        Ok(self.mirror.list(prefix))
    }

    fn create(&self, key: &str, value: Value) -> BoxFuture<'_, Result<Record>> {
        let key = key.to_string();
        async move { self.create_async(&key, value).await }.boxed()
    }

    fn update(
        &self,
        key: &str,
        value: Value,
        expected: Option<Revision>,
    ) -> BoxFuture<'_, Result<Record>> {
        let key = key.to_string();
        async move { self.update_async(&key, value, expected).await }.boxed()
    }

    fn delete(&self, key: &str, expected: Option<Revision>) -> BoxFuture<'_, Result<Record>> {
        let key = key.to_string();
        async move { self.delete_async(&key, expected).await }.boxed()
    }

    fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        self.mirror.watch(prefix, after)
    }

    fn current_revision(&self) -> Revision {
        self.mirror.current()
    }
}
