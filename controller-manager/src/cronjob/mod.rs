//! The CronJob controller: creates a Job each time a CronJob's schedule fires.
//!
//! Kubernetes counterpart: `pkg/controller/cronjob/cronjob_controllerv2.go` (`sync`,
//! `syncCronJob`, `cleanupFinishedJobs`, the Job handlers). One sync of `namespace/name`:
//!
//! 1. read the CronJob's Jobs (those it controls) from the Job informer: the unfinished ones are
//!    `status.active`, the latest completion is `lastSuccessfulTime`;
//! 2. delete the finished Jobs beyond the history limits;
//! 3. unless suspended, [`decide::decide`]: wait, skip a run past its deadline, or run the most
//!    recent due time: Forbid skips it while a Job is active, Replace first deletes the active
//!    Jobs; the Job is created under a name fixed by its scheduled minute, so a sync repeated
//!    before the informer shows it gets a 409 and never makes two;
//! 4. write the status (active, lastScheduleTime, lastSuccessfulTime) and come back when the
//!    schedule next fires.
//!
//! The clock is an option ([`CronJobOptions`]): `--cronjob-clock-offset` runs the controller that
//! far in the future, and tests drive it by hand, so schedules are tested without waiting minutes.
//!
//! minik simplifies: no Events for missed or skipped runs (they are logged).

pub mod decide;

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus, Job};
use minik_api::core::ObjectReference;
use minik_api::cron::Schedule;
use minik_api::meta::Time;
use minik_api::ObjectKey;
use minik_client::{Api, Client, DeleteParams, Patch, Store, WorkQueue};
use tracing::{info, warn};

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};
use crate::ownership::{controller_of, is_controlled_by};
use decide::Decision;

/// What the controller reads the time from.
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The controller's clock.
#[derive(Clone)]
pub struct CronJobOptions {
    /// Now, as the controller sees it.
    pub clock: Clock,
}

impl CronJobOptions {
    /// The real clock moved `offset` into the future (`--cronjob-clock-offset`).
    pub fn with_offset(offset: Duration) -> Self {
        let offset = jiff::SignedDuration::try_from(offset).unwrap_or_default();
        CronJobOptions {
            clock: Arc::new(move || Timestamp::now() + offset),
        }
    }
}

impl Default for CronJobOptions {
    fn default() -> Self {
        CronJobOptions::with_offset(Duration::ZERO)
    }
}

/// The controller: two stores, a queue, a clock, and the client it writes through.
pub struct CronJobController {
    cron_jobs: Store<CronJob>,
    jobs: Store<Job>,
    queue: Arc<WorkQueue>,
    options: CronJobOptions,
    client: Client,
}

impl CronJobController {
    /// Registers the handlers on the shared CronJob and Job informers.
    pub fn new(informers: &SharedInformers, client: Client, options: CronJobOptions) -> Arc<Self> {
        let cj_informer = informers.informer::<CronJob>();
        let job_informer = informers.informer::<Job>();
        let controller = Arc::new(CronJobController {
            cron_jobs: cj_informer.store(),
            jobs: job_informer.store(),
            queue: Arc::new(WorkQueue::new()),
            options,
            client,
        });
        let queue = controller.queue.clone();
        cj_informer.add_handler(move |change: &Change<CronJob>| {
            queue.add(ObjectKey::of(&change.object().metadata));
        });
        let queue = controller.queue.clone();
        job_informer.add_handler(move |change: &Change<Job>| {
            let job = change.object();
            if let Some(owner) = controller_of(&job.metadata).filter(|r| r.kind == "CronJob") {
                let namespace = job.metadata.namespace.clone().unwrap_or_default();
                queue.add(ObjectKey::new(namespace, owner.name.clone()));
            }
        });
        controller
    }

    fn api<K: minik_client::Object>(&self, key: &ObjectKey) -> Api<K> {
        Api::namespaced(
            self.client.clone(),
            key.namespace.as_deref().unwrap_or("default"),
        )
    }

    /// Reconciles the CronJob `key` (`syncCronJob`).
    pub async fn sync_cron_job(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let Some(cj) = self.cron_jobs.get(key) else {
            return Ok(());
        };
        let now = (self.options.clock)();
        let owned: Vec<Arc<Job>> = self
            .jobs
            .state()
            .into_iter()
            .filter(|job| job.metadata.namespace == cj.metadata.namespace)
            .filter(|job| is_controlled_by(&job.metadata, cj.metadata.uid.as_deref()))
            .collect();
        let jobs: Vec<&Job> = owned.iter().map(|job| &**job).collect();
        let mut status = observed_status(&cj, &jobs);
        for job in decide::jobs_to_clean_up(&cj, &jobs) {
            self.delete_job(key, job).await?;
        }
        let spec = cj.spec.clone().unwrap_or_default();
        let mut requeue = None;
        if cj.metadata.deletion_timestamp.is_none() && spec.suspend != Some(true) {
            requeue = self.schedule(key, &cj, &jobs, &mut status, now).await?;
        }
        if cj.status.as_ref() != Some(&status) {
            let mut body = serde_json::json!({ "status": status });
            if status.active.is_none() {
                body["status"]["active"] = serde_json::Value::Null;
            }
            self.api::<CronJob>(key)
                .patch_status(&key.name, &Patch::Merge(body))
                .await?;
        }
        if let Some(next) = requeue {
            let wait = next.duration_since(now).unsigned_abs();
            self.queue
                .add_after(key.clone(), wait + Duration::from_millis(100));
        }
        Ok(())
    }

    /// Step 3: the run due now, if any; returns when to look again.
    async fn schedule(
        &self,
        key: &ObjectKey,
        cj: &CronJob,
        jobs: &[&Job],
        status: &mut CronJobStatus,
        now: Timestamp,
    ) -> minik_client::Result<Option<Timestamp>> {
        let spec = cj.spec.clone().unwrap_or_default();
        let schedule = match Schedule::parse(&spec.schedule) {
            Ok(schedule) => schedule,
            Err(error) => {
                warn!(cronjob = %key, %error, "unparseable schedule");
                return Ok(None);
            }
        };
        let tz = decide::time_zone(cj);
        let (scheduled, missed) = match decide::decide(cj, &schedule, now) {
            Decision::Wait { next } => return Ok(next),
            Decision::TooLate { scheduled, next } => {
                warn!(cronjob = %key, %scheduled, "missed starting deadline; skipping (MissSchedule)");
                return Ok(next);
            }
            Decision::Run { scheduled, missed } => (scheduled, missed),
        };
        let next = schedule.next_after(now, &tz);
        if missed > decide::TOO_MANY_MISSED {
            warn!(cronjob = %key, missed, "too many missed start times (TooManyMissedTimes)");
        }
        let active: Vec<&Job> = jobs
            .iter()
            .copied()
            .filter(|j| decide::finished(j).is_none())
            .collect();
        match spec.concurrency_policy.as_deref() {
            Some("Forbid") if !active.is_empty() => {
                info!(cronjob = %key, %scheduled, "a Job is still active; skipping (Forbid)");
                return Ok(next);
            }
            Some("Replace") => {
                for job in &active {
                    info!(cronjob = %key, job = ?job.metadata.name, "replacing the active Job");
                    self.delete_job(key, job).await?;
                }
                status.active = None;
            }
            _ => {}
        }
        let job = decide::job_for(cj, scheduled);
        let created = match self.api::<Job>(key).create(&job).await {
            Ok(created) => created,
            Err(error) if error.is_already_exists() => job,
            Err(error) => return Err(error),
        };
        info!(cronjob = %key, job = ?created.metadata.name, %scheduled, "created Job");
        let reference = job_reference(&created);
        let refs = status.active.get_or_insert_with(Vec::new);
        if !refs.iter().any(|r| r.name == reference.name) {
            refs.push(reference);
        }
        status.last_schedule_time = Some(Time(scheduled));
        Ok(next)
    }

    async fn delete_job(&self, key: &ObjectKey, job: &Job) -> minik_client::Result<()> {
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let background = DeleteParams::default().propagation("Background");
        match self.api::<Job>(key).delete(name, &background).await {
            Ok(_) => Ok(()),
            Err(error) if error.is_not_found() => Ok(()),
            Err(error) => Err(error),
        }
    }
}

/// The status the Jobs show: the unfinished ones active, the latest completion.
fn observed_status(cj: &CronJob, jobs: &[&Job]) -> CronJobStatus {
    let previous = cj.status.clone().unwrap_or_default();
    let active: Vec<ObjectReference> = jobs
        .iter()
        .filter(|job| decide::finished(job).is_none() && job.metadata.deletion_timestamp.is_none())
        .map(|job| job_reference(job))
        .collect();
    let completed = jobs
        .iter()
        .filter(|job| decide::finished(job) == Some(true))
        .filter_map(|job| job.status.as_ref()?.completion_time.clone())
        .max_by_key(|time| time.0);
    CronJobStatus {
        active: (!active.is_empty()).then_some(active),
        last_schedule_time: previous.last_schedule_time,
        last_successful_time: match (completed, previous.last_successful_time) {
            (Some(new), Some(old)) => Some(if new.0 > old.0 { new } else { old }),
            (new, old) => new.or(old),
        },
    }
}

fn job_reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        ..ObjectReference::default()
    }
}

impl Controller for CronJobController {
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        "cronjob"
    }

    fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    async fn sync(&self, key: &ObjectKey) -> minik_client::Result<()> {
        self.sync_cron_job(key).await
    }
}
