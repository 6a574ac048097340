//! The EndpointSlice cache: every slice the proxy was given, by Service, merged into the endpoints
//! each service port sends traffic to.
//!
//! Kubernetes counterpart: `pkg/proxy/endpointslicecache.go` (`EndpointSliceCache`: slices kept
//! per Service and merged when the proxier syncs) and `CategorizeEndpoints` in
//! `pkg/proxy/topology.go` (which endpoints get traffic). A Service may have several slices (at
//! most 100 endpoints each, one port set each), so no single slice says what a port routes to.
//!
//! The rule ([`slices_by_port`], docs/kubernetes-rules.md#e4): per port, the **ready** endpoints
//! get traffic; only when none is ready do the endpoints that are **serving and terminating** get
//! it, so a Service whose every pod is shutting down keeps answering while those pods still can.
//! Unset conditions read as upstream reads them: ready, serving = ready, not terminating.
//!
//! No I/O: the proxier owns one cache and asks it which Services a change touched; tested below.
//!
//! minik simplifies: IPv4 slices only, TCP ports only, no topology hints or traffic policies.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};

use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::ObjectKey;

/// The label tying an EndpointSlice to its Service (`discovery.LabelServiceName`).
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Every EndpointSlice known, by Service, then by slice name.
#[derive(Debug, Default)]
pub struct SliceCache {
    by_service: HashMap<ObjectKey, BTreeMap<String, EndpointSlice>>,
}

impl SliceCache {
    /// Files slices (added or changed); returns the Services whose endpoints may have changed.
    pub fn update(&mut self, slices: &[EndpointSlice]) -> BTreeSet<ObjectKey> {
        let mut touched = BTreeSet::new();
        for slice in slices {
            touched.extend(self.delete(slice));
            let (Some(service), Some(name)) = (service_of(slice), slice.metadata.name.clone())
            else {
                continue;
            };
            let service_slices = self.by_service.entry(service.clone()).or_default();
            service_slices.insert(name, slice.clone());
            touched.insert(service);
        }
        touched
    }

    /// Forgets a slice (wherever it was filed); returns the Service it was under.
    pub fn delete(&mut self, slice: &EndpointSlice) -> Option<ObjectKey> {
        let name = slice.metadata.name.as_deref()?;
        let service = self
            .by_service
            .iter()
            .find(|(service, slices)| {
                service.namespace == slice.metadata.namespace && slices.contains_key(name)
            })
            .map(|(service, _)| service.clone())?;
        if let Some(slices) = self.by_service.get_mut(&service) {
            slices.remove(name);
            if slices.is_empty() {
                self.by_service.remove(&service);
            }
        }
        Some(service)
    }

    /// Replaces every slice (a relist); returns the Services known before or after.
    pub fn replace_all(&mut self, all: &[EndpointSlice]) -> BTreeSet<ObjectKey> {
        let mut touched: BTreeSet<ObjectKey> = self.by_service.keys().cloned().collect();
        self.by_service.clear();
        touched.extend(self.update(all));
        touched
    }

    /// The endpoints each port of `service` routes to, merged from its slices.
    pub fn endpoints(&self, service: &ObjectKey) -> BTreeMap<String, Vec<SocketAddr>> {
        self.by_service
            .get(service)
            .map(|slices| slices_by_port(slices.values()))
            .unwrap_or_default()
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    }

    #[test]
    fn the_cache_merges_a_services_slices_and_says_which_services_changed() {
        let ports = json!([{"name": "http", "port": 8080}]);
        let mut a = slice(json!([{"addresses": ["127.244.1.2"]}]), ports.clone());
        a.metadata.name = Some("web-a".into());
        let mut b = slice(json!([{"addresses": ["127.244.1.3"]}]), ports);
        b.metadata.name = Some("web-b".into());
        let web = ObjectKey::new("default", "web");
        let mut cache = SliceCache::default();
        assert_eq!(
            cache.update(&[a.clone(), b.clone()]),
            BTreeSet::from([web.clone()])
        );
        assert_eq!(cache.endpoints(&web)["http"].len(), 2);
        assert_eq!(cache.delete(&a), Some(web.clone()));
        assert_eq!(
            cache.endpoints(&web)["http"],
            addresses(&["127.244.1.3:8080"])
        );
        assert_eq!(cache.replace_all(&[]), BTreeSet::from([web.clone()]));
        assert!(cache.endpoints(&web).is_empty());
    }
}
