//! The rows of `get ingresses` and `get ingressclasses`.
//!
//! Kubernetes counterpart: `printIngress` (with `formatHosts` and `ingressLoadBalancerStatusStringer`)
//! and `printIngressClass` in `pkg/printers/internalversion/printers.go`. HOSTS lists at most three
//! hosts, then `+ N more...`, and `*` when no rule names one; ADDRESS joins the load balancer's IPs
//! or hostnames (cut to 13 characters and `...` when longer than 16, unless wide); PORTS is `80`, or
//! `80, 443` with a TLS section.

use jiff::Timestamp;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};

use super::duration::age;

/// NAME CLASS HOSTS ADDRESS PORTS AGE.
pub fn ingress_row(ingress: &Ingress, wide: bool, now: Timestamp) -> Vec<String> {
    let spec = ingress.spec.clone().unwrap_or_default();
    let class = spec
        .ingress_class_name
        .clone()
        .unwrap_or_else(|| "<none>".to_string());
    let hosts: Vec<String> = spec
        .rules
        .iter()
        .flatten()
        .filter_map(|r| r.host.clone().filter(|h| !h.is_empty()))
        .collect();
    let ports = if spec.tls.as_ref().is_some_and(|t| !t.is_empty()) {
        "80, 443"
    } else {
        "80"
    };
    vec![
        ingress.metadata.name.clone().unwrap_or_default(),
        class,
        format_hosts(&hosts),
        address(ingress, wide),
        ports.to_string(),
        age(
            ingress.metadata.creation_timestamp.as_ref().map(|t| t.0),
            now,
        ),
    ]
}

fn format_hosts(hosts: &[String]) -> String {
    match hosts.len() {
        0 => "*".to_string(),
        1..=3 => hosts.join(","),
        n => format!("{} + {} more...", hosts[..3].join(","), n - 3),
    }
}

fn address(ingress: &Ingress, wide: bool) -> String {
    let points = ingress
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.clone())
        .unwrap_or_default();
    let text = points
        .iter()
        .filter_map(|p| p.ip.clone().or_else(|| p.hostname.clone()))
        .collect::<Vec<_>>()
        .join(",");
    if !wide && text.len() > 16 {
        format!("{}...", &text[..13])
    } else {
        text
    }
}

/// NAME CONTROLLER PARAMETERS AGE.
pub fn ingress_class_row(class: &IngressClass, now: Timestamp) -> Vec<String> {
    let spec = class.spec.clone().unwrap_or_default();
    let parameters = match spec.parameters {
        Some(p) => {
            let kind = match p.api_group.as_deref() {
                Some(group) if !group.is_empty() => format!("{}.{group}", p.kind),
                _ => p.kind.clone(),
            };
            format!("{kind}/{}", p.name)
        }
        None => "<none>".to_string(),
    };
    vec![
        class.metadata.name.clone().unwrap_or_default(),
        spec.controller.unwrap_or_default(),
        parameters,
        age(class.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hosts_ports_and_address_print_as_kubectl_does() {
        let ingress: Ingress = serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"ingressClassName": "minik", "tls": [{"hosts": ["a.example"]}],
                     "rules": [{"host": "a.example"}, {"host": "b.example"}, {}, {"host": "c.example"},
                               {"host": "d.example"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}}))
        .unwrap();
        let row = ingress_row(&ingress, false, Timestamp::now());
        assert_eq!(
            row[..5],
            [
                "web",
                "minik",
                "a.example,b.example,c.example + 1 more...",
                "127.0.0.1",
                "80, 443"
            ]
        );
        let bare: Ingress = serde_json::from_value(json!({"metadata": {"name": "x"},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}))
        .unwrap();
        assert_eq!(
            ingress_row(&bare, false, Timestamp::now())[1..5],
            ["<none>", "*", "", "80"]
        );
    }
}
