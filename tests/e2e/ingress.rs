//! The ingress controller (issue 17): Ingress rules route HTTP by host and path straight to the
//! pods of EndpointSlices — these clusters run no proxy, so no Service IP is involved — and a
//! deleted pod leaves the ingress's traffic within the lag its `/metrics` reports.

use std::time::Duration;

use jiff::Timestamp;
use minik_api::networking_v1::Ingress;
use minik_client::{Api, DeleteParams};
use minik_ingress::metrics::sample;
use minik_tests::fixtures::{pod, service};
use minik_tests::wait::{eventually, wait_for};
use minik_tests::Cluster;
use serde_json::json;

use crate::support::{run_pod, stop_clean, RUNNING};

fn ingresses(cluster: &Cluster) -> Api<Ingress> {
    Api::namespaced(cluster.client(), "default")
}

/// An Ingress from JSON spec.
fn ingress(name: &str, spec: serde_json::Value) -> Ingress {
    serde_json::from_value(
        json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec}),
    )
    .expect("a valid Ingress")
}

fn path(path: &str, service: &str) -> serde_json::Value {
    json!({"path": path, "pathType": "Prefix",
           "backend": {"service": {"name": service, "port": {"number": 80}}}})
}

/// A web pod `NAME-0` labelled `app=NAME` and its Service.
async fn web(cluster: &Cluster, name: &str, replicas: usize, pre_stop: Option<Duration>) {
    cluster
        .services()
        .create(&service(name).build())
        .await
        .expect("create service");
    for index in 0..replicas {
        let mut fixture = pod(&format!("{name}-{index}"))
            .label("app", name)
            .port(8080)
            .grace(10);
        if let Some(duration) = pre_stop {
            fixture = fixture.pre_stop_sleep(duration);
        }
        run_pod(cluster, &fixture.build()).await;
    }
}

/// `GET http://INGRESS{path}` with `Host: host`: `(status, body)`, or `None` if it failed.
async fn get(address: &str, host: &str, path: &str) -> Option<(u16, String)> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .ok()?;
    let response = http
        .get(format!("http://{address}{path}"))
        .header("host", host)
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    Some((status, response.text().await.ok()?.trim().to_string()))
}

/// Waits until a request answers `(status, body)`.
async fn expect(address: &str, host: &str, path: &str, status: u16, body: &str) {
    let wanted = (status, body.to_string());
    let what = format!("{host}{path} → {status} {body}");
    let seen = eventually(&what, RUNNING, || async {
        get(address, host, path).await.filter(|got| *got == wanted)
    })
    .await;
    assert!(
        seen.is_ok(),
        "{what}: last answer {:?}",
        get(address, host, path).await
    );
}

/// Host and path rules, the default backend, and upstream's 404 once nothing matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ingress_routes_by_host_and_path_then_default_backend_then_404() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .without_proxy()
        .ingress(&[])
        .start()
        .await
        .expect("cluster");
    let address = cluster
        .ingress_address()
        .expect("ingress started")
        .to_string();
    for name in ["shop", "api", "fallback"] {
        web(&cluster, name, 1, None).await;
    }
    let rules = json!({"rules": [{"host": "shop.example", "http": {"paths": [
        path("/", "shop"), path("/api", "api")]}}]});
    ingresses(&cluster)
        .create(&ingress("shop", rules))
        .await
        .expect("create ingress");
    let default =
        json!({"defaultBackend": {"service": {"name": "fallback", "port": {"name": "http"}}}});
    ingresses(&cluster)
        .create(&ingress("fallback", default))
        .await
        .expect("create ingress");

    // The controller reports its address in the status, as ingress-nginx does.
    let port = i32::from(cluster.ingress_address().unwrap().port());
    let reported = wait_for(
        &ingresses(&cluster),
        "shop",
        |i| {
            let points = i
                .status
                .as_ref()
                .and_then(|s| s.load_balancer.as_ref())
                .and_then(|l| l.ingress.clone());
            points.is_some_and(|p| {
                p.first().is_some_and(|p| {
                    p.ip.as_deref() == Some("127.0.0.1")
                        && p.ports.as_ref().is_some_and(|ports| ports[0].port == port)
                })
            })
        },
        RUNNING,
    )
    .await;
    assert!(
        reported.is_ok(),
        "status.loadBalancer.ingress: {:?}",
        ingresses(&cluster)
            .get("shop")
            .await
            .ok()
            .and_then(|i| i.status)
    );

    expect(&address, "shop.example", "/", 200, "shop-0").await;
    expect(&address, "shop.example:80", "/api/orders", 200, "api-0").await;
    expect(&address, "shop.example", "/apiary", 200, "shop-0").await;
    expect(&address, "other.example", "/", 200, "fallback-0").await;
    ingresses(&cluster)
        .delete("fallback", &DeleteParams::default())
        .await
        .expect("delete");
    expect(&address, "other.example", "/", 404, "default backend - 404").await;
    stop_clean(cluster).await;
}

/// One request's outcome: when it was sent, and who answered (`None`: it failed).
struct Sample {
    sent: Timestamp,
    answer: Option<String>,
}

/// Requests every 20 ms through `address` with `Host: host` until `done` says stop.
async fn sample_until(address: &str, host: &str, end: tokio::time::Instant) -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    while tokio::time::Instant::now() < end {
        tick.tick().await;
        let sent = Timestamp::now();
        let answer = get(address, host, "/")
            .await
            .filter(|(s, _)| *s == 200)
            .map(|(_, b)| b);
        samples.push(Sample { sent, answer });
    }
    samples
}

fn unix(t: Timestamp) -> f64 {
    t.as_millisecond() as f64 / 1000.0
}

/// A deleted pod (kept serving by a preStop sleep) gets traffic until the ingress applies the
/// slice change, 1 s late (`--sync-delay 1s`), and none after: the lag `/metrics` reports is the
/// window the pod still had to serve.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deleted_pod_leaves_the_ingress_within_the_measured_lag() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .without_proxy()
        .ingress(&["--sync-delay", "1s"])
        .start()
        .await
        .expect("cluster");
    let address = cluster
        .ingress_address()
        .expect("ingress started")
        .to_string();
    web(&cluster, "web", 2, Some(Duration::from_secs(5))).await;
    let rules = json!({"rules": [{"http": {"paths": [path("/", "web")]}}]});
    ingresses(&cluster)
        .create(&ingress("web", rules))
        .await
        .expect("create ingress");
    expect(&address, "any", "/", 200, "web-0").await;
    expect(&address, "any", "/", 200, "web-1").await;
    let before = sample(
        &cluster.ingress_metrics().await.expect("metrics"),
        "minik_ingress_backend_updates_total",
    );

    let deleted = Timestamp::now();
    cluster
        .pods()
        .delete("web-0", &DeleteParams::default())
        .await
        .expect("delete");
    let samples = sample_until(
        &address,
        "any",
        tokio::time::Instant::now() + Duration::from_secs(3),
    )
    .await;
    let metrics = cluster.ingress_metrics().await.expect("metrics");
    let updates = sample(&metrics, "minik_ingress_backend_updates_total");
    let applied =
        sample(&metrics, "minik_ingress_last_update_timestamp_seconds").expect("applied at");
    let lag = sample(&metrics, "minik_ingress_last_sync_lag_seconds").expect("lag");

    assert!(
        updates > before,
        "the removal was applied: {before:?} → {updates:?}"
    );
    let failed = samples.iter().filter(|s| s.answer.is_none()).count();
    assert_eq!(
        failed, 0,
        "the preStop sleep kept web-0 serving while the ingress caught up"
    );
    let from_victim: Vec<f64> = samples
        .iter()
        .filter(|s| s.answer.as_deref() == Some("web-0"))
        .map(|s| unix(s.sent))
        .collect();
    let last = from_victim.iter().copied().fold(f64::MIN, f64::max);
    assert!(
        !from_victim.is_empty(),
        "web-0 kept getting traffic during the lag"
    );
    assert!(
        last <= applied + 0.05,
        "no request sent after the update ({applied:.3}) reached web-0 (last {last:.3})"
    );
    let window = applied - unix(deleted);
    assert!(
        lag >= 0.9,
        "the 1 s sync delay is part of the measured lag: {lag:.3}s"
    );
    assert!(
        window <= lag + 0.5,
        "removed {window:.3}s after the delete, measured lag {lag:.3}s"
    );
    eprintln!("delete → ingress update {window:.3}s (measured lag {lag:.3}s); web-0 answered {} requests meanwhile", from_victim.len());
    stop_clean(cluster).await;
}
