//! `minik demo job`: what happens to a batch process when its pod is deleted mid-run.
//!
//! Kubernetes counterpart: a Job (`pkg/controller/job`) replacing a deleted pod, and the
//! termination path every pod goes through (SIGTERM, the grace period, SIGKILL). Two runs of the
//! same Job (`job_worker.rs`), each pod deleted after `delete_after` of its `units` units:
//!
//! 1. a worker without a SIGTERM handler: the signal ends it, its finished units are lost, and
//!    the replacement the Job creates starts over from unit 0;
//! 2. a worker that checkpoints on SIGTERM (within the grace period): the replacement resumes
//!    where it stopped.
//!
//! Measured in both: the units lost, the units run in all, the Job's `succeeded` (once, though
//! two pods ran) and `failed` (the deleted pod), and the time from creating the Job to its
//! `Complete` condition. One unit lasts `1 s / speed`.
//!
//! What it leaves out: upstream's Job controller keeps a backoff record of counted failures, so
//! the replacement of a deleted pod waits out the 10 s failure backoff; minik's backoff counts
//! only the failed pods still present, and a deleted pod is gone, so its replacement starts at
//! once.

use std::path::Path;
use std::time::Duration;

use jiff::Timestamp;
use minik_api::batch::Job;
use minik_api::core::{Event, Pod};
use minik_client::{Api, Client, DeleteParams, ListParams};
use serde::Serialize;

use super::job_watch::{follow, JobWatch};
use super::job_worker::{self, Cost, WorkerJob};
use super::timeline::{Lane, Timeline};

/// The knobs of the job demo.
#[derive(Clone, Debug)]
pub struct JobOptions {
    /// Every duration (a unit of work, the Job's backoff) is divided by this.
    pub speed: f64,
    /// Units of work the Job needs.
    pub units: u32,
    /// The first pod is deleted once it finished this many.
    pub delete_after: u32,
}

impl JobOptions {
    /// How long one unit of work takes.
    pub fn unit(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.speed)
    }
}

/// One run's result.
#[derive(Clone, Debug, Serialize)]
pub struct JobRun {
    /// `no SIGTERM handler` or `checkpoint on SIGTERM`.
    pub name: &'static str,
    /// Whether the worker checkpoints.
    pub checkpoint: bool,
    /// Units of work the Job needs.
    pub units: u32,
    /// How long one unit takes, ms.
    pub unit_ms: f64,
    /// What the interruption cost, from the workers' logs.
    #[serde(flatten)]
    pub cost: Cost,
    /// The lost units as time: `units_lost × unit_ms`.
    pub work_lost_ms: f64,
    /// Pods the Job created.
    pub pods: usize,
    /// The Job's `status.succeeded` at the end.
    pub succeeded: i32,
    /// The Job's `status.failed` at the end (the deleted pod).
    pub failed: i32,
    /// From creating the Job to its `Complete` condition, ms.
    pub completed_ms: f64,
    /// What happened, relative to the Job's creation.
    pub timeline: Timeline,
}

/// Runs both variants, each with its own Job and progress directory.
pub async fn run(
    client: &Client,
    namespace: &str,
    options: &JobOptions,
    narrate: bool,
) -> crate::Result<Vec<JobRun>> {
    let progress = tempfile::Builder::new()
        .prefix("minik-demo-job-")
        .tempdir()?;
    let mut runs = Vec::new();
    for checkpoint in [false, true] {
        let dir = progress
            .path()
            .join(if checkpoint { "checkpoint" } else { "plain" });
        runs.push(run_variant(client, namespace, options, checkpoint, &dir, narrate).await?);
    }
    Ok(runs)
}

async fn run_variant(
    client: &Client,
    namespace: &str,
    options: &JobOptions,
    checkpoint: bool,
    progress_dir: &Path,
    narrate: bool,
) -> crate::Result<JobRun> {
    let (name, title) = if checkpoint {
        ("worker-checkpoint", "checkpoint on SIGTERM")
    } else {
        ("worker-plain", "no SIGTERM handler")
    };
    if narrate {
        println!(
            "\n  -- {title}: {} units of {:?}",
            options.units,
            options.unit()
        );
    }
    let jobs = Api::<Job>::namespaced(client.clone(), namespace);
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let mut watch = JobWatch::start(client, namespace, name).await?;
    let created = Timestamp::now();
    let worker = WorkerJob {
        name,
        units: options.units,
        unit: options.unit(),
        checkpoint,
        progress_dir,
        grace_seconds: 5,
    };
    jobs.create(&worker.build()).await?;

    let bound = Duration::from_secs(60) + options.unit() * options.units * 3;
    watch
        .until(bound, "the first pod to run", |w| w.running(0))
        .await?;
    let first = watch.pod_name(0);
    let mut first_log = follow(&pods, &first).await?;
    first_log.until_units(options.delete_after, bound).await?;
    let delete_sent = Timestamp::now();
    pods.delete(&first, &DeleteParams::default()).await?;
    if narrate {
        println!(
            "  {first} finished unit {}: deleting it",
            options.delete_after
        );
    }
    watch
        .until(bound, "the replacement pod to run", |w| w.running(1))
        .await?;
    let second = watch.pod_name(1);
    if narrate {
        println!("  the Job replaced it with {second}");
    }
    let second_log = follow(&pods, &second).await?;
    watch
        .until(bound, "the Job to complete", |w| w.complete.is_some())
        .await?;
    let first_lines = job_worker::parse_log(&first_log.finish().await);
    let second_lines = job_worker::parse_log(&second_log.finish().await);
    let cost = job_worker::cost(&first_lines, &second_lines);

    let mut timeline = Timeline::new(created);
    timeline.add(Lane::Client, "job created", created);
    timeline.add(Lane::Client, "pod 1 deleted", delete_sent);
    for (lane, event, at) in &watch.marks {
        timeline.add(*lane, event.clone(), *at);
    }
    timeline.add_events(
        &pod_events(client, namespace, &first).await?,
        |reason, _| kubelet_step(reason).map(|step| format!("{step} pod 1")),
    );
    add_worker_marks(&mut timeline, "pod 1", &first_lines);
    add_worker_marks(&mut timeline, "pod 2", &second_lines);

    let status = jobs.get(name).await?.status.unwrap_or_default();
    let complete = watch.complete.unwrap_or(created);
    let run = JobRun {
        name: title,
        checkpoint,
        units: options.units,
        unit_ms: options.unit().as_secs_f64() * 1000.0,
        work_lost_ms: f64::from(cost.units_lost) * options.unit().as_secs_f64() * 1000.0,
        cost,
        pods: watch.pods.len(),
        succeeded: status.succeeded.unwrap_or(0),
        failed: status.failed.unwrap_or(0),
        completed_ms: (complete.as_nanosecond() - created.as_nanosecond()) as f64 / 1e6,
        timeline,
    };
    let background = DeleteParams::default().propagation("Background");
    jobs.delete(name, &background).await?;
    Ok(run)
}

/// The kubelet Events of the deleted pod worth a mark.
fn kubelet_step(reason: &str) -> Option<&'static str> {
    match reason {
        "Killing" => Some("SIGTERM to"),
        "Killed" => Some("SIGKILL to"),
        _ => None,
    }
}

/// The worker's own lines worth a mark: its start, its last unit, its checkpoint, its end.
fn add_worker_marks(timeline: &mut Timeline, pod: &str, lines: &[job_worker::WorkerLine]) {
    let last_unit = lines.iter().rev().find(|line| line.event == "unit");
    for line in lines {
        let text = match line.event.as_str() {
            "started" => format!("{pod} starts at unit {}", line.units),
            "checkpoint" => format!("{pod} checkpoints unit {}", line.units),
            "done" => format!("{pod} done ({} units)", line.units),
            "unit" if Some(line) == last_unit => format!("{pod} finished unit {}", line.units),
            _ => continue,
        };
        timeline.add(Lane::Process, text, line.at);
    }
}

async fn pod_events(client: &Client, namespace: &str, pod: &str) -> crate::Result<Vec<Event>> {
    let events = Api::<Event>::namespaced(client.clone(), namespace);
    let selector = format!("involvedObject.name={pod}");
    Ok(events
        .list(&ListParams::default().fields(&selector))
        .await?
        .items)
}

/// Prints one row per run: where it was interrupted, what was lost, what the Job counted.
pub fn print_table(runs: &[JobRun]) {
    println!(
        "\n  {:<24} {:>8} {:>10} {:>8} {:>10} {:>9} {:>9} {:>6} {:>11}",
        "RUN",
        "STOPPED",
        "CHECKPOINT",
        "RESUMED",
        "LOST",
        "UNITS RUN",
        "SUCCEEDED",
        "FAILED",
        "COMPLETE"
    );
    for run in runs {
        let checkpoint = run
            .cost
            .checkpoint
            .map_or("-".to_string(), |units| units.to_string());
        println!(
            "  {:<24} {:>8} {:>10} {:>8} {:>10} {:>9} {:>9} {:>6} {:>11}",
            run.name,
            run.cost.done_by_first,
            checkpoint,
            run.cost.resumed_from,
            format!("{:.0} ms", run.work_lost_ms),
            format!("{}/{}", run.cost.units_run, run.units),
            run.succeeded,
            run.failed,
            format!("{:.0} ms", run.completed_ms),
        );
    }
}
