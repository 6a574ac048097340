//! The StatefulSet controller: pods with stable names `set-0…n-1`, each with its own claims,
//! started and stopped in order, updated from the highest ordinal down.
//!
//! Kubernetes counterpart: `pkg/controller/statefulset/stateful_set.go` (handlers, `sync`) and
//! `stateful_set_control.go` (`UpdateStatefulSet`, `getStatefulSetRevisions`,
//! `truncateHistory`), `stateful_pod_control.go` (`CreateStatefulPod`, `createPersistentVolumeClaims`,
//! the claim owner references of the retention policy). One sync of `namespace/name`:
//!
//! 1. claim the pods (adopt the orphans the selector matches, release the others);
//! 2. record the template in a ControllerRevision `set-HASH` ([`pods::new_revision`]); the status's
//!    `currentRevision` names the one older pods run, `updateRevision` the newest;
//! 3. [`decide::plan`] the writes and send them in order: the claims of a new pod before the pod,
//!    a condemned pod's claims handed to the pod first under `whenScaled: Delete`;
//! 4. write the status (replicas, ready, current/updated, the revisions).
//!
//! There are no expectations: a pod's name is its ordinal, so a second create for the same ordinal
//! — a lagging informer, or a controller manager restarted mid-rollout — is a 409 from the API.
//!
//! minik simplifies: no `minReadySeconds` wait, no hash-collision handling, revisions are never
//! pruned (`revisionHistoryLimit` is not applied), no `maxUnavailable` (alpha), no Events.

pub mod decide;
pub mod pods;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use minik_api::core::{PersistentVolumeClaim, Pod, PodTemplateSpec};
use minik_api::daemonsets::CONTROLLER_REVISION_HASH_LABEL;
use minik_api::statefulsets::{claim_name, ordinal_of};
use minik_api::ObjectKey;
use minik_client::{Api, Client, DeleteParams, Patch, Store, WorkQueue};
use tracing::info;

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};
use crate::ownership::{controller_of, is_controlled_by, selects};
use crate::pod_control;
use decide::{Action, PodState, SetShape};

/// The controller: its stores, a queue, and the client it writes through.
pub struct StatefulSetController {
    sets: Store<StatefulSet>,
    pods: Store<Pod>,
    revisions: Store<ControllerRevision>,
    claims: Store<PersistentVolumeClaim>,
    queue: Arc<WorkQueue>,
    client: Client,
}

impl StatefulSetController {
    /// Registers the handlers on the shared StatefulSet and Pod informers.
    pub fn new(informers: &SharedInformers, client: Client) -> Arc<Self> {
        let set_informer = informers.informer::<StatefulSet>();
        let pod_informer = informers.informer::<Pod>();
        let controller = Arc::new(StatefulSetController {
            sets: set_informer.store(),
            pods: pod_informer.store(),
            revisions: informers.informer::<ControllerRevision>().store(),
            claims: informers.informer::<PersistentVolumeClaim>().store(),
            queue: Arc::new(WorkQueue::new()),
            client,
        });
        let queue = controller.queue.clone();
        set_informer.add_handler(move |change: &Change<StatefulSet>| {
            queue.add(ObjectKey::of(&change.object().metadata));
        });
        let (sets, queue) = (controller.sets.clone(), controller.queue.clone());
        pod_informer.add_handler(move |change: &Change<Pod>| {
            let mut pods = vec![change.object().clone()];
            if let Change::Updated { old, .. } = change {
                pods.push(old.clone());
            }
            for pod in pods {
                for key in sets_of(&sets, &pod) {
                    queue.add(key);
                }
            }
        });
        controller
    }

    fn api<K: minik_client::Object>(&self, key: &ObjectKey) -> Api<K> {
        Api::namespaced(
            self.client.clone(),
            key.namespace.as_deref().unwrap_or("default"),
        )
    }

    /// Reconciles the StatefulSet `key`.
    pub async fn sync_stateful_set(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let Some(sts) = self.sets.get(key) else {
            return Ok(());
        };
        let set_name = key.name.clone();
        let candidates: Vec<Arc<Pod>> = self
            .pods
            .state()
            .into_iter()
            .filter(|pod| pod.metadata.namespace == sts.metadata.namespace)
            .filter(|pod| {
                ordinal_of(&set_name, pod.metadata.name.as_deref().unwrap_or("")).is_some()
            })
            .collect();
        let selector = sts.spec.as_ref().map(|s| &s.selector);
        let owner_kind = ("apps/v1", "StatefulSet");
        let owned = pod_control::claim_pods(
            &self.client,
            &sts.metadata,
            owner_kind,
            selector,
            candidates,
        )
        .await?;
        if sts.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let shape = self.record_revision(key, &sts).await?;
        let by_ordinal: BTreeMap<i32, &Pod> = owned
            .iter()
            .filter_map(|pod| {
                Some((
                    ordinal_of(&set_name, pod.metadata.name.as_deref()?)?,
                    &**pod,
                ))
            })
            .collect();
        let states: BTreeMap<i32, PodState> = by_ordinal
            .iter()
            .map(|(o, pod)| (*o, pod_state(pod)))
            .collect();
        let actions = decide::plan(&shape, &states);
        let result = self.execute(key, &sts, &by_ordinal, actions).await;
        self.write_status(key, &sts, &shape, &states).await?;
        result
    }

    /// Makes sure a revision records the current template; returns the set's shape.
    async fn record_revision(
        &self,
        key: &ObjectKey,
        sts: &StatefulSet,
    ) -> minik_client::Result<SetShape> {
        let spec = sts.spec.clone().unwrap_or_default();
        let status = sts.status.clone().unwrap_or_default();
        let hash = pods::template_hash(&spec.template, status.collision_count);
        let name = pods::revision_name(sts, &hash);
        let owned: Vec<Arc<ControllerRevision>> = self
            .revisions
            .state()
            .into_iter()
            .filter(|r| r.metadata.namespace == sts.metadata.namespace)
            .filter(|r| is_controlled_by(&r.metadata, sts.metadata.uid.as_deref()))
            .collect();
        if !owned
            .iter()
            .any(|r| r.metadata.name.as_deref() == Some(&name))
        {
            let highest = owned.iter().map(|r| r.revision).max().unwrap_or(0);
            let revision = pods::new_revision(sts, &hash, highest + 1);
            match self.api::<ControllerRevision>(key).create(&revision).await {
                Ok(_) => info!(sts = %key, revision = highest + 1, %hash, "recorded revision"),
                Err(error) if error.is_already_exists() => {}
                Err(error) => return Err(error),
            }
        }
        let strategy = spec.update_strategy.clone().unwrap_or_default();
        let partition = strategy.rolling_update.as_ref().and_then(|r| r.partition);
        Ok(SetShape {
            replicas: spec.replicas.unwrap_or(1),
            start: spec.ordinals.and_then(|o| o.start).unwrap_or(0),
            parallel: spec.pod_management_policy.as_deref() == Some("Parallel"),
            on_delete: strategy.type_.as_deref() == Some("OnDelete"),
            partition: partition.unwrap_or(0),
            current_revision: status.current_revision.unwrap_or_default(),
            update_revision: name,
        })
    }

    /// Sends the plan's writes in order; the first failure stops the rest.
    async fn execute(
        &self,
        key: &ObjectKey,
        sts: &StatefulSet,
        pods: &BTreeMap<i32, &Pod>,
        actions: Vec<Action>,
    ) -> minik_client::Result<()> {
        for action in actions {
            match action {
                Action::Create { ordinal, revision } => {
                    self.create_pod(key, sts, ordinal, &revision).await?
                }
                Action::Delete { ordinal, why } => {
                    let Some(pod) = pods.get(&ordinal) else {
                        continue;
                    };
                    if why == "condemned" && pods::when_scaled_is_delete(sts) {
                        self.hand_claims_to(key, sts, pod, ordinal).await?;
                    }
                    info!(sts = %key, pod = ?pod.metadata.name, ordinal, why, "deleting stateful pod");
                    self.delete_pod(key, pod).await?;
                }
            }
        }
        Ok(())
    }

    /// Creates the pod's missing claims, then the pod (`CreateStatefulPod`).
    async fn create_pod(
        &self,
        key: &ObjectKey,
        sts: &StatefulSet,
        ordinal: i32,
        revision: &str,
    ) -> minik_client::Result<()> {
        for template in pods::claim_templates(sts) {
            let claim = pods::new_claim(sts, &template, ordinal);
            let claim_key = ObjectKey::of(&claim.metadata);
            if self.claims.get(&claim_key).is_some() {
                continue;
            }
            match self.api::<PersistentVolumeClaim>(key).create(&claim).await {
                Ok(_) => info!(sts = %key, claim = %claim_key, "created claim"),
                Err(error) if error.is_already_exists() => {}
                Err(error) => return Err(error),
            }
        }
        let (template, revision) = self.template_at(sts, revision);
        let pod = pods::new_pod(sts, &template, ordinal, &revision);
        match self.api::<Pod>(key).create(&pod).await {
            Ok(_) => {
                info!(sts = %key, pod = ?pod.metadata.name, ordinal, %revision, "created stateful pod");
                Ok(())
            }
            // The ordinal exists already: never a second pod with the same identity.
            Err(error) if error.is_already_exists() => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// The template recorded by the revision named `revision` and that name, or the set's own
    /// template and its revision's name when that revision is gone.
    fn template_at(&self, sts: &StatefulSet, revision: &str) -> (PodTemplateSpec, String) {
        let spec = sts.spec.clone().unwrap_or_default();
        let key = ObjectKey::new(
            sts.metadata.namespace.clone().unwrap_or_default(),
            revision.to_string(),
        );
        match self.revisions.get(&key).and_then(|r| pods::template_of(&r)) {
            Some(template) => (template, revision.to_string()),
            None => {
                let collisions = sts.status.as_ref().and_then(|s| s.collision_count);
                let hash = pods::template_hash(&spec.template, collisions);
                (spec.template, pods::revision_name(sts, &hash))
            }
        }
    }

    /// `whenScaled: Delete`: the claims of a condemned pod get the pod as owner before it goes.
    async fn hand_claims_to(
        &self,
        key: &ObjectKey,
        sts: &StatefulSet,
        pod: &Pod,
        ordinal: i32,
    ) -> minik_client::Result<()> {
        let owner = pods::pod_owner(pod);
        for template in pods::claim_templates(sts) {
            let template_name = template.metadata.name.as_deref().unwrap_or_default();
            let name = claim_name(template_name, &key.name, ordinal);
            let claim_key = ObjectKey::new(key.namespace.clone().unwrap_or_default(), name.clone());
            let Some(claim) = self.claims.get(&claim_key) else {
                continue;
            };
            let mut owners = claim.metadata.owner_references.clone().unwrap_or_default();
            if owners.iter().any(|o| o.uid == owner.uid) {
                continue;
            }
            owners.push(owner.clone());
            let body = serde_json::json!({"metadata": {"ownerReferences": owners,
                "resourceVersion": claim.metadata.resource_version}});
            match self
                .api::<PersistentVolumeClaim>(key)
                .patch(&name, &Patch::Merge(body))
                .await
            {
                Ok(_) => info!(sts = %key, claim = %name, "claim handed to its condemned pod"),
                Err(error) if error.is_not_found() => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    async fn delete_pod(&self, key: &ObjectKey, pod: &Pod) -> minik_client::Result<()> {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let params = DeleteParams {
            preconditions_uid: pod.metadata.uid.clone(),
            ..DeleteParams::default()
        };
        match self.api::<Pod>(key).delete(name, &params).await {
            Ok(_) => Ok(()),
            Err(error) if error.is_not_found() || error.is_conflict() => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn write_status(
        &self,
        key: &ObjectKey,
        sts: &StatefulSet,
        shape: &SetShape,
        states: &BTreeMap<i32, PodState>,
    ) -> minik_client::Result<()> {
        let counts = decide::counts(shape, states);
        let current = decide::next_current_revision(shape, &counts);
        let mut counted = shape.clone();
        counted.current_revision = current.clone();
        let counts = decide::counts(&counted, states);
        let old = sts.status.clone().unwrap_or_default();
        let status = StatefulSetStatus {
            observed_generation: sts.metadata.generation,
            replicas: counts.replicas,
            ready_replicas: Some(counts.ready),
            available_replicas: Some(counts.available),
            current_replicas: Some(counts.current),
            updated_replicas: Some(counts.updated),
            current_revision: Some(current),
            update_revision: Some(shape.update_revision.clone()),
            collision_count: old.collision_count,
            conditions: old.conditions.clone(),
        };
        if sts.status.as_ref() == Some(&status) {
            return Ok(());
        }
        let body = serde_json::json!({ "status": status });
        self.api::<StatefulSet>(key)
            .patch_status(&key.name, &Patch::Merge(body))
            .await?;
        info!(sts = %key, replicas = status.replicas, ready = counts.ready, updated = counts.updated, "updated status");
        Ok(())
    }
}

impl Controller for StatefulSetController {
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        "statefulset"
    }

    fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    async fn sync(&self, key: &ObjectKey) -> minik_client::Result<()> {
        self.sync_stateful_set(key).await
    }
}

/// What the plan needs of a pod: its revision, phase, readiness and deletion.
fn pod_state(pod: &Pod) -> PodState {
    let status = pod.status.clone().unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    PodState {
        revision: pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL).cloned())
            .unwrap_or_default(),
        phase: status.phase.unwrap_or_else(|| "Pending".into()),
        ready,
        terminating: pod.metadata.deletion_timestamp.is_some(),
    }
}

/// The sets a pod event concerns: its controller, or for an orphan every set selecting it.
fn sets_of(sets: &Store<StatefulSet>, pod: &Pod) -> Vec<ObjectKey> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    if let Some(owner) = controller_of(&pod.metadata) {
        if owner.kind != "StatefulSet" {
            return Vec::new();
        }
        return vec![ObjectKey::new(namespace, owner.name.clone())];
    }
    sets.state()
        .into_iter()
        .filter(|sts| sts.metadata.namespace == pod.metadata.namespace)
        .filter(|sts| {
            selects(
                sts.spec.as_ref().map(|s| &s.selector),
                pod.metadata.labels.as_ref(),
            )
        })
        .map(|sts| ObjectKey::of(&sts.metadata))
        .collect()
}
