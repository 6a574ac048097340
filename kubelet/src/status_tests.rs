//! Unit tests of `status::compute`: phases, container states, conditions and QoS.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::{PodCondition, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::*;
use crate::plan::StartFailure;
use crate::testing::{at, exited, pod, pod_with_init, running};

/// The pod worker's knowledge, owned, so tests can tweak it before computing.
struct Facts {
    pod: Pod,
    containers: Vec<ContainerStatus>,
    memos: BTreeMap<String, ContainerMemo>,
    post_start_done: BTreeSet<String>,
    readiness_ok: BTreeSet<String>,
    backoff: BTreeMap<String, Duration>,
    terminated_by_kubelet: bool,
}

impl Facts {
    fn new(pod: Pod, containers: Vec<ContainerStatus>) -> Self {
        let done = containers.iter().map(|c| c.id.clone()).collect();
        Facts {
            pod,
            containers,
            memos: BTreeMap::new(),
            post_start_done: done,
            readiness_ok: BTreeSet::new(),
            backoff: BTreeMap::new(),
            terminated_by_kubelet: false,
        }
    }

    fn compute(&self, now: i64) -> PodStatus {
        compute(&PodView {
            pod: &self.pod,
            containers: &self.containers,
            memos: &self.memos,
            post_start_done: &self.post_start_done,
            startup_passed: &self.post_start_done,
            readiness_ok: &self.readiness_ok,
            backoff: &self.backoff,
            pod_ip: Some("127.244.1.2"),
            host_ip: "127.0.0.1",
            terminated_by_kubelet: self.terminated_by_kubelet,
            now: at(now),
        })
    }
}

fn state_of(status: &PodStatus, index: usize) -> ApiState {
    status
        .container_statuses
        .as_ref()
        .expect("container statuses")[index]
        .state
        .clone()
        .expect("state")
}

fn condition<'s>(status: &'s PodStatus, type_: &str) -> &'s PodCondition {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
        .expect("condition present")
}

#[test]
fn new_pod_is_pending_with_container_creating() {
    let status = Facts::new(pod(&["web"], "Always"), vec![]).compute(0);
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    let waiting = state_of(&status, 0).waiting.expect("waiting");
    assert_eq!(waiting.reason.as_deref(), Some("ContainerCreating"));
    let first = &status.container_statuses.as_ref().expect("statuses")[0];
    assert_eq!(
        (
            first.image.as_str(),
            first.image_id.as_str(),
            first.ready,
            first.restart_count
        ),
        ("nginx", "", false, 0)
    );
    assert_eq!(status.pod_ip.as_deref(), Some("127.244.1.2"));
    assert_eq!(status.host_ip.as_deref(), Some("127.0.0.1"));
    assert_eq!(status.qos_class.as_deref(), Some("BestEffort"));
}

#[test]
fn running_container_is_ready_without_readiness_probe() {
    let status = Facts::new(pod(&["web"], "Always"), vec![running("web", 0, 0)]).compute(1);
    assert_eq!(status.phase.as_deref(), Some("Running"));
    let first = &status.container_statuses.as_ref().expect("statuses")[0];
    assert!(first.ready && first.started == Some(true));
    assert_eq!(first.container_id.as_deref(), Some("minik://uid-1-web-0"));
    assert_eq!(first.image_id, "minik://web");
    assert_eq!(condition(&status, "Ready").status, "True");
    assert_eq!(condition(&status, "ContainersReady").status, "True");
    assert_eq!(condition(&status, "Initialized").status, "True");
}

#[test]
fn container_is_not_running_until_post_start_completes() {
    let mut facts = Facts::new(pod(&["web"], "Always"), vec![running("web", 0, 0)]);
    facts.post_start_done.clear();
    let status = facts.compute(1);
    assert_eq!(
        state_of(&status, 0)
            .waiting
            .and_then(|w| w.reason)
            .as_deref(),
        Some("ContainerCreating")
    );
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    assert_eq!(condition(&status, "Ready").status, "False");
}

#[test]
fn readiness_probe_keeps_container_unready_until_it_passes() {
    let mut pod = pod(&["web"], "Always");
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers[0].readiness_probe = Some(Default::default());
    }
    let mut facts = Facts::new(pod, vec![running("web", 0, 0)]);
    let status = facts.compute(1);
    assert_eq!(condition(&status, "ContainersReady").status, "False");
    assert_eq!(
        condition(&status, "Ready").message.as_deref(),
        Some("containers with unready status: [web]")
    );
    facts.readiness_ok.insert("uid-1-web-0".into());
    assert_eq!(condition(&facts.compute(2), "Ready").status, "True");
}

#[test]
fn transition_time_moves_only_when_the_status_flips() {
    let mut facts = Facts::new(pod(&["web"], "Always"), vec![running("web", 0, 0)]);
    let first = facts.compute(10);
    facts.pod.status = Some(first.clone());
    let again = facts.compute(20);
    assert_eq!(
        condition(&again, "Ready").last_transition_time,
        Some(Time(at(10)))
    );
    facts.containers = vec![exited("web", 0, 0, 25, 1)];
    facts.backoff.insert("web".into(), Duration::from_secs(10));
    let flipped = facts.compute(30);
    assert_eq!(
        condition(&flipped, "Ready").last_transition_time,
        Some(Time(at(30)))
    );
    assert_eq!(again.start_time, first.start_time);
}

#[test]
fn crash_looping_container_waits_with_back_off_message_and_phase_stays_running() {
    let mut facts = Facts::new(
        pod(&["web"], "Always"),
        vec![exited("web", 0, 0, 1, 1), exited("web", 1, 2, 3, 2)],
    );
    facts.backoff.insert("web".into(), Duration::from_secs(10));
    let status = facts.compute(4);
    assert_eq!(status.phase.as_deref(), Some("Running"));
    let first = &status.container_statuses.as_ref().expect("statuses")[0];
    let waiting = first
        .state
        .clone()
        .and_then(|s| s.waiting)
        .expect("waiting");
    assert_eq!(waiting.reason.as_deref(), Some("CrashLoopBackOff"));
    assert_eq!(
        waiting.message.as_deref(),
        Some("back-off 10s restarting failed container=web pod=web_default(uid-1)")
    );
    assert_eq!(first.restart_count, 1);
    let last = first
        .last_state
        .clone()
        .and_then(|s| s.terminated)
        .expect("last terminated");
    assert_eq!((last.exit_code, last.reason.as_deref()), (2, Some("Error")));
}

#[test]
fn restarted_container_shows_previous_attempt_as_last_state() {
    let status = Facts::new(
        pod(&["web"], "Always"),
        vec![exited("web", 0, 0, 1, 1), running("web", 1, 2)],
    )
    .compute(3);
    let first = &status.container_statuses.as_ref().expect("statuses")[0];
    assert_eq!(first.restart_count, 1);
    assert!(first.state.as_ref().is_some_and(|s| s.running.is_some()));
    assert_eq!(
        first
            .last_state
            .clone()
            .and_then(|s| s.terminated)
            .map(|t| t.exit_code),
        Some(1)
    );
}

#[test]
fn never_pod_ends_succeeded_or_failed_by_exit_code() {
    let ok = Facts::new(pod(&["web"], "Never"), vec![exited("web", 0, 0, 1, 0)]).compute(2);
    assert_eq!(ok.phase.as_deref(), Some("Succeeded"));
    let terminated = state_of(&ok, 0).terminated.expect("terminated");
    assert_eq!(terminated.reason.as_deref(), Some("Completed"));
    assert_eq!(
        condition(&ok, "Ready").reason.as_deref(),
        Some("PodCompleted")
    );
    let failed = Facts::new(pod(&["web"], "Never"), vec![exited("web", 0, 0, 1, 3)]).compute(2);
    assert_eq!(failed.phase.as_deref(), Some("Failed"));
    let mixed = Facts::new(
        pod(&["a", "b"], "Never"),
        vec![exited("a", 0, 0, 1, 0), running("b", 0, 0)],
    )
    .compute(2);
    assert_eq!(mixed.phase.as_deref(), Some("Running"));
}

#[test]
fn on_failure_pod_with_failed_container_keeps_running_while_it_restarts() {
    let mut facts = Facts::new(
        pod(&["web"], "OnFailure"),
        vec![exited("web", 0, 0, 1, 1), exited("web", 1, 2, 3, 1)],
    );
    facts.backoff.insert("web".into(), Duration::from_secs(10));
    assert_eq!(facts.compute(4).phase.as_deref(), Some("Running"));
}

#[test]
fn init_containers_hold_the_pod_pending_and_not_initialized() {
    let pod = pod_with_init(&["first", "second"], &["web"], "Always");
    let status = Facts::new(
        pod.clone(),
        vec![exited("first", 0, 0, 1, 0), running("second", 0, 1)],
    )
    .compute(2);
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    let initialized = condition(&status, "Initialized");
    assert_eq!(initialized.status, "False");
    assert_eq!(
        initialized.message.as_deref(),
        Some("containers with incomplete status: [second]")
    );
    assert_eq!(
        status.init_container_statuses.as_ref().map(Vec::len),
        Some(2)
    );
    let never = pod_with_init(&["first"], &["web"], "Never");
    let failed = Facts::new(never, vec![exited("first", 0, 0, 1, 1)]).compute(2);
    assert_eq!(failed.phase.as_deref(), Some("Failed"));
}

#[test]
fn pod_stopped_by_the_kubelet_ends_failed_unless_all_exited_zero() {
    let mut killed = Facts::new(pod(&["web"], "Always"), vec![exited("web", 0, 0, 5, 137)]);
    killed.terminated_by_kubelet = true;
    assert_eq!(killed.compute(6).phase.as_deref(), Some("Failed"));
    let mut clean = Facts::new(pod(&["web"], "Always"), vec![exited("web", 0, 0, 5, 0)]);
    clean.terminated_by_kubelet = true;
    let status = clean.compute(6);
    assert_eq!(status.phase.as_deref(), Some("Succeeded"));
    assert!(
        state_of(&status, 0).terminated.is_some(),
        "no CrashLoopBackOff after termination"
    );
}

#[test]
fn image_failure_shows_its_waiting_reason() {
    let mut facts = Facts::new(pod(&["web"], "Always"), vec![]);
    let failure = StartFailure {
        kind: crate::plan::StartFailureKind::Image,
        count: 1,
        at: at(0),
        reason: "ErrImagePull".into(),
        message: "minik runs no container images".into(),
    };
    facts.memos.insert(
        "web".into(),
        ContainerMemo {
            backoff_from_attempt: 0,
            start_failure: Some(failure),
        },
    );
    let status = facts.compute(0);
    assert_eq!(
        state_of(&status, 0)
            .waiting
            .and_then(|w| w.reason)
            .as_deref(),
        Some("ErrImagePull")
    );
    assert_eq!(status.phase.as_deref(), Some("Pending"));
}

#[test]
fn qos_class_follows_requests_and_limits() {
    let mut burstable = pod(&["web"], "Always");
    let quantity = |q: &str| Quantity(q.to_string());
    if let Some(spec) = burstable.spec.as_mut() {
        spec.containers[0].resources = Some(ResourceRequirements {
            requests: Some(BTreeMap::from([("cpu".to_string(), quantity("100m"))])),
            ..Default::default()
        });
    }
    assert_eq!(qos_class(&burstable), "Burstable");
    let mut guaranteed = pod(&["web"], "Always");
    if let Some(spec) = guaranteed.spec.as_mut() {
        let limits = BTreeMap::from([
            ("cpu".to_string(), quantity("1")),
            ("memory".to_string(), quantity("1Gi")),
        ]);
        spec.containers[0].resources = Some(ResourceRequirements {
            limits: Some(limits),
            ..Default::default()
        });
    }
    assert_eq!(qos_class(&guaranteed), "Guaranteed");
}

#[test]
fn go_durations_print_like_go() {
    assert_eq!(go_duration(Duration::from_secs(10)), "10s");
    assert_eq!(go_duration(Duration::from_secs(80)), "1m20s");
    assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
}

#[test]
fn a_started_sidecar_counts_as_initialized_and_for_readiness() {
    let mut sidecar_pod = pod_with_init(&["proxy", "setup"], &["web"], "Never");
    sidecar_pod
        .spec
        .as_mut()
        .unwrap()
        .init_containers
        .as_mut()
        .unwrap()[0]
        .restart_policy = Some("Always".into());
    let only_sidecar = Facts::new(sidecar_pod.clone(), vec![running("proxy", 0, 1)]);
    let status = only_sidecar.compute(2);
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    assert_eq!(condition(&status, "Initialized").status, "False");
    let all = Facts::new(
        sidecar_pod,
        vec![
            running("proxy", 0, 1),
            exited("setup", 0, 2, 3, 0),
            running("web", 0, 4),
        ],
    );
    let status = all.compute(5);
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert_eq!(condition(&status, "Initialized").status, "True");
    assert_eq!(condition(&status, "Ready").status, "True");
    let mut unready = all;
    unready
        .pod
        .spec
        .as_mut()
        .unwrap()
        .init_containers
        .as_mut()
        .unwrap()[0]
        .readiness_probe = Some(Default::default());
    let status = unready.compute(5);
    assert_eq!(
        condition(&status, "Ready").status,
        "False",
        "the sidecar is not ready"
    );
}
