//! The DaemonSet controller: one pod of the current template on every eligible node.
//!
//! Kubernetes counterpart: `pkg/controller/daemon/daemon_controller.go` (`syncDaemonSet`,
//! `manage`, `syncNodes`, the pod and node handlers) and `update.go` (`constructHistory`,
//! `cleanupHistory`). One sync of `namespace/name`:
//!
//! 1. claim the pods (adopt orphans the selector matches, release those it stopped matching);
//! 2. make sure a ControllerRevision records the current template ([`history`]): its hash labels
//!    the new pods, and tells old pods from new ones during a rolling update;
//! 3. if the expectations of earlier writes were all observed, [`decide::plan`] says which nodes
//!    get a pod and which pods go; deletes are sent first, creates wait for the next sync, so one
//!    expectation record covers each sync's writes;
//! 4. write the status ([`decide::status`]) if it changed.
//!
//! The pod handler counts expectations down and queues the DaemonSet controlling the pod (or, for
//! an orphan, every DaemonSet that could adopt it); the node handler queues every DaemonSet when a
//! node joins or leaves, or its labels, taints, cordon or readiness change.
//!
//! minik simplifies: no failed-pod backoff, no `kubectl rollout undo` (revisions are recorded and
//! pruned to `revisionHistoryLimit`, not restored).

pub mod decide;
mod history;
pub mod pods;
mod rolling;

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use minik_api::core::{Node, Pod};
use minik_api::ObjectKey;
use minik_client::{Api, Client, Patch, Store, WorkQueue};
use tracing::{debug, info};

use crate::controller::Controller;
use crate::expectations::Expectations;
use crate::informers::{Change, SharedInformers};
use crate::ownership::{controller_of, selects};
use crate::pod_control;

/// The controller: four stores, a queue, expectations, and the client it writes through.
pub struct DaemonSetController {
    daemon_sets: Store<DaemonSet>,
    pods: Store<Pod>,
    nodes: Store<Node>,
    revisions: Store<ControllerRevision>,
    queue: Arc<WorkQueue>,
    expectations: Arc<Expectations>,
    client: Client,
}

impl DaemonSetController {
    /// Registers the handlers on the shared DaemonSet, Pod and Node informers.
    pub fn new(informers: &SharedInformers, client: Client) -> Arc<Self> {
        let ds_informer = informers.informer::<DaemonSet>();
        let pod_informer = informers.informer::<Pod>();
        let node_informer = informers.informer::<Node>();
        let controller = Arc::new(DaemonSetController {
            daemon_sets: ds_informer.store(),
            pods: pod_informer.store(),
            nodes: node_informer.store(),
            revisions: informers.informer::<ControllerRevision>().store(),
            queue: Arc::new(WorkQueue::new()),
            expectations: Arc::new(Expectations::default()),
            client,
        });
        let (queue, expectations) = (controller.queue.clone(), controller.expectations.clone());
        ds_informer.add_handler(move |change: &Change<DaemonSet>| {
            let key = ObjectKey::of(&change.object().metadata);
            if let Change::Deleted(_) = change {
                expectations.delete(&key);
            }
            queue.add(key);
        });
        let handler = PodHandler {
            daemon_sets: controller.daemon_sets.clone(),
            queue: controller.queue.clone(),
            expectations: controller.expectations.clone(),
        };
        pod_informer.add_handler(move |change: &Change<Pod>| handler.on_change(change));
        let (daemon_sets, queue) = (controller.daemon_sets.clone(), controller.queue.clone());
        node_informer.add_handler(move |change: &Change<Node>| {
            if node_changed(change) {
                for ds in daemon_sets.state() {
                    queue.add(ObjectKey::of(&ds.metadata));
                }
            }
        });
        controller
    }

    fn api<K: minik_client::Object>(&self, key: &ObjectKey) -> Api<K> {
        let namespace = key.namespace.as_deref().unwrap_or("default");
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Reconciles the DaemonSet `key` (`syncDaemonSet`).
    pub async fn sync_daemon_set(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let Some(ds) = self.daemon_sets.get(key) else {
            self.expectations.delete(key);
            return Ok(());
        };
        let candidates: Vec<Arc<Pod>> = self
            .pods
            .state()
            .into_iter()
            .filter(|pod| pod.metadata.namespace == ds.metadata.namespace)
            .collect();
        let selector = ds.spec.as_ref().map(|s| &s.selector);
        let owner_kind = ("apps/v1", "DaemonSet");
        let owned =
            pod_control::claim_pods(&self.client, &ds.metadata, owner_kind, selector, candidates)
                .await?;
        let pods: Vec<&Pod> = owned.iter().map(|pod| &**pod).collect();
        if ds.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let hash = self.construct_history(key, &ds, &pods).await?;
        let nodes = self.nodes.state();
        let nodes: Vec<&Node> = nodes.iter().map(|node| &**node).collect();
        let now = jiff::Timestamp::now();
        let mut result = Ok(());
        if self.expectations.satisfied(key) {
            let plan = decide::plan(&ds, &nodes, &pods, &hash, now);
            result = self.execute(key, &ds, &pods, plan, &hash).await;
        }
        let status = decide::status(&ds, &nodes, &pods, &hash, now);
        if ds.status.as_ref() != Some(&status) {
            let body = serde_json::json!({ "status": status });
            let name = ds.metadata.name.as_deref().unwrap_or_default();
            self.api::<DaemonSet>(key)
                .patch_status(name, &Patch::Merge(body))
                .await?;
            debug!(ds = %key, desired = status.desired_number_scheduled, ready = status.number_ready, "updated status");
        }
        let min_ready = ds
            .spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0);
        if min_ready > 0 && status.number_available != Some(status.number_ready) {
            self.queue
                .add_after(key.clone(), Duration::from_secs(min_ready as u64 + 1));
        }
        result
    }

    /// Sends the plan's deletes, or if there are none its creates (one kind of write per sync).
    async fn execute(
        &self,
        key: &ObjectKey,
        ds: &DaemonSet,
        pods: &[&Pod],
        plan: decide::Plan,
        hash: &str,
    ) -> minik_client::Result<()> {
        if !plan.delete.is_empty() {
            let victims: Vec<&Pod> = pods
                .iter()
                .copied()
                .filter(|pod| {
                    plan.delete
                        .contains(pod.metadata.name.as_ref().unwrap_or(&String::new()))
                })
                .collect();
            info!(ds = %key, pods = ?plan.delete, "deleting daemon pods");
            return pod_control::delete_pods(&self.client, &self.expectations, key, &victims).await;
        }
        if plan.create_on.is_empty() {
            return Ok(());
        }
        info!(ds = %key, nodes = ?plan.create_on, "creating daemon pods");
        self.expectations
            .expect_creations(key, plan.create_on.len());
        let api = self.api::<Pod>(key);
        let creates = plan.create_on.iter().map(|node| {
            let pod = pods::new_pod(ds, node, hash);
            let api = api.clone();
            async move { api.create(&pod).await }
        });
        let mut first_error = None;
        for result in join_all(creates).await {
            if let Err(error) = result {
                self.expectations.creation_observed(key);
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Controller for DaemonSetController {
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        "daemonset"
    }

    fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    async fn sync(&self, key: &ObjectKey) -> minik_client::Result<()> {
        self.sync_daemon_set(key).await
    }
}

/// Whether a node change can change which nodes run daemon pods: added, deleted, or its labels,
/// taints, cordon or Ready condition changed (not a heartbeat).
fn node_changed(change: &Change<Node>) -> bool {
    let Change::Updated { old, new } = change else {
        return true;
    };
    let ready = |node: &Node| {
        node.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .map(|c| c.status.clone())
    };
    old.metadata.labels != new.metadata.labels || old.spec != new.spec || ready(old) != ready(new)
}

/// Pod events → expectations and DaemonSet keys (`addPod`, `updatePod`, `deletePod`).
struct PodHandler {
    daemon_sets: Store<DaemonSet>,
    queue: Arc<WorkQueue>,
    expectations: Arc<Expectations>,
}

impl PodHandler {
    fn on_change(&self, change: &Change<Pod>) {
        match change {
            Change::Added(pod) if pod.metadata.deletion_timestamp.is_some() => self.deleted(pod),
            Change::Added(pod) => match self.controller(pod) {
                Some(key) => {
                    self.expectations.creation_observed(&key);
                    self.queue.add(key);
                }
                None => self.queue_matching(pod),
            },
            Change::Updated { old, new } => {
                if new.metadata.deletion_timestamp.is_some()
                    && old.metadata.deletion_timestamp.is_none()
                {
                    self.deleted(new);
                }
                match self.controller(new) {
                    Some(key) => self.queue.add(key),
                    None if old.metadata.labels != new.metadata.labels => self.queue_matching(new),
                    None => {}
                }
                if let Some(old_key) = self.controller(old) {
                    self.queue.add(old_key);
                }
            }
            Change::Deleted(pod) => self.deleted(pod),
        }
    }

    fn deleted(&self, pod: &Pod) {
        if let Some(key) = self.controller(pod) {
            self.expectations
                .deletion_observed(&key, &ObjectKey::of(&pod.metadata));
            self.queue.add(key);
        }
    }

    /// The DaemonSet controlling `pod`, if it exists with the referenced uid.
    fn controller(&self, pod: &Pod) -> Option<ObjectKey> {
        let reference = controller_of(&pod.metadata).filter(|r| r.kind == "DaemonSet")?;
        let key = ObjectKey::new(
            pod.metadata.namespace.clone().unwrap_or_default(),
            reference.name.clone(),
        );
        let ds = self.daemon_sets.get(&key)?;
        (ds.metadata.uid.as_deref() == Some(reference.uid.as_str())).then_some(key)
    }

    /// An orphan: every DaemonSet that could adopt it.
    fn queue_matching(&self, pod: &Pod) {
        for ds in self.daemon_sets.state() {
            if ds.metadata.namespace == pod.metadata.namespace
                && selects(
                    ds.spec.as_ref().map(|s| &s.selector),
                    pod.metadata.labels.as_ref(),
                )
            {
                self.queue.add(ObjectKey::of(&ds.metadata));
            }
        }
    }
}
