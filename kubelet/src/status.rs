//! The pod status the kubelet reports, computed as a pure function of what it knows.
//!
//! Kubernetes counterpart: `generateAPIPodStatus` and `getPhase` in
//! `pkg/kubelet/kubelet_pods.go`, `convertToAPIContainerStatuses` (waiting / running /
//! terminated, `lastState`), the condition generators of `pkg/kubelet/status/generate.go`
//! (`Initialized`, `ContainersReady`, `Ready`) and `GetPodQOS`
//! (`pkg/apis/core/v1/helper/qos/qos.go`). The status manager (`status_manager.go`) then writes it
//! with `PATCH pods/{name}/status` only when it changed — in minik that is the pod worker's job.
//!
//! Rules worth knowing (docs/kubernetes-rules.md#phases):
//! - the phase is one of Pending, Running, Succeeded, Failed — `CrashLoopBackOff` is a waiting
//!   *reason* of a container, never a phase;
//! - a container is shown `running` only once its postStart hook finished; until then it is
//!   `waiting` with reason `ContainerCreating`;
//! - a condition's `lastTransitionTime` moves only when its status flips;
//! - every field a strict client requires is present (`image`, `imageID`, `ready`,
//!   `restartCount` on each container status).
//!
//! minik simplifies: no resize or resource status, one IP per pod.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerState as ApiState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus as ApiStatus, HostIP, Pod, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::cri::{ContainerState, ContainerStatus};
use crate::plan::{
    latest_attempt, previous_attempt, restart_policy, should_restart, ContainerMemo,
    StartFailureKind,
};

/// Everything the status is computed from: a snapshot of the pod worker's knowledge.
#[derive(Clone, Copy, Debug)]
pub struct PodView<'a> {
    /// The pod as the API server last showed it (its old status keeps transition times).
    pub pod: &'a Pod,
    /// Every container attempt the runtime knows for this pod.
    pub containers: &'a [ContainerStatus],
    /// The kubelet's memory of failed starts per container name.
    pub memos: &'a BTreeMap<String, ContainerMemo>,
    /// Runtime ids whose postStart hook has finished (or that have none).
    pub post_start_done: &'a BTreeSet<String>,
    /// Runtime ids whose startup probe passed (or that have none).
    pub startup_passed: &'a BTreeSet<String>,
    /// Runtime ids whose readiness probe currently passes.
    pub readiness_ok: &'a BTreeSet<String>,
    /// Containers waiting out a crash backoff, with the current delay.
    pub backoff: &'a BTreeMap<String, Duration>,
    /// The pod's IP, once allocated.
    pub pod_ip: Option<&'a str>,
    /// The node's IP.
    pub host_ip: &'a str,
    /// The kubelet stopped this pod (deletion): the phase becomes final.
    pub terminated_by_kubelet: bool,
    /// The time now (for new transition times and `startTime`).
    pub now: Timestamp,
}

/// Computes the whole `PodStatus` the kubelet reports for a pod.
pub fn compute(view: &PodView<'_>) -> PodStatus {
    let old = view.pod.status.clone().unwrap_or_default();
    let spec = view.pod.spec.clone().unwrap_or_default();
    let init: Vec<ApiStatus> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| container_status(view, c))
        .collect();
    let app: Vec<ApiStatus> = spec
        .containers
        .iter()
        .map(|c| container_status(view, c))
        .collect();
    let phase = phase(view, &init, &app, old.phase.as_deref());
    let conditions = conditions(view, &old, &init, &app, &phase);
    // A final phase keeps the reason it ended with (`DeadlineExceeded`, `Evicted` …).
    let finished = phase == "Succeeded" || phase == "Failed";
    let (reason, message) = match finished {
        true => (old.reason, old.message),
        false => (None, None),
    };
    PodStatus {
        reason,
        message,
        phase: Some(phase),
        conditions: Some(conditions),
        host_ip: Some(view.host_ip.to_string()),
        host_ips: Some(vec![HostIP {
            ip: view.host_ip.to_string(),
        }]),
        pod_ip: view.pod_ip.map(str::to_string).or(old.pod_ip),
        pod_ips: view
            .pod_ip
            .map(|ip| vec![PodIP { ip: ip.to_string() }])
            .or(old.pod_ips),
        start_time: old.start_time.or(Some(Time(view.now))),
        qos_class: Some(qos_class(view.pod).to_string()),
        init_container_statuses: if init.is_empty() { None } else { Some(init) },
        container_statuses: Some(app),
        ephemeral_container_statuses: crate::ephemeral::statuses(view),
        ..Default::default()
    }
}

/// One container's status: state, lastState, ready, started, restartCount and ids.
pub(crate) fn container_status(view: &PodView<'_>, spec: &Container) -> ApiStatus {
    let latest = latest_attempt(view.containers, &spec.name);
    let previous = previous_attempt(view.containers, &spec.name);
    let memo = view.memos.get(&spec.name);
    let policy = restart_policy(view.pod);
    let (state, last_state) = match latest {
        None => (not_started_state(memo, policy), None),
        Some(latest) => started_state(view, latest, previous, memo, policy),
    };
    let running = state.running.is_some();
    let started = latest.is_some_and(|c| running && view.startup_passed.contains(&c.id));
    let ready = latest.is_some_and(|c| started && is_ready(view, spec, &c.id));
    ApiStatus {
        name: spec.name.clone(),
        image: spec.image.clone().unwrap_or_default(),
        image_id: latest.map(|c| image_id(spec, c)).unwrap_or_default(),
        container_id: latest.map(|c| format!("minik://{}", c.id)),
        state: Some(state),
        last_state: Some(last_state.unwrap_or_default()),
        ready,
        started: Some(started),
        restart_count: latest.map_or(0, |c| c.config.attempt as i32),
        ..Default::default()
    }
}

fn is_ready(view: &PodView<'_>, spec: &Container, id: &str) -> bool {
    spec.readiness_probe.is_none() || view.readiness_ok.contains(id)
}

/// `imageID`: `minik://web` for a built-in image, `minik://host/<program>` for a host program.
pub fn image_id(spec: &Container, container: &ContainerStatus) -> String {
    let builtin = spec.command.as_ref().is_none_or(Vec::is_empty);
    match builtin
        .then(|| crate::container::builtin_image(spec.image.as_deref().unwrap_or_default()))
    {
        Some(Some(program)) => format!("minik://{program}"),
        _ => {
            let program = container
                .config
                .argv
                .first()
                .map(String::as_str)
                .unwrap_or_default();
            format!("minik://host/{program}")
        }
    }
}

/// A container with no runtime attempt yet: being created, or stuck on a failed start.
fn not_started_state(memo: Option<&ContainerMemo>, policy: &str) -> ApiState {
    match memo.and_then(|m| m.start_failure.as_ref()) {
        Some(failure) if failure.kind == StartFailureKind::Run && policy == "Never" => ApiState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 128,
                reason: Some("StartError".into()),
                message: Some(failure.message.clone()),
                ..Default::default()
            }),
            ..Default::default()
        },
        Some(failure) => waiting(&failure.reason, Some(failure.message.clone())),
        None => waiting("ContainerCreating", None),
    }
}

/// A container the runtime knows: (state, lastState).
fn started_state(
    view: &PodView<'_>,
    latest: &ContainerStatus,
    previous: Option<&ContainerStatus>,
    memo: Option<&ContainerMemo>,
    policy: &str,
) -> (ApiState, Option<ApiState>) {
    let last_state = previous.map(terminated_state);
    match &latest.state {
        ContainerState::Running { started_at, .. } => {
            if view.post_start_done.contains(&latest.id) {
                let running = ContainerStateRunning {
                    started_at: Some(Time(*started_at)),
                };
                (
                    ApiState {
                        running: Some(running),
                        ..Default::default()
                    },
                    last_state,
                )
            } else {
                (waiting("ContainerCreating", None), last_state)
            }
        }
        ContainerState::Exited { exit_code, .. } => {
            let failure = memo.and_then(|m| m.start_failure.as_ref());
            if let Some(failure) = failure.filter(|f| exited_before(latest, f.at)) {
                return (
                    waiting(&failure.reason, Some(failure.message.clone())),
                    Some(terminated_state(latest)),
                );
            }
            match view.backoff.get(&latest.config.name) {
                Some(delay)
                    if should_restart(policy, *exit_code) && !view.terminated_by_kubelet =>
                {
                    let message = crash_loop_message(*delay, &latest.config.name, view.pod);
                    (
                        waiting("CrashLoopBackOff", Some(message)),
                        Some(terminated_state(latest)),
                    )
                }
                _ => (terminated_state(latest), last_state),
            }
        }
    }
}

fn exited_before(container: &ContainerStatus, at: Timestamp) -> bool {
    matches!(container.state, ContainerState::Exited { finished_at, .. } if finished_at <= at)
}

/// `back-off 10s restarting failed container=web pod=web_default(uid)`, as upstream's `doBackOff`.
pub fn crash_loop_message(delay: Duration, container: &str, pod: &Pod) -> String {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    format!(
        "back-off {} restarting failed container={container} pod={name}_{namespace}({uid})",
        go_duration(delay)
    )
}

/// A duration printed as Go prints it: `10s`, `1m20s`, `5m0s`.
pub fn go_duration(delay: Duration) -> String {
    let secs = delay.as_secs();
    if secs >= 60 {
        format!("{}m{}s", secs / 60, secs % 60)
    } else {
        format!("{secs}s")
    }
}

fn waiting(reason: &str, message: Option<String>) -> ApiState {
    let waiting = ContainerStateWaiting {
        reason: Some(reason.into()),
        message,
    };
    ApiState {
        waiting: Some(waiting),
        ..Default::default()
    }
}

/// The `terminated` state of an attempt (running attempts map to an empty state).
fn terminated_state(container: &ContainerStatus) -> ApiState {
    let ContainerState::Exited {
        started_at,
        finished_at,
        exit_code,
    } = container.state
    else {
        return ApiState::default();
    };
    let terminated = ContainerStateTerminated {
        container_id: Some(format!("minik://{}", container.id)),
        exit_code,
        reason: Some(exit_reason(&container.id, exit_code).into()),
        started_at: Some(Time(started_at)),
        finished_at: Some(Time(finished_at)),
        ..Default::default()
    };
    ApiState {
        terminated: Some(terminated),
        ..Default::default()
    }
}

/// `Completed`, `Error`, or `OOMKilled` when the memory watchdog killed it (`memory.rs`).
fn exit_reason(id: &str, exit_code: i32) -> &'static str {
    match exit_code {
        0 => "Completed",
        137 if crate::memory::was_oom_killed(id) => "OOMKilled",
        _ => "Error",
    }
}

pub use crate::phase::{conditions, phase, qos_class};

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
