//! The pure part of the endpoints controller: which addresses and ports a Service's Endpoints hold.
//!
//! Kubernetes counterpart: `pkg/controller/endpoint/endpoints_controller.go` (the loop over pods in
//! `syncService`, `podToEndpointAddressForService`, `addEndpointSubset`),
//! `staging/src/k8s.io/endpointslice/util/controller_utils.go` (`ShouldPodBeInEndpoints`),
//! `pkg/api/v1/pod/util.go` (`FindPort`) and `pkg/api/v1/endpoints/util.go` (`RepackSubsets`).
//!
//! The rules (docs/kubernetes-rules.md#e2):
//! - a Service with no selector (`spec.selector` absent) is not managed: someone else writes its
//!   Endpoints. An empty selector (`{}`) selects every pod of the namespace, as upstream;
//! - a pod counts if it is in the Service's namespace, its labels match the selector, it has an IP,
//!   it has not finished (phase Succeeded/Failed), and it is not being deleted: a pod with a
//!   `deletionTimestamp` leaves at once, while its process is still shutting down (this is the race
//!   of the seeds), unless the Service sets `publishNotReadyAddresses`;
//! - a counted pod goes to `addresses` if its Ready condition is True (or the Service publishes
//!   not-ready addresses), otherwise to `notReadyAddresses`;
//! - each Service port is resolved per pod: a numeric `targetPort` as is, a named one through the
//!   pod's `containerPort` of that name and protocol. A pod without that name is left out of that
//!   port only;
//! - addresses with the same set of ports share one subset. Subsets, addresses and ports are sorted,
//!   so equal inputs give equal outputs and the controller never writes an unchanged object.
//!
//! minik simplifies: one IP per pod (`status.podIP`), no sidecar container ports in `FindPort`. The
//! 1000-address cap is applied afterwards, in [`crate::capacity`].

use std::collections::{BTreeMap, BTreeSet};

use minik_api::core::{
    EndpointAddress, EndpointPort, EndpointSubset, ObjectReference, Pod, Service, ServicePort,
};
use minik_api::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// A port, as a sortable key: (name, port, protocol, appProtocol).
type PortKey = (Option<String>, i32, Option<String>, Option<String>);

/// The subsets of the Endpoints of `service` given every pod the controller knows (pods of other
/// namespaces are ignored). `None` when the Service has no selector and so is not managed here.
pub fn compute<'a>(
    service: &Service,
    pods: impl IntoIterator<Item = &'a Pod>,
) -> Option<Vec<EndpointSubset>> {
    let spec = service.spec.as_ref()?;
    let selector = spec.selector.as_ref()?;
    if spec.type_.as_deref() == Some("ExternalName") {
        return None;
    }
    let publish_not_ready = spec.publish_not_ready_addresses.unwrap_or(false);
    let service_ports = spec.ports.as_deref().unwrap_or_default();
    let headless = spec.cluster_ip.as_deref() == Some("None");
    // Each address with its readiness, grouped by the exact set of ports it serves.
    let mut groups: BTreeMap<Vec<PortKey>, Vec<(EndpointAddress, bool)>> = BTreeMap::new();
    for pod in pods {
        if pod.metadata.namespace != service.metadata.namespace
            || !selector_matches(selector, pod)
            || !should_pod_be_in_endpoints(pod, publish_not_ready)
        {
            continue;
        }
        let ports: Vec<PortKey> = service_ports
            .iter()
            .filter_map(|port| endpoint_port(pod, port))
            .collect();
        // A pod none of whose ports resolve serves nothing; a headless Service may have no ports.
        if ports.is_empty() && !(service_ports.is_empty() && headless) {
            continue;
        }
        let ready = publish_not_ready || is_pod_ready(pod);
        groups
            .entry(sorted(ports))
            .or_default()
            .push((endpoint_address(pod, service), ready));
    }
    Some(
        groups
            .into_iter()
            .map(|(ports, addresses)| subset(ports, addresses))
            .collect(),
    )
}

fn sorted(mut ports: Vec<PortKey>) -> Vec<PortKey> {
    ports.sort();
    ports.dedup();
    ports
}

/// One subset: the ready and not-ready addresses sharing `ports`, each list sorted by IP then UID.
fn subset(ports: Vec<PortKey>, addresses: Vec<(EndpointAddress, bool)>) -> EndpointSubset {
    let (ready, not_ready): (Vec<_>, Vec<_>) = addresses.into_iter().partition(|(_, ready)| *ready);
    let sort = |list: Vec<(EndpointAddress, bool)>| {
        let mut list: Vec<EndpointAddress> = list.into_iter().map(|(address, _)| address).collect();
        list.sort_by(|a, b| (&a.ip, uid(a)).cmp(&(&b.ip, uid(b))));
        (!list.is_empty()).then_some(list)
    };
    let ports: Vec<EndpointPort> = ports
        .into_iter()
        .map(|(name, port, protocol, app_protocol)| EndpointPort {
            name,
            port,
            protocol,
            app_protocol,
        })
        .collect();
    EndpointSubset {
        addresses: sort(ready),
        not_ready_addresses: sort(not_ready),
        ports: (!ports.is_empty()).then_some(ports),
    }
}

fn uid(address: &EndpointAddress) -> Option<&str> {
    address.target_ref.as_ref().and_then(|r| r.uid.as_deref())
}

/// Whether the Service's selector (a plain label map) selects the pod.
pub fn selector_matches(selector: &BTreeMap<String, String>, pod: &Pod) -> bool {
    labels_match(selector, pod.metadata.labels.as_ref())
}

/// Whether every `key=value` of a Service selector is among `labels`.
pub fn labels_match(
    selector: &BTreeMap<String, String>,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    selector
        .iter()
        .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
}

/// Upstream `ShouldPodBeInEndpoints(pod, includeTerminating)`, where minik's endpoints controller
/// (like upstream's) passes `publishNotReadyAddresses` as `includeTerminating`.
pub fn should_pod_be_in_endpoints(pod: &Pod, include_terminating: bool) -> bool {
    let status = pod.status.as_ref();
    if matches!(
        status.and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    ) {
        return false;
    }
    if pod_ip(pod).is_none() {
        return false;
    }
    include_terminating || pod.metadata.deletion_timestamp.is_none()
}

/// Upstream `IsPodReady`: the pod's Ready condition is True.
pub fn is_pod_ready(pod: &Pod) -> bool {
    let conditions = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// The pod's IP (`status.podIP`, else the first of `status.podIPs`), if it has one.
pub fn pod_ip(pod: &Pod) -> Option<&str> {
    let status = pod.status.as_ref()?;
    let first_of_list = || status.pod_ips.as_ref()?.first().map(|ip| ip.ip.as_str());
    status
        .pod_ip
        .as_deref()
        .or_else(first_of_list)
        .filter(|ip| !ip.is_empty())
}

/// The address of a pod: its IP, its node, a reference to it, and its [`hostname`].
fn endpoint_address(pod: &Pod, service: &Service) -> EndpointAddress {
    let spec = pod.spec.as_ref();
    EndpointAddress {
        ip: pod_ip(pod).unwrap_or_default().to_string(),
        node_name: spec.and_then(|s| s.node_name.clone()),
        hostname: hostname(pod, service),
        target_ref: Some(pod_reference(pod)),
    }
}

/// The pod's hostname when it asked for one under this Service's name (`spec.hostname` +
/// `spec.subdomain`, upstream `ShouldSetHostname`).
pub fn hostname(pod: &Pod, service: &Service) -> Option<String> {
    pod.spec
        .as_ref()
        .filter(|s| s.subdomain.is_some() && s.subdomain == service.metadata.name)
        .and_then(|s| s.hostname.clone())
        .filter(|h| !h.is_empty())
}

/// A reference to the pod, as an address's `targetRef`.
pub fn pod_reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".to_string()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

/// The endpoint port for one Service port on one pod, or `None` if the pod lacks the named port.
fn endpoint_port(pod: &Pod, service_port: &ServicePort) -> Option<PortKey> {
    let port = find_port(pod, service_port)?;
    let protocol = service_port
        .protocol
        .clone()
        .unwrap_or_else(|| "TCP".to_string());
    Some((
        service_port.name.clone().filter(|n| !n.is_empty()),
        port,
        Some(protocol),
        service_port.app_protocol.clone(),
    ))
}

/// Upstream `FindPort`: a numeric `targetPort` is used as is (absent means "same as `port`", the
/// apiserver's default); a named one is looked up among the pod's container ports with the same
/// protocol.
pub fn find_port(pod: &Pod, service_port: &ServicePort) -> Option<i32> {
    match &service_port.target_port {
        None => Some(service_port.port),
        Some(IntOrString::Int(number)) => Some(*number),
        Some(IntOrString::String(name)) => {
            let protocol = service_port.protocol.as_deref().unwrap_or("TCP");
            let containers = pod
                .spec
                .as_ref()
                .map(|s| s.containers.as_slice())
                .unwrap_or_default();
            containers
                .iter()
                .flat_map(|c| c.ports.iter().flatten())
                .find(|p| {
                    p.name.as_deref() == Some(name)
                        && p.protocol.as_deref().unwrap_or("TCP") == protocol
                })
                .map(|p| p.container_port)
        }
    }
}

/// The pods (name, IP) among the `addresses` (ready) or `notReadyAddresses` of some subsets. The
/// controller diffs these sets to record which pods entered or left the Endpoints.
pub fn pod_addresses(subsets: &[EndpointSubset], ready: bool) -> BTreeSet<(String, String)> {
    let list = |s: &EndpointSubset| {
        if ready {
            s.addresses.clone()
        } else {
            s.not_ready_addresses.clone()
        }
    };
    subsets
        .iter()
        .flat_map(|s| list(s).unwrap_or_default())
        .map(|a| (a.target_ref.and_then(|r| r.name).unwrap_or_default(), a.ip))
        .collect()
}

/// How many ready and not-ready addresses the subsets hold.
pub fn counts(subsets: &[EndpointSubset]) -> (usize, usize) {
    let count = |list: &Option<Vec<EndpointAddress>>| list.as_ref().map_or(0, Vec::len);
    subsets.iter().fold((0, 0), |(r, n), s| {
        (r + count(&s.addresses), n + count(&s.not_ready_addresses))
    })
}

#[cfg(test)]
#[path = "endpoints_tests.rs"]
mod tests;
