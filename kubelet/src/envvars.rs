//! Service environment variables: `{SVC}_SERVICE_HOST`, `_SERVICE_PORT`, and Docker's link
//! variables, for the services a pod can see when its container starts.
//!
//! Kubernetes counterpart: `pkg/kubelet/envvars/envvars.go` (`FromServices`) and
//! `Kubelet.getServiceEnvVarMap` in `pkg/kubelet/kubelet_pods.go`: services of the pod's
//! namespace when `enableServiceLinks` (default true), and always the `kubernetes` Service of
//! `default`; a headless Service (`clusterIP: None`) gives nothing. Pure.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;

/// Upstream's "master services": always visible, from the `default` namespace.
const MASTER_SERVICES: &[&str] = &["kubernetes"];

/// The service variables of a pod in `namespace`, from every Service the kubelet knows.
pub fn service_env(
    services: &[std::sync::Arc<Service>],
    namespace: &str,
    enable_service_links: bool,
) -> BTreeMap<String, String> {
    let mut chosen: BTreeMap<String, &Service> = BTreeMap::new();
    for service in services {
        if !ip_is_set(service) {
            continue;
        }
        let name = service.metadata.name.clone().unwrap_or_default();
        let service_ns = service.metadata.namespace.as_deref().unwrap_or_default();
        if service_ns == "default" && MASTER_SERVICES.contains(&name.as_str()) {
            chosen.entry(name).or_insert(service);
        } else if service_ns == namespace && enable_service_links {
            chosen.insert(name, service);
        }
    }
    chosen.values().flat_map(|s| from_service(s)).collect()
}

fn ip_is_set(service: &Service) -> bool {
    let ip = service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref());
    !matches!(ip, None | Some("") | Some("None"))
}

/// `makeEnvVariableName`: upper case, `-` → `_`.
fn variable_name(name: &str) -> String {
    name.replace('-', "_").to_uppercase()
}

/// `FromServices` for one Service.
fn from_service(service: &Service) -> Vec<(String, String)> {
    let Some(spec) = service.spec.as_ref() else {
        return Vec::new();
    };
    let ports = spec.ports.clone().unwrap_or_default();
    let Some(first) = ports.first() else {
        return Vec::new();
    };
    let ip = spec.cluster_ip.clone().unwrap_or_default();
    let prefix = variable_name(service.metadata.name.as_deref().unwrap_or_default());
    let mut vars = vec![
        (format!("{prefix}_SERVICE_HOST"), ip.clone()),
        (format!("{prefix}_SERVICE_PORT"), first.port.to_string()),
    ];
    for port in &ports {
        if let Some(name) = port.name.as_deref().filter(|n| !n.is_empty()) {
            vars.push((
                format!("{prefix}_SERVICE_PORT_{}", variable_name(name)),
                port.port.to_string(),
            ));
        }
    }
    // Docker's link variables; Docker special-cases the first port.
    for (index, port) in ports.iter().enumerate() {
        let protocol = port.protocol.clone().unwrap_or_else(|| "TCP".into());
        let lower = protocol.to_lowercase();
        let url = format!("{lower}://{ip}:{}", port.port);
        if index == 0 {
            vars.push((format!("{prefix}_PORT"), url.clone()));
        }
        let port_prefix = format!("{prefix}_PORT_{}_{}", port.port, protocol.to_uppercase());
        vars.push((port_prefix.clone(), url));
        vars.push((format!("{port_prefix}_PROTO"), lower));
        vars.push((format!("{port_prefix}_PORT"), port.port.to_string()));
        vars.push((format!("{port_prefix}_ADDR"), ip.clone()));
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ServicePort, ServiceSpec};
    use std::sync::Arc;

    fn service(ns: &str, name: &str, ip: &str, ports: &[(Option<&str>, i32)]) -> Arc<Service> {
        Arc::new(Service {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.into()),
                namespace: Some(ns.into()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                cluster_ip: Some(ip.into()),
                ports: Some(
                    ports
                        .iter()
                        .map(|(name, port)| ServicePort {
                            name: name.map(Into::into),
                            port: *port,
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            status: None,
        })
    }

    #[test]
    fn a_service_gives_host_port_named_ports_and_docker_links() {
        let services = [service(
            "shop",
            "redis-primary",
            "127.96.0.10",
            &[(None, 6379), (Some("metrics"), 9121)],
        )];
        let env = service_env(&services, "shop", true);
        let expected = [
            ("REDIS_PRIMARY_SERVICE_HOST", "127.96.0.10"),
            ("REDIS_PRIMARY_SERVICE_PORT", "6379"),
            ("REDIS_PRIMARY_SERVICE_PORT_METRICS", "9121"),
            ("REDIS_PRIMARY_PORT", "tcp://127.96.0.10:6379"),
            ("REDIS_PRIMARY_PORT_6379_TCP", "tcp://127.96.0.10:6379"),
            ("REDIS_PRIMARY_PORT_6379_TCP_PROTO", "tcp"),
            ("REDIS_PRIMARY_PORT_6379_TCP_PORT", "6379"),
            ("REDIS_PRIMARY_PORT_6379_TCP_ADDR", "127.96.0.10"),
            ("REDIS_PRIMARY_PORT_9121_TCP", "tcp://127.96.0.10:9121"),
        ];
        for (key, value) in expected {
            assert_eq!(env.get(key).map(String::as_str), Some(value), "{key}");
        }
        assert_eq!(env.len(), 12);
    }

    #[test]
    fn other_namespaces_headless_services_and_disabled_links_give_nothing_but_kubernetes() {
        let services = [
            service("other", "db", "127.96.0.11", &[(None, 5432)]),
            service("shop", "headless", "None", &[(None, 80)]),
            service(
                "default",
                "kubernetes",
                "127.96.0.1",
                &[(Some("https"), 443)],
            ),
            service("shop", "web", "127.96.0.12", &[(None, 80)]),
        ];
        let env = service_env(&services, "shop", false);
        assert!(env.keys().all(|k| k.starts_with("KUBERNETES_")), "{env:?}");
        assert_eq!(env["KUBERNETES_SERVICE_PORT_HTTPS"], "443");
        let env = service_env(&services, "shop", true);
        assert!(env.contains_key("WEB_SERVICE_HOST"));
        assert!(!env.contains_key("DB_SERVICE_HOST") && !env.contains_key("HEADLESS_SERVICE_HOST"));
    }
}
