//! Defaulting: the values the API server fills in when a manifest leaves them out.
//!
//! Kubernetes counterpart: `pkg/apis/core/v1/defaults.go` (`SetDefaults_Pod`, `SetDefaults_PodSpec`,
//! `SetDefaults_Container`, `SetDefaults_Probe`, `SetDefaults_Service`). Defaulting runs before
//! validation on every create and update, so a stored object always carries, say,
//! `terminationGracePeriodSeconds: 30`, and the kubelet never has to guess.
//!
//! minik simplifies: only the defaults its components read, plus the ones kubectl shows.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::core::{Container, Pod, PodSecurityContext, PodStatus, Probe, Service, ServiceSpec};

/// `SetDefaults_PodSpec` and `SetDefaults_Container` for every container.
pub fn default_pod(pod: &mut Pod) {
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.termination_grace_period_seconds
        .get_or_insert(crate::grace::DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
    spec.restart_policy
        .get_or_insert_with(|| "Always".to_string());
    spec.dns_policy
        .get_or_insert_with(|| "ClusterFirst".to_string());
    spec.scheduler_name
        .get_or_insert_with(|| "default-scheduler".to_string());
    spec.security_context
        .get_or_insert_with(PodSecurityContext::default);
    spec.enable_service_links.get_or_insert(true);
    spec.priority.get_or_insert(0);
    for container in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        default_container(container);
    }
    crate::validation::ephemeral::default_ephemeral_containers(spec);
}

/// The status of a pod the moment it is created: `Pending`, BestEffort QoS (minik has no resources).
pub fn initial_pod_status(pod: &mut Pod) {
    let status = pod.status.get_or_insert_with(PodStatus::default);
    status.phase.get_or_insert_with(|| "Pending".to_string());
    status
        .qos_class
        .get_or_insert_with(|| "BestEffort".to_string());
}

fn default_container(container: &mut Container) {
    container
        .termination_message_path
        .get_or_insert_with(|| "/dev/termination-log".to_string());
    container
        .termination_message_policy
        .get_or_insert_with(|| "File".to_string());
    let image = container.image.clone().unwrap_or_default();
    container
        .image_pull_policy
        .get_or_insert_with(|| image_pull_policy(&image).to_string());
    for port in container.ports.iter_mut().flatten() {
        port.protocol.get_or_insert_with(|| "TCP".to_string());
    }
    for probe in [
        &mut container.liveness_probe,
        &mut container.readiness_probe,
        &mut container.startup_probe,
    ]
    .into_iter()
    .flatten()
    {
        default_probe(probe);
    }
}

/// `Always` for `:latest` or an untagged image, else `IfNotPresent` (as upstream).
pub fn image_pull_policy(image: &str) -> &'static str {
    let name = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') {
        return "IfNotPresent";
    }
    match name.split_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

/// `SetDefaults_Probe` (docs/kubernetes-rules.md#probes): period 10 s, timeout 1 s, thresholds 1
/// and 3. As upstream (plain Go ints), an explicit 0 counts as unset and is defaulted too.
pub fn default_probe(probe: &mut Probe) {
    for (field, default) in [
        (&mut probe.timeout_seconds, 1),
        (&mut probe.period_seconds, 10),
        (&mut probe.success_threshold, 1),
        (&mut probe.failure_threshold, 3),
    ] {
        if field.unwrap_or(0) == 0 {
            *field = Some(default);
        }
    }
    if let Some(http) = probe.http_get.as_mut() {
        http.path.get_or_insert_with(|| "/".to_string());
        http.scheme.get_or_insert_with(|| "HTTP".to_string());
    }
}

/// `SetDefaults_Service`: type ClusterIP, no session affinity, TCP ports whose targetPort is the port.
pub fn default_service(service: &mut Service) {
    let spec = service.spec.get_or_insert_with(ServiceSpec::default);
    spec.type_.get_or_insert_with(|| "ClusterIP".to_string());
    spec.session_affinity
        .get_or_insert_with(|| "None".to_string());
    spec.internal_traffic_policy
        .get_or_insert_with(|| "Cluster".to_string());
    for port in spec.ports.iter_mut().flatten() {
        port.protocol.get_or_insert_with(|| "TCP".to_string());
        port.target_port.get_or_insert(IntOrString::Int(port.port));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{ContainerPort, PodSpec, ServicePort};

    #[test]
    fn pod_gets_upstream_defaults() {
        let container = Container {
            name: "main".into(),
            image: Some("busybox".into()),
            ports: Some(vec![ContainerPort {
                container_port: 80,
                ..Default::default()
            }]),
            ..Default::default()
        };
        let mut pod = Pod {
            spec: Some(PodSpec {
                containers: vec![container],
                ..Default::default()
            }),
            ..Default::default()
        };
        default_pod(&mut pod);
        initial_pod_status(&mut pod);
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.termination_grace_period_seconds, Some(30));
        assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
        assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));
        assert_eq!(
            spec.containers[0].image_pull_policy.as_deref(),
            Some("Always")
        );
        assert_eq!(
            spec.containers[0].ports.as_ref().unwrap()[0]
                .protocol
                .as_deref(),
            Some("TCP")
        );
        assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Pending"));
    }

    #[test]
    fn explicit_values_are_kept() {
        let mut pod = Pod {
            spec: Some(PodSpec {
                termination_grace_period_seconds: Some(5),
                ..Default::default()
            }),
            ..Default::default()
        };
        default_pod(&mut pod);
        assert_eq!(pod.spec.unwrap().termination_grace_period_seconds, Some(5));
    }

    #[test]
    fn pull_policy_depends_on_the_tag() {
        assert_eq!(image_pull_policy("nginx"), "Always");
        assert_eq!(image_pull_policy("nginx:latest"), "Always");
        assert_eq!(image_pull_policy("nginx:1.27"), "IfNotPresent");
        assert_eq!(image_pull_policy("localhost:5000/web"), "Always");
    }

    #[test]
    fn service_target_port_defaults_to_port() {
        let port = ServicePort {
            port: 80,
            ..Default::default()
        };
        let mut service = Service {
            spec: Some(ServiceSpec {
                ports: Some(vec![port]),
                ..Default::default()
            }),
            ..Default::default()
        };
        default_service(&mut service);
        let spec = service.spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
        assert_eq!(
            spec.ports.unwrap()[0].target_port,
            Some(IntOrString::Int(80))
        );
    }
}
