//! kubectl 1.32, unmodified, draining a node under a PodDisruptionBudget (issue 19): `cordon`,
//! `uncordon`, `apply` of a policy/v1 budget, an eviction refused with a 429, and `drain
//! --ignore-daemonsets --delete-emptydir-data`, which evicts through `pods/eviction` (protobuf
//! bodies), is refused while the budget has no disruption left, retries every 5 s, and finishes as
//! the evicted pods are replaced on the other node.

use std::time::Duration;

use minik_api::core::Pod;
use minik_api::policy::PodDisruptionBudget;
use minik_client::{Api, Error, ListParams};
use minik_tests::wait::{pod, wait_for, wait_for_all};
use minik_tests::Cluster;
use reqwest::Method;
use serde_json::json;

use crate::support::{kubectl_binary, stop_clean, Kubectl};

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  \
    replicas: 3\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    \
    spec:\n      terminationGracePeriodSeconds: 2\n      containers:\n      - {name: web, image: busybox, command: [sleep, \"3600\"]}\n";

fn budget(min_available: i32) -> String {
    format!(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: web}}\nspec:\n  \
         minAvailable: {min_available}\n  selector: {{matchLabels: {{app: web}}}}\n"
    )
}

/// Waits until the budget's controller has counted `healthy` pods allowing `allowed` disruptions.
async fn budget_counts(cluster: &Cluster, healthy: i32, allowed: i32) -> PodDisruptionBudget {
    let api: Api<PodDisruptionBudget> = Api::namespaced(cluster.client(), "default");
    let counted = |pdb: &PodDisruptionBudget| {
        pdb.status.as_ref().is_some_and(|s| {
            s.current_healthy == healthy
                && s.disruptions_allowed == allowed
                && s.observed_generation == pdb.metadata.generation
        })
    };
    wait_for(&api, "web", counted, Duration::from_secs(30))
        .await
        .expect("the disruption controller counts the pods")
}

/// Three ready `app=web` pods, all on `node`.
async fn ready_on(cluster: &Cluster, node: &str) -> Vec<Pod> {
    let lp = ListParams::default().labels("app=web");
    let on_node = |pods: &[Pod]| {
        let live: Vec<&Pod> = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        live.len() == 3
            && live
                .iter()
                .all(|p| pod::is_ready(p) && pod::node(p) == Some(node))
    };
    wait_for_all(&cluster.pods(), lp, on_node, Duration::from_secs(90))
        .await
        .expect("three ready pods")
}

#[tokio::test]
async fn kubectl_drain_waits_for_the_budget_and_moves_the_pods() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = Cluster::builder()
        .nodes(2)
        .without_services()
        .start()
        .await
        .expect("start cluster");
    let kubectl = Kubectl::new(binary, &cluster);
    kubectl.ok(&["cordon", "node-2"]).await;
    let deployment = kubectl.manifest("web.yaml", DEPLOYMENT);
    kubectl
        .ok(&["apply", "-f", deployment.to_str().unwrap()])
        .await;
    let pods = ready_on(&cluster, "node-1").await;
    kubectl.ok(&["uncordon", "node-2"]).await;

    // A budget that needs every pod: an eviction is refused with upstream's 429.
    let strict = kubectl.manifest("pdb.yaml", &budget(3));
    kubectl.ok(&["apply", "-f", strict.to_str().unwrap()]).await;
    budget_counts(&cluster, 3, 0).await;
    let victim = pods[0].metadata.name.clone().unwrap();
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": victim, "namespace": "default"}});
    let path = format!("/api/v1/namespaces/default/pods/{victim}/eviction");
    let refused = cluster
        .client()
        .request_json(Method::POST, &path, Some(&eviction))
        .await
        .expect_err("the budget refuses");
    let Error::Api(status) = refused else {
        panic!("not a Status: {refused:?}");
    };
    assert_eq!(status.code, Some(429), "{status:?}");
    assert_eq!(
        status.message.as_deref(),
        Some("Cannot evict pod as it would violate the pod's disruption budget.")
    );
    let pdbs = kubectl.ok(&["get", "pdb", "web"]).await;
    assert!(pdbs.contains("ALLOWED DISRUPTIONS"), "{pdbs}");

    // minAvailable 2 of 3: one disruption at a time, so the drain must wait for replacements.
    let relaxed = kubectl.manifest("pdb.yaml", &budget(2));
    kubectl
        .ok(&["apply", "-f", relaxed.to_str().unwrap()])
        .await;
    budget_counts(&cluster, 3, 1).await;
    let drain = [
        "drain",
        "node-1",
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=55s",
    ];
    let drained = kubectl.run(&drain).await.success();
    assert!(
        drained.stdout.contains("node/node-1 drained"),
        "{drained:#?}"
    );
    assert!(
        drained
            .stderr
            .contains("would violate the pod's disruption budget"),
        "some evictions waited for the budget: {drained:#?}"
    );
    for evicted in &pods {
        let name = evicted.metadata.name.as_deref().unwrap();
        assert!(
            drained.stdout.contains(&format!("pod/{name} evicted")),
            "{drained:#?}"
        );
    }
    ready_on(&cluster, "node-2").await;
    stop_clean(cluster).await;
}
