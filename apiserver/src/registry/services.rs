//! The service strategy: defaults, validation and cluster IP allocation from 127.96.0.0/16.
//!
//! Kubernetes counterpart: `pkg/registry/core/service/strategy.go` and the IP allocator in
//! `pkg/registry/core/service/ipallocator` (a bitmap over the service CIDR, persisted in etcd,
//! repaired by a controller). minik keeps no bitmap: the allocator scans the stored Services while
//! the caller holds the allocation lock, so "free" is always read from the source of truth and an
//! address is released simply by deleting its Service. Like upstream it starts at a random offset
//! and takes the next free address, so fresh clusters do not all hand out the same IPs.
//!
//! Node ports work the same way (`pkg/registry/core/service/portallocator`): a NodePort Service,
//! and a LoadBalancer one unless `allocateLoadBalancerNodePorts: false`, gets one port of
//! 30000–32767 per service port; a port the client asks for must be in the range and free
//! (`provided port is already allocated`, 422 otherwise), and an update keeps the ports already
//! assigned. The rules are in `node_ports.rs`.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use minik_api::core::{Service, ServiceSpec, ServiceStatus};
use minik_api::defaults::default_service;
use minik_api::meta::StatusCause;
use minik_api::status;
use minik_api::validation::validate_service;
use rand::Rng;
use serde_json::Value;

use super::{typed, untyped};
use crate::error::ApiResult;
use crate::storage::Record;

use super::node_ports;

/// What the stored Services hold: their cluster IPs and node ports (read under the allocation
/// lock, so it is the truth for the write that follows).
#[derive(Clone, Debug, Default)]
pub struct Allocated {
    /// Cluster IPs taken.
    pub ips: BTreeSet<Ipv4Addr>,
    /// Node ports taken.
    pub node_ports: BTreeSet<i32>,
}

/// The cluster IPs and node ports the stored Services hold.
pub fn allocated(services: &[Record]) -> Allocated {
    Allocated {
        ips: used_ips(services),
        node_ports: node_ports::used(services.iter().map(|r| r.value.as_ref())),
    }
}

/// The first address of minik's service range, 127.96.0.0/16 (docs/architecture.md#cluster-layout).
pub const SERVICE_NET: Ipv4Addr = Ipv4Addr::new(127, 96, 0, 0);
/// Addresses in the range: 2^16.
const RANGE_SIZE: u32 = 1 << 16;

/// Whether an address lies in the service range (network and broadcast addresses excluded).
pub fn in_range(ip: Ipv4Addr) -> bool {
    let offset = u32::from(ip).wrapping_sub(u32::from(SERVICE_NET));
    offset > 0 && offset < RANGE_SIZE - 1
}

/// The cluster IPs held by the stored Services.
pub fn used_ips(services: &[Record]) -> BTreeSet<Ipv4Addr> {
    services
        .iter()
        .filter_map(|r| {
            r.value
                .get("spec")?
                .get("clusterIP")?
                .as_str()?
                .parse()
                .ok()
        })
        .collect()
}

/// The `kubernetes` Service's address, the first of the range (docs/security.md#s14).
pub const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(127, 96, 0, 1);

/// A free address: a random starting offset, then the next free one (wrapping around). The
/// `kubernetes` Service's address is never handed out at random, so deleting that Service (which
/// the apiserver re-creates) cannot let another one take it; asked for by name, it may be.
pub fn allocate(used: &BTreeSet<Ipv4Addr>, start: u32) -> Option<Ipv4Addr> {
    let usable = RANGE_SIZE - 2;
    (0..usable)
        .map(|step| Ipv4Addr::from(u32::from(SERVICE_NET) + 1 + (start + step) % usable))
        .find(|ip| !used.contains(ip) && *ip != KUBERNETES_SERVICE_IP)
}

fn ip_cause(value: &str, why: &str) -> StatusCause {
    status::cause(
        "spec.clusterIPs",
        "FieldValueInvalid",
        format!("Invalid value: []string{{\"{value}\"}}: {why}"),
    )
}

/// Picks the cluster IP for a new Service: allocated when unset, kept when it is `None` (headless)
/// or a free address of the range the client asked for.
pub fn choose_cluster_ip(
    requested: Option<&str>,
    used: &BTreeSet<Ipv4Addr>,
) -> Result<String, StatusCause> {
    match requested.filter(|r| !r.is_empty()) {
        Some("None") => Ok("None".to_string()),
        Some(text) => {
            let ip: Ipv4Addr = text
                .parse()
                .map_err(|_| ip_cause(text, "must be a valid IP address"))?;
            if !in_range(ip) {
                return Err(ip_cause(text, &format!("failed to allocate IP {text}: provided IP is not in the valid range. The range of valid IPs is {SERVICE_NET}/16")));
            }
            if used.contains(&ip) {
                return Err(ip_cause(
                    text,
                    &format!("failed to allocate IP {text}: provided IP is already allocated"),
                ));
            }
            Ok(text.to_string())
        }
        None => {
            let start = rand::rng().random_range(0..RANGE_SIZE - 2);
            let ip = allocate(used, start).ok_or_else(|| ip_cause("", "range is full"))?;
            Ok(ip.to_string())
        }
    }
}

fn name_of(service: &Service) -> String {
    service.metadata.name.clone().unwrap_or_default()
}

/// The address a new Service asks for: `clusterIP`, else `clusterIPs[0]` (upstream's
/// `normalizeClusterIPs`: a client may set either; minik serves one IPv4 family).
fn requested_ip(spec: &ServiceSpec) -> Option<&str> {
    spec.cluster_ip
        .as_deref()
        .filter(|ip| !ip.is_empty())
        .or_else(|| spec.cluster_ips.as_ref()?.first().map(String::as_str))
}

/// A new Service: defaults, validation, then its cluster IP and node ports.
pub fn prepare_create(object: Value, allocated: &Allocated) -> ApiResult<Value> {
    let mut service: Service = typed(object, "Service")?;
    default_service(&mut service);
    let mut causes = validate_service(&service);
    let spec = service.spec.get_or_insert_with(Default::default);
    if causes.is_empty() {
        causes.extend(node_ports::assign(spec, None, &allocated.node_ports));
    }
    if spec.type_.as_deref() != Some("ExternalName") && causes.is_empty() {
        match choose_cluster_ip(requested_ip(spec), &allocated.ips) {
            Ok(ip) => {
                spec.cluster_ips = Some(vec![ip.clone()]);
                spec.cluster_ip = Some(ip);
                spec.ip_families = Some(vec!["IPv4".into()]);
                spec.ip_family_policy = Some("SingleStack".into());
            }
            Err(cause) => causes.push(cause),
        }
    }
    if !causes.is_empty() {
        return Err(status::invalid("Service", &name_of(&service), causes).into());
    }
    service.status = Some(ServiceStatus {
        load_balancer: Some(Default::default()),
        ..Default::default()
    });
    untyped(&service)
}

/// An updated Service: the cluster IP is kept (an update may omit it) and may not change; node
/// ports are kept, or allocated when the update first needs them.
pub fn prepare_update(object: Value, old: &Value, allocated: &Allocated) -> ApiResult<Value> {
    let mut service: Service = typed(object, "Service")?;
    let old: Service = typed(old.clone(), "Service")?;
    default_service(&mut service);
    let mut causes = validate_service(&service);
    let old_spec = old.spec.clone().unwrap_or_default();
    let spec = service.spec.get_or_insert_with(Default::default);
    match spec.cluster_ip.as_deref().filter(|ip| !ip.is_empty()) {
        Some(ip) if Some(ip) != old_spec.cluster_ip.as_deref() => {
            let message = format!("Invalid value: \"{ip}\": may not change once set");
            causes.push(status::cause(
                "spec.clusterIPs[0]",
                "FieldValueInvalid",
                message,
            ));
        }
        _ => {
            spec.cluster_ip = old_spec.cluster_ip.clone();
            spec.cluster_ips = old_spec.cluster_ips.clone();
            spec.ip_families = old_spec.ip_families.clone();
            spec.ip_family_policy = old_spec.ip_family_policy.clone();
        }
    }
    if causes.is_empty() {
        causes.extend(node_ports::assign(
            spec,
            Some(&old_spec),
            &allocated.node_ports,
        ));
    }
    if !causes.is_empty() {
        return Err(status::invalid("Service", &name_of(&service), causes).into());
    }
    untyped(&service)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_skips_used_addresses_and_wraps() {
        let used: BTreeSet<Ipv4Addr> = [Ipv4Addr::new(127, 96, 0, 2)].into();
        assert_eq!(allocate(&used, 1), Some(Ipv4Addr::new(127, 96, 0, 3)));
        assert_eq!(
            allocate(&BTreeSet::new(), RANGE_SIZE - 3),
            Some(Ipv4Addr::new(127, 96, 255, 254))
        );
        // Wrapping around skips the kubernetes Service's address.
        assert_eq!(
            allocate(&BTreeSet::new(), RANGE_SIZE - 2),
            Some(Ipv4Addr::new(127, 96, 0, 2))
        );
    }

    #[test]
    fn cluster_ips_alone_ask_for_their_first_address() {
        let spec = |ip: Option<&str>, ips: Option<Vec<&str>>| ServiceSpec {
            cluster_ip: ip.map(String::from),
            cluster_ips: ips.map(|ips| ips.into_iter().map(String::from).collect()),
            ..Default::default()
        };
        assert_eq!(
            requested_ip(&spec(None, Some(vec!["127.96.3.3"]))),
            Some("127.96.3.3")
        );
        assert_eq!(
            requested_ip(&spec(Some(""), Some(vec!["127.96.3.3"]))),
            Some("127.96.3.3")
        );
        assert_eq!(
            requested_ip(&spec(Some("127.96.4.4"), Some(vec!["127.96.3.3"]))),
            Some("127.96.4.4")
        );
        assert_eq!(requested_ip(&spec(None, None)), None);
    }

    #[test]
    fn requested_addresses_must_be_free_and_in_range() {
        let used: BTreeSet<Ipv4Addr> = [Ipv4Addr::new(127, 96, 0, 9)].into();
        assert_eq!(
            choose_cluster_ip(Some("127.96.1.1"), &used).unwrap(),
            "127.96.1.1"
        );
        assert_eq!(choose_cluster_ip(Some("None"), &used).unwrap(), "None");
        assert!(choose_cluster_ip(Some("127.96.0.9"), &used).is_err());
        assert!(choose_cluster_ip(Some("10.0.0.1"), &used).is_err());
        assert!(choose_cluster_ip(Some("127.96.0.0"), &used).is_err());
        assert!(in_range(
            choose_cluster_ip(None, &used).unwrap().parse().unwrap()
        ));
    }
}
