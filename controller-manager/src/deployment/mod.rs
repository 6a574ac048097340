//! The Deployment controller: one ReplicaSet per pod template, rolled from old to new.
//!
//! Kubernetes counterpart: `pkg/controller/deployment/` (`deployment_controller.go` for the
//! handlers, `sync.go`, `rolling.go`, `recreate.go`, `progress.go`). The controller never touches
//! pods: it only sets `spec.replicas` of ReplicaSets and lets the ReplicaSet controller create and
//! delete pods, then reads the ReplicaSets' status back. Read in this order:
//!
//! - [`rolling`]: the arithmetic, pure and table-tested;
//! - [`util`]: the pod-template-hash, the new RS, revisions, history;
//! - [`status`]: counts and the Available / Progressing conditions;
//! - [`sync`]: `sync_deployment`, which strings them together with the API writes, and
//!   `replica_sets.rs`, the writes that claim, create and trim ReplicaSets.
//!
//! The handlers queue a Deployment when it changes, when one of its ReplicaSets changes (or an
//! orphan RS its selector matches appears), and, for Recreate, when one of its pods goes away
//! (the new RS may only start once every old pod is gone).

mod replica_sets;
pub mod rolling;
pub mod status;
pub mod sync;
pub mod util;

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use minik_api::core::Pod;
use minik_api::meta::ObjectMeta;
use minik_api::ObjectKey;
use minik_client::events::Recorder;
use minik_client::{Client, Store, WorkQueue};

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};
use crate::ownership::{controller_of, selects};

/// The controller: three stores, a queue, and the client it writes through.
pub struct DeploymentController {
    deployments: Store<Deployment>,
    replica_sets: Store<ReplicaSet>,
    pods: Store<Pod>,
    queue: Arc<WorkQueue>,
    client: Client,
    recorder: Recorder,
}

impl DeploymentController {
    /// Registers the handlers on the shared Deployment, ReplicaSet and Pod informers.
    pub fn new(informers: &SharedInformers, client: Client) -> Arc<Self> {
        let deployment_informer = informers.informer::<Deployment>();
        let rs_informer = informers.informer::<ReplicaSet>();
        let pod_informer = informers.informer::<Pod>();
        let controller = Arc::new(DeploymentController {
            deployments: deployment_informer.store(),
            replica_sets: rs_informer.store(),
            pods: pod_informer.store(),
            queue: Arc::new(WorkQueue::new()),
            recorder: Recorder::new(client.clone(), "deployment-controller", None),
            client,
        });
        let queue = controller.queue.clone();
        deployment_informer.add_handler(move |change: &Change<Deployment>| {
            queue.add(ObjectKey::of(&change.object().metadata));
        });
        let owners = Owners {
            deployments: controller.deployments.clone(),
            replica_sets: controller.replica_sets.clone(),
            queue: controller.queue.clone(),
        };
        rs_informer.add_handler(move |change: &Change<ReplicaSet>| owners.on_replica_set(change));
        let owners = Owners {
            deployments: controller.deployments.clone(),
            replica_sets: controller.replica_sets.clone(),
            queue: controller.queue.clone(),
        };
        pod_informer.add_handler(move |change: &Change<Pod>| {
            if let Change::Deleted(pod) = change {
                owners.on_pod_deleted(pod);
            }
        });
        controller
    }
}

impl Controller for DeploymentController {
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        "deployment"
    }

    fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    async fn sync(&self, key: &ObjectKey) -> minik_client::Result<()> {
        self.sync_deployment(key).await
    }
}

/// ReplicaSet and pod events → Deployment keys (`addReplicaSet`, `updateReplicaSet`,
/// `deleteReplicaSet`, `deletePod`).
struct Owners {
    deployments: Store<Deployment>,
    replica_sets: Store<ReplicaSet>,
    queue: Arc<WorkQueue>,
}

impl Owners {
    fn on_replica_set(&self, change: &Change<ReplicaSet>) {
        if let Change::Updated { old, .. } = change {
            if let Some(key) = self.owner(&old.metadata) {
                self.queue.add(key);
            }
        }
        let rs = change.object();
        match self.owner(&rs.metadata) {
            Some(key) => self.queue.add(key),
            None if controller_of(&rs.metadata).is_none() => self.queue_matching(&rs.metadata),
            None => {}
        }
    }

    /// A Recreate Deployment waits for its old pods to be gone.
    fn on_pod_deleted(&self, pod: &Pod) {
        let Some(rs_key) = self.controller_key(&pod.metadata, "ReplicaSet") else {
            return;
        };
        let Some(rs) = self.replica_sets.get(&rs_key) else {
            return;
        };
        if let Some(key) = self.owner(&rs.metadata) {
            let recreate = self.deployments.get(&key).is_some_and(|d| {
                d.spec
                    .as_ref()
                    .and_then(|s| s.strategy.as_ref())
                    .and_then(|s| s.type_.as_deref())
                    == Some("Recreate")
            });
            if recreate {
                self.queue.add(key);
            }
        }
    }

    fn controller_key(&self, meta: &ObjectMeta, kind: &str) -> Option<ObjectKey> {
        let reference = controller_of(meta).filter(|r| r.kind == kind)?;
        Some(ObjectKey::new(
            meta.namespace.clone().unwrap_or_default(),
            reference.name.clone(),
        ))
    }

    /// The Deployment controlling an RS, if it exists with the referenced uid.
    fn owner(&self, meta: &ObjectMeta) -> Option<ObjectKey> {
        let key = self.controller_key(meta, "Deployment")?;
        let deployment = self.deployments.get(&key)?;
        let uid = controller_of(meta)?.uid.as_str();
        (deployment.metadata.uid.as_deref() == Some(uid)).then_some(key)
    }

    fn queue_matching(&self, meta: &ObjectMeta) {
        for deployment in self.deployments.state() {
            let selector = deployment.spec.as_ref().map(|s| &s.selector);
            if deployment.metadata.namespace == meta.namespace
                && selects(selector, meta.labels.as_ref())
            {
                self.queue.add(ObjectKey::of(&deployment.metadata));
            }
        }
    }
}
