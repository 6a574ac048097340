//! The rows of `get services`, `get endpoints` and `get endpointslices`.
//!
//! Kubernetes counterpart: `printService`, `printEndpoints` / `formatEndpoints` and
//! `printEndpointSlice` in `pkg/printers/internalversion/printers.go`. An Endpoints cell lists at
//! most three `ip:port` pairs, then `+ N more...`, and only ready addresses: a pod in
//! `notReadyAddresses` receives no traffic, so it is not shown. A slice lists its ports and its
//! addresses apart, ready or not, three of each at most.

use jiff::Timestamp;

use k8s_openapi::api::discovery::v1::EndpointSlice;

use crate::core::{Endpoints, Service};

use super::duration::age;

/// NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE [SELECTOR].
pub fn service_row(service: &Service, wide: bool, now: Timestamp) -> Vec<String> {
    let spec = service.spec.clone().unwrap_or_default();
    let type_ = spec
        .type_
        .clone()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "ClusterIP".to_string());
    let cluster_ip = spec
        .cluster_ip
        .clone()
        .filter(|ip| !ip.is_empty())
        .unwrap_or_else(|| "<none>".to_string());
    let mut row = vec![
        service.metadata.name.clone().unwrap_or_default(),
        type_.clone(),
        cluster_ip,
        external_ip(service, &type_),
        service_ports(service),
        age(
            service.metadata.creation_timestamp.as_ref().map(|t| t.0),
            now,
        ),
    ];
    if wide {
        let selector = spec.selector.unwrap_or_default();
        let pairs: Vec<String> = selector
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        row.push(if pairs.is_empty() {
            "<none>".to_string()
        } else {
            pairs.join(",")
        });
    }
    row
}

fn external_ip(service: &Service, type_: &str) -> String {
    let spec = service.spec.as_ref();
    let external: Vec<String> = spec
        .and_then(|s| s.external_ips.clone())
        .unwrap_or_default();
    match type_ {
        "ExternalName" => spec
            .and_then(|s| s.external_name.clone())
            .unwrap_or_else(|| "<none>".to_string()),
        "LoadBalancer" => {
            let ingress = service
                .status
                .as_ref()
                .and_then(|s| s.load_balancer.as_ref())
                .and_then(|lb| lb.ingress.as_ref());
            let mut ips: Vec<String> = ingress
                .map(|list| {
                    list.iter()
                        .filter_map(|i| i.ip.clone().or(i.hostname.clone()))
                        .collect()
                })
                .unwrap_or_default();
            ips.extend(external);
            if ips.is_empty() {
                "<pending>".to_string()
            } else {
                ips.join(",")
            }
        }
        _ if !external.is_empty() => external.join(","),
        _ => "<none>".to_string(),
    }
}

/// PORT(S): `80/TCP`, `80:30080/TCP` with a node port, joined with commas.
pub fn service_ports(service: &Service) -> String {
    let ports = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_deref())
        .unwrap_or(&[]);
    if ports.is_empty() {
        return "<none>".to_string();
    }
    let cells: Vec<String> = ports
        .iter()
        .map(|port| {
            let protocol = port.protocol.as_deref().unwrap_or("TCP");
            match port.node_port {
                Some(node_port) if node_port != 0 => {
                    format!("{}:{node_port}/{protocol}", port.port)
                }
                _ => format!("{}/{protocol}", port.port),
            }
        })
        .collect();
    cells.join(",")
}

/// NAME ENDPOINTS AGE.
pub fn endpoints_row(endpoints: &Endpoints, now: Timestamp) -> Vec<String> {
    vec![
        endpoints.metadata.name.clone().unwrap_or_default(),
        format_endpoints(endpoints),
        age(
            endpoints.metadata.creation_timestamp.as_ref().map(|t| t.0),
            now,
        ),
    ]
}

/// `127.244.1.2:8080,127.244.1.3:8080 + 1 more...`, or `<none>`.
pub fn format_endpoints(endpoints: &Endpoints) -> String {
    const MAX: usize = 3;
    let mut shown = Vec::new();
    let mut count = 0;
    for subset in endpoints.subsets.as_deref().unwrap_or(&[]) {
        let addresses = subset.addresses.as_deref().unwrap_or(&[]);
        let ports = subset.ports.as_deref().unwrap_or(&[]);
        let pairs: Vec<String> = if ports.is_empty() {
            addresses.iter().map(|address| address.ip.clone()).collect()
        } else {
            ports
                .iter()
                .flat_map(|port| {
                    addresses
                        .iter()
                        .map(move |address| format!("{}:{}", address.ip, port.port))
                })
                .collect()
        };
        for pair in pairs {
            if shown.len() < MAX {
                shown.push(pair);
            }
            count += 1;
        }
    }
    if shown.is_empty() {
        return "<none>".to_string();
    }
    let mut cell = shown.join(",");
    if count > MAX {
        cell.push_str(&format!(" + {} more...", count - MAX));
    }
    cell
}

/// NAME ADDRESSTYPE PORTS ENDPOINTS AGE.
pub fn endpoint_slice_row(slice: &EndpointSlice, now: Timestamp) -> Vec<String> {
    let ports = slice
        .ports
        .iter()
        .flatten()
        .map(|port| match (port.port, &port.name) {
            (Some(number), _) => number.to_string(),
            (None, Some(name)) => name.clone(),
            (None, None) => "*".to_string(),
        });
    let addresses = slice
        .endpoints
        .iter()
        .flat_map(|e| e.addresses.iter().cloned());
    vec![
        slice.metadata.name.clone().unwrap_or_default(),
        slice.address_type.clone(),
        list_with_more(ports),
        list_with_more(addresses),
        age(slice.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
    ]
}

/// Upstream's `listWithMoreString`: three items, `+ N more...`, or `<unset>` for none.
fn list_with_more(items: impl Iterator<Item = String>) -> String {
    const MAX: usize = 3;
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        return "<unset>".to_string();
    }
    let mut cell = items[..items.len().min(MAX)].join(",");
    if items.len() > MAX {
        cell.push_str(&format!(" + {} more...", items.len() - MAX));
    }
    cell
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-11-22T02:05:00Z".parse().unwrap()
    }

    #[test]
    fn cluster_ip_service_row_reads_as_kubectl_prints_it() {
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": "web", "creationTimestamp": "2026-11-22T02:04:00Z"},
            "spec": {"clusterIP": "127.96.0.10", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]},
        }))
        .unwrap();
        assert_eq!(
            service_row(&service, true, now()),
            [
                "web",
                "ClusterIP",
                "127.96.0.10",
                "<none>",
                "80/TCP",
                "60s",
                "app=web"
            ]
        );
    }

    #[test]
    fn node_port_and_headless_services() {
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": "np"},
            "spec": {"type": "NodePort", "clusterIP": "None", "ports": [{"port": 80, "nodePort": 30080}, {"port": 53, "protocol": "UDP"}]},
        }))
        .unwrap();
        let row = service_row(&service, false, now());
        assert_eq!(
            row[1..5],
            ["NodePort", "None", "<none>", "80:30080/TCP,53/UDP"]
        );
        assert_eq!(row[5], "<unknown>");
    }

    #[test]
    fn endpoints_show_ready_addresses_up_to_three() {
        let endpoints: Endpoints = serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "subsets": [{
                "addresses": [{"ip": "127.244.1.2"}, {"ip": "127.244.1.3"}, {"ip": "127.244.2.2"}, {"ip": "127.244.2.3"}],
                "notReadyAddresses": [{"ip": "127.244.1.9"}],
                "ports": [{"port": 8080}],
            }],
        }))
        .unwrap();
        assert_eq!(
            format_endpoints(&endpoints),
            "127.244.1.2:8080,127.244.1.3:8080,127.244.2.2:8080 + 1 more..."
        );
        let empty: Endpoints = serde_json::from_value(json!({"metadata": {"name": "web"}, "subsets": [{"notReadyAddresses": [{"ip": "127.244.1.9"}], "ports": [{"port": 8080}]}]})).unwrap();
        assert_eq!(format_endpoints(&empty), "<none>");
    }

    #[test]
    fn endpoint_slices_list_ports_and_every_address_up_to_three() {
        let slice: EndpointSlice = serde_json::from_value(json!({
            "metadata": {"name": "web", "creationTimestamp": "2026-11-22T02:04:00Z"},
            "addressType": "IPv4",
            "ports": [{"port": 8080, "name": "http"}, {"name": "metrics"}],
            "endpoints": [
                {"addresses": ["127.244.1.2"], "conditions": {"ready": true}},
                {"addresses": ["127.244.1.3"], "conditions": {"ready": false}},
                {"addresses": ["127.244.2.2"]},
                {"addresses": ["127.244.2.3"]},
            ],
        }))
        .unwrap();
        assert_eq!(
            endpoint_slice_row(&slice, now()),
            [
                "web",
                "IPv4",
                "8080,metrics",
                "127.244.1.2,127.244.1.3,127.244.2.2 + 1 more...",
                "60s"
            ]
        );
        let empty: EndpointSlice = serde_json::from_value(
            json!({"metadata": {"name": "web"}, "addressType": "IPv4", "endpoints": []}),
        )
        .unwrap();
        assert_eq!(
            endpoint_slice_row(&empty, now())[2..4],
            ["<unset>", "<unset>"]
        );
    }
}
