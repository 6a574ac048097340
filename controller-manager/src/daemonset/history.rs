//! A DaemonSet's ControllerRevisions: one per template it has had, the current one newest.
//!
//! Kubernetes counterpart: `constructHistory` and `cleanupHistory` in
//! `pkg/controller/daemon/update.go`. The current template's revision is created if missing
//! (`DSNAME-HASH`, revision = the highest so far + 1), or renumbered to the highest + 1 when an
//! older template comes back; revisions that no pod uses beyond `revisionHistoryLimit` are
//! deleted, oldest first. A revision created by a sync whose informer has not shown it yet is a
//! 409 AlreadyExists, which is fine.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use minik_api::core::Pod;
use minik_api::daemonsets::CONTROLLER_REVISION_HASH_LABEL;
use minik_api::ObjectKey;
use minik_client::{Api, DeleteParams, Patch};
use tracing::info;

use super::pods::{new_revision, template_hash};
use super::DaemonSetController;
use crate::ownership::is_controlled_by;

impl DaemonSetController {
    /// Records the current template; returns its hash.
    pub(super) async fn construct_history(
        &self,
        key: &ObjectKey,
        ds: &DaemonSet,
        pods: &[&Pod],
    ) -> minik_client::Result<String> {
        let hash = template_hash(ds);
        let name = format!("{}-{hash}", key.name);
        let mut owned: Vec<_> = self
            .revisions
            .state()
            .into_iter()
            .filter(|r| r.metadata.namespace == ds.metadata.namespace)
            .filter(|r| is_controlled_by(&r.metadata, ds.metadata.uid.as_deref()))
            .collect();
        owned.sort_by_key(|r| r.revision);
        let highest = owned.last().map_or(0, |r| r.revision);
        let api: Api<ControllerRevision> = self.api(key);
        match owned
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(&name))
        {
            Some(current) if current.revision < highest => {
                let body = serde_json::json!({"revision": highest + 1});
                api.patch(&name, &Patch::Merge(body)).await?;
            }
            Some(_) => {}
            None => {
                let revision = new_revision(ds, &hash, highest + 1);
                match api.create(&revision).await {
                    Ok(_) => info!(ds = %key, revision = highest + 1, %hash, "recorded revision"),
                    Err(error) if error.is_already_exists() => {}
                    Err(error) => return Err(error),
                }
            }
        }
        self.cleanup_history(ds, &owned, &name, pods).await?;
        Ok(hash)
    }

    /// Deletes the oldest unused revisions beyond `revisionHistoryLimit`.
    async fn cleanup_history(
        &self,
        ds: &DaemonSet,
        owned: &[std::sync::Arc<ControllerRevision>],
        current: &str,
        pods: &[&Pod],
    ) -> minik_client::Result<()> {
        let limit = ds
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10)
            .max(0) as usize;
        let live: BTreeSet<&str> = pods
            .iter()
            .filter_map(|p| {
                p.metadata
                    .labels
                    .as_ref()?
                    .get(CONTROLLER_REVISION_HASH_LABEL)
            })
            .map(String::as_str)
            .collect();
        let unused: Vec<&ControllerRevision> = owned
            .iter()
            .map(|r| &**r)
            .filter(|r| r.metadata.name.as_deref() != Some(current))
            .filter(|r| {
                let hash = r
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL));
                hash.is_none_or(|h| !live.contains(h.as_str()))
            })
            .collect();
        let excess = unused.len().saturating_sub(limit);
        for revision in unused.into_iter().take(excess) {
            let name = revision.metadata.name.as_deref().unwrap_or_default();
            let api: Api<ControllerRevision> = self.api(&ObjectKey::of(&revision.metadata));
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(error) if error.is_not_found() => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}
