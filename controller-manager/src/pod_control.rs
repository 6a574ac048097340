//! Claiming and deleting a controller's pods, shared by the ReplicaSet, Job and DaemonSet
//! controllers.
//!
//! Kubernetes counterpart: `PodControllerRefManager.ClaimPods` (`pkg/controller/controller_ref_manager.go`):
//! adopt the orphans a selector matches, release the owned pods it no longer matches; and
//! `controller.PodControlInterface.DeletePod` as the controllers call it
//! (`pkg/controller/controller_utils.go`): record the deletions expected
//! *before* sending them, so a watch lagging behind never makes the controller delete again, and
//! lower the expectation for every delete that failed, since its DELETED event will never come.
//! A pod already gone counts as deleted.

use std::sync::Arc;

use futures::future::join_all;
use minik_api::core::Pod;
use minik_api::meta::{LabelSelector, ObjectMeta};
use minik_api::ObjectKey;
use minik_client::{Api, Client, DeleteParams, Patch};
use tracing::info;

use crate::expectations::Expectations;
use crate::ownership::{adopt_patch, claim, controller_ref, release_patch, Claim};

/// Adopts and releases (`ClaimPods`) among `candidates`; returns the pods `owner` (of
/// `owner_kind`: `apiVersion`, `kind`) now owns. A pod gone meanwhile is skipped.
pub async fn claim_pods(
    client: &Client,
    owner: &ObjectMeta,
    owner_kind: (&str, &str),
    selector: Option<&LabelSelector>,
    candidates: Vec<Arc<Pod>>,
) -> minik_client::Result<Vec<Arc<Pod>>> {
    let uid = owner.uid.as_deref().unwrap_or_default();
    let mut owned = Vec::new();
    for pod in candidates {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        let decision = claim(owner, selector, &pod.metadata);
        let patch = match decision {
            Claim::Owned => {
                owned.push(pod);
                continue;
            }
            Claim::Ignore => continue,
            Claim::Adopt => {
                let reference = controller_ref(owner_kind.0, owner_kind.1, owner);
                adopt_patch(&pod.metadata, reference)
            }
            Claim::Release => release_patch(&pod.metadata, uid),
        };
        let adopting = decision == Claim::Adopt;
        match pods.patch(name, &Patch::Merge(patch)).await {
            Ok(patched) if adopting => {
                info!(owner = %ObjectKey::of(owner), pod = name, kind = owner_kind.1, "adopted pod");
                owned.push(Arc::new(patched));
            }
            Ok(_) => {
                info!(owner = %ObjectKey::of(owner), pod = name, kind = owner_kind.1, "released pod")
            }
            Err(error) if error.is_not_found() => {}
            Err(error) => return Err(error),
        }
    }
    Ok(owned)
}

/// Deletes `victims`, owned by `owner`, at once; the first error (other than NotFound) is
/// returned after every delete has been tried.
pub async fn delete_pods(
    client: &Client,
    expectations: &Expectations,
    owner: &ObjectKey,
    victims: &[&Pod],
) -> minik_client::Result<()> {
    let keys: Vec<ObjectKey> = victims.iter().map(|p| ObjectKey::of(&p.metadata)).collect();
    expectations.expect_deletions(owner, keys.clone());
    let deletes = keys.iter().map(|pod| async move {
        let namespace = pod.namespace.as_deref().unwrap_or("default");
        let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
        match api.delete(&pod.name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(error) => {
                expectations.deletion_observed(owner, pod);
                if error.is_not_found() {
                    Ok(())
                } else {
                    Err(error)
                }
            }
        }
    });
    join_all(deletes).await.into_iter().collect()
}
