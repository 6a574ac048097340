//! `describe service`: kubectl's `ServiceDescriber` (`describe.go`, `describeService`), basic.

use minik_api::core::{Endpoints, Service};

use super::Lines;
use crate::printers::service::format_endpoints;

/// Writes the service's sections, with the addresses of its Endpoints.
pub fn describe(out: &mut Lines, service: &Service, endpoints: Option<&Endpoints>) {
    let spec = service.spec.clone().unwrap_or_default();
    out.field(0, "Name", service.metadata.name.clone().unwrap_or_default());
    out.field(
        0,
        "Namespace",
        service.metadata.namespace.clone().unwrap_or_default(),
    );
    out.map(0, "Labels", service.metadata.labels.as_ref());
    out.map(0, "Annotations", service.metadata.annotations.as_ref());
    let selector: Vec<String> = spec
        .selector
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    out.field(
        0,
        "Selector",
        if selector.is_empty() {
            "<none>".to_string()
        } else {
            selector.join(",")
        },
    );
    out.field(
        0,
        "Type",
        spec.type_
            .clone()
            .unwrap_or_else(|| "ClusterIP".to_string()),
    );
    out.field(
        0,
        "IP",
        spec.cluster_ip
            .clone()
            .unwrap_or_else(|| "<none>".to_string()),
    );
    for port in spec.ports.clone().unwrap_or_default() {
        let name = port
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "<unset>".to_string());
        let protocol = port.protocol.clone().unwrap_or_else(|| "TCP".to_string());
        out.field(0, "Port", format!("{name}  {}/{protocol}", port.port));
        let target = match &port.target_port {
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(p)) => {
                p.to_string()
            }
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s)) => s.clone(),
            None => port.port.to_string(),
        };
        out.field(0, "TargetPort", format!("{target}/{protocol}"));
        if let Some(node_port) = port.node_port {
            out.field(0, "NodePort", format!("{name}  {node_port}/{protocol}"));
        }
    }
    out.field(
        0,
        "Endpoints",
        endpoints
            .map(format_endpoints)
            .unwrap_or_else(|| "<none>".to_string()),
    );
    out.field(
        0,
        "Session Affinity",
        spec.session_affinity
            .clone()
            .unwrap_or_else(|| "None".to_string()),
    );
}
