//! The proxy's HTTP endpoints, served on a real socket.

use minik_proxy::http;
use tokio::net::TcpListener;

use crate::support::*;

/// `/metrics` has the per-port counters, `/proxies` the listen address, `/applied` the changes.
#[tokio::test]
async fn metrics_proxies_and_applied_are_served() {
    let backend = Backend::start("127.244.9.51").await;
    let mut harness = Harness::new();
    harness
        .proxier
        .on_service_update(&service("seen", "127.96.250.21", 18080));
    harness
        .proxier
        .on_slices_update(&slices("seen", &[backend.address]));
    let listen = harness.state.wait_for_listener(&port_name("seen")).await;
    assert!(greeting(listen).await.is_some());

    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind metrics");
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(http::serve(
        listener,
        harness.state.clone(),
        harness.shutdown.child_token(),
    ));
    let client = reqwest::Client::new();

    let metrics = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = "minik_proxy_connections_total{service=\"default/seen\",port=\"http\"} 1";
    assert!(metrics.lines().any(|l| l == line), "{metrics}");

    let proxies: serde_json::Value = client
        .get(format!("{base}/proxies"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let entry = &proxies["default/seen:http"];
    assert_eq!(entry["listenAddress"], "127.96.250.21:18080");
    assert_eq!(entry["fallback"], false);

    let applied: serde_json::Value = client
        .get(format!("{base}/applied"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(applied[0]["service"], "default/seen");
    assert_eq!(applied[0]["endpoints"][0], backend.address.to_string());
    let time = applied[0]["time"].as_str().expect("a timestamp");
    assert!(time.parse::<jiff::Timestamp>().is_ok(), "RFC 3339: {time}");
}
