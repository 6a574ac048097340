//! Validation of the objects minik stores: the checks behind a 422 Invalid answer.
//!
//! Kubernetes counterpart: `k8s.io/apimachinery/pkg/util/validation/validation.go` (DNS-1123 and
//! DNS-1035 names, port numbers) and `pkg/apis/core/validation/validation.go` (`ValidatePod`,
//! `ValidatePodUpdate`, `ValidateService`). Each problem becomes a `StatusCause` naming the field
//! (`spec.containers[0].image`) with upstream's reason (`FieldValueRequired`, `FieldValueInvalid`,
//! `FieldValueDuplicate`, `FieldValueForbidden`) and message wording, so kubectl prints
//! `The Pod "web" is invalid: spec.containers[0].image: Required value`.
//!
//! minik simplifies: only the rules its pipeline depends on are checked (names, containers, ports,
//! volumes and mounts, env names, quantities, probes' basic numbers, pod update immutability,
//! service ports and type); upstream has hundreds. The pod spec's finer rules are in [`pod_spec`].

pub mod ephemeral;
pub mod pod_spec;

use std::collections::BTreeSet;

use crate::core::{Container, ContainerPort, Pod, PodSpec, Service};
use crate::meta::StatusCause;
use crate::status::cause;

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn label_chars_ok(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// A DNS-1123 label (`my-name`, ≤ 63 characters): container names, namespace names.
pub fn is_dns1123_label(text: &str) -> bool {
    text.len() <= 63 && label_chars_ok(text)
}

/// A DNS-1123 subdomain (`web.example`, ≤ 253 characters): most object names.
pub fn is_dns1123_subdomain(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(label_chars_ok)
}

/// A DNS-1035 label (`my-name`, starts with a letter): Service names.
pub fn is_dns1035_label(text: &str) -> bool {
    is_dns1123_label(text) && text.starts_with(|c: char| c.is_ascii_lowercase())
}

/// The naming rule a kind uses for `metadata.name`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// DNS-1123 subdomain (pods, nodes, events, endpoints, leases).
    Subdomain,
    /// DNS-1123 label (namespaces).
    Label,
    /// DNS-1035 label (services).
    Dns1035,
    /// Any path segment: not `.` or `..`, no `/` or `%` (RBAC kinds, `system:node` …;
    /// `pkg/apis/rbac/validation`, `ValidateRBACName`).
    PathSegment,
}

impl NameRule {
    /// The naming rule of a kind, by its `Kind` name.
    pub fn for_kind(kind: &str) -> Self {
        match kind {
            "Namespace" => NameRule::Label,
            "Service" => NameRule::Dns1035,
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding" => NameRule::PathSegment,
            _ => NameRule::Subdomain,
        }
    }
}

/// Checks `metadata.name` under a naming rule; empty names get `Required value`.
pub fn validate_name(name: &str, rule: NameRule) -> Vec<StatusCause> {
    if name.is_empty() {
        return vec![required("metadata.name")];
    }
    let (ok, message) = match rule {
        NameRule::Subdomain => (is_dns1123_subdomain(name), DNS1123_SUBDOMAIN_MSG),
        NameRule::Label => (is_dns1123_label(name), DNS1123_LABEL_MSG),
        NameRule::Dns1035 => (is_dns1035_label(name), DNS1035_LABEL_MSG),
        NameRule::PathSegment => (
            !matches!(name, "." | "..") && !name.contains(['/', '%']),
            "may not be '.' or '..' and may not contain '/' or '%'",
        ),
    };
    if ok {
        vec![]
    } else {
        vec![invalid_value("metadata.name", name, message)]
    }
}

fn required(field: &str) -> StatusCause {
    cause(field, "FieldValueRequired", "Required value")
}

fn invalid_value(field: &str, value: &str, why: &str) -> StatusCause {
    cause(
        field,
        "FieldValueInvalid",
        format!("Invalid value: \"{value}\": {why}"),
    )
}

fn invalid_number(field: &str, value: i64, why: &str) -> StatusCause {
    cause(
        field,
        "FieldValueInvalid",
        format!("Invalid value: {value}: {why}"),
    )
}

/// `ValidatePod`: containers present, named uniquely, with images and sane ports.
pub fn validate_pod(pod: &Pod) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let Some(spec) = &pod.spec else {
        return vec![required("spec.containers")];
    };
    if spec.containers.is_empty() {
        causes.push(required("spec.containers"));
    }
    let (volume_causes, volumes) = pod_spec::validate_volumes(spec);
    causes.extend(volume_causes);
    let mut names = BTreeSet::new();
    let init = spec.init_containers.as_deref().unwrap_or_default();
    for (list, containers) in [
        ("spec.initContainers", init),
        ("spec.containers", spec.containers.as_slice()),
    ] {
        for (index, container) in containers.iter().enumerate() {
            let path = format!("{list}[{index}]");
            causes.extend(validate_container(container, &path, &mut names));
            causes.extend(pod_spec::validate_container_spec(
                container, &path, &volumes,
            ));
        }
    }
    causes.extend(pod_spec::validate_pod_level(spec));
    if let Some(grace) = spec.termination_grace_period_seconds {
        if grace < 0 {
            causes.push(invalid_number(
                "spec.terminationGracePeriodSeconds",
                grace,
                "must be greater than or equal to 0",
            ));
        }
    }
    if let Some(policy) = &spec.restart_policy {
        if !["Always", "OnFailure", "Never"].contains(&policy.as_str()) {
            let message = format!("Unsupported value: \"{policy}\": supported values: \"Always\", \"OnFailure\", \"Never\"");
            causes.push(cause(
                "spec.restartPolicy",
                "FieldValueNotSupported",
                message,
            ));
        }
    }
    causes
}

fn validate_container(
    container: &Container,
    path: &str,
    names: &mut BTreeSet<String>,
) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if container.name.is_empty() {
        causes.push(required(&format!("{path}.name")));
    } else if !is_dns1123_label(&container.name) {
        causes.push(invalid_value(
            &format!("{path}.name"),
            &container.name,
            DNS1123_LABEL_MSG,
        ));
    } else if !names.insert(container.name.clone()) {
        let message = format!("Duplicate value: \"{}\"", container.name);
        causes.push(cause(
            format!("{path}.name"),
            "FieldValueDuplicate",
            message,
        ));
    }
    if container.image.as_deref().unwrap_or("").trim().is_empty() {
        causes.push(required(&format!("{path}.image")));
    }
    for (index, port) in container
        .ports
        .as_deref()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        causes.extend(validate_container_port(
            port,
            &format!("{path}.ports[{index}]"),
        ));
    }
    causes
}

fn validate_container_port(port: &ContainerPort, path: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if !(1..=65535).contains(&port.container_port) {
        let why = "must be between 1 and 65535, inclusive";
        causes.push(invalid_number(
            &format!("{path}.containerPort"),
            port.container_port.into(),
            why,
        ));
    }
    if let Some(name) = &port.name {
        if !is_port_name(name) {
            let why = "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-), at most 15 characters, and at least one letter";
            causes.push(invalid_value(&format!("{path}.name"), name, why));
        }
    }
    if let Some(protocol) = &port.protocol {
        causes.extend(validate_protocol(protocol, &format!("{path}.protocol")));
    }
    causes
}

/// An IANA service name, the rule for port names (`http`, `metrics-2`).
pub fn is_port_name(name: &str) -> bool {
    name.len() <= 15
        && label_chars_ok(name)
        && name.chars().any(|c| c.is_ascii_lowercase())
        && !name.contains("--")
}

fn validate_protocol(protocol: &str, field: &str) -> Vec<StatusCause> {
    if ["TCP", "UDP", "SCTP"].contains(&protocol) {
        return vec![];
    }
    let message =
        format!("Unsupported value: \"{protocol}\": supported values: \"SCTP\", \"TCP\", \"UDP\"");
    vec![cause(field, "FieldValueNotSupported", message)]
}

/// `ValidatePodUpdate` (docs/kubernetes-rules.md#a4): only images, `activeDeadlineSeconds`, added
/// tolerations and a negative `terminationGracePeriodSeconds` going to 1 may change.
pub fn validate_pod_update(new: &Pod, old: &Pod) -> Vec<StatusCause> {
    let mut causes = validate_pod(new);
    let (Some(new_spec), Some(old_spec)) = (&new.spec, &old.spec) else {
        return causes;
    };
    let mut masked = new_spec.clone();
    mask_mutable_fields(&mut masked, old_spec);
    if &masked != old_spec {
        let message = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";
        causes.push(cause("spec", "FieldValueForbidden", message));
    }
    causes
}

/// Copies the fields an update may change from `old` into `spec`, so what remains must be equal.
fn mask_mutable_fields(spec: &mut PodSpec, old: &PodSpec) {
    for (new_c, old_c) in spec.containers.iter_mut().zip(&old.containers) {
        new_c.image = old_c.image.clone();
    }
    if let (Some(new_init), Some(old_init)) =
        (spec.init_containers.as_mut(), old.init_containers.as_ref())
    {
        for (new_c, old_c) in new_init.iter_mut().zip(old_init) {
            new_c.image = old_c.image.clone();
        }
    }
    spec.active_deadline_seconds = old.active_deadline_seconds;
    let old_tolerations = old.tolerations.clone().unwrap_or_default();
    let new_tolerations = spec.tolerations.clone().unwrap_or_default();
    if old_tolerations.iter().all(|t| new_tolerations.contains(t)) {
        spec.tolerations = old.tolerations.clone();
    }
    if old.termination_grace_period_seconds.is_some_and(|g| g < 0)
        && spec.termination_grace_period_seconds == Some(1)
    {
        spec.termination_grace_period_seconds = old.termination_grace_period_seconds;
    }
}

/// `ValidateService`: type, ports (1-65535, named when several, unique) and the clusterIP range
/// check done by the allocator.
pub fn validate_service(service: &Service) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let Some(spec) = &service.spec else {
        return vec![required("spec")];
    };
    let service_type = spec.type_.as_deref().unwrap_or("ClusterIP");
    if !["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"].contains(&service_type) {
        let message = format!("Unsupported value: \"{service_type}\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"");
        causes.push(cause("spec.type", "FieldValueNotSupported", message));
    }
    let ports = spec.ports.as_deref().unwrap_or_default();
    let headless = spec.cluster_ip.as_deref() == Some("None");
    if ports.is_empty() && !headless && service_type != "ExternalName" {
        causes.push(required("spec.ports"));
    }
    let mut names = BTreeSet::new();
    for (index, port) in ports.iter().enumerate() {
        let path = format!("spec.ports[{index}]");
        if !(1..=65535).contains(&port.port) {
            causes.push(invalid_number(
                &format!("{path}.port"),
                port.port.into(),
                "must be between 1 and 65535, inclusive",
            ));
        }
        match port.name.as_deref().unwrap_or("") {
            "" if ports.len() > 1 => causes.push(required(&format!("{path}.name"))),
            "" => {}
            name if !names.insert(name.to_string()) => {
                causes.push(cause(
                    format!("{path}.name"),
                    "FieldValueDuplicate",
                    format!("Duplicate value: \"{name}\""),
                ));
            }
            name if !is_dns1123_label(name) => causes.push(invalid_value(
                &format!("{path}.name"),
                name,
                DNS1123_LABEL_MSG,
            )),
            _ => {}
        }
        if let Some(protocol) = &port.protocol {
            causes.extend(validate_protocol(protocol, &format!("{path}.protocol")));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ServicePort;

    fn pod(containers: Vec<Container>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers,
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    fn container(name: &str, image: &str) -> Container {
        Container {
            name: name.to_string(),
            image: Some(image.to_string()),
            ..Container::default()
        }
    }

    fn fields(causes: &[StatusCause]) -> Vec<&str> {
        causes.iter().filter_map(|c| c.field.as_deref()).collect()
    }

    #[test]
    fn names_follow_the_dns_rules() {
        assert!(is_dns1123_subdomain("web.example-1"));
        assert!(!is_dns1123_subdomain("Web"));
        assert!(!is_dns1123_subdomain("web..x"));
        assert!(is_dns1123_label("node-1"));
        assert!(!is_dns1123_label("a.b"));
        assert!(!is_dns1035_label("1abc"));
        assert_eq!(
            fields(&validate_name("", NameRule::Subdomain)),
            ["metadata.name"]
        );
        assert!(validate_name("my_pod", NameRule::Subdomain)[0]
            .message
            .as_deref()
            .unwrap()
            .starts_with("Invalid value: \"my_pod\""));
    }

    #[test]
    fn pod_without_containers_or_images_is_invalid() {
        assert_eq!(fields(&validate_pod(&pod(vec![]))), ["spec.containers"]);
        let causes = validate_pod(&pod(vec![container("main", "")]));
        assert_eq!(fields(&causes), ["spec.containers[0].image"]);
        assert_eq!(causes[0].reason.as_deref(), Some("FieldValueRequired"));
    }

    #[test]
    fn duplicate_container_names_and_bad_ports_are_reported() {
        let mut second = container("main", "busybox");
        second.ports = Some(vec![ContainerPort {
            container_port: 70000,
            ..ContainerPort::default()
        }]);
        let causes = validate_pod(&pod(vec![container("main", "busybox"), second]));
        assert_eq!(
            fields(&causes),
            [
                "spec.containers[1].name",
                "spec.containers[1].ports[0].containerPort"
            ]
        );
        assert_eq!(causes[0].reason.as_deref(), Some("FieldValueDuplicate"));
    }

    #[test]
    fn pod_update_may_change_images_but_not_commands() {
        let old = pod(vec![container("main", "busybox:1")]);
        let new_image = pod(vec![container("main", "busybox:2")]);
        assert!(validate_pod_update(&new_image, &old).is_empty());
        let mut new_command = pod(vec![container("main", "busybox:1")]);
        new_command.spec.as_mut().unwrap().containers[0].command = Some(vec!["sh".into()]);
        let causes = validate_pod_update(&new_command, &old);
        assert_eq!(fields(&causes), ["spec"]);
        assert_eq!(causes[0].reason.as_deref(), Some("FieldValueForbidden"));
    }

    #[test]
    fn service_ports_must_be_named_when_several() {
        let port = |port| ServicePort {
            port,
            ..ServicePort::default()
        };
        let service = |ports| Service {
            spec: Some(crate::core::ServiceSpec {
                ports: Some(ports),
                ..Default::default()
            }),
            ..Service::default()
        };
        assert!(validate_service(&service(vec![port(80)])).is_empty());
        assert_eq!(
            fields(&validate_service(&service(vec![port(80), port(0)]))),
            [
                "spec.ports[0].name",
                "spec.ports[1].port",
                "spec.ports[1].name"
            ]
        );
    }
}
