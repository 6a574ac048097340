//! Creation flow: a pod goes from the API to a Running process with its own loopback IP.

use std::time::{Duration, Instant};

use minik_tests::fixtures::pod;
use minik_tests::wait::{eventually, pod as p, wait_for};
use minik_tests::Cluster;

use crate::support::{http_answer, run_pod, stop_clean, RUNNING};

/// A pod reaches Running with an IP in its node's 127.P.1.0/24, and an HTTP GET to IP:port answers its name.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pod_runs_with_a_loopback_ip_and_answers_http_with_its_name() {
    let _machine = crate::support::shared().await;
    let cluster = crate::support::one_node().await;
    let running = run_pod(&cluster, &pod("web").port(8080).build()).await;
    let ip = p::ip(&running).expect("podIP").to_string();
    // The harness gives each cluster its own pod network P: node-1 owns 127.P.1.0/24.
    let octets = ip
        .parse::<std::net::Ipv4Addr>()
        .expect("an IPv4 pod IP")
        .octets();
    assert!(
        octets[0] == 127 && octets[2] == 1,
        "node-1's pods get addresses in 127.P.1.0/24, got {ip}"
    );
    assert_eq!(p::node(&running), Some("node-1"));
    let body = http_answer(&format!("{ip}:8080")).await;
    assert!(
        body.contains("web"),
        "the web image answers with its pod name, got {body:?}"
    );
    stop_clean(cluster).await;
}

/// Two pods on one node both listen on port 8080, each on its own IP.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_pods_on_one_node_share_a_port_on_different_ips() {
    let _machine = crate::support::shared().await;
    let cluster = crate::support::one_node().await;
    let a = run_pod(&cluster, &pod("a").port(8080).build()).await;
    let b = run_pod(&cluster, &pod("b").port(8080).build()).await;
    let (ip_a, ip_b) = (
        p::ip(&a).unwrap().to_string(),
        p::ip(&b).unwrap().to_string(),
    );
    assert_ne!(ip_a, ip_b);
    assert!(http_answer(&format!("{ip_a}:8080")).await.contains('a'));
    let answer_b = http_answer(&format!("{ip_b}:8080")).await;
    assert!(
        answer_b.contains('b') && !answer_b.contains("a"),
        "pod b answers as b, got {answer_b:?}"
    );
    stop_clean(cluster).await;
}

/// A container that keeps failing waits in CrashLoopBackOff, each restart later than the one before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crashing_container_backs_off_longer_each_time() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder()
        .without_services()
        .backoff_base(Duration::from_millis(200))
        .start()
        .await
        .expect("cluster");
    cluster
        .pods()
        .create(&pod("crash").command(&["sh", "-c", "exit 1"]).build())
        .await
        .expect("create");
    // Record when each restart count is first seen, and whether CrashLoopBackOff was shown.
    let start = Instant::now();
    let mut seen: Vec<(i32, Duration)> = Vec::new();
    let mut back_off = false;
    let condition = |pod: &minik_api::core::Pod| {
        back_off |= p::waiting_reason(pod) == Some("CrashLoopBackOff");
        let restarts = p::restarts(pod);
        if seen.last().is_none_or(|(n, _)| restarts > *n) {
            seen.push((restarts, start.elapsed()));
        }
        restarts >= 4
    };
    wait_for(&cluster.pods(), "crash", condition, Duration::from_secs(40))
        .await
        .expect("4 restarts");
    assert!(
        back_off,
        "the container waited with reason CrashLoopBackOff"
    );
    let time_of = |n: i32| {
        seen.iter()
            .find(|(count, _)| *count >= n)
            .map(|(_, t)| *t)
            .unwrap()
    };
    let early_gap = time_of(2) - time_of(1);
    let late_gap = time_of(4) - time_of(3);
    assert!(
        late_gap.as_secs_f64() > 1.5 * early_gap.as_secs_f64(),
        "backoff grows: restart 1→2 took {early_gap:?}, 3→4 took {late_gap:?} (seen {seen:?})"
    );
    stop_clean(cluster).await;
}

/// A `Never` pod ends Succeeded with exit code 0, or Failed with its exit code.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn never_pods_end_succeeded_or_failed_with_their_exit_code() {
    let _machine = crate::support::shared().await;
    let cluster = crate::support::one_node().await;
    let pods = cluster.pods();
    pods.create(
        &pod("ok")
            .command(&["sh", "-c", "exit 0"])
            .restart_policy("Never")
            .build(),
    )
    .await
    .unwrap();
    pods.create(
        &pod("bad")
            .command(&["sh", "-c", "exit 3"])
            .restart_policy("Never")
            .build(),
    )
    .await
    .unwrap();
    let ok = wait_for(&pods, "ok", p::is_finished, RUNNING)
        .await
        .expect("ok finishes");
    let bad = wait_for(&pods, "bad", p::is_finished, RUNNING)
        .await
        .expect("bad finishes");
    assert_eq!((p::phase(&ok), p::exit_code(&ok)), ("Succeeded", Some(0)));
    assert_eq!((p::phase(&bad), p::exit_code(&bad)), ("Failed", Some(3)));
    assert_eq!(p::restarts(&bad), 0, "restartPolicy Never never restarts");
    stop_clean(cluster).await;
}

/// Init containers run one after the other, each to completion, before the app container.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn init_containers_run_in_order_before_the_app() {
    let _machine = crate::support::shared().await;
    let cluster = crate::support::one_node().await;
    let order = cluster.dir().join("order.txt");
    let file = order.display().to_string();
    let append = |word: &str| format!("sleep 0.2; echo {word} >> {file}");
    let fixture = pod("init")
        .init_container("first", &["sh", "-c", &append("first")])
        .init_container("second", &["sh", "-c", &append("second")])
        .command(&["sh", "-c", &format!("echo app >> {file}; exec sleep 600")])
        .grace(1)
        .build();
    run_pod(&cluster, &fixture).await;
    // The app writes its line right after it starts; a file is not watchable.
    let read = || std::fs::read_to_string(&order).unwrap_or_default();
    let text = eventually("the app's line", Duration::from_secs(5), || {
        let text = read();
        async move { text.contains("app").then_some(text) }
    })
    .await
    .expect("order file");
    assert_eq!(text, "first\nsecond\napp\n");
    stop_clean(cluster).await;
}
