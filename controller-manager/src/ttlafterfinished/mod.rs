//! The TTL-after-finished controller: a finished Job with `ttlSecondsAfterFinished` is deleted
//! that many seconds after it finished, with its pods.
//!
//! Kubernetes counterpart: `pkg/controller/ttlafterfinished/ttlafterfinished_controller.go`
//! (`processJob`, `processTTL`, `timeLeft`, `jobFinishTime`). The finish time is the
//! `lastTransitionTime` of the Job's `Complete` or `Failed` condition; before deleting, the Job is
//! read fresh from the API (someone may have changed its TTL), and it is deleted with Foreground
//! propagation and a uid precondition (docs/workloads.md, JB9). A Job not expired yet is queued
//! again for the moment it expires.
//!
//! minik simplifies: no clock skew warning, no metrics.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use minik_api::ObjectKey;
use minik_client::{Api, Client, DeleteParams, Store, WorkQueue};
use tracing::info;

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};

/// What the TTL says about a Job now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// No TTL, not finished, or already being deleted.
    NotApplicable,
    /// Expires after this long.
    Wait(Duration),
    /// Expired: delete it.
    Expired,
}

/// `processTTL`: whether `job` has expired at `now`.
pub fn decide(job: &Job, now: Timestamp) -> Ttl {
    let ttl = job.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished);
    let (Some(ttl), None) = (ttl, &job.metadata.deletion_timestamp) else {
        return Ttl::NotApplicable;
    };
    let Some(finished) = finish_time(job) else {
        return Ttl::NotApplicable;
    };
    let expires = finished + jiff::SignedDuration::from_secs(i64::from(ttl.max(0)));
    match Duration::try_from(expires.duration_since(now)) {
        Ok(left) if !left.is_zero() => Ttl::Wait(left),
        _ => Ttl::Expired,
    }
}

/// `jobFinishTime`: when the `Complete` or `Failed` condition turned True.
pub fn finish_time(job: &Job) -> Option<Timestamp> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| matches!(c.type_.as_str(), "Complete" | "Failed") && c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref().map(|t| t.0))
}

/// The controller: the Job store, a queue, the client.
pub struct TtlAfterFinishedController {
    jobs: Store<Job>,
    queue: Arc<WorkQueue>,
    client: Client,
}

impl TtlAfterFinishedController {
    /// Registers the handler on the shared Job informer.
    pub fn new(informers: &SharedInformers, client: Client) -> Arc<Self> {
        let informer = informers.informer::<Job>();
        let controller = Arc::new(TtlAfterFinishedController {
            jobs: informer.store(),
            queue: Arc::new(WorkQueue::new()),
            client,
        });
        let queue = controller.queue.clone();
        informer.add_handler(move |change: &Change<Job>| {
            if let Change::Deleted(_) = change {
                return;
            }
            let job = change.object();
            if decide(job, Timestamp::now()) != Ttl::NotApplicable {
                queue.add(ObjectKey::of(&job.metadata));
            }
        });
        controller
    }

    /// Deletes the Job `key` if its TTL has run out, or comes back when it will.
    pub async fn process_job(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let Some(cached) = self.jobs.get(key) else {
            return Ok(());
        };
        match decide(&cached, Timestamp::now()) {
            Ttl::NotApplicable => return Ok(()),
            Ttl::Wait(left) => {
                self.queue.add_after(key.clone(), left);
                return Ok(());
            }
            Ttl::Expired => {}
        }
        let api: Api<Job> = Api::namespaced(
            self.client.clone(),
            key.namespace.as_deref().unwrap_or("default"),
        );
        // The TTL may have been changed since the informer saw the Job: decide again on a fresh read.
        let Some(fresh) = api.get_opt(&key.name).await? else {
            return Ok(());
        };
        match decide(&fresh, Timestamp::now()) {
            Ttl::NotApplicable => Ok(()),
            Ttl::Wait(left) => {
                self.queue.add_after(key.clone(), left);
                Ok(())
            }
            Ttl::Expired => {
                let params = DeleteParams {
                    preconditions_uid: fresh.metadata.uid.clone(),
                    propagation_policy: Some("Foreground".into()),
                    ..DeleteParams::default()
                };
                match api.delete(&key.name, &params).await {
                    Ok(_) => {
                        info!(job = %key, "finished Job deleted: its ttlSecondsAfterFinished expired");
                        Ok(())
                    }
                    Err(error) if error.is_not_found() || error.is_conflict() => Ok(()),
                    Err(error) => Err(error),
                }
            }
        }
    }
}

impl Controller for TtlAfterFinishedController {
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        "ttl-after-finished"
    }

    fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    async fn sync(&self, key: &ObjectKey) -> minik_client::Result<()> {
        self.process_job(key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(ttl: Option<i32>, condition: Option<(&str, &str)>) -> Job {
        let conditions: Vec<_> = condition
            .into_iter()
            .map(|(type_, status)| {
                json!({"type": type_, "status": status,
                                          "lastTransitionTime": "2026-11-22T02:00:00Z"})
            })
            .collect();
        serde_json::from_value(json!({"metadata": {"name": "pi"},
            "spec": {"ttlSecondsAfterFinished": ttl, "template": {}},
            "status": {"conditions": conditions}}))
        .unwrap()
    }

    fn at(time: &str) -> Timestamp {
        time.parse().unwrap()
    }

    #[test]
    fn a_finished_job_expires_its_ttl_after_the_condition_turned_true() {
        let done = job(Some(60), Some(("Complete", "True")));
        assert_eq!(
            decide(&done, at("2026-11-22T02:00:20Z")),
            Ttl::Wait(Duration::from_secs(40))
        );
        assert_eq!(decide(&done, at("2026-11-22T02:01:00Z")), Ttl::Expired);
        let failed = job(Some(0), Some(("Failed", "True")));
        assert_eq!(decide(&failed, at("2026-11-22T02:00:00Z")), Ttl::Expired);
    }

    #[test]
    fn without_a_ttl_or_before_finishing_nothing_happens() {
        let now = at("2026-11-22T03:00:00Z");
        assert_eq!(
            decide(&job(None, Some(("Complete", "True"))), now),
            Ttl::NotApplicable
        );
        assert_eq!(decide(&job(Some(0), None), now), Ttl::NotApplicable);
        assert_eq!(
            decide(&job(Some(0), Some(("Complete", "False"))), now),
            Ttl::NotApplicable
        );
    }
}
