//! Table tests of the Job controller's decisions.

use super::*;
use serde_json::json;

fn now() -> Timestamp {
    "2026-11-22T02:05:00Z".parse().unwrap()
}

fn pod(uid: &str, phase: &str, tracked: bool, deleting: bool) -> Pod {
    let finalizers = if tracked {
        json!([TRACKING_FINALIZER])
    } else {
        json!([])
    };
    let mut pod = json!({"metadata": {"name": uid, "uid": uid, "finalizers": finalizers,
                                      "creationTimestamp": "2026-11-22T02:00:00Z"},
                         "status": {"phase": phase}});
    if deleting {
        pod["metadata"]["deletionTimestamp"] = json!("2026-11-22T02:04:00Z");
    }
    serde_json::from_value(pod).unwrap()
}

fn finished_at(uid: &str, phase: &str, at: &str) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": uid, "uid": uid},
        "status": {"phase": phase, "containerStatuses": [{"name": "c", "image": "i", "imageID": "",
            "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 1, "finishedAt": at}}}]}}))
    .unwrap()
}

fn wanted(completions: Option<i32>, parallelism: i32) -> Wanted {
    Wanted {
        completions,
        parallelism,
        backoff_limit: 6,
        active_deadline: None,
        suspend: false,
    }
}

fn set(uids: &[&str]) -> BTreeSet<String> {
    uids.iter().map(|u| u.to_string()).collect()
}

#[test]
fn pod_states_follow_phase_then_deletion() {
    assert_eq!(
        pod_state(&pod("a", "Running", true, false)),
        PodState::Active
    );
    assert_eq!(
        pod_state(&pod("a", "Pending", true, true)),
        PodState::Terminating
    );
    assert_eq!(
        pod_state(&pod("a", "Succeeded", true, true)),
        PodState::Succeeded
    );
    assert_eq!(
        pod_state(&pod("a", "Failed", false, false)),
        PodState::Failed
    );
}

#[test]
fn only_tracked_unrecorded_finished_pods_are_new() {
    let pods = [
        pod("ok", "Succeeded", true, false),
        pod("bad", "Failed", true, false),
        pod("counted", "Succeeded", false, false),
        pod("recorded", "Succeeded", true, false),
        pod("released", "Failed", true, false),
        pod("running", "Running", true, false),
        pod("killed", "Running", true, true),
        // Deleted after it succeeded: still a success, counted once (JB3).
        pod("deleted-ok", "Succeeded", true, true),
    ];
    let refs: Vec<&Pod> = pods.iter().collect();
    let uncounted = Uncounted {
        succeeded: set(&["recorded"]),
        failed: BTreeSet::new(),
    };
    let found = newly_finished(&refs, &uncounted, &set(&["released"]), false);
    assert_eq!(found.succeeded, set(&["deleted-ok", "ok"]));
    assert_eq!(found.failed, set(&["bad", "killed"]));
    // Pods the controller deleted itself (suspend) are not failures.
    let ours = newly_finished(&refs, &uncounted, &set(&["released"]), true);
    assert_eq!(ours.failed, set(&["bad"]));
}

#[test]
fn targets_success_backoff_and_deadline() {
    let counts = |succeeded, failed, active| Counts {
        succeeded,
        failed,
        active,
        ..Counts::default()
    };
    let three = wanted(Some(3), 2);
    assert_eq!(target(&three, &counts(2, 0, 1), None, now()), None);
    let done = target(&three, &counts(3, 0, 0), None, now()).unwrap();
    assert_eq!(
        (done.type_, done.terminal_type()),
        ("SuccessCriteriaMet", "Complete")
    );
    // backoffLimit 6: the 7th failure fails the Job.
    assert_eq!(target(&three, &counts(0, 6, 1), None, now()), None);
    let failed = target(&three, &counts(0, 7, 0), None, now()).unwrap();
    assert_eq!(
        (failed.reason, failed.terminal_type()),
        ("BackoffLimitExceeded", "Failed")
    );
    // The deadline wins over the backoff limit (JB5).
    let mut deadline = three;
    deadline.active_deadline = Some(60);
    let start = Some("2026-11-22T02:03:00Z".parse().unwrap());
    let late = target(&deadline, &counts(0, 7, 1), start, now()).unwrap();
    assert_eq!(late.reason, "DeadlineExceeded");
    let early = Some("2026-11-22T02:04:30Z".parse().unwrap());
    assert_eq!(
        deadline_remaining(&deadline, early, now()),
        Some(Duration::from_secs(30))
    );
    // A work queue is done at its first success once nothing runs.
    let queue = wanted(None, 3);
    assert_eq!(target(&queue, &counts(1, 0, 2), None, now()), None);
    assert!(target(&queue, &counts(1, 0, 0), None, now()).is_some());
}

#[test]
fn want_active_is_bounded_by_parallelism_and_missing_completions() {
    let counts = |succeeded, active| Counts {
        succeeded,
        active,
        ..Counts::default()
    };
    let cases = [
        (wanted(Some(3), 2), counts(0, 0), false, 2),
        (wanted(Some(3), 2), counts(2, 1), false, 1),
        (wanted(Some(3), 5), counts(0, 0), false, 3),
        (wanted(Some(3), 2), counts(3, 0), false, 0),
        (wanted(Some(3), 2), counts(0, 2), true, 0),
        (wanted(None, 3), counts(0, 0), false, 3),
        (wanted(None, 3), counts(1, 2), false, 2),
        (wanted(Some(1), 0), counts(0, 0), false, 0),
    ];
    for (wanted, counts, decided, want) in cases {
        assert_eq!(
            want_active(&wanted, &counts, decided),
            want,
            "{wanted:?} {counts:?}"
        );
    }
    let mut suspended = wanted(Some(3), 2);
    suspended.suspend = true;
    assert_eq!(want_active(&suspended, &counts(0, 2), false), 0);
}

#[test]
fn backoff_doubles_per_failure_and_caps_at_ten_minutes() {
    let (base, cap) = (Duration::from_secs(10), Duration::from_secs(600));
    let delays: Vec<u64> = (0..9)
        .map(|n| backoff_delay(n, base, cap).as_secs())
        .collect();
    assert_eq!(delays, [0, 10, 20, 40, 80, 160, 320, 600, 600]);
    assert_eq!(backoff_delay(u32::MAX, base, cap), cap);
}

#[test]
fn backoff_counts_failures_since_the_last_success() {
    let (base, cap) = (Duration::from_secs(10), Duration::from_secs(600));
    let pods = [
        finished_at("a", "Failed", "2026-11-22T02:00:00Z"),
        finished_at("b", "Succeeded", "2026-11-22T02:01:00Z"),
        finished_at("c", "Failed", "2026-11-22T02:04:50Z"),
        finished_at("d", "Failed", "2026-11-22T02:04:55Z"),
    ];
    let refs: Vec<&Pod> = pods.iter().collect();
    // Two failures in a row: 20 s after the last, 5 s ago.
    assert_eq!(
        backoff_remaining(&refs, base, cap, now()),
        Duration::from_secs(15)
    );
    assert_eq!(
        backoff_remaining(&refs[..2], base, cap, now()),
        Duration::ZERO
    );
}

#[test]
fn a_decided_job_finishes_only_when_nothing_runs_or_waits_to_be_counted() {
    let idle = Counts::default();
    assert!(finish(&idle, &Uncounted::default()));
    let running = Counts {
        active: 1,
        ..Counts::default()
    };
    assert!(!finish(&running, &Uncounted::default()));
    let terminating = Counts {
        terminating: 1,
        ..Counts::default()
    };
    assert!(!finish(&terminating, &Uncounted::default()));
    let waiting = Uncounted {
        succeeded: set(&["a"]),
        failed: BTreeSet::new(),
    };
    assert!(!finish(&idle, &waiting));
}

#[test]
fn with_replacement_policy_failed_a_terminating_pod_holds_its_place() {
    let counts = Counts {
        active: 0,
        terminating: 1,
        ..Counts::default()
    };
    assert_eq!(pods_missing(1, &counts, false), 1, "TerminatingOrFailed");
    assert_eq!(pods_missing(1, &counts, true), 0, "Failed waits");
    let mut job: Job = serde_json::from_value(json!({"spec": {"template": {}}})).unwrap();
    assert!(!only_replace_failed(&job));
    job.spec.as_mut().unwrap().pod_replacement_policy = Some("Failed".into());
    assert!(only_replace_failed(&job));
}
