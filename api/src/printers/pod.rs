//! The pod row of `get pods`: NAME READY STATUS RESTARTS AGE [IP NODE NOMINATED NODE READINESS GATES].
//!
//! Kubernetes counterpart: `printPod` in `pkg/printers/internalversion/printers.go`. The STATUS cell
//! is not the phase: it is computed from the phase, the init containers, the containers (in reverse,
//! so the first one that is not running decides), and `deletionTimestamp`
//! (docs/kubernetes-rules.md#status-cell).

use jiff::Timestamp;

use crate::core::{ContainerStatus, Pod};

use super::duration::{age, human_duration};

/// `printPod`'s cells, in column order (the wide ones only when `wide`).
pub fn pod_row(pod: &Pod, wide: bool, now: Timestamp) -> Vec<String> {
    let mut row = vec![
        pod.metadata.name.clone().unwrap_or_default(),
        pod_ready(pod),
        pod_status(pod),
        pod_restarts(pod, now),
        age(pod.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
    ];
    if wide {
        let status = pod.status.as_ref();
        let spec = pod.spec.as_ref();
        row.push(
            status
                .and_then(|s| s.pod_ip.clone())
                .filter(|ip| !ip.is_empty())
                .unwrap_or_else(none),
        );
        row.push(
            spec.and_then(|s| s.node_name.clone())
                .filter(|n| !n.is_empty())
                .unwrap_or_else(none),
        );
        row.push(
            status
                .and_then(|s| s.nominated_node_name.clone())
                .filter(|n| !n.is_empty())
                .unwrap_or_else(none),
        );
        row.push(readiness_gates(pod));
    }
    row
}

fn none() -> String {
    "<none>".to_string()
}

/// READY: `ready containers/containers`; as in `printPod`, a container counts only if it is
/// both ready and running (a status can say ready a moment after its process ended).
/// Sidecars (init containers with `restartPolicy: Always`) count as containers too.
pub fn pod_ready(pod: &Pod) -> String {
    let sidecars: Vec<&str> = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.init_containers.as_deref())
        .unwrap_or_default()
        .iter()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
        .map(|c| c.name.as_str())
        .collect();
    let total = pod.spec.as_ref().map_or(0, |spec| spec.containers.len()) + sidecars.len();
    let running =
        |status: &&ContainerStatus| status.state.as_ref().is_some_and(|s| s.running.is_some());
    let ready_sidecars = init_container_statuses(pod)
        .iter()
        .filter(|status| sidecars.contains(&status.name.as_str()));
    let ready = container_statuses(pod)
        .iter()
        .chain(ready_sidecars)
        .filter(|status| status.ready)
        .filter(running)
        .count();
    format!("{ready}/{total}")
}

fn container_statuses(pod: &Pod) -> &[ContainerStatus] {
    pod.status
        .as_ref()
        .and_then(|status| status.container_statuses.as_deref())
        .unwrap_or(&[])
}

fn init_container_statuses(pod: &Pod) -> &[ContainerStatus] {
    pod.status
        .as_ref()
        .and_then(|status| status.init_container_statuses.as_deref())
        .unwrap_or(&[])
}

/// RESTARTS: the sum of restart counts, with `(5m ago)` for the most recent restart. While init
/// containers run, theirs are counted; afterwards only the app containers' (as `printPod` does).
pub fn pod_restarts(pod: &Pod, now: Timestamp) -> String {
    let mut restarts = 0;
    let mut last_restart: Option<Timestamp> = None;
    let counted = if init_status(pod).0 && !has_condition(pod, "Initialized", "True") {
        init_container_statuses(pod)
    } else {
        container_statuses(pod)
    };
    for status in counted {
        restarts += status.restart_count;
        let finished = status
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.finished_at.as_ref());
        if let Some(finished) = finished {
            if last_restart.is_none_or(|last| finished.0 > last) {
                last_restart = Some(finished.0);
            }
        }
    }
    match last_restart {
        Some(at) if restarts > 0 => format!(
            "{restarts} ({} ago)",
            human_duration(now.as_second() - at.as_second())
        ),
        _ => restarts.to_string(),
    }
}

/// STATUS, step by step as `printPod` computes it.
pub fn pod_status(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    // 1. The pod's reason (Evicted, NodeLost …), else its phase.
    let mut reason = status
        .and_then(|s| {
            s.reason
                .clone()
                .filter(|r| !r.is_empty())
                .or_else(|| s.phase.clone())
        })
        .unwrap_or_default();
    // 2. Init containers, in order.
    let (initializing, init_reason) = init_status(pod);
    if let Some(init_reason) = init_reason {
        reason = init_reason;
    }
    // 3. Containers, walked in reverse so the first non-running one wins.
    if !initializing || has_condition(pod, "Initialized", "True") {
        let mut has_running = false;
        for container in container_statuses(pod).iter().rev() {
            let state = container.state.as_ref();
            let waiting = state
                .and_then(|s| s.waiting.as_ref())
                .and_then(|w| w.reason.clone())
                .filter(|r| !r.is_empty());
            let terminated = state.and_then(|s| s.terminated.as_ref());
            if let Some(waiting_reason) = waiting {
                reason = waiting_reason;
            } else if let Some(terminated) = terminated {
                reason = match (&terminated.reason, terminated.signal) {
                    (Some(r), _) if !r.is_empty() => r.clone(),
                    (_, Some(signal)) if signal != 0 => format!("Signal:{signal}"),
                    _ => format!("ExitCode:{}", terminated.exit_code),
                };
            } else if container.ready && state.is_some_and(|s| s.running.is_some()) {
                has_running = true;
            }
        }
        // 4. A completed container next to running ones: the pod is Running (or NotReady).
        if reason == "Completed" && has_running {
            reason = if has_condition(pod, "Ready", "True") {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }
    // 5. Deletion overrides everything but a finished phase.
    if pod.metadata.deletion_timestamp.is_some() {
        let phase = status.and_then(|s| s.phase.as_deref());
        if status.and_then(|s| s.reason.as_deref()) == Some("NodeLost") {
            reason = "Unknown".into();
        } else if !matches!(phase, Some("Succeeded" | "Failed")) {
            reason = "Terminating".into();
        }
    }
    reason
}

/// Whether init containers are still running, and the STATUS they impose (`Init:0/2`, `Init:Error` …).
fn init_status(pod: &Pod) -> (bool, Option<String>) {
    let total = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.init_containers.as_ref())
        .map_or(0, Vec::len);
    let specs = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.init_containers.as_deref())
        .unwrap_or_default();
    for (index, container) in init_container_statuses(pod).iter().enumerate() {
        // A started sidecar (`restartPolicy: Always`) counts as done, as upstream's printPod.
        let sidecar = specs.get(index).and_then(|c| c.restart_policy.as_deref()) == Some("Always");
        if sidecar && container.started == Some(true) {
            continue;
        }
        let state = container.state.as_ref();
        if let Some(terminated) = state.and_then(|s| s.terminated.as_ref()) {
            if terminated.exit_code == 0 {
                continue;
            }
            let reason = match (&terminated.reason, terminated.signal) {
                (Some(r), _) if !r.is_empty() => format!("Init:{r}"),
                (_, Some(signal)) if signal != 0 => format!("Init:Signal:{signal}"),
                _ => format!("Init:ExitCode:{}", terminated.exit_code),
            };
            return (true, Some(reason));
        }
        let waiting = state
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone());
        if let Some(waiting) = waiting.filter(|r| !r.is_empty() && r != "PodInitializing") {
            return (true, Some(format!("Init:{waiting}")));
        }
        return (true, Some(format!("Init:{index}/{total}")));
    }
    (false, None)
}

fn has_condition(pod: &Pod, type_: &str, status: &str) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == type_ && c.status == status)
        })
}

/// READINESS GATES: `1/2` (gates whose condition is True / gates), or `<none>`.
fn readiness_gates(pod: &Pod) -> String {
    let gates = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.readiness_gates.as_deref())
        .unwrap_or(&[]);
    if gates.is_empty() {
        return none();
    }
    let passing = gates
        .iter()
        .filter(|gate| has_condition(pod, &gate.condition_type, "True"))
        .count();
    format!("{passing}/{}", gates.len())
}

#[cfg(test)]
#[path = "pod_tests.rs"]
mod tests;
