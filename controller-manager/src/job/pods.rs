//! The Job controller's pod writes: claiming (adopt and release), creating and deleting pods.
//!
//! Kubernetes counterpart: `getPodsForJob` (with `NewPodControllerRefManager` and the tracking
//! finalizer) and `manageJob`'s creates and deletes in `pkg/controller/job/job_controller.go`.
//! Every create and delete is counted in the expectations before it is sent.

use std::sync::Arc;

use futures::future::join_all;
use minik_api::batch::Job;
use minik_api::core::Pod;
use minik_api::jobs::TRACKING_FINALIZER;
use minik_api::ObjectKey;
use minik_client::Patch;
use tracing::info;

use super::{status, JobController};
use crate::ownership::{adopt_patch, claim, controller_ref, release_patch, Claim};

impl JobController {
    /// Adopts and releases (`claimPods`); returns the pods this Job now owns.
    pub(super) async fn claim_pods(
        &self,
        job: &Job,
        candidates: Vec<Arc<Pod>>,
        adopt: bool,
    ) -> minik_client::Result<Vec<Arc<Pod>>> {
        let selector = job.spec.as_ref().and_then(|s| s.selector.as_ref());
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        let mut owned = Vec::new();
        for pod in candidates {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            let pods = self.api::<Pod>(&pod.metadata);
            match claim(&job.metadata, selector, &pod.metadata) {
                Claim::Owned => owned.push(pod),
                Claim::Adopt if adopt && selector.is_some() => {
                    let reference = controller_ref("batch/v1", "Job", &job.metadata);
                    // An adopted pod is tracked like a created one (`NewPodControllerRefManager`
                    // with the tracking finalizer).
                    let mut patch = adopt_patch(&pod.metadata, reference);
                    let mut finalizers = pod.metadata.finalizers.clone().unwrap_or_default();
                    finalizers.push(TRACKING_FINALIZER.to_string());
                    patch["metadata"]["finalizers"] = serde_json::json!(finalizers);
                    match pods.patch(name, &Patch::Merge(patch)).await {
                        Ok(adopted) => owned.push(Arc::new(adopted)),
                        Err(error) if error.is_not_found() => {}
                        Err(error) => return Err(error),
                    }
                }
                Claim::Release => {
                    // A released pod is no longer this Job's to count: it loses the finalizer too.
                    let mut patch = release_patch(&pod.metadata, uid);
                    patch["metadata"]["finalizers"] =
                        status::remove_finalizer_patch(&pod)["metadata"]["finalizers"].clone();
                    match pods.patch(name, &Patch::Merge(patch)).await {
                        Ok(_) => {}
                        Err(error) if error.is_not_found() => {}
                        Err(error) => return Err(error),
                    }
                }
                Claim::Adopt | Claim::Ignore => {}
            }
        }
        Ok(owned)
    }

    /// Creates one pod per entry of `plan` (its completion index, for an Indexed Job), counting
    /// each create as an expectation first.
    pub(super) async fn create_pods(
        &self,
        key: &ObjectKey,
        job: &Job,
        plan: Vec<Option<i32>>,
    ) -> minik_client::Result<()> {
        let count = plan.len();
        let api = self.api::<Pod>(&job.metadata);
        self.expectations.expect_creations(key, count);
        let creates = plan.into_iter().map(|index| {
            let pod = status::pod_from_template(job, index);
            let api = api.clone();
            async move { api.create(&pod).await }
        });
        let results = join_all(creates).await;
        let mut first_error = None;
        for result in results {
            if let Err(error) = result {
                self.expectations.creation_observed(key);
                first_error.get_or_insert(error);
            }
        }
        info!(job = %key, count, "created pods");
        first_error.map_or(Ok(()), Err)
    }

    /// Deletes `count` active pods, not-ready ones first.
    pub(super) async fn delete_pods(
        &self,
        key: &ObjectKey,
        active: &[&Pod],
        count: usize,
    ) -> minik_client::Result<()> {
        let mut victims: Vec<&Pod> = active.to_vec();
        victims.sort_by_key(|pod| crate::replicaset::pods::is_ready(pod));
        victims.truncate(count.min(super::MAX_POD_WRITES_PER_SYNC));
        let result =
            crate::pod_control::delete_pods(&self.client, &self.expectations, key, &victims).await;
        info!(job = %key, count = victims.len(), "deleted pods");
        result
    }
}
