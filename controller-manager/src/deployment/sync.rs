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

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use minik_api::ObjectKey;
use minik_client::events::object_reference;
use minik_client::{Api, Patch};
use serde_json::json;
use tracing::{info, warn};

use super::replica_sets::ReplicaSets;
use super::rolling::{self, Rollout, Rs, Scale};
use super::status::{self, reason};
use super::util::{self, counts};
use super::DeploymentController;
use crate::ownership::selects_everything;

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

pub(super) fn is_recreate(d: &Deployment) -> bool {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        == Some("Recreate")
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
        if sets.created && status::progress_deadline(d).is_some() {
            let message = format!(
                "Created new replica set \"{}\"",
                new_name.unwrap_or_default()
            );
            let created =
                status::condition("Progressing", "True", reason::NEW_RS_CREATED, message, now);
            status::set_condition(&mut new_status, created);
        }
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

    pub(super) async fn write_status(
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

    pub(super) async fn event(&self, d: &Deployment, message: &str) {
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
