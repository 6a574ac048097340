//! CronJobs on a driven clock: the CronJob controller runs against a real apiserver with a clock
//! the test moves from one scheduled hour to the next, so each concurrency policy, the starting
//! deadline and the history limits are exercised without waiting an hour (or a minute).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use minik_api::batch::{CronJob, Job};
use minik_client::{Api, Client, Patch};
use minik_controller_manager::controller;
use minik_controller_manager::cronjob::{CronJobController, CronJobOptions};
use minik_controller_manager::informers::SharedInformers;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::cluster::{apiserver, wait_until, Apiserver};

/// A CronJob controller whose clock is the real one plus an offset the test sets.
struct Driven {
    offset: Arc<AtomicI64>,
    cron_jobs: Api<CronJob>,
    jobs: Api<Job>,
    shutdown: CancellationToken,
    touches: u32,
}

impl Drop for Driven {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Driven {
    fn start(server: &Apiserver) -> Driven {
        let client = Client::new(&server.url).unwrap();
        let offset = Arc::new(AtomicI64::new(0));
        let read = offset.clone();
        let clock = Arc::new(move || {
            Timestamp::now() + SignedDuration::from_millis(read.load(Ordering::SeqCst))
        });
        let informers = SharedInformers::new(client.clone());
        let cron_jobs =
            CronJobController::new(&informers, client.clone(), CronJobOptions { clock });
        let shutdown = CancellationToken::new();
        tokio::spawn(controller::spawn(
            cron_jobs,
            &informers,
            1,
            shutdown.clone(),
        ));
        tokio::spawn(informers.start(shutdown.clone()));
        Driven {
            offset,
            cron_jobs: Api::namespaced(client.clone(), "default"),
            jobs: Api::namespaced(client, "default"),
            shutdown,
            touches: 0,
        }
    }

    /// Moves the controller's clock to `at` and wakes the CronJobs up (a label change), as the
    /// requeue at the next schedule time would after a real wait: `tick` first, then the
    /// `barrier` CronJob (Allow) whose Job for `at`'s hour, once it exists, shows that the one
    /// worker already synced `tick` (the queue is first in, first out).
    async fn set_clock(&mut self, at: Timestamp) {
        let offset = at.duration_since(Timestamp::now()).as_millis() as i64;
        self.offset.store(offset, Ordering::SeqCst);
        self.touches += 1;
        let touch = json!({"metadata": {"labels": {"touched": self.touches.to_string()}}});
        for name in ["tick", "barrier"] {
            self.cron_jobs
                .patch(name, &Patch::Merge(touch.clone()))
                .await
                .expect("touch");
        }
        let hour = Timestamp::from_second(at.as_second() / 3600 * 3600).unwrap();
        let barrier = run_name("barrier", hour);
        wait_until(&self.jobs, |jobs: &[Job]| {
            jobs.iter()
                .any(|j| j.metadata.name.as_deref() == Some(barrier.as_str()))
        })
        .await;
    }

    /// The names of `tick`'s Jobs once there are `count`.
    async fn job_names(&self, count: usize) -> Vec<String> {
        let ticks = |jobs: &[Job]| -> Vec<String> {
            let mut names: Vec<String> = jobs
                .iter()
                .filter_map(|j| j.metadata.name.clone())
                .filter(|n| n.starts_with("tick-"))
                .collect();
            names.sort();
            names
        };
        let jobs = wait_until(&self.jobs, |jobs: &[Job]| ticks(jobs).len() == count).await;
        ticks(&jobs)
    }
}

/// The `k`-th whole hour after now, plus `seconds`.
fn hour(k: i64, seconds: i64) -> Timestamp {
    let now = Timestamp::now().as_second();
    Timestamp::from_second((now / 3600 + k) * 3600 + seconds).unwrap()
}

fn run_name(cron_job: &str, at: Timestamp) -> String {
    format!("{cron_job}-{}", at.as_second() / 60)
}

fn tick(at: Timestamp) -> String {
    run_name("tick", at)
}

/// `tick` with `spec`, and the `barrier` beside it.
async fn create(driven: &Driven, spec: serde_json::Value) {
    for (name, spec) in [("tick", spec), ("barrier", json!({}))] {
        driven
            .cron_jobs
            .create(&hourly(name, spec))
            .await
            .expect("create");
    }
}

fn hourly(name: &str, spec: serde_json::Value) -> CronJob {
    let mut spec = spec;
    spec["schedule"] = json!("0 * * * *");
    spec["jobTemplate"] = json!({"spec": {"template": {"spec": {"restartPolicy": "Never",
        "containers": [{"name": "tick", "image": "busybox", "command": ["true"]}]}}}});
    serde_json::from_value(json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec}))
    .unwrap()
}

/// Two scheduled hours under `policy`, the first run still active at the second: the Jobs left.
async fn two_runs(policy: &str) -> (Vec<String>, CronJob) {
    let server = apiserver().await;
    let mut driven = Driven::start(&server);
    create(&driven, json!({"concurrencyPolicy": policy})).await;
    driven.set_clock(hour(1, 5)).await;
    assert_eq!(driven.job_names(1).await, [tick(hour(1, 0))]);
    driven.set_clock(hour(2, 5)).await;
    let expected = if policy == "Allow" { 2 } else { 1 };
    let names = driven.job_names(expected).await;
    (names, driven.cron_jobs.get("tick").await.expect("get"))
}

#[tokio::test]
async fn allow_runs_beside_the_active_job() {
    let (names, cj) = two_runs("Allow").await;
    assert_eq!(names, [tick(hour(1, 0)), tick(hour(2, 0))]);
    let active = cj.status.and_then(|s| s.active).unwrap_or_default();
    assert_eq!(active.len(), 2, "both runs active");
}

#[tokio::test]
async fn forbid_skips_a_run_while_a_job_is_active() {
    let (names, _) = two_runs("Forbid").await;
    assert_eq!(names, [tick(hour(1, 0))]);
}

#[tokio::test]
async fn replace_deletes_the_active_job_first() {
    let (names, cj) = two_runs("Replace").await;
    assert_eq!(names, [tick(hour(2, 0))]);
    let active = cj.status.and_then(|s| s.active).unwrap_or_default();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].name.as_deref(), Some(tick(hour(2, 0)).as_str()));
}

/// With a 60 s starting deadline, a clock 30 min past the hour finds nothing due; 5 s past the
/// next hour it runs that hour.
#[tokio::test]
async fn a_run_past_its_starting_deadline_is_skipped() {
    let server = apiserver().await;
    let mut driven = Driven::start(&server);
    create(&driven, json!({"startingDeadlineSeconds": 60})).await;
    driven.set_clock(hour(1, 1800)).await;
    assert!(
        driven.job_names(0).await.is_empty(),
        "the 1800 s late run is skipped"
    );
    driven.set_clock(hour(2, 5)).await;
    assert_eq!(driven.job_names(1).await, [tick(hour(2, 0))]);
}

/// successfulJobsHistoryLimit 1: once two runs completed, the older Job is deleted and
/// `lastSuccessfulTime` is the newer completion.
#[tokio::test]
async fn finished_jobs_beyond_the_history_limit_are_deleted() {
    let server = apiserver().await;
    let mut driven = Driven::start(&server);
    create(&driven, json!({"successfulJobsHistoryLimit": 1})).await;
    for k in 1..=2 {
        driven.set_clock(hour(k, 5)).await;
        driven.job_names(k as usize).await;
    }
    for (k, name) in [(1, tick(hour(1, 0))), (2, tick(hour(2, 0)))] {
        let status = json!({"status": {"startTime": hour(k, 5).to_string(),
            "completionTime": hour(k, 10).to_string(), "succeeded": 1,
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                           {"type": "Complete", "status": "True"}]}});
        driven
            .jobs
            .patch_status(&name, &Patch::Merge(status))
            .await
            .expect("complete");
    }
    assert_eq!(driven.job_names(1).await, [tick(hour(2, 0))]);
    let succeeded = |cj: &[CronJob]| {
        cj.iter().any(|cj| {
            let status = cj.status.clone().unwrap_or_default();
            status.last_successful_time.map(|t| t.0) == Some(hour(2, 10)) && status.active.is_none()
        })
    };
    wait_until(&driven.cron_jobs, succeeded).await;
}
