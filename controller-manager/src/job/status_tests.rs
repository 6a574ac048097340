//! Table tests of a Job's next status and of the pods it stamps out.

use super::*;
use crate::job::decide::{Counts, Target};
use serde_json::json;

fn now() -> Timestamp {
    "2026-11-22T02:05:00Z".parse().unwrap()
}

fn job(suspend: bool, status: serde_json::Value) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": "pi", "namespace": "default", "uid": "u1"},
        "spec": {"suspend": suspend, "completions": 2, "template": {
            "metadata": {"labels": {"job-name": "pi"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]}}},
        "status": status}))
    .unwrap()
}

fn observed(active: i32, succeeded: i32, target: Option<Target>) -> Observed {
    Observed {
        counts: Counts {
            active,
            succeeded,
            ..Counts::default()
        },
        uncounted: Default::default(),
        target,
        completed_indexes: None,
    }
}

fn types(status: &JobStatus) -> Vec<(&str, &str)> {
    let conditions = status.conditions.iter().flatten();
    conditions
        .map(|c| (c.type_.as_str(), c.status.as_str()))
        .collect()
}

fn success() -> Target {
    crate::job::decide::target(
        &crate::job::decide::Wanted::of(&job(false, json!({}))),
        &Counts {
            succeeded: 2,
            ..Counts::default()
        },
        None,
        now(),
    )
    .unwrap()
}

#[test]
fn a_running_job_gets_its_start_time_and_counts() {
    let status = next_status(&job(false, json!({})), &observed(2, 0, None), now());
    assert_eq!(status.start_time, Some(Time(now())));
    assert_eq!((status.active, status.succeeded), (Some(2), Some(0)));
    assert!(status.conditions.is_none());
}

#[test]
fn success_is_complete_only_once_no_pod_runs() {
    let running = next_status(
        &job(false, json!({})),
        &observed(1, 2, Some(success())),
        now(),
    );
    assert_eq!(types(&running), [("SuccessCriteriaMet", "True")]);
    assert!(running.completion_time.is_none());
    let done = next_status(
        &job(false, json!({})),
        &observed(0, 2, Some(success())),
        now(),
    );
    assert_eq!(
        types(&done),
        [("SuccessCriteriaMet", "True"), ("Complete", "True")]
    );
    assert_eq!(done.completion_time, Some(Time(now())));
}

#[test]
fn suspend_forgets_the_start_and_resume_flips_the_condition() {
    let started = json!({"startTime": "2026-11-22T02:00:00Z"});
    let suspended = next_status(&job(true, started), &observed(0, 0, None), now());
    assert_eq!(types(&suspended), [("Suspended", "True")]);
    assert_eq!(suspended.start_time, None);
    let stored = serde_json::to_value(&suspended).unwrap();
    let resumed = next_status(&job(false, stored), &observed(0, 0, None), now());
    assert_eq!(types(&resumed), [("Suspended", "False")]);
    let reason = resumed.conditions.unwrap()[0].reason.clone();
    assert_eq!(reason.as_deref(), Some("JobResumed"));
    assert_eq!(resumed.start_time, Some(Time(now())));
}

#[test]
fn pods_carry_the_finalizer_the_owner_and_for_indexed_jobs_the_index() {
    let pod = pod_from_template(&job(false, json!({})), None);
    assert_eq!(pod.metadata.generate_name.as_deref(), Some("pi-"));
    assert_eq!(
        pod.metadata.finalizers,
        Some(vec![TRACKING_FINALIZER.to_string()])
    );
    let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.controller), ("Job", Some(true)));
    let indexed = pod_from_template(&job(false, json!({})), Some(3));
    assert_eq!(indexed.metadata.generate_name.as_deref(), Some("pi-3-"));
    let annotations = indexed.metadata.annotations.clone().unwrap();
    assert_eq!(annotations[COMPLETION_INDEX_ANNOTATION], "3");
    let spec = indexed.spec.unwrap();
    assert_eq!(spec.hostname.as_deref(), Some("pi-3"));
    let env = &spec.containers[0].env.as_ref().unwrap()[0];
    assert_eq!(env.name, "JOB_COMPLETION_INDEX");
}

#[test]
fn the_finalizer_patch_keeps_other_finalizers_and_guards_the_version() {
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "resourceVersion": "9",
        "finalizers": ["example.com/keep", TRACKING_FINALIZER]}}))
    .unwrap();
    assert_eq!(
        remove_finalizer_patch(&pod),
        json!({"metadata": {"finalizers": ["example.com/keep"], "resourceVersion": "9"}})
    );
}
