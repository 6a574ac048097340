//! Issue 24's idle rule: a Deployment annotated `minik.dev/scale-to-zero-after` is held at its
//! replicas by a long-lived connection through the proxy, and scaled to 0 by the controller
//! manager once that connection has been closed for the annotation's time — not before.

use std::time::{Duration, Instant};

use minik_api::k8s_openapi::api::apps::v1::Deployment;
use minik_api::k8s_openapi::api::core::v1::{ConfigMap, Event};
use minik_client::{Api, ListParams};
use minik_tests::fixtures::{pod, service};
use minik_tests::wait::{eventually, wait_for};
use minik_tests::Cluster;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::stop_clean;

const NAME: &str = "idle";
/// The annotation's time: long enough to tell "not before" from "after", short for a test.
const AFTER: Duration = Duration::from_secs(8);
/// The rule's slack: the report is written at most once a second, the informers follow.
const SLACK: Duration = Duration::from_secs(5);

fn idle_deployment() -> Deployment {
    let fixture = pod(NAME).port(8080).label("app", NAME).grace(1).to_json();
    let template = json!({"metadata": {"labels": {"app": NAME}}, "spec": fixture["spec"]});
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": NAME, "annotations": {"minik.dev/scale-to-zero-after": "8s"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": NAME}}, "template": template},
    }))
    .expect("a valid Deployment")
}

fn replicas(deployment: &Deployment) -> i32 {
    deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1)
}

/// Opens a streaming answer through `address` (the proxy) and reads its first line: the
/// connection is open end to end. `None` while the proxy has no endpoint yet (it closes).
async fn open_stream(address: &str) -> Option<TcpStream> {
    let mut stream = TcpStream::connect(address).await.ok()?;
    let request = "GET /stream?ms=600000 HTTP/1.1\r\nHost: idle\r\n\r\n";
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut first = [0u8; 256];
    let read = stream.read(&mut first).await.ok()?;
    let head = String::from_utf8_lossy(&first[..read]).to_string();
    head.starts_with("HTTP/1.1 200").then_some(stream)
}

/// Waits until the proxy's report shows a connection open to one of the Deployment's pods.
async fn reported_open(cluster: &Cluster) {
    let maps: Api<ConfigMap> = Api::namespaced(cluster.client(), "kube-system");
    eventually(
        "the proxy reports the connection",
        Duration::from_secs(10),
        || {
            let maps = maps.clone();
            async move {
                let report = maps.get_opt("connections-kube-proxy").await.ok()??;
                let data = report.data.unwrap_or_default();
                data.values()
                    .any(|v| !v.starts_with("open=0,"))
                    .then_some(())
            }
        },
    )
    .await
    .expect("an open connection in kube-system/connections-kube-proxy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idle_deployment_goes_to_zero_after_its_last_connection_and_not_before() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder().start().await.expect("cluster");
    let client = cluster.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let created = cluster
        .services()
        .create(&service(NAME).build())
        .await
        .expect("create service");
    let cluster_ip = created.spec.and_then(|s| s.cluster_ip).expect("clusterIP");
    deployments
        .create(&idle_deployment())
        .await
        .expect("create");
    wait_for(
        &cluster.endpoints(),
        NAME,
        |e| {
            let subsets = e.subsets.iter().flatten();
            subsets.flat_map(|s| s.addresses.iter().flatten()).count() == 2
        },
        Duration::from_secs(60),
    )
    .await
    .expect("both pods are endpoints");

    // Held open for the annotation's time and the slack: the Deployment keeps its 2 replicas.
    let address = format!("{cluster_ip}:80");
    let stream = eventually("the proxy routes", Duration::from_secs(10), || async {
        tokio::time::timeout(Duration::from_secs(2), open_stream(&address))
            .await
            .ok()
            .flatten()
    })
    .await
    .expect("a stream through the proxy");
    reported_open(&cluster).await;
    let held = Instant::now();
    while held.elapsed() < AFTER + SLACK {
        let now = deployments.get(NAME).await.expect("get");
        assert_eq!(
            replicas(&now),
            2,
            "held at 2 by an open connection ({:?})",
            held.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // Closed: 0 replicas after the annotation's time, not before.
    drop(stream);
    let closed = Instant::now();
    wait_for(&deployments, NAME, |d| replicas(d) == 0, AFTER + SLACK * 2)
        .await
        .expect("scaled to zero");
    let took = closed.elapsed();
    println!("idle rule: connection closed → replicas 0 after {took:?} (annotation {AFTER:?})");
    assert!(
        took >= AFTER - Duration::from_millis(500),
        "not before the annotation's time: {took:?}"
    );
    assert!(took <= AFTER + SLACK, "within the slack: {took:?}");

    // The controller records its Event after the scale it reports: wait for it, then check
    // there is exactly one.
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let scaled = eventually("the ScaledToZero event", Duration::from_secs(10), || {
        let events = events.clone();
        async move {
            let list = events.list(&ListParams::default()).await.ok()?;
            let count = list
                .items
                .iter()
                .filter(|e| e.reason.as_deref() == Some("ScaledToZero"))
                .count();
            (count > 0).then_some(count)
        }
    })
    .await
    .expect("a ScaledToZero event");
    assert_eq!(scaled, 1, "one ScaledToZero event on the Deployment");
    stop_clean(cluster).await;
}
