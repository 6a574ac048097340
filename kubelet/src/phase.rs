//! The pod phase, the pod conditions and the QoS class, derived from container statuses.
//!
//! Kubernetes counterpart: `getPhase` (`pkg/kubelet/kubelet_pods.go`), the condition
//! generators in `pkg/kubelet/status/generate.go` and `GetPodQOS`
//! (`pkg/apis/core/v1/helper/qos/qos.go`). `status.rs` builds the container statuses; this file
//! reads them back the way upstream does, so the phase can never disagree with what a client sees
//! in `containerStatuses`.
//!
//! minik simplifies: no `Unknown` phase (the kubelet always knows its processes), no readiness
//! gates, and `PodReadyToStartContainers` is True as soon as the pod has its IP.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerStatus as ApiStatus, Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::plan::restart_policy;
use crate::status::PodView;

/// How one container counts towards the phase (upstream's `running`, `waiting`, `stopped` …).
#[derive(Default)]
struct Counts {
    running: usize,
    waiting: usize,
    stopped: usize,
    succeeded: usize,
    failed: usize,
}

/// Phase rules of `getPhase`, plus two kubelet facts: a phase once final stays final, and a pod
/// the kubelet stopped (deletion) ends Succeeded only if every container exited 0, else Failed.
pub fn phase(
    view: &PodView<'_>,
    init: &[ApiStatus],
    app: &[ApiStatus],
    old: Option<&str>,
) -> String {
    if let Some(done @ ("Succeeded" | "Failed")) = old {
        return done.to_string();
    }
    let policy = restart_policy(view.pod);
    let counts = count(app);
    if view.terminated_by_kubelet {
        let all_ok = counts.stopped == app.len() && counts.failed == 0;
        return if all_ok && counts.running == 0 {
            "Succeeded"
        } else {
            "Failed"
        }
        .into();
    }
    let sidecars = sidecar_flags(view.pod);
    let pending_init = init
        .iter()
        .zip(&sidecars)
        .any(|(s, sidecar)| !init_done(s, *sidecar));
    let failed_init = init
        .iter()
        .zip(&sidecars)
        .any(|(s, sidecar)| !sidecar && last_exit(s).is_some_and(|code| code != 0));
    let phase = match () {
        _ if pending_init && failed_init && policy == "Never" => "Failed",
        _ if pending_init => "Pending",
        _ if counts.waiting > 0 => "Pending",
        _ if counts.running > 0 => "Running",
        _ if counts.stopped > 0 && policy == "Always" => "Running",
        _ if counts.stopped > 0 && counts.stopped == counts.succeeded => "Succeeded",
        _ if counts.stopped > 0 && policy == "Never" => "Failed",
        _ if counts.stopped > 0 => "Running",
        _ => "Pending",
    };
    phase.to_string()
}

fn count(statuses: &[ApiStatus]) -> Counts {
    let mut counts = Counts::default();
    for status in statuses {
        let state = status.state.clone().unwrap_or_default();
        if state.running.is_some() {
            counts.running += 1;
            continue;
        }
        match last_exit(status) {
            Some(code) => {
                counts.stopped += 1;
                if code == 0 {
                    counts.succeeded += 1;
                } else {
                    counts.failed += 1;
                }
            }
            None => counts.waiting += 1,
        }
    }
    counts
}

/// The exit code of the container's current or last termination, if it ever terminated.
fn last_exit(status: &ApiStatus) -> Option<i32> {
    let state = status.state.as_ref()?;
    if let Some(terminated) = &state.terminated {
        return Some(terminated.exit_code);
    }
    if state.waiting.is_some() {
        return status
            .last_state
            .as_ref()?
            .terminated
            .as_ref()
            .map(|t| t.exit_code);
    }
    None
}

/// Which init containers are sidecars (`restartPolicy: Always`), in spec order.
fn sidecar_flags(pod: &k8s_openapi::api::core::v1::Pod) -> Vec<bool> {
    let spec = pod.spec.as_ref();
    let inits = spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or_default();
    inits.iter().map(crate::plan::is_sidecar).collect()
}

/// An init container is done when it exited 0; a sidecar once it has started.
fn init_done(status: &ApiStatus, sidecar: bool) -> bool {
    if sidecar {
        status.started == Some(true)
    } else {
        exited_zero(status)
    }
}

fn exited_zero(status: &ApiStatus) -> bool {
    status
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .is_some_and(|t| t.exit_code == 0)
}

/// PodScheduled (kept), PodReadyToStartContainers, Initialized, ContainersReady and Ready.
pub fn conditions(
    view: &PodView<'_>,
    old: &PodStatus,
    init: &[ApiStatus],
    app: &[ApiStatus],
    phase: &str,
) -> Vec<PodCondition> {
    let finished = phase == "Succeeded" || phase == "Failed";
    let sidecars = sidecar_flags(view.pod);
    let incomplete: Vec<&str> = init
        .iter()
        .zip(&sidecars)
        .filter(|(s, sidecar)| !init_done(s, **sidecar))
        .map(|(s, _)| s.name.as_str())
        .collect();
    // Sidecars count for readiness as the main containers do.
    let unready: Vec<&str> = init
        .iter()
        .zip(&sidecars)
        .filter(|(_, sidecar)| **sidecar)
        .map(|(s, _)| s)
        .chain(app)
        .filter(|s| !s.ready)
        .map(|s| s.name.as_str())
        .collect();
    let sandbox = view.pod_ip.is_some() && !finished;
    let initialized = incomplete.is_empty();
    let ready_reason = match () {
        _ if phase == "Succeeded" => Some("PodCompleted"),
        _ if !unready.is_empty() || finished => Some("ContainersNotReady"),
        _ => None,
    };
    let ready_message = (!unready.is_empty())
        .then(|| format!("containers with unready status: [{}]", unready.join(" ")));
    let init_message = (!initialized).then(|| {
        format!(
            "containers with incomplete status: [{}]",
            incomplete.join(" ")
        )
    });
    let ready = unready.is_empty() && !finished;
    let mut conditions = vec![scheduled(old, view.now)];
    conditions.push(condition(
        old,
        "PodReadyToStartContainers",
        sandbox,
        None,
        None,
        view.now,
    ));
    let init_reason = (!initialized).then_some("ContainersNotInitialized");
    conditions.push(condition(
        old,
        "Initialized",
        initialized,
        init_reason,
        init_message,
        view.now,
    ));
    conditions.push(condition(
        old,
        "ContainersReady",
        ready,
        ready_reason,
        ready_message.clone(),
        view.now,
    ));
    conditions.push(condition(
        old,
        "Ready",
        ready,
        ready_reason,
        ready_message,
        view.now,
    ));
    // Conditions the kubelet does not own (an eviction's DisruptionTarget, readiness gates) are
    // kept as others wrote them (`mergePodStatus`, `kubetypes.PodConditionByKubelet`).
    conditions.extend(foreign(old).cloned());
    conditions
}

/// The condition types the kubelet writes (`kubetypes.PodConditionsByKubelet`).
const KUBELET_CONDITIONS: &[&str] = &[
    "PodScheduled",
    "PodReadyToStartContainers",
    "Initialized",
    "ContainersReady",
    "Ready",
];

fn foreign(status: &PodStatus) -> impl Iterator<Item = &PodCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .filter(|c| !KUBELET_CONDITIONS.contains(&c.type_.as_str()))
}

/// Replaces the conditions in `status` that the kubelet does not own with those of `api` (the
/// pod's status as stored, where an eviction wrote its DisruptionTarget).
pub fn take_foreign_conditions(status: &mut PodStatus, api: Option<&PodStatus>) {
    let theirs: Vec<PodCondition> = api
        .map(|a| foreign(a).cloned().collect())
        .unwrap_or_default();
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    conditions.retain(|c| KUBELET_CONDITIONS.contains(&c.type_.as_str()));
    conditions.extend(theirs);
}

/// The scheduler owns PodScheduled; the kubelet only keeps it (or fills it in for a hand-bound pod).
fn scheduled(old: &PodStatus, now: Timestamp) -> PodCondition {
    old.conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled")
        .cloned()
        .unwrap_or_else(|| PodCondition {
            type_: "PodScheduled".into(),
            status: "True".into(),
            last_transition_time: Some(Time(now)),
            ..Default::default()
        })
}

/// A condition whose `lastTransitionTime` only moves when its status flips.
fn condition(
    old: &PodStatus,
    type_: &str,
    value: bool,
    reason: Option<&str>,
    message: Option<String>,
    now: Timestamp,
) -> PodCondition {
    let status = if value { "True" } else { "False" };
    let previous = old.conditions.iter().flatten().find(|c| c.type_ == type_);
    let transition = match previous {
        Some(p) if p.status == status => p.last_transition_time.clone(),
        _ => Some(Time(now)),
    };
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        reason: if value {
            None
        } else {
            reason.map(str::to_string)
        },
        message: if value { None } else { message },
        last_transition_time: transition,
        ..Default::default()
    }
}

/// `GetPodQOS`: BestEffort without any request or limit; Guaranteed when every container limits
/// cpu and memory and requests equal limits; Burstable otherwise.
pub fn qos_class(pod: &Pod) -> &'static str {
    let Some(spec) = pod.spec.as_ref() else {
        return "BestEffort";
    };
    let containers: Vec<_> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for container in containers {
        let resources = container.resources.clone().unwrap_or_default();
        let requests = resources.requests.unwrap_or_default();
        let limits = resources.limits.unwrap_or_default();
        let relevant = |map: &std::collections::BTreeMap<String, Quantity>| {
            map.keys().any(|k| k == "cpu" || k == "memory")
        };
        any |= relevant(&requests) || relevant(&limits);
        for resource in ["cpu", "memory"] {
            let limit = limits.get(resource);
            let request = requests.get(resource).or(limit);
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    match () {
        _ if !any => "BestEffort",
        _ if guaranteed => "Guaranteed",
        _ => "Burstable",
    }
}
