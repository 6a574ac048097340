//! The CronJob controller's decisions, as pure functions of the CronJob, its Jobs and the clock.
//!
//! Kubernetes counterpart: `pkg/controller/cronjob/utils.go` (`mostRecentScheduleTime`,
//! `getJobName`, `getJobFromTemplate2`, `nextScheduleTime`) and the scheduling part of
//! `syncCronJob` in `cronjob_controllerv2.go`. The rules:
//!
//! - the schedule is read in `spec.timeZone` (UTC when unset); the times it fired since the last
//!   scheduled run (or the CronJob's creation), and not before `now - startingDeadlineSeconds`,
//!   are the missed ones: only the most recent runs; more than 100 is reported
//!   (`TooManyMissedTimes`) and the latest still runs;
//! - a run later than its starting deadline is skipped (`MissSchedule`);
//! - Forbid skips a run while a Job is active; Replace deletes the active Jobs first; Allow runs
//!   beside them;
//! - a run's Job is named `CRONJOB-<scheduled minutes since the epoch>`, so creating it twice is a
//!   409, never a second Job.

use jiff::tz::TimeZone;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use minik_api::cron::Schedule;
use minik_api::meta::ObjectMeta;

use crate::ownership::controller_ref;

/// Upstream reports a CronJob that missed more than this many start times.
pub const TOO_MANY_MISSED: usize = 100;

/// What to do now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to run yet; come back at `next` (if the schedule fires again).
    Wait { next: Option<Timestamp> },
    /// Run the time `scheduled`; `missed` times were due (1 when on time).
    Run { scheduled: Timestamp, missed: usize },
    /// The most recent time is past its starting deadline.
    TooLate {
        scheduled: Timestamp,
        next: Option<Timestamp>,
    },
}

/// The CronJob's time zone (UTC when unset or unknown).
pub fn time_zone(cj: &CronJob) -> TimeZone {
    cj.spec
        .as_ref()
        .and_then(|s| s.time_zone.as_deref())
        .and_then(|zone| TimeZone::get(zone).ok())
        .unwrap_or(TimeZone::UTC)
}

/// The most recent time the schedule fired in `(earliest, now]`, and how many times it did.
pub fn most_recent(
    schedule: &Schedule,
    tz: &TimeZone,
    earliest: Timestamp,
    now: Timestamp,
) -> (Option<Timestamp>, usize) {
    let (mut latest, mut count, mut cursor) = (None, 0, earliest);
    while let Some(time) = schedule.next_after(cursor, tz).filter(|t| *t <= now) {
        latest = Some(time);
        count += 1;
        cursor = time;
    }
    (latest, count)
}

/// `syncCronJob`'s scheduling decision at `now`.
pub fn decide(cj: &CronJob, schedule: &Schedule, now: Timestamp) -> Decision {
    let tz = time_zone(cj);
    let spec = cj.spec.clone().unwrap_or_default();
    let status = cj.status.clone().unwrap_or_default();
    let created = cj.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let mut earliest = status
        .last_schedule_time
        .map(|t| t.0)
        .or(created)
        .unwrap_or(now);
    if let Some(deadline) = spec.starting_deadline_seconds {
        let window = now.as_second() - deadline;
        earliest = earliest.max(Timestamp::from_second(window).unwrap_or(earliest));
    }
    let (latest, missed) = most_recent(schedule, &tz, earliest, now);
    let next = schedule.next_after(now, &tz);
    let Some(scheduled) = latest else {
        return Decision::Wait { next };
    };
    let late = spec
        .starting_deadline_seconds
        .is_some_and(|deadline| scheduled.as_second() + deadline < now.as_second());
    if late {
        return Decision::TooLate { scheduled, next };
    }
    Decision::Run { scheduled, missed }
}

/// `getJobName`: the CronJob's name and the scheduled time in minutes since the epoch.
pub fn job_name(cj: &CronJob, scheduled: Timestamp) -> String {
    let name = cj.metadata.name.as_deref().unwrap_or_default();
    format!("{name}-{}", scheduled.as_second().div_euclid(60))
}

/// `getJobFromTemplate2`: the Job of one run, from the template, owned by the CronJob and
/// annotated with its scheduled time (in the CronJob's time zone).
pub fn job_for(cj: &CronJob, scheduled: Timestamp) -> Job {
    let template = cj
        .spec
        .as_ref()
        .map(|s| s.job_template.clone())
        .unwrap_or_default();
    let template_meta = template.metadata.unwrap_or_default();
    let mut annotations = template_meta.annotations.unwrap_or_default();
    let zoned = scheduled.to_zoned(time_zone(cj));
    annotations.insert(
        "batch.kubernetes.io/cronjob-scheduled-timestamp".into(),
        zoned.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
    );
    Job {
        metadata: ObjectMeta {
            name: Some(job_name(cj, scheduled)),
            namespace: cj.metadata.namespace.clone(),
            labels: template_meta.labels,
            annotations: Some(annotations),
            owner_references: Some(vec![controller_ref("batch/v1", "CronJob", &cj.metadata)]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    }
}

/// Whether a Job finished, and how: `Some(true)` Complete, `Some(false)` Failed.
pub fn finished(job: &Job) -> Option<bool> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    let holds = |type_: &str| {
        conditions
            .iter()
            .any(|c| c.type_ == type_ && c.status == "True")
    };
    if holds("Complete") {
        Some(true)
    } else if holds("Failed") {
        Some(false)
    } else {
        None
    }
}

/// The finished Jobs beyond the history limits, oldest first (`cleanupFinishedJobs`).
pub fn jobs_to_clean_up<'a>(cj: &CronJob, jobs: &[&'a Job]) -> Vec<&'a Job> {
    let spec = cj.spec.clone().unwrap_or_default();
    let mut doomed = Vec::new();
    for (succeeded, limit) in [
        (true, spec.successful_jobs_history_limit.unwrap_or(3)),
        (false, spec.failed_jobs_history_limit.unwrap_or(1)),
    ] {
        let mut matching: Vec<&Job> = jobs
            .iter()
            .copied()
            .filter(|job| finished(job) == Some(succeeded))
            .collect();
        matching.sort_by_key(|job| {
            let status = job.status.as_ref();
            let start = status.and_then(|s| s.start_time.as_ref()).map(|t| t.0);
            (start, job.metadata.creation_timestamp.as_ref().map(|t| t.0))
        });
        let excess = matching.len().saturating_sub(limit.max(0) as usize);
        doomed.extend(matching.into_iter().take(excess));
    }
    doomed
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
