//! Tests of `networking.rs`: which Ingresses and IngressClasses are refused, and at which field.

use super::*;
use serde_json::json;

fn ingress(spec: serde_json::Value) -> Ingress {
    serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": spec})).unwrap()
}

fn fields(causes: &[StatusCause]) -> Vec<&str> {
    causes.iter().filter_map(|c| c.field.as_deref()).collect()
}

fn rule(host: &str, path: &str, path_type: &str) -> serde_json::Value {
    json!({"host": host, "http": {"paths": [{"path": path, "pathType": path_type,
        "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}})
}

#[test]
fn a_host_and_prefix_rule_is_valid() {
    let valid = ingress(json!({"rules": [rule("foo.example.com", "/", "Prefix")]}));
    assert!(validate_ingress(&valid).is_empty());
    let wildcard = ingress(json!({"rules": [rule("*.example.com", "/api", "Exact")]}));
    assert!(validate_ingress(&wildcard).is_empty());
}

#[test]
fn an_empty_spec_needs_a_default_backend_or_rules() {
    let causes = validate_ingress(&ingress(json!({})));
    assert_eq!(fields(&causes), ["spec"]);
    assert_eq!(causes[0].reason.as_deref(), Some("FieldValueRequired"));
}

#[test]
fn bad_hosts_paths_and_types_are_reported_at_their_fields() {
    let bad = ingress(json!({"rules": [
        rule("127.0.0.1", "/", "Prefix"),
        rule("ok.example", "relative", "Prefix"),
        rule("ok.example", "/", "Regex"),
    ]}));
    assert_eq!(
        fields(&validate_ingress(&bad)),
        [
            "spec.rules[0].host",
            "spec.rules[1].http.paths[0].path",
            "spec.rules[2].http.paths[0].pathType"
        ]
    );
}

#[test]
fn a_backend_needs_one_port_form() {
    let both = ingress(json!({"defaultBackend": {"service": {"name": "web",
        "port": {"number": 80, "name": "http"}}}}));
    assert_eq!(
        fields(&validate_ingress(&both)),
        ["spec.defaultBackend.service.port"]
    );
    let out_of_range = ingress(json!({"defaultBackend": {"service": {"name": "web",
        "port": {"number": 70000}}}}));
    assert_eq!(
        fields(&validate_ingress(&out_of_range)),
        ["spec.defaultBackend.service.port.number"]
    );
}

#[test]
fn an_ingress_class_needs_a_domain_prefixed_controller_that_never_changes() {
    let class = |controller: &str| -> IngressClass {
        serde_json::from_value(json!({"metadata": {"name": "minik"},
            "spec": {"controller": controller}}))
        .unwrap()
    };
    assert!(validate_ingress_class(&class("minik.io/ingress")).is_empty());
    assert_eq!(
        fields(&validate_ingress_class(&class("nginx"))),
        ["spec.controller"]
    );
    assert_eq!(
        fields(&validate_ingress_class_update(
            &class("a.io/x"),
            &class("b.io/y")
        )),
        ["spec.controller"]
    );
}
