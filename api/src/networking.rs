//! networking.k8s.io/v1 Ingresses and IngressClasses: their validation, with upstream's field paths.
//!
//! Kubernetes counterpart: `pkg/apis/networking/validation/validation.go` (`ValidateIngressCreate`,
//! `ValidateIngressSpec`, `validateIngressRules`, `validateHTTPIngressPath`,
//! `validateIngressBackend`, `ValidateIngressClass`, `ValidateIngressClassUpdate`) and the
//! default-class annotation of `pkg/apis/networking/v1` (`IngressClass` docs).
//!
//! minik simplifies: the path regex checks of `ImplementationSpecific` and the TLS section's secret
//! names are not validated (minik's controller serves plain HTTP); `resource` backends are accepted
//! and stored but not routed.

use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, Ingress, IngressBackend, IngressClass, IngressRule,
};

use crate::meta::StatusCause;
use crate::status::cause;
use crate::validation::{is_dns1035_label, is_dns1123_subdomain, is_port_name};

/// The annotation that makes an IngressClass the cluster's default.
pub const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";
/// The path types an HTTP path may have.
const PATH_TYPES: [&str; 3] = ["Exact", "ImplementationSpecific", "Prefix"];

fn required(field: &str, message: &str) -> StatusCause {
    let message = if message.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {message}")
    };
    cause(field, "FieldValueRequired", message)
}

fn invalid(field: &str, value: &str, why: &str) -> StatusCause {
    cause(
        field,
        "FieldValueInvalid",
        format!("Invalid value: \"{value}\": {why}"),
    )
}

/// Whether an IngressClass is marked default (`"true"`, exactly, as upstream compares).
pub fn is_default_class(class: &IngressClass) -> bool {
    class
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// `ValidateIngressSpec`: a default backend or rules; valid hosts, paths and backends.
pub fn validate_ingress(ingress: &Ingress) -> Vec<StatusCause> {
    let Some(spec) = &ingress.spec else {
        return vec![required(
            "spec",
            "either `defaultBackend` or `rules` must be specified",
        )];
    };
    let mut causes = Vec::new();
    let rules = spec.rules.as_deref().unwrap_or_default();
    if spec.default_backend.is_none() && rules.is_empty() {
        causes.push(required(
            "spec",
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(backend) = &spec.default_backend {
        causes.extend(validate_backend(backend, "spec.defaultBackend"));
    }
    for (index, rule) in rules.iter().enumerate() {
        causes.extend(validate_rule(rule, &format!("spec.rules[{index}]")));
    }
    if let Some(class) = spec.ingress_class_name.as_deref() {
        if !is_dns1123_subdomain(class) {
            causes.push(invalid(
                "spec.ingressClassName",
                class,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'",
            ));
        }
    }
    causes
}

/// A rule's host (precise, or `*.` and a subdomain; never an IP) and its HTTP paths.
fn validate_rule(rule: &IngressRule, path: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if let Some(host) = rule.host.as_deref().filter(|h| !h.is_empty()) {
        let field = format!("{path}.host");
        if host.parse::<std::net::IpAddr>().is_ok() {
            causes.push(invalid(
                &field,
                host,
                "must be a DNS name, not an IP address",
            ));
        } else if !is_dns1123_subdomain(host.strip_prefix("*.").unwrap_or(host)) {
            causes.push(invalid(
                &field,
                host,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character; a wildcard must be the whole first label (`*.example.com`)",
            ));
        }
    }
    if let Some(http) = &rule.http {
        let field = format!("{path}.http.paths");
        if http.paths.is_empty() {
            causes.push(required(&field, ""));
        }
        for (index, p) in http.paths.iter().enumerate() {
            causes.extend(validate_path(p, &format!("{field}[{index}]")));
        }
    }
    causes
}

/// `validateHTTPIngressPath`: a supported pathType, an absolute path for Exact and Prefix.
fn validate_path(http_path: &HTTPIngressPath, path: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let field = format!("{path}.pathType");
    match http_path.path_type.as_str() {
        "" => causes.push(required(&field, "pathType must be specified")),
        kind if !PATH_TYPES.contains(&kind) => causes.push(cause(
            field,
            "FieldValueNotSupported",
            format!("Unsupported value: \"{kind}\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\""),
        )),
        _ => {}
    }
    let value = http_path.path.as_deref().unwrap_or("");
    if http_path.path_type != "ImplementationSpecific" || !value.is_empty() {
        if !value.starts_with('/') {
            causes.push(invalid(
                &format!("{path}.path"),
                value,
                "must be an absolute path",
            ));
        } else if value.contains("//") {
            causes.push(invalid(
                &format!("{path}.path"),
                value,
                "must not contain '//'",
            ));
        }
    }
    causes.extend(validate_backend(
        &http_path.backend,
        &format!("{path}.backend"),
    ));
    causes
}

/// `validateIngressBackend`: exactly one of service and resource; a service's name and port.
fn validate_backend(backend: &IngressBackend, path: &str) -> Vec<StatusCause> {
    let (service, resource) = (&backend.service, &backend.resource);
    match (service, resource) {
        (Some(_), Some(_)) => {
            return vec![cause(
                path,
                "FieldValueInvalid",
                "Invalid value: \"\": cannot set both resource and service backends",
            )]
        }
        (None, None) => {
            return vec![cause(
                path,
                "FieldValueInvalid",
                "Invalid value: \"\": resource or service backend is required",
            )]
        }
        (None, Some(_)) => return Vec::new(),
        (Some(_), None) => {}
    }
    let service = service.as_ref().expect("checked above");
    let mut causes = Vec::new();
    if service.name.is_empty() {
        causes.push(required(&format!("{path}.service.name"), ""));
    } else if !is_dns1035_label(&service.name) {
        causes.push(invalid(
            &format!("{path}.service.name"),
            &service.name,
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
        ));
    }
    let port_path = format!("{path}.service.port");
    let port = service.port.clone().unwrap_or_default();
    match (port.name.as_deref().filter(|n| !n.is_empty()), port.number) {
        (Some(_), Some(_)) => causes.push(cause(
            port_path,
            "FieldValueInvalid",
            "Invalid value: \"\": cannot set both port name & port number",
        )),
        (None, None) => causes.push(cause(
            port_path,
            "FieldValueInvalid",
            "Invalid value: \"\": port name or number is required",
        )),
        (Some(name), None) if !is_port_name(name) => causes.push(invalid(
            &format!("{port_path}.name"),
            name,
            "must be an IANA_SVC_NAME (at most 15 characters, lower case alphanumeric and '-')",
        )),
        (None, Some(number)) if !(1..=65535).contains(&number) => causes.push(cause(
            format!("{port_path}.number"),
            "FieldValueInvalid",
            format!("Invalid value: {number}: must be between 1 and 65535, inclusive"),
        )),
        _ => {}
    }
    causes
}

/// `ValidateIngressClass`: a controller, as a domain-prefixed path of at most 250 characters.
pub fn validate_ingress_class(class: &IngressClass) -> Vec<StatusCause> {
    let controller = class
        .spec
        .as_ref()
        .and_then(|s| s.controller.as_deref())
        .unwrap_or("");
    let field = "spec.controller";
    if controller.is_empty() {
        return vec![required(field, "")];
    }
    if controller.len() > 250 {
        return vec![cause(
            field,
            "FieldValueTooLong",
            "Too long: may not be more than 250 bytes",
        )];
    }
    match controller.split_once('/') {
        Some((domain, rest)) if is_dns1123_subdomain(domain) && !rest.is_empty() => Vec::new(),
        _ => vec![invalid(
            field,
            controller,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )],
    }
}

/// `ValidateIngressClassUpdate`: the controller never changes.
pub fn validate_ingress_class_update(new: &IngressClass, old: &IngressClass) -> Vec<StatusCause> {
    let controller = |c: &IngressClass| c.spec.as_ref().and_then(|s| s.controller.clone());
    if controller(new) != controller(old) {
        let value = controller(new).unwrap_or_default();
        return vec![invalid("spec.controller", &value, "field is immutable")];
    }
    Vec::new()
}

#[cfg(test)]
#[path = "networking_tests.rs"]
mod tests;
