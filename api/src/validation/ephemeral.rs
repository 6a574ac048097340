//! Ephemeral containers: their defaults, their view as ordinary containers, and the rules of the
//! `pods/ephemeralcontainers` subresource.
//!
//! Kubernetes counterpart: `validateEphemeralContainers` and `ValidatePodEphemeralContainersUpdate`
//! in `pkg/apis/core/validation/validation.go`, the `EphemeralContainer` defaults of
//! `pkg/apis/core/v1/zz_generated.defaults.go`, and `ValidatePodCreate` ("cannot be set on
//! create"). An ephemeral container is a container added to a running pod (`kubectl debug`): its
//! name is unique across all the pod's containers, it may name a `targetContainerName` among the
//! regular ones, it has no ports, probes, resources or lifecycle (it serves nothing), and once added
//! it may be neither changed nor removed.
//!
//! minik simplifies: the allow-list is checked on the fields minik's API types have; upstream's
//! `cmp.Diff` that follows "may not be changed" is left out of the message.

use std::collections::BTreeSet;

use super::{pod_spec, validate_container, validate_pod};
use crate::core::{Container, EphemeralContainer, Pod, PodSpec, ResourceRequirements};
use crate::meta::StatusCause;
use crate::status::cause;

const LIST: &str = "spec.ephemeralContainers";
const NOT_ALLOWED: &str = "Forbidden: cannot be set for an Ephemeral Container";

/// The container an ephemeral container describes (the same fields, less `targetContainerName`),
/// so code written for containers (env, argv, logs) runs it unchanged.
pub fn as_container(ephemeral: &EphemeralContainer) -> Container {
    let e = ephemeral.clone();
    Container {
        name: e.name,
        image: e.image,
        command: e.command,
        args: e.args,
        working_dir: e.working_dir,
        env: e.env,
        env_from: e.env_from,
        volume_mounts: e.volume_mounts,
        volume_devices: e.volume_devices,
        termination_message_path: e.termination_message_path,
        termination_message_policy: e.termination_message_policy,
        image_pull_policy: e.image_pull_policy,
        security_context: e.security_context,
        stdin: e.stdin,
        stdin_once: e.stdin_once,
        tty: e.tty,
        ports: e.ports,
        lifecycle: e.lifecycle,
        liveness_probe: e.liveness_probe,
        readiness_probe: e.readiness_probe,
        startup_probe: e.startup_probe,
        resources: e.resources,
        resize_policy: e.resize_policy,
        restart_policy: e.restart_policy,
    }
}

/// The defaults a container gets that apply to ephemeral ones too (termination message path and
/// policy, image pull policy), as upstream's generated `SetObjectDefaults_Pod`.
pub fn default_ephemeral_containers(spec: &mut PodSpec) {
    for ephemeral in spec.ephemeral_containers.iter_mut().flatten() {
        ephemeral
            .termination_message_path
            .get_or_insert_with(|| "/dev/termination-log".to_string());
        ephemeral
            .termination_message_policy
            .get_or_insert_with(|| "File".to_string());
        let image = ephemeral.image.clone().unwrap_or_default();
        ephemeral
            .image_pull_policy
            .get_or_insert_with(|| crate::defaults::image_pull_policy(&image).to_string());
    }
}

/// `ValidatePodCreate`: ephemeral containers come only through the subresource.
pub fn forbid_on_create(pod: &Pod) -> Vec<StatusCause> {
    let given = pod
        .spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.as_ref())
        .is_some_and(|list| !list.is_empty());
    match given {
        true => vec![cause(
            LIST,
            "FieldValueForbidden",
            "Forbidden: cannot be set on create",
        )],
        false => vec![],
    }
}

/// `ValidatePodEphemeralContainersUpdate`: the new list is valid, and every ephemeral container
/// of the old pod is still there, unchanged.
pub fn validate_update(new: &Pod, old: &Pod) -> Vec<StatusCause> {
    let mut causes = validate_pod(new);
    let Some(spec) = &new.spec else {
        return causes;
    };
    causes.extend(validate_list(spec));
    let new_list = spec.ephemeral_containers.as_deref().unwrap_or_default();
    let old_list = old
        .spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.as_deref())
        .unwrap_or_default();
    for before in old_list {
        let message = match new_list.iter().find(|e| e.name == before.name) {
            None => format!(
                "Forbidden: existing ephemeral containers \"{}\" may not be removed",
                before.name
            ),
            Some(after) if after != before => format!(
                "Forbidden: existing ephemeral containers \"{}\" may not be changed",
                before.name
            ),
            Some(_) => continue,
        };
        causes.push(cause(LIST, "FieldValueForbidden", message));
    }
    causes
}

/// `validateEphemeralContainers`: each one as a container, named uniquely across all containers,
/// its target a regular container, and none of the fields an ephemeral container may not have.
fn validate_list(spec: &PodSpec) -> Vec<StatusCause> {
    let (_, volumes) = pod_spec::validate_volumes(spec);
    let regular: BTreeSet<String> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .map(|c| c.name.clone())
        .collect();
    let mut names = regular.clone();
    let mut causes = Vec::new();
    for (index, ephemeral) in spec.ephemeral_containers.iter().flatten().enumerate() {
        let path = format!("{LIST}[{index}]");
        let container = as_container(ephemeral);
        causes.extend(validate_container(&container, &path, &mut names));
        causes.extend(pod_spec::validate_container_spec(
            &container, &path, &volumes,
        ));
        if let Some(target) = ephemeral
            .target_container_name
            .as_deref()
            .filter(|t| !t.is_empty())
        {
            if !regular.contains(target) {
                let field = format!("{path}.targetContainerName");
                let message = format!("Not found: \"{target}\"");
                causes.push(cause(field, "FieldValueNotFound", message));
            }
        }
        for field in forbidden_fields(ephemeral) {
            causes.push(cause(
                format!("{path}.{field}"),
                "FieldValueForbidden",
                NOT_ALLOWED,
            ));
        }
        for (i, mount) in ephemeral.volume_mounts.iter().flatten().enumerate() {
            if mount.sub_path.as_deref().is_some_and(|s| !s.is_empty()) {
                let field = format!("{path}.volumeMounts[{i}].subPath");
                causes.push(cause(field, "FieldValueForbidden", NOT_ALLOWED));
            }
        }
    }
    causes
}

/// The set fields outside upstream's `allowedEphemeralContainerFields` (an empty `resources: {}`,
/// which kubectl debug sends, counts as unset, as Go's zero value does).
fn forbidden_fields(e: &EphemeralContainer) -> Vec<&'static str> {
    let empty_resources = e
        .resources
        .as_ref()
        .is_none_or(|r| r == &ResourceRequirements::default());
    [
        ("lifecycle", e.lifecycle.is_some()),
        ("livenessProbe", e.liveness_probe.is_some()),
        ("ports", e.ports.as_ref().is_some_and(|p| !p.is_empty())),
        ("readinessProbe", e.readiness_probe.is_some()),
        ("resizePolicy", e.resize_policy.is_some()),
        ("resources", !empty_resources),
        ("restartPolicy", e.restart_policy.is_some()),
        ("startupProbe", e.startup_probe.is_some()),
    ]
    .into_iter()
    .filter(|(_, set)| *set)
    .map(|(field, _)| field)
    .collect()
}

#[cfg(test)]
#[path = "ephemeral_tests.rs"]
mod tests;
