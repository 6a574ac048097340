//! Node ports (issue 17): a NodePort or LoadBalancer Service is also served on the node's address
//! at its `nodePort`, routed like its cluster IP; listeners follow the Service's changes, and a
//! node port that cannot be opened is reported, never fatal.

use std::net::SocketAddr;

use minik_api::core::Service;
use minik_proxy::proxier::ProxierConfig;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};

use crate::support::*;

/// A Service of `type_` with one port `http` and, if given, its node port.
fn typed(name: &str, cluster_ip: &str, type_: &str, node_port: Option<u16>) -> Service {
    serde_json::from_value(json!({
        "metadata": {"namespace": "default", "name": name, "uid": format!("uid-{name}")},
        "spec": {"type": type_, "clusterIP": cluster_ip, "ports": [
            {"name": "http", "port": 18080, "targetPort": 8080, "nodePort": node_port}]}
    }))
    .expect("service fixture")
}

/// A harness whose node address is `node` (each test its own, so ports never collide).
fn on_node(node: &str) -> Harness {
    Harness::with_config(ProxierConfig {
        node_address: node.parse().expect("node address"),
        ..ProxierConfig::default()
    })
}

/// Waits until nothing listens on `address` any more (the accept loop drops its socket a moment
/// after its token fires).
async fn refused(address: SocketAddr) -> bool {
    tokio::time::timeout(PATIENCE, async {
        while TcpStream::connect(address).await.is_ok() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .is_ok()
}

/// The node port reaches the same backend as the cluster IP, and moves and closes with the
/// Service: another node port, type ClusterIP, deletion.
#[tokio::test]
async fn a_node_port_routes_like_the_cluster_ip_and_follows_the_service() {
    let backend = Backend::start("127.244.9.91").await;
    let mut harness = on_node("127.33.0.1");
    let service = typed("np", "127.96.250.20", "NodePort", Some(30080));
    harness.proxier.on_service_update(&service);
    harness
        .proxier
        .on_slices_update(&slices("np", &[backend.address]));
    let cluster = harness.state.wait_for_listener(&port_name("np")).await;
    let node: SocketAddr = "127.33.0.1:30080".parse().unwrap();
    let expected = Some(format!("hello from {}", backend.address));
    assert_eq!(greeting(cluster).await, expected);
    assert_eq!(greeting(node).await, expected, "the node port routes too");
    let info = &harness.state.proxies()["default/np:http"];
    assert_eq!(info.node_address, Some(node));
    // Both addresses share the port's counters.
    assert_eq!(
        harness.state.metrics.snapshot()[&port_name("np")].connections,
        2
    );

    // Another node port: the old one closes, the new one serves.
    let moved = typed("np", "127.96.250.20", "NodePort", Some(30081));
    harness.proxier.on_service_update(&moved);
    let node2: SocketAddr = "127.33.0.1:30081".parse().unwrap();
    assert_eq!(greeting(node2).await, expected);
    assert!(refused(node).await, "the old node port was closed");

    // Back to ClusterIP: no node port, the cluster IP still serves.
    let plain = typed("np", "127.96.250.20", "ClusterIP", None);
    harness.proxier.on_service_update(&plain);
    assert!(refused(node2).await, "ClusterIP has no node port");
    assert_eq!(greeting(cluster).await, expected);
    assert_eq!(
        harness.state.proxies()["default/np:http"].node_address,
        None
    );

    // A LoadBalancer Service has node ports too; deleting it closes both listeners.
    let balanced = typed("np", "127.96.250.20", "LoadBalancer", Some(30082));
    harness.proxier.on_service_update(&balanced);
    let node3: SocketAddr = "127.33.0.1:30082".parse().unwrap();
    assert_eq!(greeting(node3).await, expected);
    harness
        .proxier
        .on_service_delete(&minik_api::ObjectKey::new("default", "np"));
    assert!(refused(node3).await, "deleted with its Service");
    assert!(refused(cluster).await);
}

/// A node port held by another process is reported (a problem for the Warning Event) and the
/// cluster IP keeps serving; once it is free, the Service's next change opens it.
#[tokio::test]
async fn a_taken_node_port_is_reported_and_retried_not_fatal() {
    let backend = Backend::start("127.244.9.92").await;
    let node: SocketAddr = "127.33.0.2:30090".parse().unwrap();
    let squatter = TcpListener::bind(node).await.expect("occupy the node port");
    let mut harness = on_node("127.33.0.2");
    let mut problems = harness.state.subscribe_problems();
    let service = typed("busy", "127.96.250.21", "NodePort", Some(30090));
    harness.proxier.on_service_update(&service);
    harness
        .proxier
        .on_slices_update(&slices("busy", &[backend.address]));
    let problem = problems.try_recv().expect("the conflict was reported");
    assert_eq!(problem.service, "default/busy");
    assert!(
        problem.message.contains("127.33.0.2:30090"),
        "{}",
        problem.message
    );
    let cluster = harness.state.wait_for_listener(&port_name("busy")).await;
    let expected = Some(format!("hello from {}", backend.address));
    assert_eq!(
        greeting(cluster).await,
        expected,
        "the cluster IP still serves"
    );
    assert_eq!(
        harness.state.proxies()["default/busy:http"].node_address,
        None
    );

    drop(squatter);
    harness.proxier.on_service_update(&service);
    assert_eq!(greeting(node).await, expected, "opened on the next change");
}
