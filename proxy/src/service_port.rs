//! From Service and EndpointSlice objects to what the proxy acts on: one entry per service port.
//!
//! Kubernetes counterpart: `pkg/proxy/types.go` (`ServicePortName`, "namespace/name:port"), the
//! change trackers of `pkg/proxy/servicechangetracker.go` / `endpointslicecache.go`, which turn
//! API objects into per-port maps before any proxier looks at them, and `CategorizeEndpoints` in
//! `pkg/proxy/topology.go`, which picks the endpoints that get traffic.
//!
//! Both translations are pure functions, tested below:
//! - [`service_ports`]: a Service's TCP ports that need a listener (`clusterIP:port`, affinity);
//!   headless services (`clusterIP: None`) get none;
//! - [`slices_by_port`]: all the EndpointSlices of one Service merged, grouped by port name as
//!   `ip:port`. Per port, the **ready** endpoints get traffic; only when none is ready do the
//!   endpoints that are **serving and terminating** get it (upstream's rule for terminating
//!   endpoints, docs/kubernetes-rules.md#e4), so a Service whose every pod is shutting down keeps
//!   answering while those pods still can. Unset conditions read as upstream reads them: ready,
//!   serving = ready, not terminating.
//!
//! minik simplifies: TCP only (UDP and SCTP ports are skipped), IPv4 slices only, no external IPs,
//! no node ports allocated by the apiserver, no topology hints or traffic policies.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use minik_api::core::Service;
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::ObjectKey;

use crate::load_balancer::{Affinity, DEFAULT_AFFINITY_TIMEOUT};

/// The label tying an EndpointSlice to its Service (`discovery.LabelServiceName`).
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The name of one port of one Service: `namespace/name:port` (the port name may be empty when
/// the Service has a single unnamed port).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServicePortName {
    /// The Service's `namespace/name`.
    pub service: ObjectKey,
    /// `spec.ports[].name`, matched against `subsets[].ports[].name` of the Endpoints.
    pub port: String,
}

impl fmt::Display for ServicePortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.service, self.port)
    }
}

/// What the proxier needs to know about one service port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServicePortSpec {
    /// Which service port this is.
    pub name: ServicePortName,
    /// `spec.clusterIP:spec.ports[].port`: where the proxy tries to listen first.
    pub cluster_addr: SocketAddr,
    /// `spec.sessionAffinity` (with its timeout).
    pub affinity: Affinity,
}

/// The TCP ports of a Service that get a listener. Headless services, services without a cluster
/// IP yet, and ports that are not TCP give nothing.
pub fn service_ports(service: &Service) -> Vec<ServicePortSpec> {
    let key = ObjectKey::of(&service.metadata);
    let Some(spec) = &service.spec else {
        return Vec::new();
    };
    let Some(cluster_ip) = spec.cluster_ip.as_deref().and_then(parse_cluster_ip) else {
        return Vec::new();
    };
    let affinity = affinity_of(service);
    let ports = spec.ports.as_deref().unwrap_or_default();
    ports
        .iter()
        .filter(|port| port.protocol.as_deref().unwrap_or("TCP") == "TCP")
        .filter_map(|port| {
            let number = u16::try_from(port.port).ok()?;
            Some(ServicePortSpec {
                name: ServicePortName {
                    service: key.clone(),
                    port: port.name.clone().unwrap_or_default(),
                },
                cluster_addr: SocketAddr::new(cluster_ip, number),
                affinity,
            })
        })
        .collect()
}

/// `"None"` and `""` mean headless or not allocated; anything else must be an IP address.
fn parse_cluster_ip(text: &str) -> Option<IpAddr> {
    match text {
        "" | "None" => None,
        other => other.parse().ok(),
    }
}

/// `spec.sessionAffinity` with `sessionAffinityConfig.clientIP.timeoutSeconds` (default 10800 s).
fn affinity_of(service: &Service) -> Affinity {
    let Some(spec) = &service.spec else {
        return Affinity::None;
    };
    if spec.session_affinity.as_deref() != Some("ClientIP") {
        return Affinity::None;
    }
    let timeout = spec
        .session_affinity_config
        .as_ref()
        .and_then(|config| config.client_ip.as_ref())
        .and_then(|client_ip| client_ip.timeout_seconds)
        .and_then(|seconds| u64::try_from(seconds).ok())
        .filter(|seconds| *seconds > 0)
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_AFFINITY_TIMEOUT);
    Affinity::ClientIp { timeout }
}

/// The endpoints that get traffic, per port name, from every EndpointSlice of one Service (see the
/// module doc); each list sorted.
pub fn slices_by_port<'a>(
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
) -> BTreeMap<String, Vec<SocketAddr>> {
    // Per port: (address, ready, serving and terminating).
    let mut candidates: BTreeMap<String, Vec<(SocketAddr, bool, bool)>> = BTreeMap::new();
    for slice in slices {
        if slice.address_type != "IPv4" {
            continue;
        }
        for port in slice.ports.as_deref().unwrap_or_default() {
            if port.protocol.as_deref().unwrap_or("TCP") != "TCP" {
                continue;
            }
            let Some(number) = port.port.and_then(|p| u16::try_from(p).ok()) else {
                continue;
            };
            let list = candidates
                .entry(port.name.clone().unwrap_or_default())
                .or_default();
            for endpoint in &slice.endpoints {
                let conditions = endpoint.conditions.clone().unwrap_or_default();
                let ready = conditions.ready.unwrap_or(true);
                let serving = conditions.serving.unwrap_or(ready);
                let terminating = conditions.terminating.unwrap_or(false);
                for address in &endpoint.addresses {
                    if let Ok(ip) = address.parse::<IpAddr>() {
                        let at = SocketAddr::new(ip, number);
                        list.push((at, ready, serving && terminating));
                    }
                }
            }
        }
    }
    candidates
        .into_iter()
        .map(|(port, list)| {
            let any_ready = list.iter().any(|(_, ready, _)| *ready);
            let mut chosen: Vec<SocketAddr> = list
                .into_iter()
                .filter(|(_, ready, serving_terminating)| {
                    if any_ready {
                        *ready
                    } else {
                        *serving_terminating
                    }
                })
                .map(|(address, _, _)| address)
                .collect();
            chosen.sort();
            chosen.dedup();
            (port, chosen)
        })
        .collect()
}

/// The Service an EndpointSlice belongs to (its `kubernetes.io/service-name` label).
pub fn service_of(slice: &EndpointSlice) -> Option<ObjectKey> {
    let labels = slice.metadata.labels.as_ref()?;
    let name = labels.get(SERVICE_NAME_LABEL)?;
    Some(ObjectKey {
        namespace: slice.metadata.namespace.clone(),
        name: name.clone(),
    })
}

/// Every endpoint of every port as kubectl's ENDPOINTS column prints it: `ip:port,ip:port`, or
/// `<none>`.
pub fn format_endpoints(by_port: &BTreeMap<String, Vec<SocketAddr>>) -> String {
    let mut all: Vec<SocketAddr> = by_port.values().flatten().copied().collect();
    all.sort();
    all.dedup();
    format_endpoint_list(&all)
}

/// A list of endpoints as `ip:port,ip:port`, or `<none>` when it is empty.
pub fn format_endpoint_list(endpoints: &[SocketAddr]) -> String {
    if endpoints.is_empty() {
        return "<none>".to_string();
    }
    endpoints
        .iter()
        .map(SocketAddr::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service(value: serde_json::Value) -> Service {
        serde_json::from_value(value).expect("test service")
    }

    #[test]
    fn service_ports_listen_on_cluster_ip_per_tcp_port() {
        let svc = service(json!({
            "metadata": {"namespace": "default", "name": "web"},
            "spec": {"clusterIP": "127.96.0.10", "ports": [
                {"name": "http", "port": 8080},
                {"name": "dns", "port": 53, "protocol": "UDP"},
            ]}
        }));
        let ports = service_ports(&svc);
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0].name.to_string(), "default/web:http");
        assert_eq!(ports[0].cluster_addr, "127.96.0.10:8080".parse().unwrap());
        assert_eq!(ports[0].affinity, Affinity::None);
    }

    #[test]
    fn headless_and_unallocated_services_get_no_listener() {
        for cluster_ip in [json!("None"), json!(""), json!(null)] {
            let svc = service(json!({
                "metadata": {"namespace": "default", "name": "db"},
                "spec": {"clusterIP": cluster_ip, "ports": [{"port": 5432}]}
            }));
            assert!(service_ports(&svc).is_empty(), "clusterIP {cluster_ip}");
        }
    }

    #[test]
    fn client_ip_affinity_uses_the_configured_or_default_timeout() {
        let sticky = service(json!({
            "metadata": {"namespace": "default", "name": "web"},
            "spec": {"clusterIP": "127.96.0.10", "ports": [{"port": 80}],
                     "sessionAffinity": "ClientIP",
                     "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}}}
        }));
        let expected = Affinity::ClientIp {
            timeout: Duration::from_secs(60),
        };
        assert_eq!(service_ports(&sticky)[0].affinity, expected);
        let default = service(json!({
            "metadata": {"namespace": "default", "name": "web"},
            "spec": {"clusterIP": "127.96.0.10", "ports": [{"port": 80}],
                     "sessionAffinity": "ClientIP"}
        }));
        let expected = Affinity::ClientIp {
            timeout: DEFAULT_AFFINITY_TIMEOUT,
        };
        assert_eq!(service_ports(&default)[0].affinity, expected);
    }

    fn slice(endpoints: serde_json::Value, ports: serde_json::Value) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"namespace": "default", "name": "web-abc",
                         "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": ports,
        }))
        .expect("test slice")
    }

    fn addresses(list: &[&str]) -> Vec<SocketAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[test]
    fn ready_endpoints_of_every_slice_get_traffic_per_port() {
        let ports = json!([{"name": "http", "port": 8080}, {"name": "admin", "port": 9090}]);
        let one = slice(
            json!([
                {"addresses": ["127.244.1.3"], "conditions": {"ready": true}},
                {"addresses": ["127.244.1.9"], "conditions": {"ready": false, "serving": true, "terminating": true}},
            ]),
            ports.clone(),
        );
        // Unset conditions read as ready.
        let two = slice(json!([{"addresses": ["127.244.1.2"]}]), ports);
        let by_port = slices_by_port([&one, &two]);
        assert_eq!(
            by_port["http"],
            addresses(&["127.244.1.2:8080", "127.244.1.3:8080"])
        );
        assert_eq!(by_port["admin"].len(), 2);
        assert_eq!(
            format_endpoints(&by_port),
            "127.244.1.2:8080,127.244.1.2:9090,127.244.1.3:8080,127.244.1.3:9090"
        );
        assert_eq!(service_of(&one), Some(ObjectKey::new("default", "web")));
    }

    #[test]
    fn with_no_ready_endpoint_the_serving_terminating_ones_get_traffic() {
        let ports = json!([{"name": "http", "port": 8080}]);
        let draining = slice(
            json!([
                {"addresses": ["127.244.1.2"], "conditions": {"ready": false, "serving": true, "terminating": true}},
                {"addresses": ["127.244.1.3"], "conditions": {"ready": false, "serving": false, "terminating": true}},
                {"addresses": ["127.244.1.4"], "conditions": {"ready": false, "serving": false, "terminating": false}},
            ]),
            ports,
        );
        assert_eq!(
            slices_by_port([&draining])["http"],
            addresses(&["127.244.1.2:8080"])
        );
    }

    #[test]
    fn other_address_types_and_protocols_are_skipped() {
        let mut v6 = slice(
            json!([{"addresses": ["::1"]}]),
            json!([{"name": "http", "port": 80}]),
        );
        v6.address_type = "IPv6".into();
        let udp = slice(
            json!([{"addresses": ["127.244.1.2"]}]),
            json!([{"name": "dns", "port": 53, "protocol": "UDP"}]),
        );
        assert!(slices_by_port([&v6, &udp]).is_empty());
        assert_eq!(format_endpoints(&BTreeMap::new()), "<none>");
    }
}
