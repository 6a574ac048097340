//! Ephemeral containers in the kubelet: started once in the running pod, never restarted,
//! reported in `ephemeralContainerStatuses`, killed with the pod.
//!
//! Kubernetes counterpart: `computePodActions` (`EphemeralContainersToStart`: an ephemeral
//! container with no status yet is started, whatever happened to it afterwards is left alone) in
//! `pkg/kubelet/kuberuntime/kuberuntime_manager.go`, `convertToAPIContainerStatuses` for
//! `EphemeralContainerStatuses` in `kubelet_pods.go`, and the `targetContainerName` namespace
//! sharing of `kuberuntime_container.go` (the debugger joins the target's PID namespace).
//!
//! minik simplifies: its containers have no PID namespace, so every container of a pod already
//! sees every process of the node; `targetContainerName` instead picks whose world the
//! debugger gets: the target's (else the first container's) working directory, volume mounts
//! and mount namespace view, so `ls` in the debugger shows what the target sees. The ephemeral
//! container's own `volumeMounts` are not mounted. It runs through the shim like any container,
//! with the pod IP.

use k8s_openapi::api::core::v1::{Container, ContainerStatus as ApiStatus, Pod};
use minik_api::validation::ephemeral::as_container;

use crate::container::PodContext;
use crate::plan::{latest_attempt, Action, PlanInput};
use crate::status::PodView;

/// The pod's ephemeral containers, seen as containers.
pub fn containers(pod: &Pod) -> Vec<Container> {
    pod.spec
        .iter()
        .flat_map(|s| s.ephemeral_containers.iter().flatten())
        .map(as_container)
        .collect()
}

/// Starts each ephemeral container the runtime has never run (and that did not fail to start):
/// once, attempt 0. Exited ones stay exited, whatever the pod's restart policy.
pub fn plan_step(input: &PlanInput<'_>, out: &mut Vec<Action>) {
    for container in containers(input.pod) {
        let ran = latest_attempt(input.containers, &container.name).is_some();
        let failed = input
            .memos
            .get(&container.name)
            .is_some_and(|m| m.start_failure.is_some());
        if !ran && !failed {
            out.push(Action::StartContainer {
                name: container.name,
                init: false,
                attempt: 0,
            });
        }
    }
}

/// The container whose world an ephemeral one runs in: its `targetContainerName`, else the
/// pod's first container.
pub fn world_of(pod: &Pod, name: &str) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    let ephemeral = spec
        .ephemeral_containers
        .iter()
        .flatten()
        .find(|e| e.name == name)?;
    ephemeral
        .target_container_name
        .clone()
        .filter(|t| !t.is_empty())
        .or_else(|| spec.containers.first().map(|c| c.name.clone()))
}

/// Gives the ephemeral container `name` the working directory, mount variables and mounts that
/// the sandbox prepared for the container whose world it takes (none were prepared for it: it
/// was added after the pod started).
pub fn lend_world(ctx: &mut PodContext, pod: &Pod, name: &str) {
    let Some(world) = world_of(pod, name) else {
        return;
    };
    if let Some(dir) = ctx.working_dirs.get(&world).cloned() {
        ctx.working_dirs.insert(name.to_string(), dir);
    }
    if let Some(env) = ctx.volume_env.get(&world).cloned() {
        ctx.volume_env.insert(name.to_string(), env);
    }
    if let Some(mounts) = ctx.mounts.get(&world).cloned() {
        ctx.mounts.insert(name.to_string(), mounts);
    }
}

/// `ephemeralContainerStatuses`: as a container's, never ready (ephemeral containers serve
/// nothing), `None` when the pod has none.
pub fn statuses(view: &PodView<'_>) -> Option<Vec<ApiStatus>> {
    let list: Vec<ApiStatus> = containers(view.pod)
        .iter()
        .map(|c| ApiStatus {
            ready: false,
            ..crate::status::container_status(view, c)
        })
        .collect();
    (!list.is_empty()).then_some(list)
}

#[cfg(test)]
#[path = "ephemeral_tests.rs"]
mod tests;
