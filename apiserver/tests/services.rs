//! Service cluster IPs: allocated from 127.96.0.0/16, unique, kept on update, freed on delete.

mod common;

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::Arc;

use common::{service, TestServer};
use serde_json::json;

const SERVICES: &str = "/api/v1/namespaces/default/services";

#[tokio::test]
async fn concurrent_creates_get_unique_cluster_ips_in_range() {
    let server = Arc::new(TestServer::start().await);
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let server = server.clone();
            tokio::spawn(async move { server.post(SERVICES, &service(&format!("svc-{i}"))).await })
        })
        .collect();
    let mut ips = BTreeSet::new();
    for task in tasks {
        let (code, created) = task.await.expect("create");
        assert_eq!(code, 201, "{created}");
        let ip: Ipv4Addr = created["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(created["spec"]["clusterIPs"], json!([ip.to_string()]));
        assert_eq!(&ip.octets()[..2], &[127, 96]);
        assert!(ips.insert(ip), "{ip} handed out twice");
    }
    let (_, one) = server.get(&format!("{SERVICES}/svc-0")).await;
    assert_eq!(one["spec"]["type"], "ClusterIP");
    assert_eq!(one["spec"]["sessionAffinity"], "None");
    assert_eq!(one["spec"]["ports"][0]["protocol"], "TCP");
}

#[tokio::test]
async fn requested_headless_and_taken_addresses() {
    let server = TestServer::start().await;
    let mut fixed = service("fixed");
    fixed["spec"]["clusterIP"] = json!("127.96.7.7");
    let (code, created) = server.post(SERVICES, &fixed).await;
    assert_eq!(
        (code, created["spec"]["clusterIP"].as_str()),
        (201, Some("127.96.7.7"))
    );
    let mut clash = service("clash");
    clash["spec"]["clusterIP"] = json!("127.96.7.7");
    let (code, status) = server.post(SERVICES, &clash).await;
    assert_eq!(
        (code, status["details"]["causes"][0]["field"].as_str()),
        (422, Some("spec.clusterIPs"))
    );
    let mut outside = service("outside");
    outside["spec"]["clusterIP"] = json!("10.0.0.1");
    assert_eq!(server.post(SERVICES, &outside).await.0, 422);
    let mut headless = service("headless");
    headless["spec"]["clusterIP"] = json!("None");
    let (code, created) = server.post(SERVICES, &headless).await;
    assert_eq!(
        (code, created["spec"]["clusterIP"].as_str()),
        (201, Some("None"))
    );

    // Freed on delete: the same address can be requested again.
    assert_eq!(
        server.delete(&format!("{SERVICES}/fixed"), None).await.0,
        200
    );
    assert_eq!(server.post(SERVICES, &clash).await.0, 201);
    server.stop().await;
}

#[tokio::test]
async fn updates_keep_the_cluster_ip_and_may_not_change_it() {
    let server = TestServer::start().await;
    let (_, created) = server.post(SERVICES, &service("web")).await;
    let mut without_ip = service("web");
    without_ip["spec"]["ports"][0]["port"] = json!(81);
    let (code, updated) = server.put(&format!("{SERVICES}/web"), &without_ip).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["clusterIP"], created["spec"]["clusterIP"]);
    assert_eq!(updated["spec"]["ports"][0]["targetPort"], 8080);
    let mut moved = updated.clone();
    moved["spec"]["clusterIP"] = json!("127.96.200.200");
    let (code, status) = server.put(&format!("{SERVICES}/web"), &moved).await;
    assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")));
    server.stop().await;
}
