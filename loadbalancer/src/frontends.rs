//! Which addresses the load balancer serves, and where each one sends its connections.
//!
//! Kubernetes counterpart: the service controller of `k8s.io/cloud-provider`
//! (`controllers/service/controller.go`: every Service of `type: LoadBalancer` without a
//! `loadBalancerClass` gets a cloud load balancer, whose address goes to
//! `status.loadBalancer.ingress`) and a cloud's `EnsureLoadBalancer`. A cloud balancer forwards
//! to node ports; minik's, like an ingress controller, forwards straight to the ready endpoints
//! of the Service's slices (`minik_ingress::backends`), which is how seed 003's F5 example is
//! wired (pool members are pod IPs).
//!
//! Addresses: the Service's cluster IP 127.96.A.B is served as 127.98.A.B, on the Service's own
//! ports, so every LoadBalancer Service has an address of its own, unique as its cluster IP is.
//!
//! Pure: objects in, frontends out.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::ObjectKey;
use minik_ingress::backends::{endpoints_for_port, service_of};

/// One listening address and its pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frontend {
    /// `namespace/name` of the Service.
    pub service: ObjectKey,
    /// The Service port's name (`""` when unnamed).
    pub port_name: String,
    /// The pool: ready endpoints.
    pub endpoints: Vec<SocketAddr>,
}

/// The external address of a Service with cluster IP 127.96.A.B: 127.98.A.B.
pub fn external_ip(cluster_ip: &str) -> Option<Ipv4Addr> {
    let ip: Ipv4Addr = cluster_ip.parse().ok()?;
    let [a, b, c, d] = ip.octets();
    (a == 127 && b == 96).then_some(Ipv4Addr::new(127, 98, c, d))
}

/// Whether the load balancer serves this Service.
pub fn is_load_balanced(service: &Service) -> bool {
    let spec = service.spec.as_ref();
    spec.and_then(|s| s.type_.as_deref()) == Some("LoadBalancer")
        && spec.and_then(|s| s.load_balancer_class.as_ref()).is_none()
}

/// Every frontend the Services ask for, by listening address.
pub fn desired(
    services: &[Arc<Service>],
    slices: &[Arc<EndpointSlice>],
) -> BTreeMap<SocketAddr, Frontend> {
    let mut by_service: BTreeMap<ObjectKey, Vec<&EndpointSlice>> = BTreeMap::new();
    for slice in slices {
        if let (Some(ns), Some(name)) = (&slice.metadata.namespace, service_of(slice)) {
            by_service
                .entry(ObjectKey::new(ns, name))
                .or_default()
                .push(slice);
        }
    }
    let mut frontends = BTreeMap::new();
    for service in services.iter().filter(|s| is_load_balanced(s)) {
        let spec = service.spec.clone().unwrap_or_default();
        let Some(ip) = spec.cluster_ip.as_deref().and_then(external_ip) else {
            continue;
        };
        let key = ObjectKey::of(&service.metadata);
        let slices = by_service.get(&key).cloned().unwrap_or_default();
        for port in spec.ports.iter().flatten() {
            if port.protocol.as_deref().unwrap_or("TCP") != "TCP" {
                continue;
            }
            let Ok(number) = u16::try_from(port.port) else {
                continue;
            };
            let port_name = port.name.clone().unwrap_or_default();
            let endpoints = endpoints_for_port(slices.iter().copied(), &port_name);
            let frontend = Frontend {
                service: key.clone(),
                port_name,
                endpoints,
            };
            frontends.insert(SocketAddr::new(ip.into(), number), frontend);
        }
    }
    frontends
}

/// The endpoints of each Service port served, as the `EndpointsApplied` Events name them.
pub fn endpoint_sets(frontends: &BTreeMap<SocketAddr, Frontend>) -> minik_ingress::applied::Sets {
    frontends
        .values()
        .map(|f| {
            let key = minik_ingress::applied::key(&f.service, &f.port_name);
            (key, f.endpoints.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service(name: &str, type_: &str, ip: &str) -> Arc<Service> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
                "spec": {"type": type_, "clusterIP": ip,
                         "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}]}}))
            .unwrap(),
        )
    }

    #[test]
    fn load_balancer_services_get_their_cluster_ip_moved_to_127_98_with_ready_endpoints() {
        let slice: Arc<EndpointSlice> = Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "web-x", "namespace": "default",
                             "labels": {"kubernetes.io/service-name": "web"}},
                "addressType": "IPv4",
                "ports": [{"name": "http", "port": 8080}],
                "endpoints": [{"addresses": ["127.244.1.5"], "conditions": {"ready": true}},
                              {"addresses": ["127.244.1.6"], "conditions": {"ready": false}}]}))
            .unwrap(),
        );
        let services = [
            service("web", "LoadBalancer", "127.96.3.4"),
            service("internal", "ClusterIP", "127.96.3.5"),
        ];
        let frontends = desired(&services, &[slice]);
        assert_eq!(
            frontends.len(),
            1,
            "TCP ports of LoadBalancer Services only"
        );
        let web = &frontends[&"127.98.3.4:80".parse().unwrap()];
        assert_eq!(web.service, ObjectKey::new("default", "web"));
        assert_eq!(web.endpoints, ["127.244.1.5:8080".parse().unwrap()]);
        assert_eq!(external_ip("10.0.0.1"), None);
    }
}
