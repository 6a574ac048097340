//! Tests of `routes.rs`: host and path precedence, the default backend, 404, endpoints per port.

use super::*;
use serde_json::json;

fn ingress(name: &str, created: &str, spec: serde_json::Value) -> Arc<Ingress> {
    Arc::new(
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default",
            "creationTimestamp": created}, "spec": spec}))
        .unwrap(),
    )
}

fn path(path: &str, kind: &str, service: &str) -> serde_json::Value {
    json!({"path": path, "pathType": kind,
           "backend": {"service": {"name": service, "port": {"number": 80}}}})
}

fn service(name: &str) -> Arc<Service> {
    Arc::new(
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}))
        .unwrap(),
    )
}

fn slice(service: &str, ip: &str) -> Arc<EndpointSlice> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("{service}-x"), "namespace": "default",
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}]}))
        .unwrap(),
    )
}

fn table(ingresses: &[Arc<Ingress>]) -> RouteTable {
    let services: Vec<_> = ["api", "web", "docs", "fallback"].map(service).to_vec();
    let slices = vec![slice("api", "127.244.1.2"), slice("web", "127.244.1.3")];
    compute(&Inputs {
        ingresses,
        services: &services,
        slices: &slices,
    })
}

fn target(table: &RouteTable, host: &str, path: &str) -> String {
    match table.route(host, path) {
        Decision::Backend(b) => b.service.name.clone(),
        Decision::NotFound => "404".into(),
    }
}

#[test]
fn hosts_pick_their_server_and_the_longest_path_wins() {
    let t = table(&[ingress(
        "a",
        "2026-01-01T00:00:00Z",
        json!({"rules": [
            {"host": "shop.example", "http": {"paths": [
                path("/", "Prefix", "web"), path("/api", "Prefix", "api"),
                path("/api/v1", "Exact", "docs")]}},
            {"host": "*.example", "http": {"paths": [path("/", "ImplementationSpecific", "docs")]}},
        ]}),
    )]);
    assert_eq!(target(&t, "shop.example", "/"), "web");
    assert_eq!(target(&t, "SHOP.example", "/api/orders"), "api");
    assert_eq!(target(&t, "shop.example", "/api"), "api");
    assert_eq!(target(&t, "shop.example", "/api/v1"), "docs");
    assert_eq!(target(&t, "shop.example", "/apiary"), "web");
    assert_eq!(target(&t, "blog.example", "/x"), "docs");
    // A wildcard matches one label only, and a host without server with no catch-all: 404.
    assert_eq!(target(&t, "a.b.example", "/x"), "404");
    assert_eq!(target(&t, "other.test", "/"), "404");
}

#[test]
fn exact_paths_match_only_themselves_and_beat_prefixes_of_equal_length() {
    let t = table(&[ingress(
        "a",
        "2026-01-01T00:00:00Z",
        json!({"rules": [{"http": {"paths": [
        path("/foo", "Prefix", "web"), path("/foo", "Exact", "api")]}}]}),
    )]);
    assert_eq!(target(&t, "any", "/foo"), "api");
    assert_eq!(target(&t, "any", "/foo/"), "web");
    assert_eq!(target(&t, "any", "/bar"), "404");
}

#[test]
fn the_default_backend_takes_what_no_rule_matches() {
    let t = table(&[
        ingress(
            "rules",
            "2026-01-01T00:00:00Z",
            json!({"rules": [{"host": "shop.example",
            "http": {"paths": [path("/api", "Prefix", "api")]}}]}),
        ),
        ingress(
            "fallback",
            "2026-01-02T00:00:00Z",
            json!({"defaultBackend":
            {"service": {"name": "fallback", "port": {"name": "http"}}}}),
        ),
    ]);
    assert_eq!(target(&t, "shop.example", "/other"), "fallback");
    assert_eq!(target(&t, "unknown.example", "/"), "fallback");
    assert_eq!(target(&t, "shop.example", "/api"), "api");
}

#[test]
fn the_oldest_ingress_keeps_a_contested_path() {
    let newer = ingress(
        "b",
        "2026-01-02T00:00:00Z",
        json!({"rules": [{"http": {"paths": [
        path("/", "Prefix", "api")]}}]}),
    );
    let older = ingress(
        "a",
        "2026-01-01T00:00:00Z",
        json!({"rules": [{"http": {"paths": [
        path("/", "Prefix", "web")]}}]}),
    );
    assert_eq!(target(&table(&[newer, older]), "x", "/"), "web");
}

#[test]
fn backends_carry_the_ready_endpoints_of_their_service_port() {
    let t = table(&[ingress(
        "a",
        "2026-01-01T00:00:00Z",
        json!({"rules": [{"http": {"paths": [
        path("/", "Prefix", "web"), path("/docs", "Prefix", "docs")]}}]}),
    )]);
    let Decision::Backend(web) = t.route("x", "/") else {
        panic!("no backend")
    };
    assert_eq!(web.endpoints, ["127.244.1.3:8080".parse().unwrap()]);
    // A Service without slices routes, but has no endpoint (a 503 at serving time).
    let Decision::Backend(docs) = t.route("x", "/docs") else {
        panic!("no backend")
    };
    assert!(docs.endpoints.is_empty());
    assert!(docs.rotation().is_empty());
}

#[test]
fn round_robin_starts_with_the_next_endpoint_each_time() {
    let backend = Backend {
        service: ObjectKey::new("default", "web"),
        port: "80".into(),
        endpoints: vec![
            "127.0.0.2:1".parse().unwrap(),
            "127.0.0.3:1".parse().unwrap(),
        ],
        next: AtomicUsize::new(0),
    };
    assert_eq!(backend.rotation()[0], backend.endpoints[0]);
    assert_eq!(backend.rotation()[0], backend.endpoints[1]);
    assert_eq!(backend.rotation()[0], backend.endpoints[0]);
}
