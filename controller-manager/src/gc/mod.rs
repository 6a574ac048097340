//! The garbage collector: deletes objects whose owners are gone, and carries out Foreground and
//! Orphan deletes.
//!
//! Kubernetes counterpart: `pkg/controller/garbagecollector/` (`garbagecollector.go`,
//! `graph_builder.go`). The apiserver only marks an owner deleted with `propagationPolicy`
//! Foreground (finalizer `foregroundDeletion`) or Orphan (finalizer `orphan`); everything else
//! happens here (docs/workloads.md#garbage-collector):
//!
//! - **Background** (the owner is gone at once): each dependent now has a dangling reference and,
//!   with no other solid owner, is deleted;
//! - **Foreground**: the owner stays with its finalizer; its dependents are deleted (recursively,
//!   in the foreground when they have dependents themselves), and once no dependent with
//!   `blockOwnerDeletion: true` remains the finalizer is removed so the owner goes;
//! - **Orphan**: the owner's reference is removed from every dependent, then the finalizer;
//! - a dependent whose owner does not exist, or exists with another uid (a recreated owner of the
//!   same name), is collected (GC6).
//!
//! The graph is built from one informer per kind: the typed informers the other controllers share,
//! and metadata-only informers for every other kind minik serves. An owner missing from the graph
//! is looked up with a live GET before its dependent is deleted, so an informer that lags another
//! never causes a wrong delete (as upstream's `isDangling`).
//!
//! minik simplifies: no absent-owner cache, no `OwnerRefInvalidNamespace` events, and a reference
//! to a kind minik does not serve is treated as solid (never collected).

pub mod graph;

use std::sync::{Arc, Mutex, MutexGuard};

use minik_api::meta::OwnerReference;
use minik_api::resource::RESOURCES;
use minik_api::ResourceInfo;
use minik_client::{Client, DeleteParams, Method, Patch, WorkQueue};
use serde_json::{json, Value};
use tracing::info;

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};
use graph::{decide, Decision, Graph, Node, OwnerState, FOREGROUND, ORPHAN};

/// The apps/v1 kinds the workload controllers create, for an apiserver table that lacks them.
const APPS: &[ResourceInfo] = &[
    ResourceInfo {
        kind: "ReplicaSet",
        plural: "replicasets",
        singular: "replicaset",
        short_names: &["rs"],
        namespaced: true,
        api_version: "apps/v1",
    },
    ResourceInfo {
        kind: "Deployment",
        plural: "deployments",
        singular: "deployment",
        short_names: &["deploy"],
        namespaced: true,
        api_version: "apps/v1",
    },
];

/// Every kind the collector watches: what minik serves, plus the apps kinds.
pub fn kinds() -> Vec<&'static ResourceInfo> {
    let mut kinds: Vec<&'static ResourceInfo> = RESOURCES.iter().collect();
    for info in APPS {
        if !kinds
            .iter()
            .any(|k| k.api_version == info.api_version && k.kind == info.kind)
        {
            kinds.push(info);
        }
    }
    kinds
}

/// The collector: the graph, a queue of uids, and the client.
pub struct GarbageCollector {
    graph: Arc<Mutex<Graph>>,
    queue: Arc<WorkQueue<String>>,
    client: Client,
}

impl GarbageCollector {
    /// Registers a metadata handler on every kind's informer.
    pub fn new(informers: &SharedInformers, client: Client) -> Arc<Self> {
        let collector = Arc::new(GarbageCollector {
            graph: Arc::default(),
            queue: Arc::new(WorkQueue::new()),
            client,
        });
        for info in kinds() {
            let (graph, queue) = (collector.graph.clone(), collector.queue.clone());
            informers
                .metadata_informer(info)
                .add_metadata_handler(Box::new(move |change| {
                    let attend = {
                        let mut graph = graph
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner());
                        match change {
                            Change::Added(meta) | Change::Updated { new: meta, .. } => {
                                Node::of(info, meta)
                                    .map(|node| graph.upsert(node))
                                    .unwrap_or_default()
                            }
                            Change::Deleted(meta) => meta
                                .uid
                                .as_deref()
                                .map(|uid| graph.remove(uid))
                                .unwrap_or_default(),
                        }
                    };
                    attend.into_iter().for_each(|uid| queue.add(uid));
                }));
        }
        collector
    }

    fn graph(&self) -> MutexGuard<'_, Graph> {
        self.graph
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Looks at the object `uid` (`attemptToDeleteItem` / `processDeletingDependentsItem` /
    /// `orphanDependents`).
    pub async fn sync_item(&self, uid: &str) -> minik_client::Result<()> {
        let Some(node) = self.graph().node(uid).cloned() else {
            return Ok(());
        };
        if node.deleting {
            if node.has_finalizer(ORPHAN) {
                return self.orphan_dependents(&node).await;
            }
            if node.has_finalizer(FOREGROUND) {
                return self.process_deleting_dependents(&node).await;
            }
            return Ok(());
        }
        if node.owners.is_empty() {
            return Ok(());
        }
        let mut states = Vec::new();
        for reference in &node.owners {
            states.push((
                reference.uid.clone(),
                self.classify(&node, reference).await?,
            ));
        }
        let has_dependents = !self.graph().dependents(uid).is_empty();
        match decide(&node, &states, has_dependents) {
            Decision::Keep => Ok(()),
            Decision::RemoveReferences(stale) => {
                info!(kind = node.kind.kind, object = %node, removed = stale.len(), "removing owner references");
                self.update_list(&node, "ownerReferences", |reference| {
                    !stale.iter().any(|uid| reference["uid"] == uid.as_str())
                })
                .await
            }
            Decision::Delete(policy) => {
                info!(kind = node.kind.kind, object = %node, policy, "deleting dependent");
                self.delete(&node, policy).await
            }
        }
    }

    /// GC6: solid, dangling or waiting, from the graph or, for an owner it lacks, a live GET.
    async fn classify(
        &self,
        node: &Node,
        reference: &OwnerReference,
    ) -> minik_client::Result<OwnerState> {
        if let Some(owner) = self.graph().node(&reference.uid) {
            return Ok(if owner.deleting_dependents() {
                OwnerState::Waiting
            } else {
                OwnerState::Solid
            });
        }
        let Some(info) = kinds()
            .into_iter()
            .find(|k| k.api_version == reference.api_version && k.kind == reference.kind)
        else {
            return Ok(OwnerState::Solid);
        };
        if info.namespaced && node.namespace.is_none() {
            // GC2: a cluster-scoped dependent cannot name a namespaced owner; never collected.
            return Ok(OwnerState::Solid);
        }
        let path = object_path(info, node.namespace.as_deref(), &reference.name);
        match self.client.request_json(Method::GET, &path, None).await {
            Ok(owner) if owner["metadata"]["uid"] != reference.uid.as_str() => {
                Ok(OwnerState::Dangling)
            }
            Ok(owner) => {
                let deleting = !owner["metadata"]["deletionTimestamp"].is_null();
                let foreground = owner["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|f| f.iter().any(|f| f == FOREGROUND));
                Ok(if deleting && foreground {
                    OwnerState::Waiting
                } else {
                    OwnerState::Solid
                })
            }
            Err(error) if error.is_not_found() => Ok(OwnerState::Dangling),
            Err(error) => Err(error),
        }
    }

    /// Foreground owner: delete its dependents; once none blocks, drop `foregroundDeletion`.
    async fn process_deleting_dependents(&self, owner: &Node) -> minik_client::Result<()> {
        let (blocking, waiting): (usize, Vec<String>) = {
            let graph = self.graph();
            let waiting = graph
                .dependents(&owner.uid)
                .into_iter()
                .filter(|d| !d.deleting)
                .map(|d| d.uid.clone())
                .collect();
            (graph.blocking_dependents(&owner.uid).len(), waiting)
        };
        waiting.into_iter().for_each(|uid| self.queue.add(uid));
        if blocking > 0 {
            return Ok(());
        }
        info!(kind = owner.kind.kind, object = %owner, "dependents gone; removing the foregroundDeletion finalizer");
        self.update_list(owner, "finalizers", |finalizer| finalizer != FOREGROUND)
            .await
    }

    /// Orphan owner: strip its reference from every dependent, then drop `orphan`.
    async fn orphan_dependents(&self, owner: &Node) -> minik_client::Result<()> {
        let dependents: Vec<Node> = self
            .graph()
            .dependents(&owner.uid)
            .into_iter()
            .cloned()
            .collect();
        for dependent in &dependents {
            self.update_list(dependent, "ownerReferences", |reference| {
                reference["uid"] != owner.uid.as_str()
            })
            .await?;
        }
        info!(kind = owner.kind.kind, object = %owner, orphaned = dependents.len(), "orphaned dependents; removing the orphan finalizer");
        self.update_list(owner, "finalizers", |finalizer| finalizer != ORPHAN)
            .await
    }

    /// Keeps the entries of `metadata.<field>` that `keep` accepts: a fresh GET, then a JSON patch
    /// that tests the list it read (so a concurrent change fails it and the item is retried).
    async fn update_list(
        &self,
        node: &Node,
        field: &str,
        keep: impl Fn(&Value) -> bool,
    ) -> minik_client::Result<()> {
        let path = object_path(node.kind, node.namespace.as_deref(), &node.name);
        let object = match self.client.request_json(Method::GET, &path, None).await {
            Ok(object) if object["metadata"]["uid"] == node.uid.as_str() => object,
            Ok(_) => return Ok(()),
            Err(error) if error.is_not_found() => return Ok(()),
            Err(error) => return Err(error),
        };
        let Some(current) = object["metadata"][field].as_array() else {
            return Ok(());
        };
        let kept: Vec<&Value> = current.iter().filter(|entry| keep(entry)).collect();
        if kept.len() == current.len() {
            return Ok(());
        }
        let pointer = format!("/metadata/{field}");
        let patch = json!([
            {"op": "test", "path": "/metadata/uid", "value": node.uid},
            {"op": "test", "path": pointer, "value": current},
            {"op": "replace", "path": pointer, "value": kept},
        ]);
        match self.client.patch_json(&path, &Patch::Json(patch)).await {
            Ok(_) => Ok(()),
            Err(error) if error.is_not_found() => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn delete(&self, node: &Node, policy: &str) -> minik_client::Result<()> {
        let path = object_path(node.kind, node.namespace.as_deref(), &node.name);
        let options = DeleteParams::default()
            .propagation(policy)
            .with_uid(&node.uid)
            .body();
        match self
            .client
            .request_json(Method::DELETE, &path, Some(&options))
            .await
        {
            Ok(_) => Ok(()),
            // Gone already, or another object took the name (the uid precondition failed).
            Err(error) if error.is_not_found() || error.is_conflict() => Ok(()),
            Err(error) => Err(error),
        }
    }
}

impl Controller for GarbageCollector {
    type Key = String;

    fn name(&self) -> &'static str {
        "garbagecollector"
    }

    fn queue(&self) -> &Arc<WorkQueue<String>> {
        &self.queue
    }

    async fn sync(&self, uid: &String) -> minik_client::Result<()> {
        self.sync_item(uid).await
    }
}

/// `/api/v1/namespaces/NS/pods/NAME`, `/api/v1/nodes/NAME`.
pub fn object_path(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
    match namespace.filter(|_| info.namespaced) {
        Some(namespace) => format!(
            "{}/namespaces/{namespace}/{}/{name}",
            info.group_version_path(),
            info.plural
        ),
        None => format!("{}/{}/{name}", info.group_version_path(), info.plural),
    }
}
