//! Node ports: which Services need them, and the choice of each port (30000–32767).
//!
//! Kubernetes counterpart: `pkg/registry/core/service/portallocator` (the allocator over
//! `--service-node-port-range`) and the node-port half of `pkg/registry/core/service/storage`
//! (`allocateNodePorts`, `updateNodePorts`, `findRequestedNodePort`). As with cluster IPs, minik
//! keeps no bitmap: `used` is read from the stored Services under the allocation lock, and a port
//! is freed by deleting (or changing the type of) its Service.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;

use minik_api::core::ServiceSpec;
use minik_api::meta::StatusCause;
use minik_api::status;
use rand::Rng;
use serde_json::Value;

/// The default `--service-node-port-range`.
pub const NODE_PORT_RANGE: RangeInclusive<i32> = 30000..=32767;

/// Whether a Service of this spec gets node ports: NodePort always, LoadBalancer unless
/// `allocateLoadBalancerNodePorts: false` (upstream's default is true).
pub fn needs_node_ports(spec: &ServiceSpec) -> bool {
    match spec.type_.as_deref() {
        Some("NodePort") => true,
        Some("LoadBalancer") => spec.allocate_load_balancer_node_ports != Some(false),
        _ => false,
    }
}

/// The node ports held by stored Services (JSON, as stored).
pub fn used<'a>(services: impl Iterator<Item = &'a Value>) -> BTreeSet<i32> {
    services
        .filter_map(|s| s.pointer("/spec/ports")?.as_array())
        .flatten()
        .filter_map(|p| p.get("nodePort")?.as_i64())
        .filter_map(|p| i32::try_from(p).ok())
        .filter(|p| *p != 0)
        .collect()
}

fn cause(index: usize, port: i32, why: &str) -> StatusCause {
    status::cause(
        format!("spec.ports[{index}].nodePort"),
        "FieldValueInvalid",
        format!("Invalid value: {port}: {why}"),
    )
}

/// Fills `spec.ports[*].nodePort`: a port the client asked for is checked, a port an update
/// omits keeps its old value (same port and protocol), the others get the next free port after a
/// random start. `used` holds every stored Service's ports, this one's old ones included.
pub fn assign(
    spec: &mut ServiceSpec,
    old: Option<&ServiceSpec>,
    used: &BTreeSet<i32>,
) -> Vec<StatusCause> {
    let old_ports = old
        .map(|o| o.ports.clone().unwrap_or_default())
        .unwrap_or_default();
    let mut taken = used.clone();
    for port in &old_ports {
        if let Some(p) = port.node_port {
            taken.remove(&p);
        }
    }
    let needs = needs_node_ports(spec);
    let type_ = spec.type_.clone().unwrap_or_else(|| "ClusterIP".into());
    let ports = spec.ports.get_or_insert_with(Vec::new);
    let mut causes = Vec::new();
    for (index, port) in ports.iter_mut().enumerate() {
        let requested = port.node_port.filter(|p| *p != 0);
        let kept = old_ports
            .iter()
            .find(|o| o.port == port.port && o.protocol == port.protocol)
            .and_then(|o| o.node_port);
        if !needs {
            // A type change away from NodePort drops the ports it had (`dropTypeDependentFields`).
            match requested {
                Some(p) if Some(p) != kept => causes.push(status::cause(
                    format!("spec.ports[{index}].nodePort"),
                    "FieldValueForbidden",
                    format!("Forbidden: may not be used when `type` is '{type_}'"),
                )),
                _ => port.node_port = None,
            }
            continue;
        }
        let chosen = match requested.or(kept) {
            Some(p) if !NODE_PORT_RANGE.contains(&p) => {
                causes.push(cause(index, p, &format!("provided port is not in the valid range. The range of valid ports is {}-{}", NODE_PORT_RANGE.start(), NODE_PORT_RANGE.end())));
                continue;
            }
            Some(p) if taken.contains(&p) => {
                causes.push(cause(index, p, "provided port is already allocated"));
                continue;
            }
            Some(p) => p,
            None => match allocate(&taken, rand::rng().random_range(0..range_size())) {
                Some(p) => p,
                None => {
                    causes.push(cause(index, 0, "range is full"));
                    continue;
                }
            },
        };
        taken.insert(chosen);
        port.node_port = Some(chosen);
    }
    causes
}

fn range_size() -> i32 {
    NODE_PORT_RANGE.end() - NODE_PORT_RANGE.start() + 1
}

/// The first free port at or after `start` (an offset into the range), wrapping around.
pub fn allocate(taken: &BTreeSet<i32>, start: i32) -> Option<i32> {
    let size = range_size();
    (0..size)
        .map(|step| NODE_PORT_RANGE.start() + (start + step) % size)
        .find(|p| !taken.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_api::core::ServicePort;

    fn spec(type_: &str, node_ports: &[Option<i32>]) -> ServiceSpec {
        ServiceSpec {
            type_: Some(type_.into()),
            ports: Some(
                node_ports
                    .iter()
                    .enumerate()
                    .map(|(i, p)| ServicePort {
                        port: 80 + i as i32,
                        node_port: *p,
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    fn node_ports(spec: &ServiceSpec) -> Vec<Option<i32>> {
        spec.ports.iter().flatten().map(|p| p.node_port).collect()
    }

    #[test]
    fn allocation_skips_taken_ports_and_wraps() {
        let taken: BTreeSet<i32> = [30000].into();
        assert_eq!(allocate(&taken, 0), Some(30001));
        assert_eq!(allocate(&BTreeSet::new(), range_size() - 1), Some(32767));
        assert_eq!(allocate(&BTreeSet::new(), range_size()), Some(30000));
        let full: BTreeSet<i32> = NODE_PORT_RANGE.collect();
        assert_eq!(allocate(&full, 5), None);
    }

    #[test]
    fn node_port_and_load_balancer_services_get_a_port_per_service_port() {
        let mut node_port = spec("NodePort", &[None, Some(30080)]);
        assert!(assign(&mut node_port, None, &BTreeSet::new()).is_empty());
        let ports = node_ports(&node_port);
        assert!(NODE_PORT_RANGE.contains(&ports[0].unwrap()));
        assert_eq!(ports[1], Some(30080));
        let mut lb = spec("LoadBalancer", &[None]);
        assert!(assign(&mut lb, None, &BTreeSet::new()).is_empty());
        assert!(node_ports(&lb)[0].is_some());
        let mut no_ports = spec("LoadBalancer", &[None]);
        no_ports.allocate_load_balancer_node_ports = Some(false);
        assert!(assign(&mut no_ports, None, &BTreeSet::new()).is_empty());
        assert_eq!(node_ports(&no_ports), [None]);
    }

    #[test]
    fn a_taken_or_out_of_range_port_is_refused_at_its_field() {
        let taken: BTreeSet<i32> = [30080].into();
        let causes = assign(&mut spec("NodePort", &[Some(30080)]), None, &taken);
        assert_eq!(causes[0].field.as_deref(), Some("spec.ports[0].nodePort"));
        assert!(causes[0]
            .message
            .as_deref()
            .unwrap()
            .ends_with("provided port is already allocated"));
        let causes = assign(&mut spec("NodePort", &[Some(80)]), None, &BTreeSet::new());
        assert!(causes[0]
            .message
            .as_deref()
            .unwrap()
            .contains("not in the valid range"));
        let causes = assign(
            &mut spec("ClusterIP", &[Some(30080)]),
            None,
            &BTreeSet::new(),
        );
        assert_eq!(causes[0].reason.as_deref(), Some("FieldValueForbidden"));
    }

    #[test]
    fn an_update_keeps_its_ports_and_a_type_change_to_cluster_ip_drops_them() {
        let old = spec("NodePort", &[Some(30080)]);
        let taken: BTreeSet<i32> = [30080].into();
        let mut same = spec("NodePort", &[None]);
        assert!(assign(&mut same, Some(&old), &taken).is_empty());
        assert_eq!(node_ports(&same), [Some(30080)]);
        let mut cluster_ip = spec("ClusterIP", &[Some(30080)]);
        assert!(assign(&mut cluster_ip, Some(&old), &taken).is_empty());
        assert_eq!(node_ports(&cluster_ip), [None]);
    }
}
