//! The parts of `ValidatePodSpec` that guard what the kubelet later turns into paths, processes
//! and timers: volumes and their mounts, `nodeName`, resource quantities, env names, probes'
//! numbers, host ports and `activeDeadlineSeconds`.
//!
//! Kubernetes counterpart: `pkg/apis/core/validation/validation.go` (`validateVolumes`,
//! `validateVolumeMounts`, `ValidateEnv`, `ValidateResourceRequirements`, `validateProbe`,
//! `validateContainerPorts`, `ValidatePodSpec`) and `k8s.io/apimachinery/pkg/api/resource`
//! (`ParseQuantity`). Field paths and messages are upstream's (`spec.volumes[0].name`,
//! `spec.containers[0].resources.requests[cpu]`), so kubectl prints what it would print against
//! a real cluster.
//!
//! minik simplifies: a volume's source is only checked for being present (not its own fields),
//! resource names are not checked, and requests are not compared with limits.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::{
    invalid_number, invalid_value, is_dns1123_label, is_dns1123_subdomain, required,
    DNS1123_LABEL_MSG, DNS1123_SUBDOMAIN_MSG,
};
use crate::core::{Container, PodSpec, Probe, Volume};
use crate::meta::StatusCause;
use crate::status::cause;

/// `ParseQuantity`'s error, which upstream reports as a 400 while decoding the body.
pub const QUANTITY_FORMAT_MSG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

const NON_NEGATIVE_MSG: &str = "must be greater than or equal to 0";

/// `spec.volumes`: each named by a unique DNS-1123 label and of some type. Returns the causes
/// and the declared names, which mounts must refer to.
pub(super) fn validate_volumes(spec: &PodSpec) -> (Vec<StatusCause>, BTreeSet<String>) {
    let mut causes = Vec::new();
    let mut names = BTreeSet::new();
    for (index, volume) in spec.volumes.iter().flatten().enumerate() {
        let path = format!("spec.volumes[{index}]");
        let name = volume.name.as_str();
        if name.is_empty() {
            causes.push(required(&format!("{path}.name")));
        } else if !is_dns1123_label(name) {
            causes.push(invalid_value(
                &format!("{path}.name"),
                name,
                DNS1123_LABEL_MSG,
            ));
        } else if !names.insert(name.to_string()) {
            let message = format!("Duplicate value: \"{name}\"");
            causes.push(cause(
                format!("{path}.name"),
                "FieldValueDuplicate",
                message,
            ));
        }
        if !has_source(volume) {
            causes.push(cause(
                path,
                "FieldValueRequired",
                "Required value: must specify a volume type",
            ));
        }
    }
    (causes, names)
}

/// Whether a volume names a source (`emptyDir`, `hostPath`, `configMap` …): any field but `name`.
fn has_source(volume: &Volume) -> bool {
    serde_json::to_value(volume)
        .ok()
        .and_then(|v| v.as_object().map(|o| o.keys().any(|k| k != "name")))
        .unwrap_or(false)
}

/// The per-container rules of this module: mounts of declared volumes, env names, resources,
/// probes and host ports.
pub(super) fn validate_container_spec(
    container: &Container,
    path: &str,
    volumes: &BTreeSet<String>,
) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for (index, mount) in container.volume_mounts.iter().flatten().enumerate() {
        let mount_path = format!("{path}.volumeMounts[{index}]");
        if mount.name.is_empty() {
            causes.push(required(&format!("{mount_path}.name")));
        } else if !volumes.contains(&mount.name) {
            causes.push(cause(
                format!("{mount_path}.name"),
                "FieldValueNotFound",
                format!("Not found: \"{}\"", mount.name),
            ));
        }
        if mount.mount_path.is_empty() {
            causes.push(required(&format!("{mount_path}.mountPath")));
        }
    }
    for (index, env) in container.env.iter().flatten().enumerate() {
        let field = format!("{path}.env[{index}].name");
        if env.name.is_empty() {
            causes.push(required(&field));
        } else if !is_relaxed_env_var_name(&env.name) {
            let why = "a valid environment variable name must consist only of printable ASCII characters other than '='";
            causes.push(invalid_value(&field, &env.name, why));
        }
    }
    if let Some(resources) = &container.resources {
        for (list, quantities) in [
            ("limits", &resources.limits),
            ("requests", &resources.requests),
        ] {
            causes.extend(negative_quantities(
                quantities.as_ref(),
                &format!("{path}.resources.{list}"),
            ));
        }
    }
    for (name, probe) in [
        ("livenessProbe", &container.liveness_probe),
        ("readinessProbe", &container.readiness_probe),
        ("startupProbe", &container.startup_probe),
    ] {
        if let Some(probe) = probe {
            causes.extend(validate_probe(probe, &format!("{path}.{name}")));
        }
    }
    for (index, port) in container.ports.iter().flatten().enumerate() {
        let host_port = port.host_port.unwrap_or(0);
        if host_port != 0 && !(1..=65535).contains(&host_port) {
            causes.push(invalid_number(
                &format!("{path}.ports[{index}].hostPort"),
                host_port.into(),
                "must be between 1 and 65535, inclusive",
            ));
        }
    }
    causes
}

/// `IsRelaxedEnvVarName` (the `RelaxedEnvironmentVariableValidation` gate, on since 1.32).
fn is_relaxed_env_var_name(name: &str) -> bool {
    name.bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'=')
}

/// `ValidateNonnegativeQuantity` for each entry: `resources.requests[cpu]: Invalid value: "-1"`.
fn negative_quantities(
    quantities: Option<&BTreeMap<String, Quantity>>,
    path: &str,
) -> Vec<StatusCause> {
    quantities
        .into_iter()
        .flatten()
        .filter(|(_, quantity)| parse_quantity(&quantity.0) == Some(Sign::Negative))
        .map(|(name, quantity)| {
            invalid_value(&format!("{path}[{name}]"), &quantity.0, NON_NEGATIVE_MSG)
        })
        .collect()
}

/// `validateProbe`: the numbers are non-negative (0 means "the default", set by defaulting).
fn validate_probe(probe: &Probe, path: &str) -> Vec<StatusCause> {
    [
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("periodSeconds", probe.period_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ]
    .into_iter()
    .filter_map(|(field, value)| value.filter(|v| *v < 0).map(|v| (field, v)))
    .map(|(field, value)| {
        invalid_number(&format!("{path}.{field}"), value.into(), NON_NEGATIVE_MSG)
    })
    .collect()
}

/// The pod-level numbers and names: `nodeName` (a DNS-1123 subdomain, it becomes a node's name)
/// and `activeDeadlineSeconds` (1 to 2^31-1).
pub(super) fn validate_pod_level(spec: &PodSpec) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if let Some(node) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        if !is_dns1123_subdomain(node) {
            causes.push(invalid_value("spec.nodeName", node, DNS1123_SUBDOMAIN_MSG));
        }
    }
    if let Some(deadline) = spec.active_deadline_seconds {
        if !(1..=i64::from(i32::MAX)).contains(&deadline) {
            let why = "must be between 1 and 2147483647, inclusive";
            causes.push(invalid_number("spec.activeDeadlineSeconds", deadline, why));
        }
    }
    causes
}

/// The sign of a well-formed quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sign {
    /// Zero or more.
    NonNegative,
    /// Below zero (`-1`, `-500m`).
    Negative,
}

/// `ParseQuantity`'s grammar: `[+-]<digits>[.<digits>]` then a binary suffix (`Ki`…`Ei`), a
/// decimal one (`n u m k M G T P E` or none) or an exponent (`e3`, `E-2`). `None` if malformed.
pub fn parse_quantity(text: &str) -> Option<Sign> {
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let end = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(end);
    let digits = number.replacen('.', "", 1);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let suffix_ok = matches!(
        suffix,
        "" | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
            | "Ki"
            | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
    ) || (suffix.starts_with(['e', 'E']) && is_signed_integer(&suffix[1..]));
    if !suffix_ok {
        return None;
    }
    let zero = digits.bytes().all(|b| b == b'0');
    Some(if negative && !zero {
        Sign::Negative
    } else {
        Sign::NonNegative
    })
}

fn is_signed_integer(text: &str) -> bool {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The first resource quantity of a pod spec that does not parse (a 400, as upstream's decoder
/// refuses it before validation runs).
pub fn malformed_quantity(spec: &PodSpec) -> Option<&str> {
    let init = spec.init_containers.iter().flatten();
    init.chain(&spec.containers)
        .filter_map(|c| c.resources.as_ref())
        .flat_map(|r| r.limits.iter().chain(r.requests.iter()).flatten())
        .map(|(_, quantity)| quantity.0.as_str())
        .find(|text| parse_quantity(text).is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_follow_upstreams_grammar() {
        for text in [
            "1", "500m", "0.5", ".5", "1.", "128Mi", "1e3", "2E-2", "+1", "-0", "100n",
        ] {
            assert_eq!(parse_quantity(text), Some(Sign::NonNegative), "{text}");
        }
        for text in ["-1", "-500m", "-0.1Gi"] {
            assert_eq!(parse_quantity(text), Some(Sign::Negative), "{text}");
        }
        for text in ["", "lots", "1Qi", "m", "1..2", "--1", "1e", "1 Gi", "."] {
            assert_eq!(parse_quantity(text), None, "{text:?}");
        }
    }

    #[test]
    fn env_names_may_be_any_printable_ascii_but_equals() {
        assert!(is_relaxed_env_var_name("MY_VAR.1-x:y"));
        assert!(!is_relaxed_env_var_name("A=B"));
        assert!(!is_relaxed_env_var_name("tab\there"));
    }
}
