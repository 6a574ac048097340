//! Resource usage and limits (issues 18 and 20): a pod burning CPU shows non-zero usage in
//! `metrics.k8s.io` (kubelet → metrics-server → the apiserver's aggregation proxy), and a container
//! that grows past `resources.limits.memory` is OOM-killed (reason `OOMKilled`, exit 137) and
//! restarted per its restartPolicy. The kubectl side (`top`, `autoscale`) is in
//! `tests/clients/kubectl_metrics.rs`.

use std::time::{Duration, Instant};

use minik_api::core::{Event, Pod};
use minik_client::{Api, ListParams, Method};
use minik_tests::wait::{eventually, wait_for};
use minik_tests::Cluster;
use serde_json::{json, Value};

use crate::support::stop_clean;

/// A pod of one busybox container running `script`, with `resources`.
fn pod(name: &str, script: &str, resources: Value, restart: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"restartPolicy": restart, "containers": [{
            "name": "main", "image": "busybox", "command": ["sh", "-c", script],
            "resources": resources}]}
    }))
    .expect("pod")
}

fn cpu_nanocores(text: &str) -> u64 {
    text.trim_end_matches('n').parse().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cpu_burning_pod_shows_usage_through_the_aggregated_metrics_api() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder()
        .without_services()
        .metrics_server(&["--metric-resolution", "1s"])
        .start()
        .await
        .expect("start cluster");
    let client = cluster.client();
    // Bounded: 60 s of spinning at most, whatever happens to the test.
    let burn = pod(
        "burn",
        "end=$(($(date +%s)+60)); while [ $(date +%s) -lt $end ]; do :; done",
        json!({"requests": {"cpu": "100m"}}),
        "Never",
    );
    let idle = pod("idle", "sleep 60", json!({}), "Never");
    cluster.pods().create(&burn).await.expect("create burn");
    cluster.pods().create(&idle).await.expect("create idle");
    wait_for(
        &cluster.pods(),
        "burn",
        minik_tests::wait::pod::is_running,
        Duration::from_secs(30),
    )
    .await
    .expect("burn runs");
    let running = Instant::now();
    let path = "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/burn";
    let metrics = eventually("non-zero CPU for burn", Duration::from_secs(30), || {
        let client = client.clone();
        async move {
            let answer = client.request_json(Method::GET, path, None).await.ok()?;
            let cpu = answer.pointer("/containers/0/usage/cpu")?.as_str()?;
            (cpu_nanocores(cpu) > 0).then_some(answer)
        }
    })
    .await
    .expect("the burning pod's metrics");
    eprintln!(
        "metrics: first non-zero CPU for burn {:?} after it ran: {}",
        running.elapsed(),
        metrics["containers"][0]["usage"]
    );
    assert_eq!(metrics["kind"], "PodMetrics");
    assert_eq!(metrics["metadata"]["labels"]["app"], "burn");
    assert!(metrics["containers"][0]["usage"]["memory"]
        .as_str()
        .is_some_and(|m| m.ends_with("Ki")));
    // A label selector narrows the list; a pod that does not exist is a 404 Status.
    let selected = client
        .request_json(
            Method::GET,
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=app%3Dburn",
            None,
        )
        .await
        .expect("list");
    let names: Vec<&str> = selected["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["burn"]);
    let missing = client
        .request_json(
            Method::GET,
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/nope",
            None,
        )
        .await
        .expect_err("no such pod");
    assert_eq!(missing.status().and_then(|s| s.code), Some(404));
    let nodes = client
        .request_json(Method::GET, "/apis/metrics.k8s.io/v1beta1/nodes", None)
        .await
        .expect("nodes");
    assert_eq!(nodes["items"][0]["metadata"]["name"], "node-1");
    assert!(cpu_nanocores(nodes["items"][0]["usage"]["cpu"].as_str().unwrap_or("")) > 0);
    // The group is announced in discovery, as kubectl top checks.
    let groups = client
        .request_json(Method::GET, "/apis", None)
        .await
        .expect("discovery");
    assert!(groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["name"] == "metrics.k8s.io"));
    stop_clean(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_container_over_its_memory_limit_is_oom_killed_and_restarted() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("start cluster");
    // Doubles a shell string every 300 ms, up to 128 MiB (27 doublings), far past its 32 MiB
    // limit, then waits: bounded whatever happens to the watchdog.
    let grow =
        "s=x; i=0; while [ $i -lt 27 ]; do s=\"$s$s\"; i=$((i+1)); sleep 0.3; done; sleep 60";
    let hog = pod("hog", grow, json!({"limits": {"memory": "32Mi"}}), "Always");
    let started = Instant::now();
    cluster.pods().create(&hog).await.expect("create");
    let restarted = wait_for(
        &cluster.pods(),
        "hog",
        |p: &Pod| minik_tests::wait::pod::restarts(p) >= 1,
        Duration::from_secs(60),
    )
    .await
    .expect("the hog was killed and restarted");
    eprintln!(
        "memory limit: first OOM kill and restart within {:?}",
        started.elapsed()
    );
    let status = minik_tests::wait::pod::container(&restarted)
        .expect("status")
        .clone();
    let last = status
        .last_state
        .and_then(|s| s.terminated)
        .expect("a terminated last state");
    assert_eq!(last.exit_code, 137, "{last:?}");
    assert_eq!(last.reason.as_deref(), Some("OOMKilled"), "{last:?}");
    // The kubelet reports the kill (by its watchdog, or the kernel's in a memory cgroup).
    let events: Api<Event> = Api::namespaced(cluster.client(), "default");
    let reported = eventually(
        "an OOMKilling event for hog",
        Duration::from_secs(10),
        || {
            let events = events.clone();
            async move {
                let listed = events.list(&ListParams::default()).await.ok()?;
                listed.items.into_iter().find(|e| {
                    e.involved_object.name.as_deref() == Some("hog")
                        && e.reason.as_deref() == Some("OOMKilling")
                })
            }
        },
    )
    .await
    .expect("an OOMKilling event");
    eprintln!("memory limit: {}", reported.message.unwrap_or_default());
    cluster
        .pods()
        .delete("hog", &Default::default())
        .await
        .expect("delete");
    stop_clean(cluster).await;
}
