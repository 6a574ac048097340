//! Services (issue 5): the endpoint controller and the userspace proxy follow pods in and out,
//! and the race of seed 003 ("Making K8s shutdowns more graceful", docs/seeds.md) between
//! endpoint removal and the process stopping.

use std::collections::BTreeSet;
use std::time::Duration;

use jiff::Timestamp;
use minik_api::core::{Endpoints, Service};
use minik_client::{DeleteParams, ListParams};
use minik_tests::fixtures::{pod, service};
use minik_tests::wait::{eventually, pod as p, wait_for, wait_for_all};
use minik_tests::Cluster;

use crate::support::{http_answer, http_get, run_pod, seconds, stop_clean, Termination, RUNNING};

/// The ready addresses of an Endpoints object.
fn ready_ips(endpoints: &Endpoints) -> BTreeSet<String> {
    let subsets = endpoints.subsets.iter().flatten();
    subsets
        .flat_map(|s| s.addresses.iter().flatten().map(|a| a.ip.clone()))
        .collect()
}

/// Creates the Service and `replicas` web pods labelled `app=NAME`; returns `clusterIP:80` once
/// the Endpoints list every pod.
async fn web_service(
    cluster: &Cluster,
    name: &str,
    replicas: usize,
    pre_stop: Option<Duration>,
) -> String {
    let created: Service = cluster
        .services()
        .create(&service(name).build())
        .await
        .expect("create service");
    let cluster_ip = created
        .spec
        .and_then(|s| s.cluster_ip)
        .expect("clusterIP allocated");
    assert!(
        cluster_ip.starts_with("127.96."),
        "cluster IPs come from 127.96.0.0/16, got {cluster_ip}"
    );
    let mut ips = BTreeSet::new();
    for index in 0..replicas {
        let mut fixture = pod(&format!("{name}-{index}"))
            .label("app", name)
            .port(8080)
            .grace(10);
        if let Some(duration) = pre_stop {
            fixture = fixture.pre_stop_sleep(duration);
        }
        let running = run_pod(cluster, &fixture.build()).await;
        ips.insert(p::ip(&running).unwrap().to_string());
    }
    wait_for(&cluster.endpoints(), name, |e| ready_ips(e) == ips, RUNNING)
        .await
        .expect("endpoints list every pod");
    format!("{cluster_ip}:80")
}

/// Connections to clusterIP:port reach all three pods behind the Service.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn service_spreads_connections_over_all_three_pods() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder().start().await.expect("cluster");
    let address = web_service(&cluster, "web", 3, None).await;
    http_answer(&address).await;
    // The proxy may still be applying the last endpoints when the first answer comes: keep
    // asking (round robin) until every pod has answered, within a bound.
    let expected: BTreeSet<String> = (0..3).map(|i| format!("web-{i}")).collect();
    let answered = std::sync::Mutex::new(BTreeSet::new());
    let all = eventually("answers from all three pods", RUNNING, || async {
        let body = http_get(&address).await?;
        let mut seen = answered.lock().unwrap();
        seen.insert(body.trim().to_string());
        let covered = expected
            .iter()
            .all(|name| seen.iter().any(|a| a.contains(name.as_str())));
        covered.then_some(())
    })
    .await;
    assert!(all.is_ok(), "answers from {:?}", answered.lock().unwrap());
    stop_clean(cluster).await;
}

/// A deleted pod leaves the Endpoints before its process has stopped (seed 003's race).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleted_pod_leaves_endpoints_before_its_process_stops() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder().start().await.expect("cluster");
    web_service(&cluster, "race", 2, Some(Duration::from_secs(2))).await;
    let victim = cluster.pods().get("race-0").await.expect("get");
    let ip = p::ip(&victim).unwrap().to_string();
    let process = crate::support::web_process(&cluster, "race-0").await;
    let follow = Termination::follow(
        cluster.dir(),
        victim.metadata.uid.as_deref().unwrap(),
        process.pid,
    );
    let deleted = Timestamp::now();
    cluster
        .pods()
        .delete("race-0", &DeleteParams::default())
        .await
        .expect("delete");
    wait_for(
        &cluster.endpoints(),
        "race",
        |e| !ready_ips(e).contains(&ip),
        Duration::from_secs(5),
    )
    .await
    .expect("removed");
    let removed = Timestamp::now();
    let (_, gone) = follow.finish().await;
    let (removed, gone) = (seconds(deleted, removed), seconds(deleted, gone));
    assert!(
        removed < gone,
        "endpoint removed at {removed:.3}s, before the process stopped at {gone:.3}s"
    );
    assert!(
        removed < 1.0,
        "the endpoint goes at once, not after preStop: {removed:.3}s"
    );
    eprintln!("delete → endpoint removed {removed:.3}s, process gone {gone:.3}s");
    stop_clean(cluster).await;
}

/// Sends a request every 50 ms for `window`; returns (sent, failed).
async fn load(address: &str, window: Duration) -> (usize, usize) {
    let (mut sent, mut failed) = (0, 0);
    let end = tokio::time::Instant::now() + window;
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    while tokio::time::Instant::now() < end {
        tick.tick().await;
        sent += 1;
        if http_get(address).await.is_none() {
            failed += 1;
        }
    }
    (sent, failed)
}

/// With a 2 s sync delay and a proxy that does not retry, deleting a pod without preStop makes
/// requests fail during the window; a preStop sleep longer than the delay makes none fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sync_delay_race_fails_requests_without_pre_stop_and_none_with_it() {
    let _machine = crate::support::exclusive().await;
    for (pre_stop, expect_failures) in [(None, true), (Some(Duration::from_secs(4)), false)] {
        let cluster = Cluster::builder()
            .sync_delay(Duration::from_secs(2))
            .dial_attempts(1)
            .start()
            .await
            .expect("cluster");
        let address = web_service(&cluster, "lag", 2, pre_stop).await;
        // The proxy applies endpoint updates 2 s late: wait until it routes to both pods.
        let both = minik_tests::wait::eventually(
            "the proxy to reach both pods",
            Duration::from_secs(10),
            || {
                let address = address.clone();
                async move {
                    let mut seen = BTreeSet::new();
                    for _ in 0..10 {
                        seen.insert(http_get(&address).await?);
                    }
                    (seen.len() == 2).then_some(())
                }
            },
        );
        both.await.expect("both pods reachable");
        let loader = tokio::spawn({
            let address = address.clone();
            async move { load(&address, Duration::from_millis(3500)).await }
        });
        cluster
            .pods()
            .delete("lag-0", &DeleteParams::default())
            .await
            .expect("delete");
        let (sent, failed) = loader.await.expect("load");
        eprintln!("sync delay 2s, preStop {pre_stop:?}: {failed}/{sent} requests failed");
        if expect_failures {
            assert!(
                failed > 0,
                "without preStop, requests fail while the proxy lags ({failed}/{sent})"
            );
        } else {
            assert_eq!(
                failed, 0,
                "a preStop longer than the sync delay drops nothing ({failed}/{sent})"
            );
        }
        let ready = |pods: &[minik_api::core::Pod]| pods.iter().all(p::is_running);
        wait_for_all(&cluster.pods(), ListParams::default(), ready, RUNNING)
            .await
            .expect("pods");
        stop_clean(cluster).await;
    }
}

/// The not-ready addresses of an Endpoints object.
fn not_ready_ips(endpoints: &Endpoints) -> BTreeSet<String> {
    let subsets = endpoints.subsets.iter().flatten();
    subsets
        .flat_map(|s| s.not_ready_addresses.iter().flatten().map(|a| a.ip.clone()))
        .collect()
}

/// A pod failing its readiness probe moves to `notReadyAddresses` and gets no traffic; it comes
/// back when the probe passes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unready_pod_leaves_the_endpoints_and_gets_no_traffic_until_ready_again() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder().start().await.expect("cluster");
    let flag = cluster.dir().join("unhealthy-0");
    cluster
        .services()
        .create(&service("probe").build())
        .await
        .expect("service");
    let mut ips = Vec::new();
    for index in 0..2 {
        let fixture = pod(&format!("probe-{index}"))
            .label("app", "probe")
            .port(8080)
            .env(
                "MINIK_WEB_UNHEALTHY_FILE",
                &cluster
                    .dir()
                    .join(format!("unhealthy-{index}"))
                    .display()
                    .to_string(),
            )
            .readiness_http("/healthz", 1);
        let running = run_pod(&cluster, &fixture.build()).await;
        ips.push(p::ip(&running).unwrap().to_string());
    }
    let both: BTreeSet<String> = ips.iter().cloned().collect();
    let endpoints = wait_for(
        &cluster.endpoints(),
        "probe",
        |e| ready_ips(e) == both,
        RUNNING,
    )
    .await
    .expect("both ready");
    let service_ip = cluster
        .services()
        .get("probe")
        .await
        .unwrap()
        .spec
        .unwrap()
        .cluster_ip
        .unwrap();
    drop(endpoints);

    std::fs::write(&flag, "").unwrap();
    let only_second = |e: &Endpoints| {
        ready_ips(e) == BTreeSet::from([ips[1].clone()]) && not_ready_ips(e).contains(&ips[0])
    };
    wait_for(
        &cluster.endpoints(),
        "probe",
        only_second,
        Duration::from_secs(10),
    )
    .await
    .expect("probe-0 not ready");
    wait_for(
        &cluster.pods(),
        "probe-0",
        |pod| !p::is_ready(pod),
        Duration::from_secs(5),
    )
    .await
    .expect("Ready=False");
    // The proxy applies the change right after the Endpoints update (no sync delay here).
    let address = format!("{service_ip}:80");
    crate::support::http_answer(&address).await;
    let mut answers = BTreeSet::new();
    for _ in 0..20 {
        answers.insert(
            http_get(&address)
                .await
                .unwrap_or_default()
                .trim()
                .to_string(),
        );
    }
    assert!(
        answers.iter().all(|a| a.contains("probe-1")),
        "only the ready pod answers: {answers:?}"
    );

    std::fs::remove_file(&flag).unwrap();
    wait_for(
        &cluster.endpoints(),
        "probe",
        |e| ready_ips(e) == both,
        Duration::from_secs(10),
    )
    .await
    .expect("ready again");
    stop_clean(cluster).await;
}

/// A failing liveness probe restarts the container.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn liveness_failure_restarts_the_container() {
    let _machine = crate::support::shared().await;
    let cluster = crate::support::one_node().await;
    let flag = cluster.dir().join("dead");
    let check = format!("test ! -e {}", flag.display());
    run_pod(
        &cluster,
        &pod("alive")
            .port(8080)
            .liveness_exec(&["sh", "-c", &check], 1)
            .build(),
    )
    .await;
    std::fs::write(&flag, "").unwrap();
    wait_for(
        &cluster.pods(),
        "alive",
        |pod| p::restarts(pod) >= 1,
        Duration::from_secs(15),
    )
    .await
    .expect("restarted");
    std::fs::remove_file(&flag).unwrap();
    wait_for(&cluster.pods(), "alive", p::is_running, RUNNING)
        .await
        .expect("Running again");
    stop_clean(cluster).await;
}
