//! The Job controller's tracking of finished pods: `uncountedTerminatedPods`, then the
//! finalizer, then the counters, so that no completion is lost or counted twice (JB3).
//!
//! Kubernetes counterpart: `trackJobStatusWithFinalizers`, `removeTrackingFinalizersFromPods`
//! and `flushUncountedAndRemoveFinalizers` in `pkg/controller/job/job_controller.go`. Each step
//! is its own write, so a controller manager killed between two of them leaves a state the next
//! sync resumes from: a recorded uid whose pod still has the finalizer gets it removed, a recorded
//! uid whose pod lost it (or is gone) is counted.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::future::join_all;
use minik_api::batch::Job;
use minik_api::core::Pod;
use minik_api::ObjectKey;
use minik_client::Patch;
use tracing::{debug, info};

use super::decide::{self, PodState, Uncounted, Wanted};
use super::{failure_policy, status, JobController};
use crate::ownership::controller_of;

impl JobController {
    /// Steps 3 of the sync: uncounted first, then finalizers, then the counters (JB3).
    pub(super) async fn track_finished(
        &self,
        key: &ObjectKey,
        mut job: Job,
        pods: &[&Pod],
    ) -> minik_client::Result<Job> {
        let mut uncounted = Uncounted::of(&job);
        let deleting_is_ours = Wanted::of(&job).suspend || decided(&job);
        let released = self.released_uids();
        let mut fresh = decide::newly_finished(pods, &uncounted, &released, deleting_is_ours);
        if decide::only_replace_failed(&job) {
            // `isPodFailed`: with podReplacementPolicy Failed, a deleted pod fails at phase Failed.
            fresh.failed.retain(|uid| !still_terminating(pods, uid));
        }
        let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.clone());
        let outcome = policy
            .map(|policy| failure_policy::apply(&policy, pods, &mut fresh))
            .unwrap_or_default();
        if let Some(message) = outcome.fail_job.filter(|_| !decided(&job)) {
            info!(job = %key, %message, "pod failure policy: FailJob");
            set_failure_target(&mut job, &message);
        }
        if !fresh.is_empty() {
            uncounted.extend(&fresh);
            let observed = self.observe(&job, pods, uncounted.clone());
            job = self.write_status(&job, &observed).await?;
            info!(job = %key, succeeded = fresh.succeeded.len(), failed = fresh.failed.len(), "recorded finished pods");
        }
        // Pods the controller deleted (suspend, a decided Job) go without being counted.
        let stray = pods
            .iter()
            .filter(|pod| deleting_is_ours && decide::pod_state(pod) == PodState::Terminating);
        let recorded = pods
            .iter()
            .filter(|pod| uncounted.contains(pod.metadata.uid.as_deref().unwrap_or_default()));
        let ignored = pods.iter().filter(|pod| {
            let uid = pod.metadata.uid.as_deref().unwrap_or_default();
            outcome.ignored.iter().any(|i| i == uid)
        });
        if !outcome.ignored.is_empty() {
            info!(job = %key, pods = outcome.ignored.len(), "pod failure policy: failures ignored");
        }
        let to_release: Vec<&Pod> = recorded
            .chain(stray)
            .chain(ignored)
            .copied()
            .filter(|pod| decide::has_tracking_finalizer(pod))
            .collect();
        self.remove_finalizers(&to_release).await?;
        if uncounted.is_empty() {
            return Ok(job);
        }
        let mut status = job.status.clone().unwrap_or_default();
        status.succeeded = Some(status.succeeded.unwrap_or(0) + uncounted.succeeded.len() as i32);
        status.failed = Some(status.failed.unwrap_or(0) + uncounted.failed.len() as i32);
        status.uncounted_terminated_pods = Some(Default::default());
        job.status = Some(status);
        let job = self
            .api::<Job>(&job.metadata)
            .replace_status(&key.name, &job)
            .await?;
        debug!(job = %key, "counted finished pods");
        Ok(job)
    }

    /// Writes the counts so far, keeping everything else of the status.
    pub(super) async fn write_status(
        &self,
        job: &Job,
        observed: &status::Observed,
    ) -> minik_client::Result<Job> {
        let mut updated = job.clone();
        let status = updated.status.get_or_insert_with(Default::default);
        status.uncounted_terminated_pods = Some(minik_api::batch::UncountedTerminatedPods {
            succeeded: Some(observed.uncounted.succeeded.iter().cloned().collect()),
            failed: Some(observed.uncounted.failed.iter().cloned().collect()),
        });
        let name = job.metadata.name.as_deref().unwrap_or_default();
        self.api::<Job>(&job.metadata)
            .replace_status(name, &updated)
            .await
    }

    pub(super) fn released_uids(&self) -> BTreeSet<String> {
        self.released
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Removes the tracking finalizer from each pod; a pod already gone is fine.
    pub(super) async fn remove_finalizers(&self, pods: &[&Pod]) -> minik_client::Result<()> {
        let patches = pods.iter().map(|pod| async move {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            let patch = Patch::Merge(status::remove_finalizer_patch(pod));
            match self.api::<Pod>(&pod.metadata).patch(name, &patch).await {
                Ok(_) => Ok(pod.metadata.uid.clone().unwrap_or_default()),
                Err(error) if error.is_not_found() => {
                    Ok(pod.metadata.uid.clone().unwrap_or_default())
                }
                Err(error) => Err(error),
            }
        });
        let results = join_all(patches).await;
        let mut released = self.released.lock().unwrap_or_else(|p| p.into_inner());
        for result in results {
            released.insert(result?);
        }
        Ok(())
    }

    /// A finished Job's pods keep no finalizer (and orphans lose theirs, JB3).
    pub(super) async fn release_all(
        &self,
        key: &ObjectKey,
        pods: &[Arc<Pod>],
    ) -> minik_client::Result<()> {
        let held: Vec<&Pod> = pods
            .iter()
            .map(|p| &**p)
            .filter(|p| decide::has_tracking_finalizer(p))
            .collect();
        if !held.is_empty() {
            info!(job = %key, pods = held.len(), "removing tracking finalizers of a finished job");
        }
        self.remove_finalizers(&held).await
    }
}

/// A pod that still carries the tracking finalizer for a Job named `name` that no longer exists
/// (or was recreated with another uid): nobody will count it, so it must not stay held (JB3).
pub(super) fn tracked_orphan(pod: &Pod, name: &str, live_uid: Option<&str>) -> bool {
    let Some(reference) = controller_of(&pod.metadata) else {
        return false;
    };
    reference.kind == "Job"
        && reference.name == name
        && Some(reference.uid.as_str()) != live_uid
        && decide::has_tracking_finalizer(pod)
}

/// Records FailureTarget (reason PodFailurePolicy) with the FailJob rule's message; it is written
/// with the uncounted pods, so a restarted controller still knows why the Job fails.
/// Whether the pod `uid` is being deleted and has not ended yet.
fn still_terminating(pods: &[&Pod], uid: &str) -> bool {
    pods.iter().any(|pod| {
        pod.metadata.uid.as_deref() == Some(uid) && decide::pod_state(pod) == PodState::Terminating
    })
}

fn set_failure_target(job: &mut Job, message: &str) {
    let condition = minik_api::batch::JobCondition {
        type_: "FailureTarget".into(),
        status: "True".into(),
        reason: Some("PodFailurePolicy".into()),
        message: Some(message.into()),
        last_transition_time: Some(minik_api::meta::Time(jiff::Timestamp::now())),
        last_probe_time: Some(minik_api::meta::Time(jiff::Timestamp::now())),
    };
    let status = job.status.get_or_insert_with(Default::default);
    status
        .conditions
        .get_or_insert_with(Vec::new)
        .push(condition);
}

/// Whether the Job already has SuccessCriteriaMet or FailureTarget.
pub(super) fn decided(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .and_then(decide::recorded_target)
        .is_some()
}
