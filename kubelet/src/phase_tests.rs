//! Unit tests of `phase.rs`'s newer rules: readiness gates, the conditions of other writers, and
//! `activeDeadlineSeconds`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{PodReadinessGate, PodStatus};

use super::*;
use crate::cri::ContainerStatus;
use crate::status::{compute, PodView};
use crate::testing::{at, pod, running};

fn gated(gates: &[&str]) -> Pod {
    let mut pod = pod(&["web"], "Always");
    let spec = pod.spec.as_mut().expect("spec");
    spec.readiness_gates = Some(
        gates
            .iter()
            .map(|g| PodReadinessGate {
                condition_type: g.to_string(),
            })
            .collect(),
    );
    pod
}

fn gate(type_: &str, status: &str) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        ..Default::default()
    }
}

/// The status of a pod whose one container runs (ready: no readiness probe).
fn status_of(pod: &Pod) -> PodStatus {
    let containers: Vec<ContainerStatus> = vec![running("web", 0, 0)];
    let done: BTreeSet<String> = containers.iter().map(|c| c.id.clone()).collect();
    compute(&PodView {
        pod,
        containers: &containers,
        memos: &BTreeMap::new(),
        post_start_done: &done,
        startup_passed: &done,
        readiness_ok: &BTreeSet::new(),
        backoff: &BTreeMap::new(),
        pod_ip: Some("127.244.1.2"),
        host_ip: "127.0.0.1",
        terminated_by_kubelet: false,
        now: at(5),
    })
}

fn find<'s>(status: &'s PodStatus, type_: &str) -> &'s PodCondition {
    let conditions = status.conditions.iter().flatten();
    conditions
        .clone()
        .find(|c| c.type_ == type_)
        .expect("condition")
}

#[test]
fn a_missing_gate_condition_holds_ready_back() {
    let status = status_of(&gated(&["example.com/lb"]));
    assert_eq!(find(&status, "ContainersReady").status, "True");
    let ready = find(&status, "Ready");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason.as_deref(), Some("ReadinessGatesNotReady"));
    assert_eq!(
        ready.message.as_deref(),
        Some("corresponding condition of pod readiness gate \"example.com/lb\" does not exist.")
    );
}

#[test]
fn every_gate_must_be_true_and_their_conditions_are_kept() {
    let mut pod = gated(&["a.io/one", "b.io/two"]);
    pod.status = Some(PodStatus {
        conditions: Some(vec![gate("a.io/one", "True"), gate("b.io/two", "False")]),
        ..Default::default()
    });
    let status = status_of(&pod);
    let ready = find(&status, "Ready");
    assert_eq!(ready.status, "False");
    assert_eq!(
        ready.message.as_deref(),
        Some("the status of pod readiness gate \"b.io/two\" is not \"True\", but False")
    );
    assert_eq!(find(&status, "b.io/two").status, "False", "kept as written");

    pod.status = Some(PodStatus {
        conditions: Some(vec![gate("a.io/one", "True"), gate("b.io/two", "True")]),
        ..Default::default()
    });
    let status = status_of(&pod);
    assert_eq!(find(&status, "Ready").status, "True");
    assert_eq!(find(&status, "Ready").reason, None);
}

#[test]
fn unready_containers_win_over_the_gates() {
    let mut pod = gated(&["a.io/one"]);
    let spec = pod.spec.as_mut().expect("spec");
    spec.containers[0].readiness_probe = Some(Default::default());
    let ready = status_of(&pod);
    let ready = find(&ready, "Ready");
    assert_eq!(ready.reason.as_deref(), Some("ContainersNotReady"));
}

#[test]
fn foreign_conditions_come_from_the_api_and_ours_from_the_kubelet() {
    let ours = PodStatus {
        conditions: Some(vec![gate("Ready", "True"), gate("a.io/one", "False")]),
        ..Default::default()
    };
    let api = PodStatus {
        conditions: Some(vec![gate("Ready", "False"), gate("a.io/one", "True")]),
        ..Default::default()
    };
    let merged = with_foreign_conditions(ours, Some(&api));
    assert_eq!(
        merged.conditions.expect("conditions"),
        vec![gate("Ready", "True"), gate("a.io/one", "True")]
    );
}

#[test]
fn the_active_deadline_counts_from_the_start_time() {
    let mut pod = pod(&["web"], "Always");
    assert_eq!(active_deadline_left(&pod, at(0)), None, "no deadline");
    pod.spec.as_mut().expect("spec").active_deadline_seconds = Some(10);
    assert_eq!(active_deadline_left(&pod, at(0)), None, "no start time yet");
    pod.status = Some(PodStatus {
        start_time: Some(Time(at(100))),
        ..Default::default()
    });
    let secs = std::time::Duration::from_secs;
    assert_eq!(active_deadline_left(&pod, at(103)), Some(secs(7)));
    assert_eq!(active_deadline_left(&pod, at(110)), Some(secs(0)));
    assert_eq!(active_deadline_left(&pod, at(200)), Some(secs(0)));
}

#[test]
fn a_final_phase_keeps_its_reason() {
    let mut pod = pod(&["web"], "Always");
    pod.status = Some(PodStatus {
        phase: Some("Failed".into()),
        reason: Some(DEADLINE_EXCEEDED.into()),
        message: Some(DEADLINE_MESSAGE.into()),
        ..Default::default()
    });
    let status = status_of(&pod);
    assert_eq!(status.phase.as_deref(), Some("Failed"));
    assert_eq!(status.reason.as_deref(), Some(DEADLINE_EXCEEDED));
    pod.status = Some(PodStatus {
        reason: Some("Stale".into()),
        ..Default::default()
    });
    assert_eq!(status_of(&pod).reason, None, "a running pod has no reason");
}
