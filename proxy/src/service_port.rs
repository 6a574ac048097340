//! From Service objects to what the proxy acts on: one entry per service port.
//!
//! Kubernetes counterpart: `pkg/proxy/types.go` (`ServicePortName`, "namespace/name:port") and the
//! change tracker of `pkg/proxy/servicechangetracker.go`, which turns Services into per-port maps
//! before any proxier looks at them.
//!
//! [`service_ports`] is a pure function, tested below: a Service's TCP ports that need a listener
//! (`clusterIP:port`, affinity); headless services (`clusterIP: None`) get none. The endpoints of
//! each port come from the Service's EndpointSlices, merged in `slice_cache.rs`.
//!
//! minik simplifies: TCP only (UDP and SCTP ports are skipped), no external IPs. A NodePort or
//! LoadBalancer Service's `nodePort` (allocated by the apiserver) is carried along so the proxier
//! can listen on the node's address too (`node_port.rs`).

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use minik_api::core::Service;
use minik_api::ObjectKey;

use crate::load_balancer::{Affinity, DEFAULT_AFFINITY_TIMEOUT};

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
    /// `spec.ports[].nodePort` of a NodePort or LoadBalancer Service: the proxy also listens on
    /// the node's address at this port.
    pub node_port: Option<u16>,
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
    // Upstream serves `nodePort` for type NodePort and LoadBalancer alike (a LoadBalancer Service
    // with `allocateLoadBalancerNodePorts: false` has none, so it gets no node listener).
    let serves_node_ports = matches!(spec.type_.as_deref(), Some("NodePort" | "LoadBalancer"));
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
                node_port: port
                    .node_port
                    .filter(|_| serves_node_ports)
                    .and_then(|n| u16::try_from(n).ok())
                    .filter(|n| *n > 0),
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
    fn node_ports_are_served_for_node_port_and_load_balancer_services_only() {
        let typed = |type_: &str| {
            service(json!({
                "metadata": {"namespace": "default", "name": "web"},
                "spec": {"type": type_, "clusterIP": "127.96.0.10", "ports": [
                    {"name": "http", "port": 80, "nodePort": 30080},
                    {"name": "none", "port": 81},
                ]}
            }))
        };
        for type_ in ["NodePort", "LoadBalancer"] {
            let ports = service_ports(&typed(type_));
            assert_eq!(ports[0].node_port, Some(30080), "{type_}");
            assert_eq!(ports[1].node_port, None, "{type_}: a port without nodePort");
        }
        // A ClusterIP Service carrying a stale nodePort (upstream clears it) is never served.
        assert_eq!(service_ports(&typed("ClusterIP"))[0].node_port, None);
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

    #[test]
    fn endpoint_lists_format_as_kubectl_prints_them() {
        let by_port = BTreeMap::from([
            (
                "http".to_string(),
                vec!["127.244.1.3:8080".parse().unwrap()],
            ),
            (
                "admin".to_string(),
                vec!["127.244.1.2:9090".parse().unwrap()],
            ),
        ]);
        assert_eq!(
            format_endpoints(&by_port),
            "127.244.1.2:9090,127.244.1.3:8080"
        );
        assert_eq!(format_endpoints(&BTreeMap::new()), "<none>");
    }
}
