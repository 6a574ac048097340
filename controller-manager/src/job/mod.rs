//! The Job controller: runs a Job's pods to `completions`, counting each finished pod once.
//!
//! Kubernetes counterpart: `pkg/controller/job/job_controller.go` (`syncJob`,
//! `trackJobStatusWithFinalizers`, `manageJob`, the pod handlers). One sync of `namespace/name`:
//!
//! 1. a finished Job (Complete or Failed) only strips the tracking finalizer from its pods;
//! 2. claim the pods (adopt orphans its selector matches, release those it no longer matches);
//! 3. record newly finished tracked pods in `status.uncountedTerminatedPods` (one status write),
//!    remove their finalizers, then move them into `succeeded`/`failed` (the next write): a pod
//!    deleted after it succeeded is held by its finalizer until it was counted, and a crash between
//!    any two steps is resumed by the next sync without losing or doubling a completion (JB3);
//! 4. decide ([`decide`]): SuccessCriteriaMet / FailureTarget, how many pods should be active,
//!    the failure backoff and the active deadline; create or delete the difference;
//! 5. write the status ([`status::next_status`]); Complete or Failed come once no pod runs (JB6).
//!
//! Expectations (as the ReplicaSet controller's) keep a sync from creating pods its informer has
//! not seen yet; `released` remembers the uids whose finalizer this process removed, so a stale
//! cache cannot count them twice.
//!
//! The finalizer steps are in `tracking`, the pod writes in `pods`.
//!
//! Indexed Jobs start the lowest pending indexes ([`indexed`]) and report `completedIndexes`.
//!
//! A `podFailurePolicy` ([`failure_policy`]) judges each newly failed pod before it is recorded:
//! FailJob fails the Job, Ignore releases the pod uncounted. The TTL after finishing is another
//! controller's (`ttlafterfinished`).
//!
//! minik simplifies: no `successPolicy`, `backoffLimitPerIndex`, no 500-pods-per-sync batching
//! beyond one burst.

pub mod decide;
pub mod failure_policy;
pub mod indexed;
mod pods;
pub mod status;
mod tracking;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use minik_api::batch::Job;
use minik_api::core::Pod;
use minik_api::meta::ObjectMeta;
use minik_api::ObjectKey;
use minik_client::{Api, Client, Store, WorkQueue};
use tracing::{debug, info};

use crate::controller::Controller;
use crate::expectations::Expectations;
use crate::informers::{Change, SharedInformers};
use crate::ownership::controller_of;
use decide::{Counts, PodState, Uncounted, Wanted};
use tracking::tracked_orphan;

/// The most pods one sync creates or deletes (upstream `MaxPodCreateDeletePerSync`).
const MAX_POD_WRITES_PER_SYNC: usize = 500;

/// Timings a test may scale down.
#[derive(Clone, Copy, Debug)]
pub struct JobOptions {
    /// The first replacement's wait after a failure (upstream 10 s).
    pub backoff_base: Duration,
    /// The longest wait (upstream `MaxJobPodFailureBackOff`, 10 min).
    pub backoff_cap: Duration,
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            backoff_base: Duration::from_secs(10),
            backoff_cap: Duration::from_secs(600),
        }
    }
}

/// The controller: two stores, a queue, expectations, and the client it writes through.
pub struct JobController {
    jobs: Store<Job>,
    pods: Store<Pod>,
    queue: Arc<WorkQueue>,
    expectations: Arc<Expectations>,
    released: Arc<Mutex<BTreeSet<String>>>,
    options: JobOptions,
    client: Client,
}

impl JobController {
    /// Registers the handlers on the shared Job and Pod informers.
    pub fn new(informers: &SharedInformers, client: Client, options: JobOptions) -> Arc<Self> {
        let job_informer = informers.informer::<Job>();
        let pod_informer = informers.informer::<Pod>();
        let controller = Arc::new(JobController {
            jobs: job_informer.store(),
            pods: pod_informer.store(),
            queue: Arc::new(WorkQueue::new()),
            expectations: Arc::new(Expectations::default()),
            released: Arc::default(),
            options,
            client,
        });
        let (queue, expectations) = (controller.queue.clone(), controller.expectations.clone());
        job_informer.add_handler(move |change: &Change<Job>| {
            let key = ObjectKey::of(&change.object().metadata);
            if let Change::Deleted(_) = change {
                expectations.delete(&key);
            }
            queue.add(key);
        });
        let handler = PodHandler {
            jobs: controller.jobs.clone(),
            queue: controller.queue.clone(),
            expectations: controller.expectations.clone(),
            released: controller.released.clone(),
        };
        pod_informer.add_handler(move |change: &Change<Pod>| handler.on_change(change));
        controller
    }

    fn api<K: minik_client::Object>(&self, meta: &ObjectMeta) -> Api<K> {
        let namespace = meta.namespace.as_deref().unwrap_or("default");
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Reconciles the Job `key` (`syncJob`).
    pub async fn sync_job(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let job = self.jobs.get(key);
        let candidates: Vec<Arc<Pod>> = self
            .pods
            .state()
            .into_iter()
            .filter(|pod| pod.metadata.namespace == key.namespace)
            .collect();
        let live_uid = job.as_ref().and_then(|job| job.metadata.uid.as_deref());
        let orphans: Vec<&Pod> = candidates
            .iter()
            .map(|pod| &**pod)
            .filter(|pod| tracked_orphan(pod, &key.name, live_uid))
            .collect();
        if !orphans.is_empty() {
            info!(job = %key, pods = orphans.len(), "removing tracking finalizers of orphaned pods");
            self.remove_finalizers(&orphans).await?;
        }
        let Some(job) = job else {
            self.expectations.delete(key);
            return Ok(());
        };
        let mut job = (*job).clone();
        if status::is_finished(&job) {
            let owned = self.claim_pods(&job, candidates, false).await?;
            return self.release_all(key, &owned).await;
        }
        let owned = self.claim_pods(&job, candidates, true).await?;
        let pods: Vec<&Pod> = owned.iter().map(|pod| &**pod).collect();
        job = self.track_finished(key, job, &pods).await?;
        self.manage(key, job, &pods).await
    }

    /// Steps 4 and 5: decide, create or delete pods, write the status.
    async fn manage(&self, key: &ObjectKey, job: Job, pods: &[&Pod]) -> minik_client::Result<()> {
        let now = jiff::Timestamp::now();
        let wanted = Wanted::of(&job);
        let mut observed = self.observe(&job, pods, Uncounted::of(&job));
        let start = job
            .status
            .as_ref()
            .and_then(|s| s.start_time.as_ref())
            .map(|t| t.0);
        let recorded = job
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .and_then(decide::recorded_target);
        let indexes = self.index_plan(&job, pods, &mut observed);
        observed.target =
            recorded.or_else(|| decide::target(&wanted, &observed.counts, start, now));
        let want = decide::want_active(&wanted, &observed.counts, observed.target.is_some());
        let active: Vec<&Pod> = pods
            .iter()
            .copied()
            .filter(|p| decide::pod_state(p) == PodState::Active)
            .collect();
        let mut result = Ok(());
        if self.expectations.satisfied(key) {
            let only_failed = decide::only_replace_failed(&job);
            let diff = decide::pods_missing(want, &observed.counts, only_failed);
            if diff > 0 {
                let wait = decide::backoff_remaining(
                    pods,
                    self.options.backoff_base,
                    self.options.backoff_cap,
                    now,
                );
                if wait.is_zero() {
                    let count = (diff as usize).min(MAX_POD_WRITES_PER_SYNC);
                    let plan: Vec<Option<i32>> = match &indexes {
                        Some(index_plan) => {
                            index_plan.iter().take(count).map(|i| Some(*i)).collect()
                        }
                        None => vec![None; count],
                    };
                    result = self.create_pods(key, &job, plan).await;
                } else {
                    debug!(job = %key, ?wait, "waiting out the failure backoff");
                    self.queue.add_after(key.clone(), wait);
                }
            } else if diff < 0 {
                result = self.delete_pods(key, &active, (-diff) as usize).await;
            }
        }
        let next = status::next_status(&job, &observed, now);
        if job.status.as_ref() != Some(&next) {
            let mut updated = job.clone();
            updated.status = Some(next);
            self.api::<Job>(&job.metadata)
                .replace_status(&key.name, &updated)
                .await?;
            info!(job = %key, active = observed.counts.active, succeeded = observed.counts.succeeded,
                failed = observed.counts.failed, target = ?observed.target.as_ref().map(|t| t.reason), "updated status");
        }
        if observed.target.is_none() && !wanted.suspend {
            if let Some(left) = decide::deadline_remaining(&wanted, start.or(Some(now)), now) {
                self.queue
                    .add_after(key.clone(), left + Duration::from_millis(100));
            }
        }
        result
    }

    /// For an Indexed Job: the completed indexes go into the status (and `succeeded` counts
    /// them), and the pending indexes are returned, lowest first. `None` for NonIndexed.
    fn index_plan(
        &self,
        job: &Job,
        pods: &[&Pod],
        observed: &mut status::Observed,
    ) -> Option<Vec<i32>> {
        let spec = job.spec.as_ref()?;
        if spec.completion_mode.as_deref() != Some("Indexed") {
            return None;
        }
        let completions = spec.completions.unwrap_or(0);
        let recorded = observed.completed_indexes.clone().unwrap_or_default();
        let done = indexed::succeeded_indexes(pods, &recorded, completions);
        let running = indexed::active_indexes(pods, completions);
        observed.counts.succeeded = done.len() as i32;
        observed.completed_indexes = Some(indexed::format_indexes(&done)).filter(|t| !t.is_empty());
        let pending =
            indexed::indexes_to_start(completions, &done, &running, MAX_POD_WRITES_PER_SYNC);
        Some(pending)
    }

    /// The counts for a status: the counters plus what is recorded but uncounted.
    fn observe(&self, job: &Job, pods: &[&Pod], uncounted: Uncounted) -> status::Observed {
        let status = job.status.clone().unwrap_or_default();
        let mut counts = Counts {
            succeeded: status.succeeded.unwrap_or(0),
            failed: status.failed.unwrap_or(0),
            ..Counts::default()
        };
        for pod in pods {
            match decide::pod_state(pod) {
                PodState::Active => {
                    counts.active += 1;
                    counts.ready += i32::from(crate::replicaset::pods::is_ready(pod));
                }
                PodState::Terminating => counts.terminating += 1,
                PodState::Succeeded | PodState::Failed => {}
            }
        }
        let mut with_uncounted = counts;
        with_uncounted.succeeded += uncounted.succeeded.len() as i32;
        with_uncounted.failed += uncounted.failed.len() as i32;
        status::Observed {
            counts: with_uncounted,
            uncounted,
            target: None,
            completed_indexes: status.completed_indexes,
        }
    }
}

impl Controller for JobController {
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        "job"
    }

    fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    async fn sync(&self, key: &ObjectKey) -> minik_client::Result<()> {
        self.sync_job(key).await
    }
}

/// Pod events → expectations, released uids and Job keys (`addPod`, `updatePod`, `deletePod`).
struct PodHandler {
    jobs: Store<Job>,
    queue: Arc<WorkQueue>,
    expectations: Arc<Expectations>,
    released: Arc<Mutex<BTreeSet<String>>>,
}

impl PodHandler {
    fn on_change(&self, change: &Change<Pod>) {
        let pod = change.object();
        let Some(reference) = controller_of(&pod.metadata).filter(|r| r.kind == "Job") else {
            return;
        };
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let key = ObjectKey::new(namespace, reference.name.clone());
        let live = self.jobs.get(&key);
        if live.and_then(|job| job.metadata.uid.clone()).as_deref() != Some(reference.uid.as_str())
        {
            // The Job is gone: its sync strips the finalizer of this orphan.
            if decide::has_tracking_finalizer(pod) {
                self.queue.add(key);
            }
            return;
        }
        match change {
            Change::Added(_) => self.expectations.creation_observed(&key),
            Change::Updated { old, new } => {
                if new.metadata.deletion_timestamp.is_some()
                    && old.metadata.deletion_timestamp.is_none()
                {
                    self.expectations
                        .deletion_observed(&key, &ObjectKey::of(&new.metadata));
                }
            }
            Change::Deleted(_) => self
                .expectations
                .deletion_observed(&key, &ObjectKey::of(&pod.metadata)),
        }
        // Once the cache shows the finalizer gone, the stale-cache guard is no longer needed.
        let gone = matches!(change, Change::Deleted(_)) || !decide::has_tracking_finalizer(pod);
        if gone {
            let uid = pod.metadata.uid.as_deref().unwrap_or_default();
            self.released
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(uid);
        }
        self.queue.add(key);
    }
}
