//! Where the ReplicaSet controller reads its objects: ReplicaSets, or ReplicationControllers seen
//! as ReplicaSets.
//!
//! Kubernetes counterpart: `pkg/controller/replication/conversion.go` (`informerAdapter`,
//! `clientsetAdapter`): upstream's replication manager *is* the ReplicaSet controller, run over
//! ReplicationControllers converted to ReplicaSets on the way in and back on the way out. Here the
//! conversion is `minik_api::replication::as_replica_set`; a status goes back unchanged, since
//! both kinds' statuses have the same JSON.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::ReplicaSet;
use minik_api::core::ReplicationController;
use minik_api::replication::as_replica_set;
use minik_api::ObjectKey;
use minik_client::{Api, Client, Patch, Store};

/// The store a ReplicaSet controller reconciles.
#[derive(Clone)]
pub enum Source {
    /// apps/v1 ReplicaSets (the ReplicaSet controller).
    ReplicaSets(Store<ReplicaSet>),
    /// core/v1 ReplicationControllers (the replication manager).
    ReplicationControllers(Store<ReplicationController>),
}

impl Source {
    /// The object `key`, as a ReplicaSet.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<ReplicaSet>> {
        match self {
            Source::ReplicaSets(store) => store.get(key),
            Source::ReplicationControllers(store) => {
                store.get(key).map(|rc| Arc::new(as_replica_set(&rc)))
            }
        }
    }

    /// Every object, as ReplicaSets.
    pub fn state(&self) -> Vec<Arc<ReplicaSet>> {
        match self {
            Source::ReplicaSets(store) => store.state(),
            Source::ReplicationControllers(store) => store
                .state()
                .iter()
                .map(|rc| Arc::new(as_replica_set(rc)))
                .collect(),
        }
    }

    /// The owner's `apiVersion` and `kind`, as its pods' controller references name it.
    pub fn owner_kind(&self) -> (&'static str, &'static str) {
        match self {
            Source::ReplicaSets(_) => ("apps/v1", "ReplicaSet"),
            Source::ReplicationControllers(_) => ("v1", "ReplicationController"),
        }
    }

    /// Merge-patches the `/status` of `namespace/name` with `body`.
    pub async fn patch_status(
        &self,
        client: &Client,
        key: &ObjectKey,
        body: serde_json::Value,
    ) -> minik_client::Result<()> {
        let namespace = key.namespace.as_deref().unwrap_or("default");
        let patch = Patch::Merge(body);
        match self {
            Source::ReplicaSets(_) => {
                let api: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace);
                api.patch_status(&key.name, &patch).await.map(drop)
            }
            Source::ReplicationControllers(_) => {
                let api: Api<ReplicationController> = Api::namespaced(client.clone(), namespace);
                api.patch_status(&key.name, &patch).await.map(drop)
            }
        }
    }
}
