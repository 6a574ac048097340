//! The ReplicaSet controller: keeps `spec.replicas` pods running for each ReplicaSet.
//!
//! Kubernetes counterpart: `pkg/controller/replicaset/replica_set.go` (`syncReplicaSet`,
//! `manageReplicas`, `claimPods`, the pod event handlers). One sync of `namespace/name`:
//!
//! 1. take the active pods of the namespace and claim them (adopt orphans that match the selector,
//!    release owned pods that stopped matching: [`crate::ownership::claim`]);
//! 2. if the expectations of earlier writes were all observed, create or delete the difference:
//!    creates in slow-start batches 1, 2, 4 … with `generateName: RSNAME-`, deletes ranked by
//!    [`pods::rank`], at most 500 per sync;
//! 3. write the status (replicas, fullyLabeled, ready, available, observedGeneration) if it
//!    changed, and come back after `minReadySeconds` if pods are ready but not yet available.
//!
//! The pod handlers count expectations down (an ADDED pod is an observed create, a pod that got a
//! deletionTimestamp or vanished is an observed delete) and queue the ReplicaSet that controls the
//! pod, or, for an orphan, every ReplicaSet whose selector matches it.
//!
//! The same controller, over a [`source::Source`] of ReplicationControllers, is upstream's
//! replication manager ([`ReplicaSetController::new_replication_manager`]).

pub mod pods;
pub mod source;

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::apps::v1::ReplicaSet;
use minik_api::core::{Pod, ReplicationController};
use minik_api::meta::ObjectMeta;
use minik_api::ObjectKey;
use minik_client::{Api, Client, Store, WorkQueue};
use tracing::{debug, info};

use crate::controller::Controller;
use crate::expectations::Expectations;
use crate::informers::{Change, SharedInformers};
use crate::ownership::{controller_of, selects};
use crate::pod_control;
use source::Source;

/// The controller: two stores, a queue, expectations, and the client it writes through.
pub struct ReplicaSetController {
    replica_sets: Source,
    pods: Store<Pod>,
    queue: Arc<WorkQueue>,
    expectations: Arc<Expectations>,
    client: Client,
}

impl ReplicaSetController {
    /// Registers the handlers on the shared ReplicaSet and Pod informers.
    pub fn new(informers: &SharedInformers, client: Client) -> Arc<Self> {
        let rs_informer = informers.informer::<ReplicaSet>();
        let controller = Self::build(informers, client, Source::ReplicaSets(rs_informer.store()));
        let (queue, expectations) = (controller.queue.clone(), controller.expectations.clone());
        rs_informer.add_handler(move |change: &Change<ReplicaSet>| {
            owner_changed(&queue, &expectations, &change.object().metadata, change)
        });
        controller
    }

    /// The replication manager: the same controller over ReplicationControllers
    /// (`NewReplicationManager`).
    pub fn new_replication_manager(informers: &SharedInformers, client: Client) -> Arc<Self> {
        let rc_informer = informers.informer::<ReplicationController>();
        let source = Source::ReplicationControllers(rc_informer.store());
        let controller = Self::build(informers, client, source);
        let (queue, expectations) = (controller.queue.clone(), controller.expectations.clone());
        rc_informer.add_handler(move |change: &Change<ReplicationController>| {
            owner_changed(&queue, &expectations, &change.object().metadata, change)
        });
        controller
    }

    /// The controller over `replica_sets`, with its pod handler registered.
    fn build(informers: &SharedInformers, client: Client, replica_sets: Source) -> Arc<Self> {
        let pod_informer = informers.informer::<Pod>();
        let controller = Arc::new(ReplicaSetController {
            replica_sets,
            pods: pod_informer.store(),
            queue: Arc::new(WorkQueue::new()),
            expectations: Arc::new(Expectations::default()),
            client,
        });
        let handler = PodHandler {
            replica_sets: controller.replica_sets.clone(),
            queue: controller.queue.clone(),
            expectations: controller.expectations.clone(),
        };
        pod_informer.add_handler(move |change: &Change<Pod>| handler.on_change(change));
        controller
    }

    /// Reconciles the ReplicaSet `key` (`syncReplicaSet`).
    pub async fn sync_replica_set(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let Some(rs) = self.replica_sets.get(key) else {
            self.expectations.delete(key);
            return Ok(());
        };
        let needs_sync = self.expectations.satisfied(key);
        let candidates: Vec<Arc<Pod>> = self
            .pods
            .state()
            .into_iter()
            .filter(|pod| pod.metadata.namespace == rs.metadata.namespace && pods::is_active(pod))
            .collect();
        let owned = self.claim_pods(&rs, candidates).await?;
        let owned: Vec<&Pod> = owned.iter().map(|pod| &**pod).collect();
        let mut failure = None;
        if needs_sync && rs.metadata.deletion_timestamp.is_none() {
            if let Err((reason, error)) = self.manage_replicas(key, &rs, &owned).await {
                failure = Some((reason, error));
            }
        }
        let now = jiff::Timestamp::now();
        let reason = failure
            .as_ref()
            .map(|(reason, error)| (*reason, error.to_string()));
        let status = pods::calculate_status(&rs, &owned, reason, now);
        if rs.status.as_ref() != Some(&status) {
            // A merge patch rather than an update: the Deployment controller rewrites the RS's
            // spec often, and a status write needs no resourceVersion to be right.
            let mut body = serde_json::json!({ "status": status });
            if status.conditions.is_none() {
                body["status"]["conditions"] = serde_json::Value::Null;
            }
            self.replica_sets
                .patch_status(&self.client, key, body)
                .await?;
            debug!(rs = %key, replicas = status.replicas, ready = ?status.ready_replicas, available = ?status.available_replicas, "updated status");
        }
        let spec = rs.spec.as_ref();
        let (wanted, min_ready) = (
            spec.and_then(|s| s.replicas).unwrap_or(1),
            spec.and_then(|s| s.min_ready_seconds).unwrap_or(0),
        );
        if failure.is_none()
            && min_ready > 0
            && status.ready_replicas == Some(wanted)
            && status.available_replicas != Some(wanted)
        {
            self.queue
                .add_after(key.clone(), Duration::from_secs(min_ready as u64));
        }
        match failure {
            Some((_, error)) => Err(error),
            None => Ok(()),
        }
    }

    fn api<K: minik_client::Object>(&self, meta: &ObjectMeta) -> Api<K> {
        Api::namespaced(
            self.client.clone(),
            meta.namespace.as_deref().unwrap_or("default"),
        )
    }

    /// Adopts and releases (`claimPods`); returns the pods this ReplicaSet now owns.
    async fn claim_pods(
        &self,
        rs: &ReplicaSet,
        candidates: Vec<Arc<Pod>>,
    ) -> minik_client::Result<Vec<Arc<Pod>>> {
        let selector = rs.spec.as_ref().map(|s| &s.selector);
        let owner_kind = self.replica_sets.owner_kind();
        pod_control::claim_pods(&self.client, &rs.metadata, owner_kind, selector, candidates).await
    }

    /// Creates or deletes pods towards `spec.replicas` (`manageReplicas`). The error carries the
    /// `ReplicaFailure` reason.
    async fn manage_replicas(
        &self,
        key: &ObjectKey,
        rs: &ReplicaSet,
        owned: &[&Pod],
    ) -> Result<(), (&'static str, minik_client::Error)> {
        let wanted = rs
            .spec
            .as_ref()
            .and_then(|s| s.replicas)
            .unwrap_or(1)
            .max(0) as usize;
        if owned.len() < wanted {
            let count = (wanted - owned.len()).min(pods::BURST_REPLICAS);
            self.expectations.expect_creations(key, count);
            let created = self.create_pods(key, rs, count).await;
            info!(rs = %key, created = created.as_ref().map_or(0, |n| *n), wanted, "created pods");
            return created.map(|_| ()).map_err(|error| ("FailedCreate", error));
        }
        if owned.len() > wanted {
            let count = (owned.len() - wanted).min(pods::BURST_REPLICAS);
            let victims = pods::pods_to_delete(owned, count, jiff::Timestamp::now());
            let result =
                pod_control::delete_pods(&self.client, &self.expectations, key, &victims).await;
            info!(rs = %key, deleted = count, wanted, "deleted pods");
            return result.map_err(|error| ("FailedDelete", error));
        }
        Ok(())
    }

    /// Creates `count` pods in slow-start batches; stops at the first batch with an error and
    /// forgets the expectations of the creates it skipped.
    async fn create_pods(
        &self,
        key: &ObjectKey,
        rs: &ReplicaSet,
        count: usize,
    ) -> minik_client::Result<usize> {
        let pod = pods::pod_from_template(rs, self.replica_sets.owner_kind());
        let api = self.api::<Pod>(&rs.metadata);
        let (mut created, mut attempted) = (0, 0);
        for batch in pods::slow_start_batches(count) {
            attempted += batch;
            let results = join_all((0..batch).map(|_| api.create(&pod))).await;
            let mut first_error = None;
            for result in results {
                match result {
                    Ok(_) => created += 1,
                    Err(error) => {
                        self.expectations.creation_observed(key);
                        first_error.get_or_insert(error);
                    }
                }
            }
            if let Some(error) = first_error {
                self.expectations.lower_creations(key, count - attempted);
                return Err(error);
            }
        }
        Ok(created)
    }
}

impl Controller for ReplicaSetController {
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        match self.replica_sets {
            Source::ReplicaSets(_) => "replicaset",
            Source::ReplicationControllers(_) => "replicationmanager",
        }
    }

    fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    async fn sync(&self, key: &ObjectKey) -> minik_client::Result<()> {
        self.sync_replica_set(key).await
    }
}

/// A ReplicaSet (or ReplicationController) event: forget its expectations once it is gone, and
/// queue it.
fn owner_changed<K>(
    queue: &WorkQueue,
    expectations: &Expectations,
    meta: &ObjectMeta,
    change: &Change<K>,
) {
    let key = ObjectKey::of(meta);
    if let Change::Deleted(_) = change {
        expectations.delete(&key);
    }
    queue.add(key);
}

/// Pod events → expectations and ReplicaSet keys (`addPod`, `updatePod`, `deletePod`).
struct PodHandler {
    replica_sets: Source,
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
            Change::Updated { old, new } => self.updated(old, new),
            Change::Deleted(pod) => self.deleted(pod),
        }
    }

    fn updated(&self, old: &Pod, new: &Pod) {
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        if new.metadata.deletion_timestamp.is_some() && old.metadata.deletion_timestamp.is_none() {
            // A pod that started terminating is a deletion observed now (upstream `updatePod`).
            self.deleted(new);
        }
        let old_controller = self.controller(old);
        let new_controller = self.controller(new);
        if let Some(old_key) = old_controller
            .as_ref()
            .filter(|k| Some(*k) != new_controller.as_ref())
        {
            self.queue.add(old_key.clone());
        }
        match new_controller {
            Some(key) => {
                self.queue.add(key.clone());
                self.requeue_when_available(&key, old, new);
            }
            None if old.metadata.labels != new.metadata.labels || old_controller.is_some() => {
                self.queue_matching(new)
            }
            None => {}
        }
    }

    /// A pod that just became ready turns available after minReadySeconds: look again then.
    fn requeue_when_available(&self, key: &ObjectKey, old: &Pod, new: &Pod) {
        let min_ready = self
            .replica_sets
            .get(key)
            .and_then(|rs| rs.spec.as_ref().and_then(|s| s.min_ready_seconds))
            .unwrap_or(0);
        if min_ready > 0 && !pods::is_ready(old) && pods::is_ready(new) {
            self.queue
                .add_after(key.clone(), Duration::from_secs(min_ready as u64 + 1));
        }
    }

    fn deleted(&self, pod: &Pod) {
        if let Some(key) = self.controller(pod) {
            self.expectations
                .deletion_observed(&key, &ObjectKey::of(&pod.metadata));
            self.queue.add(key);
        }
    }

    /// The ReplicaSet controlling `pod`, if it exists with the referenced uid.
    fn controller(&self, pod: &Pod) -> Option<ObjectKey> {
        let (_, kind) = self.replica_sets.owner_kind();
        let reference = controller_of(&pod.metadata).filter(|r| r.kind == kind)?;
        let key = ObjectKey::new(
            pod.metadata.namespace.clone().unwrap_or_default(),
            reference.name.clone(),
        );
        let rs = self.replica_sets.get(&key)?;
        (rs.metadata.uid.as_deref() == Some(reference.uid.as_str())).then_some(key)
    }

    /// An orphan: every ReplicaSet that could adopt it.
    fn queue_matching(&self, pod: &Pod) {
        for rs in self.replica_sets.state() {
            if rs.metadata.namespace == pod.metadata.namespace
                && selects(
                    rs.spec.as_ref().map(|s| &s.selector),
                    pod.metadata.labels.as_ref(),
                )
            {
                self.queue.add(ObjectKey::of(&rs.metadata));
            }
        }
    }
}
