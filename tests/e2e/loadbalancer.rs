//! The external load balancer and node ports (issue 17): a LoadBalancer Service gets an address
//! of its own served by `minik loadbalancer`, which applies endpoint changes in batches — a
//! deleted pod keeps receiving connections until the next batch, and a preStop wait longer than
//! the batch period means no request fails (seed 003). NodePort allocation and its conflicts.

use std::time::Duration;

use jiff::Timestamp;
use minik_api::core::Service;
use minik_client::DeleteParams;
use minik_ingress::metrics::sample;
use minik_tests::fixtures::{pod, service};
use minik_tests::wait::{eventually, wait_for};
use minik_tests::Cluster;

use crate::support::{http_get, one_node, run_pod, stop_clean, RUNNING};

/// A Service of `type_` (port 80 → the pods' `http`), optionally with explicit node ports.
fn typed_service(name: &str, type_: &str, node_port: Option<i32>) -> Service {
    let mut service = service(name).build();
    let spec = service.spec.as_mut().expect("spec");
    spec.type_ = Some(type_.into());
    spec.ports.as_mut().expect("ports")[0].node_port = node_port;
    service
}

fn node_port(service: &Service) -> Option<i32> {
    service.spec.as_ref()?.ports.as_ref()?.first()?.node_port
}

fn unix(t: Timestamp) -> f64 {
    t.as_millisecond() as f64 / 1000.0
}

/// What happened to requests while one pod behind the balancer was deleted.
struct Race {
    /// When each request that got no answer was sent (Unix seconds).
    failed: Vec<f64>,
    /// When each request answered by the deleted pod was sent (Unix seconds).
    victim: Vec<f64>,
    /// When the batch that removed it was applied, and its measured lag.
    applied: f64,
    lag: f64,
    /// Seconds from the delete to that batch.
    window: f64,
}

/// Two pods behind a LoadBalancer Service (batches every 2 s, no proxy); `lb-0` is deleted and
/// a request is sent every 20 ms for 4.5 s.
async fn delete_behind_the_balancer(pre_stop: Option<Duration>) -> Race {
    let cluster = Cluster::builder()
        .without_proxy()
        .loadbalancer(&["--batch-period", "2s"])
        .start()
        .await
        .expect("cluster");
    let created = cluster
        .services()
        .create(&typed_service("lb", "LoadBalancer", None))
        .await
        .expect("create service");
    let allocated = node_port(&created).expect("a LoadBalancer Service gets a node port too");
    assert!((30000..=32767).contains(&allocated), "{allocated}");
    for index in 0..2 {
        let mut fixture = pod(&format!("lb-{index}"))
            .label("app", "lb")
            .port(8080)
            .grace(10);
        if let Some(duration) = pre_stop {
            fixture = fixture.pre_stop_sleep(duration);
        }
        run_pod(&cluster, &fixture.build()).await;
    }
    let served = wait_for(
        &cluster.services(),
        "lb",
        |s| {
            let lb = s.status.as_ref().and_then(|s| s.load_balancer.as_ref());
            let ingress = lb.and_then(|l| l.ingress.clone());
            ingress.is_some_and(|i| i.first().and_then(|i| i.ip.clone()).is_some())
        },
        RUNNING,
    )
    .await
    .expect("status.loadBalancer.ingress");
    let ingress = served
        .status
        .unwrap()
        .load_balancer
        .unwrap()
        .ingress
        .unwrap();
    let ip = ingress[0].ip.clone().unwrap();
    assert!(ip.starts_with("127.98."), "{ip}");
    let address = format!("{ip}:80");
    for name in ["lb-0", "lb-1"] {
        let answered = eventually(&format!("{name} behind {address}"), RUNNING, || async {
            http_get(&address).await.filter(|b| b.trim() == name)
        })
        .await;
        assert!(answered.is_ok(), "{name} never answered through {address}");
    }
    let updates = "minik_loadbalancer_backend_updates_total";
    let before = sample(
        &cluster.loadbalancer_metrics().await.expect("metrics"),
        updates,
    );

    let deleted = Timestamp::now();
    cluster
        .pods()
        .delete("lb-0", &DeleteParams::default())
        .await
        .expect("delete");
    let (mut failed, mut victim) = (Vec::new(), Vec::new());
    let end = tokio::time::Instant::now() + Duration::from_millis(4500);
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    while tokio::time::Instant::now() < end {
        tick.tick().await;
        let sent = unix(Timestamp::now());
        match http_get(&address).await {
            Some(body) if body.trim() == "lb-0" => victim.push(sent),
            Some(_) => {}
            None => failed.push(sent),
        }
    }
    let metrics = cluster.loadbalancer_metrics().await.expect("metrics");
    let after = sample(&metrics, updates);
    assert!(
        after > before,
        "a batch applied the removal: {before:?} → {after:?}"
    );
    let applied =
        sample(&metrics, "minik_loadbalancer_last_update_timestamp_seconds").expect("applied");
    let lag = sample(&metrics, "minik_loadbalancer_last_sync_lag_seconds").expect("lag");
    stop_clean(cluster).await;
    Race {
        failed,
        victim,
        applied,
        lag,
        window: applied - unix(deleted),
    }
}

/// Deleting a pod behind the batched balancer: it keeps answering new connections until the next
/// batch (its preStop keeps it serving), then gets none; no request fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_batched_load_balancer_keeps_sending_to_a_deleted_pod_until_its_next_batch() {
    let _machine = crate::support::exclusive().await;
    let race = delete_behind_the_balancer(Some(Duration::from_secs(5))).await;
    assert!(
        race.failed.is_empty(),
        "a preStop longer than the batch period: no request fails"
    );
    let last = race.victim.iter().copied().fold(f64::MIN, f64::max);
    assert!(
        !race.victim.is_empty(),
        "lb-0 kept getting connections until the batch"
    );
    assert!(
        last <= race.applied + 0.05,
        "none after the batch at {:.3} (last {last:.3})",
        race.applied
    );
    assert!(
        race.window <= 2.0 + 1.0,
        "applied within a batch period: {:.3}s",
        race.window
    );
    eprintln!(
        "delete → batch applied {:.3}s (lag {:.3}s); lb-0 answered {} requests meanwhile",
        race.window,
        race.lag,
        race.victim.len()
    );
}

/// Without a preStop the deleted pod exits at once, but the balancer keeps sending it connections
/// until its next batch: those fail (seed 003's point), and none fail after the batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_pre_stop_connections_fail_until_the_next_batch() {
    let _machine = crate::support::exclusive().await;
    let race = delete_behind_the_balancer(None).await;
    assert!(
        !race.failed.is_empty(),
        "the balancer still sent connections to the exited pod"
    );
    let last = race.failed.iter().copied().fold(f64::MIN, f64::max);
    assert!(
        last <= race.applied + 0.05,
        "no failure after the batch at {:.3} (last {last:.3})",
        race.applied
    );
    eprintln!(
        "no preStop: {} requests failed, all before the batch {:.3}s after the delete",
        race.failed.len(),
        race.window
    );
}

/// NodePort Services get a port of 30000–32767; an explicit port is kept, a taken one or one out
/// of range is a 422, and an update keeps the ports.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn node_ports_are_allocated_and_conflicts_rejected() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    let services = cluster.services();
    let explicit = services
        .create(&typed_service("np-a", "NodePort", Some(30080)))
        .await
        .expect("create");
    assert_eq!(node_port(&explicit), Some(30080));
    let allocated = services
        .create(&typed_service("np-b", "NodePort", None))
        .await
        .expect("create");
    let port = node_port(&allocated).expect("allocated");
    assert!((30000..=32767).contains(&port) && port != 30080, "{port}");

    let taken = services
        .create(&typed_service("np-c", "NodePort", Some(30080)))
        .await
        .unwrap_err();
    let status = taken.status().cloned().expect("a Status");
    assert_eq!(status.code, Some(422));
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains(
            "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"
        ),
        "{message}"
    );
    let out_of_range = services
        .create(&typed_service("np-d", "NodePort", Some(8080)))
        .await
        .unwrap_err();
    assert_eq!(out_of_range.status().and_then(|s| s.code), Some(422));

    // An update that omits the port keeps it; once np-a is gone, its port is free again.
    let mut updated = allocated.clone();
    updated.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].node_port = None;
    let kept = services.replace("np-b", &updated).await.expect("update");
    assert_eq!(node_port(&kept), Some(port));
    services
        .delete("np-a", &DeleteParams::default())
        .await
        .expect("delete");
    let reused = services
        .create(&typed_service("np-e", "NodePort", Some(30080)))
        .await
        .expect("create");
    assert_eq!(node_port(&reused), Some(30080));
    stop_clean(cluster).await;
}
