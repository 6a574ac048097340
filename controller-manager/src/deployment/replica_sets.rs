//! A Deployment's ReplicaSets: claiming them, telling the new one from the old, creating it,
//! keeping its annotations and the Deployment's revision in step, and trimming the history.
//!
//! Kubernetes counterpart: `pkg/controller/deployment/sync.go` (`getAllReplicaSetsAndSyncRevision`,
//! `getNewReplicaSet`, `cleanupDeployment`) and `deployment_controller.go`
//! (`getReplicaSetsForDeployment`). The pure parts are in `util.rs`; this file does the writes.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use minik_api::ObjectKey;
use minik_client::{Api, DeleteParams, Patch};
use serde_json::json;
use tracing::{info, warn};

use super::rolling::{self, Rollout, Rs};
use super::sync::{is_recreate, rollout_of};
use super::util::{self, counts};
use super::DeploymentController;
use crate::ownership::{adopt_patch, claim, controller_ref, release_patch, Claim};

/// The new RS (if any) and the others.
pub(super) struct ReplicaSets {
    pub(super) new: Option<ReplicaSet>,
    pub(super) old: Vec<ReplicaSet>,
    /// The new RS was created by this sync (Progressing becomes `NewReplicaSetCreated`).
    pub(super) created: bool,
}

impl ReplicaSets {
    pub(super) fn all(&self) -> Vec<&ReplicaSet> {
        self.old.iter().chain(&self.new).collect()
    }

    pub(super) fn active_old(&self) -> Vec<Rs> {
        self.old
            .iter()
            .map(counts)
            .filter(|rs| rs.spec > 0)
            .collect()
    }
}

impl DeploymentController {
    /// `getAllReplicaSetsAndSyncRevision`: splits new from old, keeps the new RS's annotations
    /// and the Deployment's revision in step, and creates the new RS when asked to.
    pub(super) async fn replica_sets_of(
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
        let existing = new.into_iter().next();
        let created = existing.is_none() && create;
        let new = match existing {
            Some(rs) => Some(self.sync_new_annotations(d, rs, revision, &rollout).await?),
            None if create => Some(self.create_new(key, d, &old, revision, &rollout).await?),
            None => None,
        };
        if let Some(rs) = &new {
            self.sync_deployment_revision(d, &rs.metadata).await?;
        }
        Ok(ReplicaSets { new, old, created })
    }

    pub(super) async fn sync_new_annotations(
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
    pub(super) async fn sync_deployment_revision(
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
    pub(super) async fn create_new(
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

    /// Deletes old RSs beyond `revisionHistoryLimit` (DP29).
    pub(super) async fn cleanup_history(
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

    /// Adopts and releases ReplicaSets (`getReplicaSetsForDeployment`); returns the owned ones.
    pub(super) async fn claim_replica_sets(
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

    pub(super) fn rs_api(&self, d: &Deployment) -> Api<ReplicaSet> {
        Api::namespaced(self.client.clone(), namespace(d))
    }
}

fn namespace(d: &Deployment) -> &str {
    d.metadata.namespace.as_deref().unwrap_or("default")
}
