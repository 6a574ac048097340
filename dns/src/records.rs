//! The answer to one question, computed from the Services and EndpointSlices. Pure.
//!
//! Kubernetes counterpart: the records of the DNS specification
//! (`kubernetes/dns:docs/specification.md`) as CoreDNS's `kubernetes` plugin serves them
//! (`coredns/coredns:plugin/kubernetes/kubernetes.go`, `Records`), with its default TTL of 5 s:
//!
//! - `svc.ns.svc.ZONE` A: the cluster IP; for a headless Service, one A per ready endpoint
//!   (every endpoint with `publishNotReadyAddresses`); an ExternalName Service is a CNAME;
//! - `host.svc.ns.svc.ZONE` A: the headless endpoint whose `hostname` is `host` (a pod with
//!   `hostname` and `subdomain: svc`), or whose address is `host` with dots as dashes;
//! - `_port._proto.svc.ns.svc.ZONE` SRV: one per named port (per endpoint when headless), the
//!   targets' A records in the additional section;
//! - `a-b-c-d.ns.pod.ZONE` A: `a.b.c.d` (CoreDNS's `pods insecure`);
//! - any other name in the zone is NXDOMAIN, an existing name asked for another type (AAAA) is
//!   NOERROR with no answer, both with the zone's SOA; a name outside the zone is REFUSED: this
//!   server forwards nothing.
//!
//! minik simplifies: no PTR records, no wildcard queries, IPv4 only.

use std::net::Ipv4Addr;
use std::str::FromStr;
use std::sync::Arc;

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::rdata::{A, CNAME, SOA, SRV};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};

/// CoreDNS's `kubernetes` plugin default TTL.
pub const TTL: u32 = 5;

/// The label that ties an EndpointSlice to its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// What the server knows: the Services and EndpointSlices of the whole cluster.
pub struct Cluster<'a> {
    pub services: &'a [Arc<Service>],
    pub slices: &'a [Arc<EndpointSlice>],
}

/// A response: its code, the answer section and the additional section (the SOA goes to the
/// authority section whenever there is no answer).
#[derive(Debug, PartialEq)]
pub struct Answer {
    pub code: ResponseCode,
    pub answers: Vec<Record>,
    pub additionals: Vec<Record>,
    pub soa: Option<Record>,
}

impl Answer {
    fn refused() -> Answer {
        Answer {
            code: ResponseCode::Refused,
            answers: Vec::new(),
            additionals: Vec::new(),
            soa: None,
        }
    }
}

/// The answer to `name`/`kind` in `zone` (e.g. `cluster.local.`).
pub fn answer(zone: &Name, name: &Name, kind: RecordType, cluster: &Cluster) -> Answer {
    let name = name.to_lowercase();
    if !zone.zone_of(&name) {
        return Answer::refused();
    }
    let labels: Vec<String> = name
        .iter()
        .take(name.num_labels().saturating_sub(zone.num_labels()) as usize)
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let found = match labels.as_slice() {
        [port, proto, svc, ns, "svc"] if port.starts_with('_') && proto.starts_with('_') => {
            let port = (&port[1..], &proto[1..]);
            find_service(cluster, ns, svc).map(|s| srv(zone, &name, s, port, cluster))
        }
        [host, svc, ns, "svc"] => find_service(cluster, ns, svc)
            .filter(|s| is_headless(s))
            .and_then(|s| endpoint_by_host(cluster, s, host))
            .map(|ip| vec![a(&name, ip)]),
        [svc, ns, "svc"] => find_service(cluster, ns, svc).map(|s| service_a(&name, s, cluster)),
        [dashed, _ns, "pod"] => undash(dashed).map(|ip| vec![a(&name, ip)]),
        [ns, "svc"] => cluster
            .services
            .iter()
            .any(|s| s.metadata.namespace.as_deref() == Some(*ns))
            .then(Vec::new),
        [] | ["svc"] | ["pod"] | [_, "pod"] => Some(Vec::new()),
        _ => None,
    };
    let soa = Some(soa(zone));
    let Some(records) = found else {
        return Answer {
            code: ResponseCode::NXDomain,
            answers: Vec::new(),
            additionals: Vec::new(),
            soa,
        };
    };
    let (mut answers, mut additionals) = (Vec::new(), Vec::new());
    for record in records {
        // A CNAME answers every type; SRV's targets travel in the additional section.
        let wanted = record.record_type() == kind
            || record.record_type() == RecordType::CNAME
            || kind == RecordType::ANY;
        if wanted {
            answers.push(record);
        } else if kind == RecordType::SRV && record.record_type() == RecordType::A {
            additionals.push(record);
        }
    }
    let soa = answers.is_empty().then_some(soa).flatten();
    Answer {
        code: ResponseCode::NoError,
        answers,
        additionals,
        soa,
    }
}

fn find_service<'a>(cluster: &'a Cluster, ns: &str, name: &str) -> Option<&'a Service> {
    cluster.services.iter().map(Arc::as_ref).find(|s| {
        s.metadata.namespace.as_deref() == Some(ns) && s.metadata.name.as_deref() == Some(name)
    })
}

fn is_headless(service: &Service) -> bool {
    let spec = service.spec.as_ref();
    spec.and_then(|s| s.cluster_ip.as_deref()) == Some("None")
        && spec.and_then(|s| s.type_.as_deref()) != Some("ExternalName")
}

/// The Service's own records: its cluster IP, its ready endpoints (headless), or a CNAME.
fn service_a(name: &Name, service: &Service, cluster: &Cluster) -> Vec<Record> {
    let spec = service.spec.clone().unwrap_or_default();
    if spec.type_.as_deref() == Some("ExternalName") {
        let target = spec.external_name.as_deref().unwrap_or_default();
        return Name::from_str(&format!("{}.", target.trim_end_matches('.')))
            .map(|t| {
                vec![Record::from_rdata(
                    name.clone(),
                    TTL,
                    RData::CNAME(CNAME(t)),
                )]
            })
            .unwrap_or_default();
    }
    if is_headless(service) {
        return endpoints(cluster, service)
            .filter_map(|(_, e)| address(e))
            .map(|ip| a(name, ip))
            .collect();
    }
    spec.cluster_ip
        .as_deref()
        .and_then(|ip| ip.parse().ok())
        .map(|ip| vec![a(name, ip)])
        .unwrap_or_default()
}

/// SRV records for `_port._proto`: the Service itself as target, or each endpoint (headless).
fn srv(
    zone: &Name,
    name: &Name,
    service: &Service,
    port: (&str, &str),
    cluster: &Cluster,
) -> Vec<Record> {
    let (port_name, proto) = port;
    let svc = service.metadata.name.as_deref().unwrap_or_default();
    let ns = service.metadata.namespace.as_deref().unwrap_or_default();
    let base = format!("{svc}.{ns}.svc.{}", zone.to_ascii());
    let mut out = Vec::new();
    if is_headless(service) {
        let targets: Vec<(String, Ipv4Addr, i32)> = endpoints(cluster, service)
            .filter_map(|(slice, e)| {
                let ip = address(e)?;
                let number = slice.ports.iter().flatten().find(|p| {
                    p.name.as_deref().unwrap_or_default() == port_name
                        && p.protocol
                            .as_deref()
                            .unwrap_or("TCP")
                            .eq_ignore_ascii_case(proto)
                })?;
                let host = e
                    .hostname
                    .clone()
                    .unwrap_or_else(|| ip.to_string().replace('.', "-"));
                Some((format!("{host}.{base}"), ip, number.port?))
            })
            .collect();
        let weight = (100 / targets.len().max(1)) as u16;
        for (target, ip, port) in targets {
            let Ok(target) = Name::from_str(&target) else {
                continue;
            };
            out.push(srv_record(name, weight, port, &target));
            out.push(a(&target, ip));
        }
        return out;
    }
    let spec = service.spec.clone().unwrap_or_default();
    let ip: Option<Ipv4Addr> = spec.cluster_ip.as_deref().and_then(|ip| ip.parse().ok());
    let (Ok(target), Some(ip)) = (Name::from_str(&base), ip) else {
        return out;
    };
    for p in spec.ports.iter().flatten() {
        let matches = p.name.as_deref().unwrap_or_default() == port_name
            && p.protocol
                .as_deref()
                .unwrap_or("TCP")
                .eq_ignore_ascii_case(proto);
        if matches && !port_name.is_empty() {
            out.push(srv_record(name, 100, p.port, &target));
            out.push(a(&target, ip));
        }
    }
    out
}

fn srv_record(name: &Name, weight: u16, port: i32, target: &Name) -> Record {
    let srv = SRV::new(0, weight, port as u16, target.clone());
    Record::from_rdata(name.clone(), TTL, RData::SRV(srv))
}

/// The Service's endpoints a client may use: ready ones, or all with `publishNotReadyAddresses`.
fn endpoints<'a>(
    cluster: &'a Cluster,
    service: &'a Service,
) -> impl Iterator<Item = (&'a EndpointSlice, &'a Endpoint)> + 'a {
    let publish_all = service
        .spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false);
    cluster
        .slices
        .iter()
        .filter(move |slice| {
            slice.metadata.namespace == service.metadata.namespace
                && slice
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(SERVICE_NAME_LABEL))
                    == service.metadata.name.as_ref()
        })
        .flat_map(|slice| slice.endpoints.iter().map(move |e| (slice.as_ref(), e)))
        .filter(move |(_, e)| {
            // A nil `ready` means ready (discovery/v1).
            publish_all || e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true)
        })
}

fn endpoint_by_host(cluster: &Cluster, service: &Service, host: &str) -> Option<Ipv4Addr> {
    endpoints(cluster, service).find_map(|(_, e)| {
        let ip = address(e)?;
        let named = e.hostname.as_deref() == Some(host);
        (named || undash(host) == Some(ip)).then_some(ip)
    })
}

fn address(endpoint: &Endpoint) -> Option<Ipv4Addr> {
    endpoint.addresses.iter().find_map(|a| a.parse().ok())
}

/// `127-244-1-5` → 127.244.1.5.
fn undash(label: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = label.split('-').collect();
    (parts.len() == 4)
        .then(|| parts.join(".").parse().ok())
        .flatten()
}

fn a(name: &Name, ip: Ipv4Addr) -> Record {
    Record::from_rdata(name.clone(), TTL, RData::A(A(ip)))
}

/// The zone's SOA, sent with every answer that has no records (negative caching, RFC 2308).
fn soa(zone: &Name) -> Record {
    let at = |prefix: &str| {
        Name::from_str(&format!("{prefix}.{}", zone.to_ascii())).unwrap_or_else(|_| zone.clone())
    };
    let soa = SOA::new(at("ns.dns"), at("hostmaster"), 1, 7200, 1800, 86400, TTL);
    Record::from_rdata(zone.clone(), TTL, RData::SOA(soa))
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
