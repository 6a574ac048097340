//! What a Service's EndpointSlices should say: one endpoint per pod, grouped by the ports it serves.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/endpointslice/utils.go` (`podToEndpoint`,
//! `getEndpointPorts`, `setEndpointSliceLabels`, `ownedBy`) and the loop over pods at the top of
//! `reconciler.go`'s `reconcileByAddressType`. The rules (docs/kubernetes-rules.md#e3 and
//! docs/workloads.md#es1 to #es4, #es7):
//!
//! - a pod counts if it is selected, has an IP and has not finished; unlike the Endpoints object, a
//!   **terminating pod stays** (upstream `ShouldPodBeInEndpoints(pod, includeTerminating=true)`);
//! - its conditions: `serving` = the pod is Ready, `terminating` = it has a `deletionTimestamp`,
//!   `ready` = serving and not terminating; `publishNotReadyAddresses` forces serving and ready;
//! - each Service port is resolved per pod (`FindPort`); pods serving different port sets go to
//!   different slices, so endpoints are grouped by their sorted ports ([`PortsKey`]);
//! - slices carry the Service's labels plus `kubernetes.io/service-name`,
//!   `endpointslice.kubernetes.io/managed-by` (and the headless marker), and a controller owner
//!   reference to the Service.
//!
//! minik simplifies: IPv4 only (every pod IP is in 127.0.0.0/8), no topology zones or hints.

use std::collections::BTreeMap;

use minik_api::core::{Pod, Service, ServicePort};
use minik_api::k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort};
use minik_api::meta::OwnerReference;

use crate::controller::HEADLESS_LABEL;
use crate::endpoints::{
    find_port, hostname, is_pod_ready, pod_ip, pod_reference, selector_matches,
    should_pod_be_in_endpoints,
};

/// The label that ties a slice to its Service (`discovery.LabelServiceName`).
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label that says which controller owns a slice (`discovery.LabelManagedBy`).
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// This controller's value for [`MANAGED_BY_LABEL`] (upstream's).
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// The only address type minik writes.
pub const ADDRESS_TYPE: &str = "IPv4";

/// One port of a slice as a sortable key: (name, "" when unnamed; port; protocol; appProtocol).
pub type PortKey = (String, i32, String, Option<String>);
/// The sorted ports of a group of endpoints: the identity of the slices that hold them.
pub type PortsKey = Vec<PortKey>;

/// The endpoints the Service's slices should hold, grouped by ports, each group sorted by address.
/// `None` when the Service is not managed here (no selector, or `ExternalName`).
pub fn desired_endpoints<'a>(
    service: &Service,
    pods: impl IntoIterator<Item = &'a Pod>,
) -> Option<BTreeMap<PortsKey, Vec<Endpoint>>> {
    let spec = service.spec.as_ref()?;
    let selector = spec.selector.as_ref()?;
    if spec.type_.as_deref() == Some("ExternalName") {
        return None;
    }
    let service_ports = spec.ports.as_deref().unwrap_or_default();
    let mut groups: BTreeMap<PortsKey, Vec<Endpoint>> = BTreeMap::new();
    for pod in pods {
        if pod.metadata.namespace != service.metadata.namespace
            || !selector_matches(selector, pod)
            || !should_pod_be_in_endpoints(pod, true)
            || pod_ip(pod).is_none_or(|ip| ip.parse::<std::net::Ipv4Addr>().is_err())
        {
            continue;
        }
        let ports = endpoint_ports(pod, service_ports);
        // A pod none of whose ports resolve serves nothing (a Service without ports keeps it).
        if ports.is_empty() && !service_ports.is_empty() {
            continue;
        }
        groups
            .entry(ports)
            .or_default()
            .push(pod_to_endpoint(pod, service));
    }
    for endpoints in groups.values_mut() {
        endpoints.sort_by(by_address);
    }
    Some(groups)
}

/// Orders endpoints by their first address as an IP (127.244.1.9 before 127.244.1.10).
pub fn by_address(a: &Endpoint, b: &Endpoint) -> std::cmp::Ordering {
    let ip = |e: &Endpoint| {
        e.addresses
            .first()
            .and_then(|ip| ip.parse::<std::net::IpAddr>().ok())
    };
    (ip(a), &a.addresses).cmp(&(ip(b), &b.addresses))
}

/// Upstream `podToEndpoint`: the pod's IP, its conditions, node, hostname and a reference to it.
pub fn pod_to_endpoint(pod: &Pod, service: &Service) -> Endpoint {
    let publish_not_ready = service
        .spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false);
    let serving = publish_not_ready || is_pod_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    // "ready" is never true for a terminating pod, unless publishNotReadyAddresses says so.
    let ready = publish_not_ready || (serving && !terminating);
    Endpoint {
        addresses: vec![pod_ip(pod).unwrap_or_default().to_string()],
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        hostname: hostname(pod, service),
        node_name: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
        target_ref: Some(pod_reference(pod)),
        ..Endpoint::default()
    }
}

/// Upstream `getEndpointPorts`: each Service port the pod resolves, sorted; a port the pod lacks
/// (a named `targetPort` it does not declare) is left out.
fn endpoint_ports(pod: &Pod, service_ports: &[ServicePort]) -> PortsKey {
    let mut ports: PortsKey = service_ports
        .iter()
        .filter_map(|port| {
            let number = find_port(pod, port)?;
            Some((
                port.name.clone().unwrap_or_default(),
                number,
                port.protocol.clone().unwrap_or_else(|| "TCP".into()),
                port.app_protocol.clone(),
            ))
        })
        .collect();
    ports.sort();
    ports.dedup();
    ports
}

/// The wire form of a ports key (the name is always set, "" when unnamed, as upstream writes it).
pub fn slice_ports(key: &PortsKey) -> Vec<EndpointPort> {
    key.iter()
        .map(|(name, port, protocol, app_protocol)| EndpointPort {
            name: Some(name.clone()),
            port: Some(*port),
            protocol: Some(protocol.clone()),
            app_protocol: app_protocol.clone(),
        })
        .collect()
}

/// The ports key of an existing slice (its ports, sorted).
pub fn ports_key(ports: Option<&[EndpointPort]>) -> PortsKey {
    let mut key: PortsKey = ports
        .unwrap_or_default()
        .iter()
        .map(|p| {
            (
                p.name.clone().unwrap_or_default(),
                p.port.unwrap_or_default(),
                p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                p.app_protocol.clone(),
            )
        })
        .collect();
    key.sort();
    key
}

/// Upstream `setEndpointSliceLabels`: the Service's labels, then the service name, the manager and
/// the headless marker, which the Service's own labels cannot override.
pub fn slice_labels(service: &Service) -> BTreeMap<String, String> {
    let mut labels = service.metadata.labels.clone().unwrap_or_default();
    labels.remove(HEADLESS_LABEL);
    let name = service.metadata.name.clone().unwrap_or_default();
    labels.insert(SERVICE_NAME_LABEL.into(), name);
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    if service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None") {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    labels
}

/// The controller owner reference a slice carries to its Service (the garbage collector deletes
/// the slices with the Service).
pub fn owner_reference(service: &Service) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Service".into(),
        name: service.metadata.name.clone().unwrap_or_default(),
        uid: service.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}
