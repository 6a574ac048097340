//! Unit tests of `plan::plan`: one rule per test, on fixture pods and runtime snapshots.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::*;
use crate::testing::{at, exited, pod, pod_with_init, running};

const SECS: fn(u64) -> Duration = Duration::from_secs;

fn plan_at(pod: &Pod, containers: &[ContainerStatus], now: i64) -> Vec<Action> {
    plan_with(pod, containers, &BTreeMap::new(), &BTreeMap::new(), now)
}

fn plan_with(
    pod: &Pod,
    containers: &[ContainerStatus],
    memos: &BTreeMap<String, ContainerMemo>,
    unhealthy: &BTreeMap<String, KillReason>,
    now: i64,
) -> Vec<Action> {
    let killing = BTreeSet::new();
    plan(&PlanInput {
        pod,
        containers,
        memos,
        unhealthy,
        killing: &killing,
        started: &BTreeSet::new(),
        post_start_done: &BTreeSet::new(),
        backoff: BackoffPolicy::default(),
        now: at(now),
    })
}

fn start(name: &str, init: bool, attempt: u32) -> Action {
    Action::StartContainer {
        name: name.into(),
        init,
        attempt,
    }
}

#[test]
fn new_pod_starts_every_app_container() {
    let actions = plan_at(&pod(&["web", "sidecar"], "Always"), &[], 0);
    assert_eq!(
        actions,
        vec![start("web", false, 0), start("sidecar", false, 0)]
    );
}

#[test]
fn running_containers_need_nothing() {
    let actions = plan_at(&pod(&["web"], "Always"), &[running("web", 0, 0)], 5);
    assert!(actions.is_empty());
}

#[test]
fn init_containers_run_one_at_a_time_in_order() {
    let pod = pod_with_init(&["first", "second"], &["web"], "Always");
    assert_eq!(plan_at(&pod, &[], 0), vec![start("first", true, 0)]);
    assert!(plan_at(&pod, &[running("first", 0, 0)], 1).is_empty());
    let first_done = [exited("first", 0, 0, 1, 0)];
    assert_eq!(
        plan_at(&pod, &first_done, 2),
        vec![start("second", true, 0)]
    );
    let both_done = [exited("first", 0, 0, 1, 0), exited("second", 0, 1, 2, 0)];
    assert_eq!(plan_at(&pod, &both_done, 3), vec![start("web", false, 0)]);
}

#[test]
fn failed_init_container_is_retried_unless_never() {
    let failed = [exited("first", 0, 0, 1, 1)];
    let always = pod_with_init(&["first"], &["web"], "Always");
    assert_eq!(plan_at(&always, &failed, 1), vec![start("first", true, 1)]);
    let never = pod_with_init(&["first"], &["web"], "Never");
    assert!(
        plan_at(&never, &failed, 1).is_empty(),
        "Never: the pod fails, app containers never start"
    );
}

#[test]
fn restart_policy_decides_which_exits_restart() {
    assert!(should_restart("Always", 0));
    assert!(should_restart("Always", 1));
    assert!(!should_restart("OnFailure", 0));
    assert!(should_restart("OnFailure", 2));
    assert!(!should_restart("Never", 1));
    let ok = [exited("web", 0, 0, 5, 0)];
    assert!(plan_at(&pod(&["web"], "OnFailure"), &ok, 6).is_empty());
    assert!(plan_at(&pod(&["web"], "Never"), &[exited("web", 0, 0, 5, 1)], 6).is_empty());
    assert_eq!(
        plan_at(&pod(&["web"], "Always"), &ok, 6),
        vec![start("web", false, 1)]
    );
}

#[test]
fn first_crash_restarts_at_once_then_backoff_doubles() {
    let pod = pod(&["web"], "Always");
    // Attempt 0 crashed: immediate restart as attempt 1.
    assert_eq!(
        plan_at(&pod, &[exited("web", 0, 0, 1, 1)], 1),
        vec![start("web", false, 1)]
    );
    // Attempt 1 crashed at t=3: wait 10 s.
    let second = [exited("web", 0, 0, 1, 1), exited("web", 1, 2, 3, 1)];
    let waiting = Action::BackOff {
        name: "web".into(),
        delay: SECS(10),
        until: at(13),
        start_failure: false,
    };
    assert_eq!(plan_at(&pod, &second, 4), vec![waiting]);
    assert_eq!(plan_at(&pod, &second, 13), vec![start("web", false, 2)]);
    // Attempt 2 crashed at t=20: wait 20 s.
    let third = [exited("web", 1, 2, 3, 1), exited("web", 2, 14, 20, 1)];
    assert!(
        matches!(&plan_at(&pod, &third, 21)[..], [Action::BackOff { delay, .. }] if *delay == SECS(20))
    );
}

#[test]
fn backoff_is_capped_at_max() {
    let policy = BackoffPolicy::default();
    let delays: Vec<u64> = (1..=8).map(|n| policy.restart_delay(n).as_secs()).collect();
    assert_eq!(delays, vec![0, 10, 20, 40, 80, 160, 300, 300]);
    assert_eq!(policy.restart_delay(1000), SECS(300));
    assert_eq!(policy.retry_delay(1), SECS(10));
}

#[test]
fn ten_minutes_of_running_resets_the_backoff() {
    let pod = pod(&["web"], "Always");
    let long_run = [exited("web", 4, 0, 700, 1)];
    let actions = plan_at(&pod, &long_run, 700);
    assert_eq!(
        actions,
        vec![
            Action::ResetBackoff {
                name: "web".into(),
                from_attempt: 4
            },
            start("web", false, 5)
        ]
    );
    // With the reset remembered, the next quick crash waits only the base delay.
    let memos = BTreeMap::from([(
        "web".to_string(),
        ContainerMemo {
            backoff_from_attempt: 4,
            start_failure: None,
        },
    )]);
    let quick = [exited("web", 5, 701, 702, 1)];
    let actions = plan_with(&pod, &quick, &memos, &BTreeMap::new(), 703);
    assert!(matches!(&actions[..], [Action::BackOff { delay, .. }] if *delay == SECS(10)));
}

#[test]
fn a_changed_image_kills_the_running_container_then_restarts_it_at_once_whatever_the_policy() {
    let mut pod = pod(&["web"], "Never");
    pod.spec.as_mut().unwrap().containers[0].image = Some("nginx:2".into());
    let kill = Action::KillContainer {
        id: "uid-1-web-3".into(),
        name: "web".into(),
        reason: KillReason::DefinitionChanged,
    };
    assert_eq!(plan_at(&pod, &[running("web", 3, 0)], 30), vec![kill]);
    // Killed a second after a crash loop would have backed off: started at once, as attempt 4.
    let killed = [exited("web", 3, 0, 30, 137)];
    assert_eq!(plan_at(&pod, &killed, 31), vec![start("web", false, 4)]);
}

#[test]
fn a_changed_image_that_fails_to_start_backs_off_like_any_failed_start() {
    let mut pod = pod(&["web"], "Never");
    pod.spec.as_mut().unwrap().containers[0].image = Some("no-such-image".into());
    let memos = BTreeMap::from([(
        "web".to_string(),
        ContainerMemo {
            backoff_from_attempt: 0,
            start_failure: Some(StartFailure {
                kind: StartFailureKind::Image,
                count: 1,
                at: at(31),
                reason: "ErrImagePull".into(),
                message: "no such image".into(),
            }),
        },
    )]);
    let killed = [exited("web", 3, 0, 30, 137)];
    let actions = plan_with(&pod, &killed, &memos, &BTreeMap::new(), 32);
    assert!(
        matches!(
            &actions[..],
            [
                ..,
                Action::BackOff {
                    start_failure: true,
                    ..
                }
            ]
        ),
        "{actions:?}"
    );
}

#[test]
fn an_adopted_container_with_no_recorded_image_is_left_running() {
    let mut pod = pod(&["web"], "Always");
    pod.spec.as_mut().unwrap().containers[0].image = Some("nginx:2".into());
    let mut adopted = running("web", 0, 0);
    adopted.config.image.clear();
    assert!(plan_at(&pod, &[adopted], 30).is_empty());
}

#[test]
fn unhealthy_running_container_is_killed_once() {
    let pod = pod(&["web"], "Always");
    let containers = [running("web", 0, 0)];
    let unhealthy = BTreeMap::from([("uid-1-web-0".to_string(), KillReason::Liveness)]);
    let actions = plan_with(&pod, &containers, &BTreeMap::new(), &unhealthy, 30);
    let kill = Action::KillContainer {
        id: "uid-1-web-0".into(),
        name: "web".into(),
        reason: KillReason::Liveness,
    };
    assert_eq!(actions, vec![kill]);
    let killing = BTreeSet::from(["uid-1-web-0".to_string()]);
    let input = PlanInput {
        pod: &pod,
        containers: &containers,
        memos: &BTreeMap::new(),
        unhealthy: &unhealthy,
        killing: &killing,
        started: &BTreeSet::new(),
        post_start_done: &BTreeSet::new(),
        backoff: BackoffPolicy::default(),
        now: at(31),
    };
    assert!(plan(&input).is_empty());
}

#[test]
fn terminating_or_finished_pods_get_no_actions() {
    let mut deleting = pod(&["web"], "Always");
    deleting.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(0)));
    assert!(plan_at(&deleting, &[], 0).is_empty());
    let mut done = pod(&["web"], "Always");
    done.status = Some(k8s_openapi::api::core::v1::PodStatus {
        phase: Some("Succeeded".into()),
        ..Default::default()
    });
    assert!(plan_at(&done, &[], 0).is_empty());
}

fn image_failure(count: u32, at_secs: i64, reason: &str) -> BTreeMap<String, ContainerMemo> {
    let failure = StartFailure {
        kind: StartFailureKind::Image,
        count,
        at: at(at_secs),
        reason: reason.into(),
        message: "no such image".into(),
    };
    BTreeMap::from([(
        "web".to_string(),
        ContainerMemo {
            backoff_from_attempt: 0,
            start_failure: Some(failure),
        },
    )])
}

#[test]
fn unknown_image_shows_err_image_pull_then_image_pull_backoff_then_retries() {
    let pod = pod(&["web"], "Never");
    let none = BTreeMap::new();
    let memos = image_failure(1, 0, "ErrImagePull");
    let early = plan_with(&pod, &[], &memos, &none, 0);
    assert!(matches!(&early[..], [Action::BackOff { until, .. }] if *until == at(1)));
    let later = plan_with(&pod, &[], &memos, &none, 2);
    assert_eq!(
        later[0],
        Action::ShowImagePullBackOff { name: "web".into() }
    );
    let flipped = image_failure(1, 0, "ImagePullBackOff");
    assert!(
        matches!(&plan_with(&pod, &[], &flipped, &none, 5)[..], [Action::BackOff { until, .. }] if *until == at(10))
    );
    assert_eq!(
        plan_with(&pod, &[], &flipped, &none, 10),
        vec![start("web", false, 0)]
    );
}

#[test]
fn program_that_cannot_start_under_never_is_not_retried() {
    let pod = pod(&["web"], "Never");
    let mut memos = image_failure(1, 0, "RunContainerError");
    if let Some(failure) = memos.get_mut("web").and_then(|m| m.start_failure.as_mut()) {
        failure.kind = StartFailureKind::Run;
    }
    assert!(plan_with(&pod, &[], &memos, &BTreeMap::new(), 100).is_empty());
}

#[test]
fn latest_and_previous_attempts_are_found_by_attempt_number() {
    let containers = [
        exited("web", 1, 2, 3, 1),
        running("web", 2, 4),
        exited("web", 0, 0, 1, 1),
    ];
    assert_eq!(
        latest_attempt(&containers, "web").map(|c| c.config.attempt),
        Some(2)
    );
    assert_eq!(
        previous_attempt(&containers, "web").map(|c| c.config.attempt),
        Some(1)
    );
    assert!(latest_attempt(&containers, "other").is_none());
}

#[test]
fn a_sidecar_lets_the_next_container_start_once_started_and_is_always_restarted() {
    let mut pod = pod_with_init(&["proxy", "setup"], &["web"], "Never");
    pod.spec.as_mut().unwrap().init_containers.as_mut().unwrap()[0].restart_policy =
        Some("Always".into());
    let none = BTreeMap::new();
    let killing = BTreeSet::new();
    let input = |containers: &[ContainerStatus], started: &BTreeSet<String>| {
        plan(&PlanInput {
            pod: &pod,
            containers,
            memos: &none,
            unhealthy: &BTreeMap::new(),
            killing: &killing,
            started,
            post_start_done: &BTreeSet::new(),
            backoff: BackoffPolicy::default(),
            now: at(100),
        })
    };
    assert_eq!(input(&[], &BTreeSet::new()), vec![start("proxy", true, 0)]);
    let running = [crate::testing::running("proxy", 0, 1)];
    assert!(
        input(&running, &BTreeSet::new()).is_empty(),
        "not started yet"
    );
    let started = BTreeSet::from([running[0].id.clone()]);
    assert_eq!(input(&running, &started), vec![start("setup", true, 0)]);
    let later = [
        crate::testing::running("proxy", 0, 1),
        crate::testing::exited("setup", 0, 2, 3, 0),
    ];
    assert_eq!(input(&later, &started), vec![start("web", false, 0)]);
    // Under a Never pod, a sidecar that exits is restarted, and the others carry on.
    let crashed = [
        crate::testing::exited("proxy", 0, 1, 50, 1),
        crate::testing::exited("setup", 0, 2, 3, 0),
        crate::testing::running("web", 0, 4),
    ];
    assert_eq!(
        input(&crashed, &BTreeSet::new()),
        vec![start("proxy", true, 1)]
    );
}

#[test]
fn an_app_container_starts_only_after_the_previous_ones_post_start_returned() {
    let mut pod = pod_with_init(&[], &["first", "second"], "Always");
    let hook = serde_json::json!({"postStart": {"exec": {"command": ["true"]}}});
    pod.spec.as_mut().unwrap().containers[0].lifecycle =
        Some(serde_json::from_value(hook).unwrap());
    let none = BTreeMap::new();
    let empty = BTreeSet::new();
    let input = |containers: &[ContainerStatus], done: &BTreeSet<String>| {
        plan(&PlanInput {
            pod: &pod,
            containers,
            memos: &none,
            unhealthy: &BTreeMap::new(),
            killing: &empty,
            started: &empty,
            post_start_done: done,
            backoff: BackoffPolicy::default(),
            now: at(100),
        })
    };
    // Nothing runs: only `first` starts (its hook must return before `second`).
    assert_eq!(input(&[], &empty), vec![start("first", false, 0)]);
    let running = [crate::testing::running("first", 0, 1)];
    assert!(
        input(&running, &empty).is_empty(),
        "held while the hook runs"
    );
    let done = BTreeSet::from([running[0].id.clone()]);
    assert_eq!(input(&running, &done), vec![start("second", false, 0)]);
}
