//! Which endpoints of a Service port get traffic, read straight from its EndpointSlices.
//!
//! Kubernetes counterpart: what ingress-nginx's `getEndpointsFromSlices`
//! (`internal/ingress/controller/endpointslices.go`) and kube-proxy's `EndpointSliceCache` do:
//! gather every slice labelled `kubernetes.io/service-name=NAME` (a Service may have several), take
//! the slice port whose name is the Service port's name, and keep the endpoints whose `ready`
//! condition holds (a missing condition counts as ready). When no endpoint is ready, the ones
//! still `serving` while `terminating` are used instead, as kube-proxy does (KEP-1669), so a
//! Service whose every pod is shutting down keeps answering while they drain.
//!
//! Pure: slices in, addresses out; the ingress controller and the load balancer both call it.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};

/// The label tying a slice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The annotation carrying when the change that produced a slice happened.
pub const TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";

/// The Service a slice belongs to (its label), if any.
pub fn service_of(slice: &EndpointSlice) -> Option<&str> {
    slice
        .metadata
        .labels
        .as_ref()?
        .get(SERVICE_NAME_LABEL)
        .map(String::as_str)
}

fn is_ready(endpoint: &Endpoint) -> bool {
    let conditions = endpoint.conditions.as_ref();
    conditions.and_then(|c| c.ready).unwrap_or(true)
}

fn is_serving_terminating(endpoint: &Endpoint) -> bool {
    let conditions = endpoint.conditions.clone().unwrap_or_default();
    conditions.serving == Some(true) && conditions.terminating == Some(true)
}

/// The addresses (`ip:port`) that get traffic for the Service port named `port_name` (`""` for
/// an unnamed one), over every slice given; sorted and without duplicates.
pub fn endpoints_for_port<'a>(
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
    port_name: &str,
) -> Vec<SocketAddr> {
    let mut ready = BTreeSet::new();
    let mut draining = BTreeSet::new();
    for slice in slices {
        if slice.address_type != "IPv4" {
            continue;
        }
        let port = slice.ports.iter().flatten().find(|p| {
            p.name.as_deref().unwrap_or("") == port_name
                && p.protocol.as_deref().unwrap_or("TCP") == "TCP"
        });
        let Some(number) = port.and_then(|p| p.port) else {
            continue;
        };
        let Ok(number) = u16::try_from(number) else {
            continue;
        };
        for endpoint in &slice.endpoints {
            // One address per endpoint is all upstream uses (`addresses[0]`).
            let Some(ip) = endpoint
                .addresses
                .first()
                .and_then(|a| a.parse::<IpAddr>().ok())
            else {
                continue;
            };
            let address = SocketAddr::new(ip, number);
            if is_ready(endpoint) {
                ready.insert(address);
            } else if is_serving_terminating(endpoint) {
                draining.insert(address);
            }
        }
    }
    let chosen = if ready.is_empty() { draining } else { ready };
    chosen.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slice(name: &str, port: &str, endpoints: serde_json::Value) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default",
                         "labels": {SERVICE_NAME_LABEL: "web"}},
            "addressType": "IPv4",
            "ports": [{"name": port, "port": 8080, "protocol": "TCP"}],
            "endpoints": endpoints,
        }))
        .unwrap()
    }

    fn ep(ip: &str, ready: Option<bool>, serving: bool, terminating: bool) -> serde_json::Value {
        json!({"addresses": [ip], "conditions": {"ready": ready, "serving": serving,
               "terminating": terminating}})
    }

    fn addresses(list: &[SocketAddr]) -> Vec<String> {
        list.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn ready_endpoints_of_every_slice_of_the_port_are_used() {
        let a = slice(
            "web-a",
            "http",
            json!([
                ep("127.244.1.2", Some(true), true, false),
                ep("127.244.1.3", None, true, false)
            ]),
        );
        let b = slice(
            "web-b",
            "http",
            json!([ep("127.244.1.4", Some(false), false, false)]),
        );
        let other = slice(
            "web-c",
            "metrics",
            json!([ep("127.244.1.5", Some(true), true, false)]),
        );
        assert_eq!(
            addresses(&endpoints_for_port([&a, &b, &other], "http")),
            ["127.244.1.2:8080", "127.244.1.3:8080"]
        );
    }

    #[test]
    fn terminating_but_serving_endpoints_are_used_only_when_none_is_ready() {
        let draining = ep("127.244.1.2", Some(false), true, true);
        let only = slice("web-a", "", json!([draining.clone()]));
        assert_eq!(
            addresses(&endpoints_for_port([&only], "")),
            ["127.244.1.2:8080"]
        );
        let mixed = slice(
            "web-a",
            "",
            json!([draining, ep("127.244.1.9", Some(true), true, false)]),
        );
        assert_eq!(
            addresses(&endpoints_for_port([&mixed], "")),
            ["127.244.1.9:8080"]
        );
    }
}
