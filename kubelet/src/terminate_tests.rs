//! Tests of the termination rules: the pure schedule, then the real sequence on the fake runtime
//! with tokio's paused clock (so "10 s" take no time and are measured exactly).

use std::time::Duration;

use k8s_openapi::api::core::v1::{Lifecycle, LifecycleHandler, SleepAction};

use minik_api::grace::termination_grace;

use super::*;
use crate::cri::fake::{Behavior, FakeRuntime, OnTerm};
use crate::cri::{ContainerConfig, ContainerState};
use crate::reporter::RecordingReporter;
use crate::testing::{container, pod};

const S: fn(u64) -> Duration = Duration::from_secs;

#[test]
fn without_prestop_sigterm_is_immediate_and_sigkill_at_the_grace() {
    let schedule = termination_schedule(S(30), None);
    assert_eq!(
        schedule,
        TerminationSchedule {
            pre_stop_deadline: None,
            term_at: S(0),
            kill_at: S(30)
        }
    );
}

#[test]
fn prestop_shorter_than_grace_is_deducted_from_it() {
    let schedule = termination_schedule(S(10), Some(S(5)));
    assert_eq!(
        schedule,
        TerminationSchedule {
            pre_stop_deadline: Some(S(10)),
            term_at: S(5),
            kill_at: S(10)
        }
    );
}

#[test]
fn prestop_longer_than_grace_is_cut_and_sigkill_comes_two_seconds_after_sigterm() {
    let schedule = termination_schedule(S(10), Some(S(15)));
    assert_eq!(schedule.term_at, S(10));
    assert_eq!(schedule.kill_at, S(12));
    let nearly = termination_schedule(S(10), Some(Duration::from_millis(9_500)));
    assert_eq!(nearly.kill_at, Duration::from_millis(11_500));
}

#[test]
fn force_delete_gets_one_second_and_the_two_second_minimum() {
    let mut force_deleted = pod(&["web"], "Always");
    force_deleted.metadata.deletion_grace_period_seconds = Some(0);
    assert_eq!(termination_grace(&force_deleted, true), 1);
    let schedule = termination_schedule(S(1), Some(S(20)));
    assert_eq!((schedule.term_at, schedule.kill_at), (S(1), S(3)));
}

#[test]
fn grace_comes_from_the_deletion_then_the_spec_then_30() {
    let mut p = pod(&["web"], "Always");
    assert_eq!(termination_grace(&p, false), 30);
    p.spec
        .as_mut()
        .expect("spec")
        .termination_grace_period_seconds = Some(12);
    assert_eq!(termination_grace(&p, false), 12);
    p.metadata.deletion_grace_period_seconds = Some(4);
    assert_eq!(termination_grace(&p, false), 4);
    p.metadata.deletion_grace_period_seconds = Some(0);
    assert_eq!(termination_grace(&p, false), 1, "never below 1");
    assert_eq!(termination_grace(&p, true), 1);
}

/// Starts a fake container named `web` with `behavior`, then stops it with `grace` and an
/// optional preStop sleep; returns the signal times (relative to the start) and the exit code.
async fn stop_scenario(
    behavior: Behavior,
    grace: Duration,
    pre_stop_sleep: Option<i64>,
    shorten_to: Option<(Duration, Duration)>,
) -> (
    Vec<(crate::cri::StopSignal, Duration)>,
    Option<i32>,
    RecordingReporter,
) {
    let runtime = FakeRuntime::new();
    runtime.set_behavior("web", behavior);
    let config = ContainerConfig {
        pod_uid: "uid-1".into(),
        name: "web".into(),
        ..Default::default()
    };
    let id = runtime.start_container(config).await.expect("start").id;
    let pod = pod(&["web"], "Always");
    let mut spec = container("web");
    if let Some(seconds) = pre_stop_sleep {
        let handler = LifecycleHandler {
            sleep: Some(SleepAction { seconds }),
            ..Default::default()
        };
        spec.lifecycle = Some(Lifecycle {
            pre_stop: Some(handler),
            ..Default::default()
        });
    }
    let reporter = RecordingReporter::default();
    let (grace_tx, grace_rx) = watch::channel(grace);
    let start = Instant::now();
    let request = StopRequest {
        runtime: &runtime,
        reporter: &reporter,
        pod: &pod,
        container: &spec,
        id: &id,
        pod_ip: "127.244.1.2",
        start,
        grace: grace_rx,
        reason_message: "Stopping container web".into(),
    };
    let shorten = async {
        if let Some((after, shorter)) = shorten_to {
            tokio::time::sleep(after).await;
            let _ = grace_tx.send(shorter);
        }
        std::future::pending::<()>().await
    };
    let status = tokio::select! {
        status = stop_container(request) => status,
        _ = shorten => None,
    };
    let exit_code = status.and_then(|s| match s.state {
        ContainerState::Exited { exit_code, .. } => Some(exit_code),
        ContainerState::Running { .. } => None,
    });
    let signals = runtime
        .signals_for("web")
        .into_iter()
        .map(|s| (s.signal, s.at - start))
        .collect();
    (signals, exit_code, reporter)
}

use crate::cri::StopSignal::{Kill, Term};

fn exits_on_term(after_ms: u64, code: i32) -> Behavior {
    Behavior {
        on_term: OnTerm::Exit {
            after: Duration::from_millis(after_ms),
            exit_code: code,
        },
        ..Default::default()
    }
}

fn ignores_term() -> Behavior {
    Behavior {
        on_term: OnTerm::Ignore,
        ..Default::default()
    }
}

#[tokio::test(start_paused = true)]
async fn prestop_shorter_than_grace_then_sigterm_and_clean_exit() {
    let (signals, code, reporter) =
        stop_scenario(exits_on_term(1000, 0), S(10), Some(2), None).await;
    assert_eq!(signals, vec![(Term, S(2))]);
    assert_eq!(code, Some(0));
    assert_eq!(
        reporter.reasons(),
        [
            "PreStopHookStarted",
            "PreStopHookCompleted",
            "Killing",
            "Exited"
        ]
    );
    assert_eq!(
        reporter.find("Killing").map(|e| e.message),
        Some("Stopping container web".into())
    );
}

#[tokio::test(start_paused = true)]
async fn prestop_longer_than_grace_gets_sigterm_at_the_deadline_and_sigkill_two_seconds_later() {
    let (signals, code, reporter) = stop_scenario(ignores_term(), S(10), Some(15), None).await;
    assert_eq!(signals, vec![(Term, S(10)), (Kill, S(12))]);
    assert_eq!(code, Some(137));
    let completed = reporter
        .find("PreStopHookCompleted")
        .expect("prestop end recorded");
    assert!(
        completed.message.contains("cut short"),
        "{}",
        completed.message
    );
    assert!(reporter.reasons().contains(&"Killed".to_string()));
}

#[tokio::test(start_paused = true)]
async fn slow_app_shutdown_is_killed_at_the_deadline() {
    let (signals, code, _) = stop_scenario(exits_on_term(8000, 0), S(5), None, None).await;
    assert_eq!(signals, vec![(Term, S(0)), (Kill, S(5))]);
    assert_eq!(code, Some(137));
}

#[tokio::test(start_paused = true)]
async fn process_ignoring_sigterm_dies_at_the_deadline() {
    let (signals, code, _) = stop_scenario(ignores_term(), S(3), None, None).await;
    assert_eq!(signals, vec![(Term, S(0)), (Kill, S(3))]);
    assert_eq!(code, Some(137));
}

#[tokio::test(start_paused = true)]
async fn second_delete_with_shorter_grace_moves_the_deadline() {
    let (signals, code, _) = stop_scenario(ignores_term(), S(30), None, Some((S(1), S(4)))).await;
    assert_eq!(signals, vec![(Term, S(0)), (Kill, S(4))]);
    assert_eq!(code, Some(137));
}

#[tokio::test(start_paused = true)]
async fn shortened_grace_still_leaves_two_seconds_after_sigterm() {
    let (signals, _, _) = stop_scenario(ignores_term(), S(30), Some(20), Some((S(5), S(1)))).await;
    // The preStop is cut when the grace drops to 1 s (at 5 s), SIGTERM then, SIGKILL 2 s later.
    assert_eq!(signals, vec![(Term, S(5)), (Kill, S(7))]);
}
