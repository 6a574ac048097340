//! Tests of `decide.rs`: missed times, the starting deadline, names and history limits.

use serde_json::{json, Value};

use super::*;

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn cron_job(spec: Value, status: Value) -> CronJob {
    let mut spec = spec;
    spec["jobTemplate"] = json!({"metadata": {"labels": {"app": "tick"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                 "containers": [{"name": "tick", "image": "busybox"}]}}}});
    serde_json::from_value(json!({
        "metadata": {"name": "tick", "namespace": "default", "uid": "u1",
                     "creationTimestamp": "2026-11-22T02:00:30Z"},
        "spec": spec, "status": status}))
    .unwrap()
}

fn decide_at(cj: &CronJob, now: &str) -> Decision {
    let schedule = Schedule::parse(&cj.spec.as_ref().unwrap().schedule).unwrap();
    decide(cj, &schedule, at(now))
}

#[test]
fn nothing_runs_before_the_first_time_and_then_the_due_time_runs() {
    let cj = cron_job(json!({"schedule": "*/5 * * * *"}), json!({}));
    assert_eq!(
        decide_at(&cj, "2026-11-22T02:04:00Z"),
        Decision::Wait {
            next: Some(at("2026-11-22T02:05:00Z"))
        }
    );
    assert_eq!(
        decide_at(&cj, "2026-11-22T02:05:10Z"),
        Decision::Run {
            scheduled: at("2026-11-22T02:05:00Z"),
            missed: 1
        }
    );
}

#[test]
fn of_many_missed_times_only_the_latest_runs() {
    let cj = cron_job(
        json!({"schedule": "* * * * *"}),
        json!({"lastScheduleTime": "2026-11-22T02:01:00Z"}),
    );
    assert_eq!(
        decide_at(&cj, "2026-11-22T04:01:30Z"),
        Decision::Run {
            scheduled: at("2026-11-22T04:01:00Z"),
            missed: 120
        }
    );
}

#[test]
fn a_starting_deadline_bounds_the_missed_times_and_skips_a_late_run() {
    let cj = cron_job(
        json!({"schedule": "0 * * * *", "startingDeadlineSeconds": 60}),
        json!({"lastScheduleTime": "2026-11-22T01:00:00Z"}),
    );
    assert_eq!(
        decide_at(&cj, "2026-11-22T02:00:30Z"),
        Decision::Run {
            scheduled: at("2026-11-22T02:00:00Z"),
            missed: 1
        }
    );
    // Ten minutes late: outside the 60 s window, nothing is due.
    assert_eq!(
        decide_at(&cj, "2026-11-22T02:10:00Z"),
        Decision::Wait {
            next: Some(at("2026-11-22T03:00:00Z"))
        }
    );
}

#[test]
fn the_job_is_named_after_its_minute_and_owned_by_the_cron_job() {
    let cj = cron_job(
        json!({"schedule": "@hourly", "timeZone": "Asia/Tokyo"}),
        json!({}),
    );
    let job = job_for(&cj, at("2026-11-22T02:00:00Z"));
    let value = serde_json::to_value(&job).unwrap();
    assert_eq!(
        value["metadata"]["name"],
        format!("tick-{}", at("2026-11-22T02:00:00Z").as_second() / 60)
    );
    assert_eq!(value["metadata"]["labels"]["app"], "tick");
    assert_eq!(
        value["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"],
        "2026-11-22T11:00:00+09:00"
    );
    assert_eq!(value["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert_eq!(value["spec"]["template"]["spec"]["restartPolicy"], "Never");
}

#[test]
fn finished_jobs_beyond_the_limits_go_oldest_first() {
    let cj = cron_job(
        json!({"schedule": "@hourly", "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 0}),
        json!({}),
    );
    let job = |name: &str, start: &str, condition: &str| -> Job {
        serde_json::from_value(json!({"metadata": {"name": name},
            "status": {"startTime": start, "conditions": [{"type": condition, "status": "True"}]}}))
        .unwrap()
    };
    let jobs = [
        job("new", "2026-11-22T03:00:00Z", "Complete"),
        job("old", "2026-11-22T01:00:00Z", "Complete"),
        job("bad", "2026-11-22T02:00:00Z", "Failed"),
    ];
    let refs: Vec<&Job> = jobs.iter().collect();
    let names: Vec<_> = jobs_to_clean_up(&cj, &refs)
        .iter()
        .map(|j| j.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["old", "bad"]);
}
