//! Issue 24: node sizes and the cluster autoscaler on real kubelets. One node of 2 CPU, at most
//! 4 nodes, a Deployment of 6 pods requesting 900m each: the `minik cluster-autoscaler` process
//! adds nodes through the node-group API until every pod runs — killed with SIGKILL right after
//! its NodeGroupIncreaseSize and restarted, it adds none twice — and never goes past what the pods
//! need nor 4; scaled to 1 under a PodDisruptionBudget, the added nodes are drained and removed
//! after the unneeded time, and the original node stays. The node-group API answers nobody but
//! the autoscaler's certificate.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use minik_api::k8s_openapi::api::apps::v1::Deployment;
use minik_api::k8s_openapi::api::core::v1::{ConfigMap, Event, Node, Pod};
use minik_api::k8s_openapi::api::policy::v1::PodDisruptionBudget;
use minik_client::{Api, Client, ListParams, Patch};
use minik_cluster::pki::Identity;
use minik_tests::fixtures::pod;
use minik_tests::wait::{eventually, pod as pods, wait_for_all};
use minik_tests::Cluster;
use nix::sys::signal::Signal;
use serde_json::json;

use crate::support::stop_clean;

const GROW: &str = "grow";

/// 6 pods of 900m on 2-CPU nodes: 2 a node, so 3 nodes, under the maximum of 4.
fn grow(replicas: i32) -> Deployment {
    let fixture = pod(GROW)
        .port(8080)
        .label("app", GROW)
        .requests("900m", "64Mi")
        .grace(1)
        .to_json();
    let template = json!({"metadata": {"labels": {"app": GROW}}, "spec": fixture["spec"]});
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": GROW},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": GROW}}, "template": template},
    }))
    .expect("a valid Deployment")
}

async fn started() -> Cluster {
    let config = minik_cluster_autoscaler::Config {
        max_nodes_total: 4,
        scan_interval: Duration::from_millis(500),
        scale_down_unneeded_time: Duration::from_secs(5),
        max_pod_eviction_time: Duration::from_secs(60),
        max_graceful_termination: Duration::from_secs(60),
        ..Default::default()
    };
    Cluster::builder()
        .processes(true)
        .without_services()
        .kubelet_args(&["--cpu", "2", "--memory", "4Gi"])
        .autoscaler(config)
        .start()
        .await
        .expect("cluster")
}

/// Samples the Node count every 100 ms in the background; returns the highest seen.
fn sample_max_nodes(cluster: &Cluster) -> (Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let nodes: Api<Node> = Api::all(cluster.client());
    let max = Arc::new(AtomicUsize::new(0));
    let seen = max.clone();
    let task = tokio::spawn(async move {
        loop {
            if let Ok(list) = nodes.list(&ListParams::default()).await {
                seen.fetch_max(list.items.len(), Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    (max, task)
}

/// SIGKILLs the autoscaler process (no clean-up, as `kill -9`) and starts it again with the same
/// flags, as `minik up`'s supervisor would; returns the old and the new pid.
async fn kill_and_restart(cluster: &mut Cluster) -> (u32, u32) {
    let old = cluster
        .pid("cluster-autoscaler")
        .expect("the autoscaler is a process");
    cluster
        .kill("cluster-autoscaler", Signal::SIGKILL)
        .await
        .expect("kill -9 the autoscaler");
    cluster
        .restart("cluster-autoscaler")
        .await
        .expect("restart");
    let new = cluster.pid("cluster-autoscaler").expect("running again");
    assert_ne!(old, new, "a new process");
    (old, new)
}

/// Scales to 3 (one pod more than node-1 takes), kills the autoscaler as soon as the group
/// starts a node, before it is Ready, and starts a new one: the pod runs on that one node, no
/// other is added. Returns the Ready nodes at the kill and the group's nodes.
async fn kill_mid_scale_up(
    cluster: &mut Cluster,
    deployments: &Api<Deployment>,
) -> (usize, Vec<String>) {
    let patch = Patch::Merge(json!({"spec": {"replicas": 3}}));
    deployments.patch(GROW, &patch).await.expect("scale to 3");
    eventually("a scale-up", Duration::from_secs(60), || {
        let nodes = cluster.autoscaling().map(|a| a.nodes()).unwrap_or_default();
        async move { (!nodes.is_empty()).then_some(()) }
    })
    .await
    .expect("the autoscaler adds a node");
    let ready = ready_nodes(cluster).await;
    kill_and_restart(cluster).await;
    let label = ListParams::default().labels(&format!("app={GROW}"));
    wait_for_all(
        &cluster.pods(),
        label,
        |p: &[Pod]| p.len() == 3 && p.iter().all(pods::is_running),
        Duration::from_secs(60),
    )
    .await
    .expect("3 pods Running");
    // Two more scans of the restarted autoscaler (its status written twice): still one node.
    for _ in 0..2 {
        next_scan(cluster).await;
    }
    let group = cluster.autoscaling().expect("autoscaling").nodes();
    assert_eq!(group.len(), 1, "one node added, not twice: {group:?}");
    let nodes = cluster.nodes().list(&ListParams::default()).await;
    assert_eq!(nodes.expect("nodes").items.len(), 2);
    (ready, group)
}

/// Waits until the autoscaler writes its status ConfigMap again (one more scan).
async fn next_scan(cluster: &Cluster) {
    let maps: Api<ConfigMap> = Api::namespaced(cluster.client(), "kube-system");
    let stamp = |map: Option<ConfigMap>| {
        let annotations = map.and_then(|m| m.metadata.annotations).unwrap_or_default();
        annotations
            .get("cluster-autoscaler.kubernetes.io/last-updated")
            .cloned()
    };
    let before = stamp(
        maps.get_opt("cluster-autoscaler-status")
            .await
            .ok()
            .flatten(),
    );
    eventually("an autoscaler scan", Duration::from_secs(10), || {
        let (maps, before) = (maps.clone(), before.clone());
        async move {
            let now = stamp(
                maps.get_opt("cluster-autoscaler-status")
                    .await
                    .ok()
                    .flatten(),
            );
            (now.is_some() && now != before).then_some(())
        }
    })
    .await
    .expect("the autoscaler scans again");
}

/// How many nodes are Ready now.
async fn ready_nodes(cluster: &Cluster) -> usize {
    let list = cluster.nodes().list(&ListParams::default()).await;
    let items = list.map(|l| l.items).unwrap_or_default();
    items
        .iter()
        .filter(|n| minik_tests::cluster::node_is_ready(n))
        .count()
}

fn node_names(list: &[Node]) -> Vec<String> {
    let mut names: Vec<String> = list
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_are_added_for_pending_pods_and_removed_when_underused() {
    let _machine = crate::support::exclusive().await;
    let mut cluster = started().await;
    let client = cluster.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let (max_nodes, sampler) = sample_max_nodes(&cluster);
    let applied = Instant::now();
    deployments.create(&grow(6)).await.expect("create");

    // The first nodes are asked for: kill the autoscaler before they are Ready, start a new one.
    let first = eventually("a scale-up", Duration::from_secs(60), || {
        let nodes = cluster.autoscaling().map(|a| a.nodes()).unwrap_or_default();
        async move { (!nodes.is_empty()).then_some(nodes) }
    })
    .await
    .expect("the autoscaler adds nodes");
    let scale_up_ms = applied.elapsed().as_millis();
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    eventually("a TriggeredScaleUp event", Duration::from_secs(30), || {
        let events = events.clone();
        async move {
            let list = events.list(&ListParams::default()).await.ok()?;
            let reasons = list.items.into_iter().filter_map(|e| e.reason);
            reasons
                .into_iter()
                .any(|r| r == "TriggeredScaleUp")
                .then_some(())
        }
    })
    .await
    .expect("the pods are told they triggered a scale-up");
    let ready_at_kill = ready_nodes(&cluster).await;
    let (old_pid, new_pid) = kill_and_restart(&mut cluster).await;

    let label = ListParams::default().labels(&format!("app={GROW}"));
    let running = wait_for_all(
        &cluster.pods(),
        label.clone(),
        |p: &[Pod]| p.len() == 6 && p.iter().all(pods::is_running),
        Duration::from_secs(120),
    )
    .await
    .expect("all 6 pods Running");
    let all_running_ms = applied.elapsed().as_millis();
    let group = cluster.autoscaling().expect("autoscaling").nodes();
    assert_eq!(
        group,
        ["node-101", "node-102"],
        "2 nodes added, none twice (first {first:?})"
    );
    let on_new = running
        .iter()
        .filter(|p| pods::node(p).is_some_and(|n| n != "node-1"));
    assert_eq!(on_new.count(), 4, "4 pods on the added nodes");
    let added = cluster.nodes().get("node-101").await.expect("node-101");
    let labels = added.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get("minik.dev/autoscaled").map(String::as_str),
        Some("true")
    );
    let reasons: Vec<String> = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(
        reasons.iter().any(|r| r == "FailedScheduling"),
        "{reasons:?}"
    );

    // Scale to 1 under a PodDisruptionBudget: the added nodes go after the unneeded time.
    let pdb: PodDisruptionBudget = serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": GROW},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": GROW}}},
    }))
    .expect("a PDB");
    Api::<PodDisruptionBudget>::namespaced(client.clone(), "default")
        .create(&pdb)
        .await
        .expect("create PDB");
    let scaled = Instant::now();
    let patch = Patch::Merge(json!({"spec": {"replicas": 1}}));
    deployments.patch(GROW, &patch).await.expect("scale to 1");
    let nodes: Api<Node> = Api::all(client.clone());
    wait_for_all(
        &nodes,
        ListParams::default(),
        |n: &[Node]| node_names(n) == ["node-1"],
        Duration::from_secs(120),
    )
    .await
    .expect("the added nodes removed, node-1 kept");
    let scale_down_ms = scaled.elapsed().as_millis();
    assert!(cluster
        .autoscaling()
        .expect("autoscaling")
        .nodes()
        .is_empty());
    wait_for_all(
        &cluster.pods(),
        label,
        |p: &[Pod]| {
            p.len() == 1
                && p.iter()
                    .all(|p| pods::is_running(p) && pods::node(p) == Some("node-1"))
        },
        Duration::from_secs(60),
    )
    .await
    .expect("the last pod runs on node-1");
    let reasons: Vec<String> = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(reasons.iter().any(|r| r == "ScaleDown"), "{reasons:?}");
    let status = Api::<ConfigMap>::namespaced(client, "kube-system")
        .get("cluster-autoscaler-status")
        .await
        .expect("the status ConfigMap");
    assert!(status.data.unwrap_or_default()["status"].contains("autoscalerStatus: Running"));
    sampler.abort();
    let peak = max_nodes.load(Ordering::SeqCst);
    assert!(peak <= 4, "never more than --max-nodes: {peak}");
    assert!(
        peak <= 3,
        "never more than the 6 pods need (3 nodes): {peak}"
    );
    println!(
        "autoscale: first scale-up +{scale_up_ms} ms (killed with {ready_at_kill} node(s) Ready), \
         all 6 Running +{all_running_ms} ms, \
         peak {peak} nodes; scaled to 1 → added nodes gone +{scale_down_ms} ms (unneeded time 5 s); \
         autoscaler pid {old_pid} killed -9, {new_pid} took over"
    );
    node_group_api_refuses_other_certificates(&mut cluster).await;
    let (killed_ready, added) = kill_mid_scale_up(&mut cluster, &deployments).await;
    println!("autoscale: killed with {killed_ready} node(s) Ready during a scale-up, {added:?} added once");
    deployments
        .delete(GROW, &Default::default())
        .await
        .expect("delete");
    stop_clean(cluster).await;
}

/// The node-group API lets no other identity in: the admin's certificate (same CA) gets 403.
async fn node_group_api_refuses_other_certificates(cluster: &mut Cluster) {
    let url = cluster
        .autoscaling()
        .expect("autoscaling")
        .url()
        .to_string();
    let path = cluster.dir().join("admin-node-group.kubeconfig");
    cluster
        .pki()
        .write_kubeconfig(&Identity::admin(), &url, &path)
        .expect("a kubeconfig for the node-group API");
    let admin = Client::from_kubeconfig(&path).expect("admin client");
    let answer = admin
        .raw_request(minik_client::Method::POST, "/NodeGroupIncreaseSize")
        .json(&json!({"id": "minik", "delta": 1}))
        .send()
        .await
        .expect("an answer");
    assert_eq!(
        answer.status().as_u16(),
        403,
        "the admin may not resize the group"
    );
}
