//! The disruption controller: keeps each PodDisruptionBudget's status (healthy, desired and
//! expected pods, disruptions allowed) true, so that `pods/eviction` can decide from it.
//!
//! Kubernetes counterpart: `pkg/controller/disruption/disruption.go` (`sync`, `trySync`,
//! `getPodsForPdb`, `getExpectedScale` and its finders). One sync of `namespace/name`:
//!
//! 1. the pods of the budget's namespace its selector matches;
//! 2. when the spec needs it (`maxUnavailable`, or `minAvailable` as a percentage), the scale of
//!    the pods' controllers: a ReplicaSet's replicas, or its Deployment's when a Deployment controls
//!    it, each controller counted once; a pod with no such controller makes the sync fail safe (no
//!    disruption allowed, condition `SyncFailed`), as upstream;
//! 3. [`compute::next_status`], written through `/status` with the resourceVersion read, so a
//!    concurrent eviction's write (which spends a disruption) makes this one conflict and retry.
//!
//! Pod changes requeue the budgets that select the pod; ReplicaSet and Deployment changes requeue
//! the budgets of their namespace. minik simplifies: no StatefulSets, ReplicationControllers or
//! custom scale subresources, no stale DisruptionTarget cleanup.

pub mod compute;

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use minik_api::apps::{Deployment, ReplicaSet};
use minik_api::core::Pod;
use minik_api::meta::ObjectMeta;
use minik_api::policy::PodDisruptionBudget;
use minik_api::ObjectKey;
use minik_client::{Api, Client, Store, WorkQueue};
use tracing::info;

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};
use crate::ownership::{controller_of, selects};

/// The controller: stores of budgets, pods and the pods' controllers, a queue of budget keys.
pub struct DisruptionController {
    budgets: Store<PodDisruptionBudget>,
    pods: Store<Pod>,
    replica_sets: Store<ReplicaSet>,
    deployments: Store<Deployment>,
    queue: Arc<WorkQueue>,
    client: Client,
}

impl DisruptionController {
    /// Registers the handlers on the shared informers.
    pub fn new(informers: &SharedInformers, client: Client) -> Arc<Self> {
        let budget_informer = informers.informer::<PodDisruptionBudget>();
        let pod_informer = informers.informer::<Pod>();
        let rs_informer = informers.informer::<ReplicaSet>();
        let deployment_informer = informers.informer::<Deployment>();
        let controller = Arc::new(DisruptionController {
            budgets: budget_informer.store(),
            pods: pod_informer.store(),
            replica_sets: rs_informer.store(),
            deployments: deployment_informer.store(),
            queue: Arc::new(WorkQueue::new()),
            client,
        });
        let queue = controller.queue.clone();
        budget_informer.add_handler(move |change: &Change<PodDisruptionBudget>| {
            queue.add(ObjectKey::of(&change.object().metadata));
        });
        let (budgets, queue) = (controller.budgets.clone(), controller.queue.clone());
        pod_informer.add_handler(move |change: &Change<Pod>| {
            let mut metas = vec![&change.object().metadata];
            if let Change::Updated { old, .. } = change {
                metas.push(&old.metadata);
            }
            for meta in metas {
                budgets_of(&budgets, meta)
                    .into_iter()
                    .for_each(|key| queue.add(key));
            }
        });
        let (budgets, queue) = (controller.budgets.clone(), controller.queue.clone());
        rs_informer.add_handler(move |change: &Change<ReplicaSet>| {
            requeue_namespace(&budgets, &queue, &change.object().metadata);
        });
        let (budgets, queue) = (controller.budgets.clone(), controller.queue.clone());
        deployment_informer.add_handler(move |change: &Change<Deployment>| {
            requeue_namespace(&budgets, &queue, &change.object().metadata);
        });
        controller
    }

    /// Reconciles the budget `key` (`sync`).
    pub async fn sync_budget(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let Some(pdb) = self.budgets.get(key) else {
            return Ok(());
        };
        let selector = pdb.spec.as_ref().and_then(|s| s.selector.as_ref());
        let pods: Vec<Arc<Pod>> = self
            .pods
            .state()
            .into_iter()
            .filter(|pod| pod.metadata.namespace == key.namespace)
            .filter(|pod| selects(selector, pod.metadata.labels.as_ref()))
            .collect();
        let refs: Vec<&Pod> = pods.iter().map(|pod| &**pod).collect();
        let now = Timestamp::now();
        let (next, recheck) = compute::next_status(&pdb, &refs, || self.expected_scale(&refs), now);
        if let Some(at) = recheck {
            let wait = at.duration_since(now).unsigned_abs();
            self.queue.add_after(key.clone(), wait);
        }
        if same_counts(pdb.status.as_ref(), &next) {
            return Ok(());
        }
        let mut updated = (*pdb).clone();
        updated.status = Some(next.clone());
        let namespace = key.namespace.as_deref().unwrap_or("default");
        Api::<PodDisruptionBudget>::namespaced(self.client.clone(), namespace)
            .replace_status(&key.name, &updated)
            .await?;
        info!(pdb = %key, healthy = next.current_healthy, desired = next.desired_healthy,
            expected = next.expected_pods, allowed = next.disruptions_allowed, "updated status");
        Ok(())
    }

    /// `getExpectedScale`: the sum of the replicas of the pods' controllers, each counted once.
    fn expected_scale(&self, pods: &[&Pod]) -> Result<i32, String> {
        let mut scales: BTreeMap<String, i32> = BTreeMap::new();
        for pod in pods {
            let name = pod.metadata.name.as_deref().unwrap_or("");
            let Some(reference) = controller_of(&pod.metadata) else {
                return Err(format!("found no controller ref for pod {name:?}"));
            };
            let (uid, replicas) = self
                .scale_of(&pod.metadata, reference)
                .ok_or_else(|| format!("found no controllers for pod {name:?}"))?;
            scales.insert(uid, replicas);
        }
        Ok(scales.values().sum())
    }

    /// The finders: a pod's ReplicaSet, or that ReplicaSet's Deployment when one controls it.
    fn scale_of(
        &self,
        pod: &ObjectMeta,
        reference: &minik_api::meta::OwnerReference,
    ) -> Option<(String, i32)> {
        if reference.kind != "ReplicaSet" {
            return None;
        }
        let namespace = pod.namespace.clone().unwrap_or_default();
        let rs = self
            .replica_sets
            .get(&ObjectKey::new(namespace.clone(), reference.name.clone()))
            .filter(|rs| rs.metadata.uid.as_deref() == Some(reference.uid.as_str()))?;
        match controller_of(&rs.metadata).filter(|r| r.kind == "Deployment") {
            Some(owner) => {
                let deployment = self
                    .deployments
                    .get(&ObjectKey::new(namespace, owner.name.clone()))
                    .filter(|d| d.metadata.uid.as_deref() == Some(owner.uid.as_str()))?;
                let replicas = deployment
                    .spec
                    .as_ref()
                    .and_then(|s| s.replicas)
                    .unwrap_or(1);
                Some((owner.uid.clone(), replicas))
            }
            None => {
                let replicas = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                Some((reference.uid.clone(), replicas))
            }
        }
    }
}

/// Whether the status already says what `next` says (the transition times aside).
fn same_counts(
    old: Option<&minik_api::policy::PodDisruptionBudgetStatus>,
    next: &minik_api::policy::PodDisruptionBudgetStatus,
) -> bool {
    let Some(old) = old else {
        return false;
    };
    let condition = |s: &minik_api::policy::PodDisruptionBudgetStatus| {
        s.conditions
            .iter()
            .flatten()
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
            .collect::<Vec<_>>()
    };
    (
        old.current_healthy,
        old.desired_healthy,
        old.expected_pods,
        old.disruptions_allowed,
        old.observed_generation,
        &old.disrupted_pods,
    ) == (
        next.current_healthy,
        next.desired_healthy,
        next.expected_pods,
        next.disruptions_allowed,
        next.observed_generation,
        &next.disrupted_pods,
    ) && condition(old) == condition(next)
}

/// The budgets in the object's namespace whose selector matches its labels.
fn budgets_of(budgets: &Store<PodDisruptionBudget>, meta: &ObjectMeta) -> Vec<ObjectKey> {
    budgets
        .state()
        .into_iter()
        .filter(|pdb| pdb.metadata.namespace == meta.namespace)
        .filter(|pdb| {
            let selector = pdb.spec.as_ref().and_then(|s| s.selector.as_ref());
            selects(selector, meta.labels.as_ref())
        })
        .map(|pdb| ObjectKey::of(&pdb.metadata))
        .collect()
}

fn requeue_namespace(budgets: &Store<PodDisruptionBudget>, queue: &WorkQueue, meta: &ObjectMeta) {
    budgets
        .state()
        .into_iter()
        .filter(|pdb| pdb.metadata.namespace == meta.namespace)
        .for_each(|pdb| queue.add(ObjectKey::of(&pdb.metadata)));
}

impl Controller for DisruptionController {
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        "disruption"
    }

    fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    async fn sync(&self, key: &ObjectKey) -> minik_client::Result<()> {
        self.sync_budget(key).await
    }
}
