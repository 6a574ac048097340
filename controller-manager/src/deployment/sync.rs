//! `sync_deployment`: one pass over a Deployment, from its ReplicaSets to its status.
//!
//! Kubernetes counterpart: `syncDeployment` in `deployment_controller.go`, with `sync.go`
//! (`getAllReplicaSetsAndSyncRevision`, `getNewReplicaSet`, `sync`, `scale`), `rolling.go`
//! (`rolloutRolling`), `recreate.go` (`rolloutRecreate`) and `progress.go`. The order (DP7):
//!
//! 1. a `{}` selector does nothing but bump `observedGeneration`;
//! 2. claim the ReplicaSets (adopt matching orphans, release strays);
//! 3. a Deployment being deleted only gets its status written;
//! 4. paused, or a scaling event (`replicas` changed): proportional scaling only;
//! 5. otherwise one Recreate or RollingUpdate step, then history cleanup once complete, then the
//!    status with its Progressing condition; a stuck rollout is looked at again at its deadline.
//!
//! Each scale is one merge patch of the RS's `spec.replicas` and its desired/max-replicas
//! annotations, logged (`deployment = ns/name, rs, replicas`) and recorded as a
//! `ScalingReplicaSet` Event, as `kubectl describe deployment` shows upstream.
//!
//! minik simplifies: no ReplicaFailure conditions copied from the RSs, no legacy rollback
//! annotation, no truncation of the revision history annotation.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use minik_api::ObjectKey;
use minik_client::events::object_reference;
use minik_client::{Api, DeleteParams, Patch};
use serde_json::json;
use tracing::{info, warn};

use super::rolling::{self, Rollout, Rs, Scale};
use super::status::{self, reason};
use super::util::{self, counts};
use super::DeploymentController;
use crate::ownership::{
    adopt_patch, claim, controller_ref, release_patch, selects_everything, Claim,
};

/// The Deployment's fenceposts (DP5).
pub fn rollout_of(d: &Deployment) -> Rollout {
    let spec = d.spec.clone().unwrap_or_default();
    let replicas = spec.replicas.unwrap_or(1);
    let strategy = spec.strategy.unwrap_or_default();
    if strategy.type_.as_deref() == Some("Recreate") {
        return rolling::rollout(replicas, None);
    }
    let update = strategy.rolling_update.unwrap_or_default();
    rolling::rollout(
        replicas,
        Some((update.max_surge.as_ref(), update.max_unavailable.as_ref())),
    )
}

fn is_recreate(d: &Deployment) -> bool {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        == Some("Recreate")
}

/// The new RS (if any) and the others.
struct ReplicaSets {
    new: Option<ReplicaSet>,
    old: Vec<ReplicaSet>,
}

impl ReplicaSets {
    fn all(&self) -> Vec<&ReplicaSet> {
        self.old.iter().chain(&self.new).collect()
    }

    fn active_old(&self) -> Vec<Rs> {
        self.old
            .iter()
            .map(counts)
            .filter(|rs| rs.spec > 0)
            .collect()
    }
}

impl DeploymentController {
    /// Reconciles the Deployment `key`.
    pub async fn sync_deployment(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let Some(stored) = self.deployments.get(key) else {
            return Ok(());
        };
        let mut d = (*stored).clone();
        let selector = d.spec.as_ref().map(|s| &s.selector);
        if selects_everything(selector) {
            warn!(deployment = %key, "selector selects everything; not managing it");
            let mut status = d.status.clone().unwrap_or_default();
            status.observed_generation = d.metadata.generation;
            return self.write_status(key, &d, status).await;
        }
        let owned = self.claim_replica_sets(key, &d).await?;
        if d.metadata.deletion_timestamp.is_some() {
            let sets = self.replica_sets_of(key, &d, owned, false).await?;
            return self.sync_status(key, &d, &sets).await;
        }
        let now = jiff::Timestamp::now();
        if let Some(condition) = status::paused_condition(&d, now) {
            status::set_condition(d.status.get_or_insert_with(Default::default), condition);
        }
        let paused = d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false);
        let all_counts: Vec<Rs> = owned.iter().map(counts).collect();
        if paused || rolling::is_scaling_event(rollout_of(&d).replicas, &all_counts) {
            return self.sync_scale(key, &d, owned, paused).await;
        }
        if is_recreate(&d) {
            self.rollout_recreate(key, &d, owned).await
        } else {
            self.rollout_rolling(key, &d, owned).await
        }
    }

    /// One RollingUpdate step (`rolloutRolling`).
    async fn rollout_rolling(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        owned: Vec<ReplicaSet>,
    ) -> minik_client::Result<()> {
        let sets = self.replica_sets_of(key, d, owned, true).await?;
        let Some(new) = sets.new.as_ref() else {
            return self.sync_rollout_status(key, d, &sets).await;
        };
        let scales = rolling::rolling_step(&rollout_of(d), &counts(new), &sets.active_old());
        if !scales.is_empty() {
            self.apply_scales(key, d, &sets, &scales).await?;
            return self.sync_rollout_status(key, d, &sets).await;
        }
        self.cleanup_if_complete(key, d, &sets).await?;
        self.sync_rollout_status(key, d, &sets).await
    }

    /// One Recreate step (`rolloutRecreate`, DP13): old RSs to 0, wait for every old pod to be
    /// gone (terminating ones too), then the new RS at full size.
    async fn rollout_recreate(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        owned: Vec<ReplicaSet>,
    ) -> minik_client::Result<()> {
        let sets = self.replica_sets_of(key, d, owned, false).await?;
        let scale_down: Vec<Scale> = sets
            .active_old()
            .into_iter()
            .map(|rs| (rs.name, 0))
            .collect();
        if !scale_down.is_empty() {
            self.apply_scales(key, d, &sets, &scale_down).await?;
            return self.sync_rollout_status(key, d, &sets).await;
        }
        if self.old_pods_running(&sets) {
            return self.sync_rollout_status(key, d, &sets).await;
        }
        let sets = match sets.new {
            Some(_) => sets,
            None => self.replica_sets_of(key, d, sets.old, true).await?,
        };
        let replicas = rollout_of(d).replicas;
        if let Some(new) = sets.new.as_ref().filter(|rs| counts(rs).spec != replicas) {
            let scale = [(counts(new).name, replicas)];
            self.apply_scales(key, d, &sets, &scale).await?;
            return self.sync_rollout_status(key, d, &sets).await;
        }
        self.cleanup_if_complete(key, d, &sets).await?;
        self.sync_rollout_status(key, d, &sets).await
    }

    /// `oldPodsRunning`: an old RS still reports replicas, or a pod of one is not finished.
    fn old_pods_running(&self, sets: &ReplicaSets) -> bool {
        if sets
            .old
            .iter()
            .any(|rs| rs.status.as_ref().is_some_and(|s| s.replicas > 0))
        {
            return true;
        }
        let old_uids: Vec<&str> = sets
            .old
            .iter()
            .filter_map(|rs| rs.metadata.uid.as_deref())
            .collect();
        self.pods.state().iter().any(|pod| {
            let finished = matches!(
                pod.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            );
            let owner = crate::ownership::controller_of(&pod.metadata).map(|r| r.uid.as_str());
            !finished && owner.is_some_and(|uid| old_uids.contains(&uid))
        })
    }

    /// Paused or scaling event (`sync`): proportional scaling, history cleanup when paused, and
    /// the status without progress evaluation.
    async fn sync_scale(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        owned: Vec<ReplicaSet>,
        paused: bool,
    ) -> minik_client::Result<()> {
        let sets = self.replica_sets_of(key, d, owned, false).await?;
        let rollout = rollout_of(d);
        let status_replicas = d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let new = sets.new.as_ref().map(counts);
        let mut scales = rolling::proportional_scale(
            &rollout,
            !is_recreate(d),
            status_replicas,
            new.as_ref(),
            &sets.active_old(),
        );
        // Upstream rewrites every active RS's replicas annotations in `scale()`, sized or not, so
        // the scaling event is over.
        for rs in sets.all().into_iter().map(counts).filter(|rs| rs.spec > 0) {
            if rs.desired != Some(rollout.replicas)
                && !scales.iter().any(|(name, _)| *name == rs.name)
            {
                scales.push((rs.name.clone(), rs.spec));
            }
        }
        self.apply_scales(key, d, &sets, &scales).await?;
        if paused {
            self.cleanup_history(key, d, &sets).await?;
        }
        self.sync_status(key, d, &sets).await
    }

    /// `getAllReplicaSetsAndSyncRevision`: splits new from old, keeps the new RS's annotations
    /// and the Deployment's revision in step, and creates the new RS when asked to.
    async fn replica_sets_of(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        owned: Vec<ReplicaSet>,
        create: bool,
    ) -> minik_client::Result<ReplicaSets> {
        let refs: Vec<&ReplicaSet> = owned.iter().collect();
        let new_name = util::find_new(d, &refs).and_then(|rs| rs.metadata.name.clone());
        let (new, old): (Vec<ReplicaSet>, Vec<ReplicaSet>) = owned
            .into_iter()
            .partition(|rs| rs.metadata.name == new_name && new_name.is_some());
        let revision = old
            .iter()
            .map(|rs| util::revision(&rs.metadata))
            .max()
            .unwrap_or(0)
            + 1;
        let rollout = rollout_of(d);
        let new = match new.into_iter().next() {
            Some(rs) => Some(self.sync_new_annotations(d, rs, revision, &rollout).await?),
            None if create => Some(self.create_new(key, d, &old, revision, &rollout).await?),
            None => None,
        };
        if let Some(rs) = &new {
            self.sync_deployment_revision(d, &rs.metadata).await?;
        }
        Ok(ReplicaSets { new, old })
    }

    async fn sync_new_annotations(
        &self,
        d: &Deployment,
        rs: ReplicaSet,
        revision: i64,
        rollout: &Rollout,
    ) -> minik_client::Result<ReplicaSet> {
        let (annotations, mut changed) =
            util::new_rs_annotations(d, &rs.metadata, revision, rollout);
        let min_ready = d.spec.as_ref().and_then(|s| s.min_ready_seconds);
        changed |= rs
            .spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0)
            != min_ready.unwrap_or(0);
        if !changed {
            return Ok(rs);
        }
        let patch = json!({"metadata": {"annotations": annotations}, "spec": {"minReadySeconds": min_ready.unwrap_or(0)}});
        self.rs_api(d)
            .patch(
                rs.metadata.name.as_deref().unwrap_or_default(),
                &Patch::Merge(patch),
            )
            .await
    }

    /// The Deployment carries its new RS's revision (`SetDeploymentRevision`).
    async fn sync_deployment_revision(
        &self,
        d: &Deployment,
        rs: &minik_api::meta::ObjectMeta,
    ) -> minik_client::Result<()> {
        let revision = util::revision(rs).to_string();
        let current = d
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(util::REVISION));
        if current == Some(&revision) {
            return Ok(());
        }
        let patch = json!({"metadata": {"annotations": {util::REVISION: revision}}});
        let name = d.metadata.name.as_deref().unwrap_or_default();
        Api::<Deployment>::namespaced(self.client.clone(), namespace(d))
            .patch(name, &Patch::Merge(patch))
            .await?;
        Ok(())
    }

    /// Creates the new RS (`getNewReplicaSet`); a name taken by another template bumps
    /// `collisionCount` and fails the sync, so the retry hashes differently (DP19).
    async fn create_new(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        old: &[ReplicaSet],
        revision: i64,
        rollout: &Rollout,
    ) -> minik_client::Result<ReplicaSet> {
        let replicas = if is_recreate(d) {
            rollout.replicas
        } else {
            let all_spec = old.iter().map(|rs| counts(rs).spec).sum();
            rolling::new_rs_new_replicas(rollout, all_spec, 0)
        };
        let rs = util::new_replica_set(d, replicas, revision, rollout);
        let name = rs.metadata.name.clone().unwrap_or_default();
        match self.rs_api(d).create(&rs).await {
            Ok(created) => {
                info!(deployment = %key, rs = %name, replicas, revision, "created new replica set");
                self.event(
                    d,
                    &format!("Scaled up replica set {name} from 0 to {replicas}"),
                )
                .await;
                Ok(created)
            }
            Err(error) if error.is_already_exists() => {
                let existing = self.rs_api(d).get(&name).await?;
                let template = d
                    .spec
                    .as_ref()
                    .map(|s| s.template.clone())
                    .unwrap_or_default();
                let same = existing
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .is_some_and(|t| util::equal_ignore_hash(t, &template));
                if same
                    && crate::ownership::is_controlled_by(
                        &existing.metadata,
                        d.metadata.uid.as_deref(),
                    )
                {
                    return Ok(existing);
                }
                let count = d
                    .status
                    .as_ref()
                    .and_then(|s| s.collision_count)
                    .unwrap_or(0)
                    + 1;
                warn!(deployment = %key, rs = %name, collision_count = count, "hash collision");
                let mut status = d.status.clone().unwrap_or_default();
                status.collision_count = Some(count);
                self.write_status(key, d, status).await?;
                Err(error)
            }
            Err(error) => Err(error),
        }
    }

    /// Applies scales: `spec.replicas` plus the desired/max-replicas annotations (`scaleReplicaSet`).
    async fn apply_scales(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        sets: &ReplicaSets,
        scales: &[Scale],
    ) -> minik_client::Result<()> {
        let annotations = util::replicas_annotations(&rollout_of(d));
        for (name, replicas) in scales {
            let from = sets
                .all()
                .into_iter()
                .find(|rs| rs.metadata.name.as_ref() == Some(name))
                .map_or(0, |rs| counts(rs).spec);
            let patch =
                json!({"metadata": {"annotations": annotations}, "spec": {"replicas": replicas}});
            self.rs_api(d).patch(name, &Patch::Merge(patch)).await?;
            if from != *replicas {
                info!(deployment = %key, rs = %name, from, replicas, "scaled replica set");
                let direction = if *replicas > from { "up" } else { "down" };
                self.event(
                    d,
                    &format!("Scaled {direction} replica set {name} from {from} to {replicas}"),
                )
                .await;
            }
        }
        Ok(())
    }

    async fn cleanup_if_complete(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        sets: &ReplicaSets,
    ) -> minik_client::Result<()> {
        let status = status::calculate_status(
            d,
            &sets.all(),
            sets.new.as_ref(),
            &rollout_of(d),
            jiff::Timestamp::now(),
        );
        if status::is_complete(d, &status) {
            self.cleanup_history(key, d, sets).await?;
        }
        Ok(())
    }

    /// Deletes old RSs beyond `revisionHistoryLimit` (DP29).
    async fn cleanup_history(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        sets: &ReplicaSets,
    ) -> minik_client::Result<()> {
        let limit = d
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10);
        let old: Vec<&ReplicaSet> = sets.old.iter().collect();
        for rs in util::history_to_delete(&old, limit) {
            let name = rs.metadata.name.as_deref().unwrap_or_default();
            match self.rs_api(d).delete(name, &DeleteParams::default()).await {
                Ok(_) => {
                    info!(deployment = %key, rs = %name, "deleted old replica set beyond the history limit")
                }
                Err(error) if error.is_not_found() => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// `syncRolloutStatus`: the status with Progressing, and a requeue at the deadline.
    async fn sync_rollout_status(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        sets: &ReplicaSets,
    ) -> minik_client::Result<()> {
        let now = jiff::Timestamp::now();
        let mut new_status =
            status::calculate_status(d, &sets.all(), sets.new.as_ref(), &rollout_of(d), now);
        let new_name = sets.new.as_ref().and_then(|rs| rs.metadata.name.as_deref());
        status::sync_progress(d, &mut new_status, new_name, now);
        if let Some(after) = status::requeue_after(d, &new_status, now) {
            self.queue.add_after(key.clone(), after);
        }
        self.write_status(key, d, new_status).await
    }

    /// `syncDeploymentStatus`: counts and Available only.
    async fn sync_status(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        sets: &ReplicaSets,
    ) -> minik_client::Result<()> {
        let new_status = status::calculate_status(
            d,
            &sets.all(),
            sets.new.as_ref(),
            &rollout_of(d),
            jiff::Timestamp::now(),
        );
        self.write_status(key, d, new_status).await
    }

    async fn write_status(
        &self,
        key: &ObjectKey,
        d: &Deployment,
        new_status: k8s_openapi::api::apps::v1::DeploymentStatus,
    ) -> minik_client::Result<()> {
        if d.status.as_ref() == Some(&new_status) {
            return Ok(());
        }
        let name = d.metadata.name.as_deref().unwrap_or_default();
        let patch = json!({"status": new_status});
        Api::<Deployment>::namespaced(self.client.clone(), namespace(d))
            .patch_status(name, &Patch::Merge(patch))
            .await?;
        let progressing = new_status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "Progressing")
            .and_then(|c| c.reason.clone());
        tracing::debug!(deployment = %key, updated = ?new_status.updated_replicas, available = ?new_status.available_replicas, ?progressing, "updated status");
        if progressing.as_deref() == Some(reason::TIMED_OUT)
            && d.status
                .as_ref()
                .and_then(|s| status::get_condition(s, "Progressing"))
                .and_then(|c| c.reason.as_deref())
                != Some(reason::TIMED_OUT)
        {
            info!(deployment = %key, "rollout exceeded its progress deadline");
        }
        Ok(())
    }

    /// Adopts and releases ReplicaSets (`getReplicaSetsForDeployment`); returns the owned ones.
    async fn claim_replica_sets(
        &self,
        key: &ObjectKey,
        d: &Deployment,
    ) -> minik_client::Result<Vec<ReplicaSet>> {
        let selector = d.spec.as_ref().map(|s| &s.selector);
        let uid = d.metadata.uid.as_deref().unwrap_or_default();
        let mut owned = Vec::new();
        for rs in self
            .replica_sets
            .state()
            .into_iter()
            .filter(|rs| rs.metadata.namespace == d.metadata.namespace)
        {
            let name = rs.metadata.name.clone().unwrap_or_default();
            match claim(&d.metadata, selector, &rs.metadata) {
                Claim::Owned => owned.push(Arc::unwrap_or_clone(rs)),
                Claim::Adopt => {
                    let patch = adopt_patch(
                        &rs.metadata,
                        controller_ref("apps/v1", "Deployment", &d.metadata),
                    );
                    match self.rs_api(d).patch(&name, &Patch::Merge(patch)).await {
                        Ok(adopted) => {
                            info!(deployment = %key, rs = %name, "adopted replica set");
                            owned.push(adopted);
                        }
                        Err(error) if error.is_not_found() => {}
                        Err(error) => return Err(error),
                    }
                }
                Claim::Release => {
                    match self
                        .rs_api(d)
                        .patch(&name, &Patch::Merge(release_patch(&rs.metadata, uid)))
                        .await
                    {
                        Ok(_) => info!(deployment = %key, rs = %name, "released replica set"),
                        Err(error) if error.is_not_found() => {}
                        Err(error) => return Err(error),
                    }
                }
                Claim::Ignore => {}
            }
        }
        Ok(owned)
    }

    fn rs_api(&self, d: &Deployment) -> Api<ReplicaSet> {
        Api::namespaced(self.client.clone(), namespace(d))
    }

    async fn event(&self, d: &Deployment, message: &str) {
        if let Err(error) = self
            .recorder
            .publish(&object_reference(d), "Normal", "ScalingReplicaSet", message)
            .await
        {
            tracing::debug!(%error, "could not record event");
        }
    }
}

fn namespace(d: &Deployment) -> &str {
    d.metadata.namespace.as_deref().unwrap_or("default")
}
