//! Deleting a controller's pods with expectations, shared by the ReplicaSet and Job controllers.
//!
//! Kubernetes counterpart: `controller.PodControlInterface.DeletePod` as the ReplicaSet and Job
//! controllers call it (`pkg/controller/controller_utils.go`): record the deletions expected
//! *before* sending them, so a watch lagging behind never makes the controller delete again, and
//! lower the expectation for every delete that failed, since its DELETED event will never come.
//! A pod already gone counts as deleted.

use futures::future::join_all;
use minik_api::core::Pod;
use minik_api::ObjectKey;
use minik_client::{Api, Client, DeleteParams};

use crate::expectations::Expectations;

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
