//! Unit tests of `records.rs`: each record kind, headless Services, and the negative answers.

use super::*;
use serde_json::json;

fn service(value: serde_json::Value) -> Arc<Service> {
    Arc::new(serde_json::from_value(value).unwrap())
}

fn fixtures() -> (Vec<Arc<Service>>, Vec<Arc<EndpointSlice>>) {
    let services = vec![
        service(json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"clusterIP": "127.96.3.4", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})),
        service(json!({"metadata": {"name": "db", "namespace": "shop"},
            "spec": {"clusterIP": "None", "ports": [{"name": "pg", "port": 5432}]}})),
        service(json!({"metadata": {"name": "ext", "namespace": "default"},
            "spec": {"type": "ExternalName", "externalName": "example.com"}})),
    ];
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": "db-abc", "namespace": "shop", "labels": {"kubernetes.io/service-name": "db"}},
        "addressType": "IPv4",
        "ports": [{"name": "pg", "port": 5433, "protocol": "TCP"}],
        "endpoints": [
            {"addresses": ["127.244.1.5"], "hostname": "db-0", "conditions": {"ready": true}},
            {"addresses": ["127.244.1.6"], "conditions": {}},
            {"addresses": ["127.244.1.7"], "conditions": {"ready": false}},
        ]
    }))
    .unwrap();
    (services, vec![Arc::new(slice)])
}

fn ask(name: &str, kind: RecordType) -> Answer {
    let (services, slices) = fixtures();
    let cluster = Cluster {
        services: &services,
        slices: &slices,
    };
    let zone = Name::from_str("cluster.local.").unwrap();
    answer(&zone, &Name::from_str(name).unwrap(), kind, &cluster)
}

fn data(records: &[Record]) -> Vec<String> {
    records.iter().map(|r| r.data().to_string()).collect()
}

#[test]
fn a_service_is_its_cluster_ip_whatever_the_case() {
    let answer = ask("Web.Default.svc.cluster.local.", RecordType::A);
    assert_eq!(answer.code, ResponseCode::NoError);
    assert_eq!(data(&answer.answers), ["127.96.3.4"]);
    assert_eq!(answer.answers[0].ttl(), TTL);
}

#[test]
fn a_headless_service_is_its_ready_endpoints() {
    let answer = ask("db.shop.svc.cluster.local.", RecordType::A);
    assert_eq!(data(&answer.answers), ["127.244.1.5", "127.244.1.6"]);
}

#[test]
fn a_headless_endpoint_answers_by_hostname_and_by_dashed_address() {
    let by_name = ask("db-0.db.shop.svc.cluster.local.", RecordType::A);
    assert_eq!(data(&by_name.answers), ["127.244.1.5"]);
    let by_ip = ask("127-244-1-6.db.shop.svc.cluster.local.", RecordType::A);
    assert_eq!(data(&by_ip.answers), ["127.244.1.6"]);
    // Not ready: not published.
    let not_ready = ask("127-244-1-7.db.shop.svc.cluster.local.", RecordType::A);
    assert_eq!(not_ready.code, ResponseCode::NXDomain);
}

#[test]
fn srv_names_the_service_port_or_each_endpoint() {
    let web = ask("_http._tcp.web.default.svc.cluster.local.", RecordType::SRV);
    assert_eq!(
        data(&web.answers),
        ["0 100 80 web.default.svc.cluster.local."]
    );
    assert_eq!(data(&web.additionals), ["127.96.3.4"]);
    let db = ask("_pg._tcp.db.shop.svc.cluster.local.", RecordType::SRV);
    assert_eq!(
        data(&db.answers),
        [
            "0 50 5433 db-0.db.shop.svc.cluster.local.",
            "0 50 5433 127-244-1-6.db.shop.svc.cluster.local."
        ]
    );
    assert_eq!(data(&db.additionals), ["127.244.1.5", "127.244.1.6"]);
    let udp = ask("_http._udp.web.default.svc.cluster.local.", RecordType::SRV);
    assert!(udp.answers.is_empty() && udp.code == ResponseCode::NoError);
}

#[test]
fn external_name_is_a_cname_and_pods_are_their_dashed_address() {
    let ext = ask("ext.default.svc.cluster.local.", RecordType::A);
    assert_eq!(data(&ext.answers), ["example.com."]);
    let pod = ask("127-244-2-9.default.pod.cluster.local.", RecordType::A);
    assert_eq!(data(&pod.answers), ["127.244.2.9"]);
}

#[test]
fn unknown_names_are_nxdomain_other_types_nodata_other_zones_refused() {
    let missing = ask("nope.default.svc.cluster.local.", RecordType::A);
    assert_eq!(missing.code, ResponseCode::NXDomain);
    assert!(missing.soa.is_some());
    let aaaa = ask("web.default.svc.cluster.local.", RecordType::AAAA);
    assert_eq!((aaaa.code, aaaa.answers.len()), (ResponseCode::NoError, 0));
    assert!(aaaa.soa.is_some());
    let outside = ask("example.com.", RecordType::A);
    assert_eq!(outside.code, ResponseCode::Refused);
    let empty_ns = ask("nobody.svc.cluster.local.", RecordType::A);
    assert_eq!(empty_ns.code, ResponseCode::NXDomain);
}
