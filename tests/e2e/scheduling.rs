//! Scheduling: pods wait for room and spread over the nodes.

use std::collections::BTreeMap;
use std::time::Duration;

use minik_client::ListParams;
use minik_tests::fixtures::pod;
use minik_tests::wait::{pod as p, wait_for, wait_for_all};
use minik_tests::Cluster;

use crate::support::{stop_clean, RUNNING};

/// With no node, a pod is Unschedulable; once a node registers, it is scheduled there and runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unschedulable_pod_is_scheduled_once_a_node_registers() {
    let _machine = crate::support::shared().await;
    let mut cluster = Cluster::builder()
        .nodes(0)
        .without_services()
        .start()
        .await
        .expect("cluster");
    cluster
        .pods()
        .create(&pod("waiting").port(8080).build())
        .await
        .expect("create");
    let unschedulable = |pod: &minik_api::core::Pod| {
        p::condition(pod, "PodScheduled") == Some("False")
            && p::condition_reason(pod, "PodScheduled") == Some("Unschedulable")
    };
    wait_for(
        &cluster.pods(),
        "waiting",
        unschedulable,
        Duration::from_secs(10),
    )
    .await
    .expect("Unschedulable");
    let node = cluster.add_node().await.expect("add node");
    let running = wait_for(&cluster.pods(), "waiting", p::is_running, RUNNING)
        .await
        .expect("Running after the node came");
    assert_eq!(p::node(&running), Some(node.as_str()));
    stop_clean(cluster).await;
}

/// Pods created one after the other land alternately on two empty nodes (least allocated wins).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pods_spread_over_two_nodes() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder()
        .nodes(2)
        .without_services()
        .start()
        .await
        .expect("cluster");
    for index in 0..4 {
        let name = format!("spread-{index}");
        let fixture = pod(&name)
            .label("app", "spread")
            .requests("100m", "32Mi")
            .port(8080)
            .build();
        cluster.pods().create(&fixture).await.expect("create");
        wait_for(
            &cluster.pods(),
            &name,
            p::is_scheduled,
            Duration::from_secs(10),
        )
        .await
        .expect("scheduled");
    }
    let all_running =
        |pods: &[minik_api::core::Pod]| pods.len() == 4 && pods.iter().all(p::is_running);
    let pods = wait_for_all(
        &cluster.pods(),
        ListParams::default().labels("app=spread"),
        all_running,
        RUNNING,
    )
    .await
    .expect("4 pods Running");
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for pod in &pods {
        let node = p::node(pod).unwrap_or("");
        *per_node.entry(node.to_string()).or_default() += 1;
        let ip = p::ip(pod).unwrap();
        // Each node publishes its CIDR as spec.podCIDR (127.P.N.0/24, P the cluster's).
        let spec = cluster.nodes().get(node).await.expect("node").spec;
        let cidr = spec.and_then(|s| s.pod_cidr).expect("podCIDR");
        let expected = cidr.trim_end_matches("0/24");
        assert!(
            ip.starts_with(expected),
            "a pod's IP comes from its node's CIDR: {ip} on {:?}",
            p::node(pod)
        );
    }
    assert_eq!(per_node.get("node-1"), Some(&2), "spread: {per_node:?}");
    assert_eq!(per_node.get("node-2"), Some(&2), "spread: {per_node:?}");
    stop_clean(cluster).await;
}
