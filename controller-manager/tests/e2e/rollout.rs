//! Seed 002, scaled: a rolling update of 10 replicas with the default 25%/25%, sampled on a watch
//! of the pods while old pods take longer than the rollout to exit.

use minik_api::core::Pod;
use minik_client::Patch;
use serde_json::json;

use crate::cluster::wait_until;
use crate::workloads::{
    complete, controller_manager, deployment, image, revision, workloads_with, Guard,
};

fn terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

fn ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// DP6, DP12: with surge 3 and unavailable 2, never fewer than 8 pods available nor more than 13
/// not terminating; the rollout completes while every old pod is still Terminating, so 20 pods
/// exist at the end (10 Running new, 10 Terminating old, shown so by `get pods`), as in seed 002.
#[tokio::test]
async fn a_rolling_update_keeps_its_budget_and_ends_beside_terminating_pods() {
    let w = workloads_with(false).await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    w.deployments
        .create(&deployment(10, "web:v1"))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| all.iter().any(|d| complete(d, 10))).await;
    wait_until(&w.pods, |all| all.iter().filter(|p| ready(p)).count() == 10).await;

    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:v2"}]}}}});
    w.deployments
        .patch("web", &Patch::Strategic(patch))
        .await
        .unwrap();
    let (mut min_available, mut max_live, mut max_terminating) = (i32::MAX, 0, 0);
    let pods = wait_until(&w.pods, |all| {
        let live: Vec<&Pod> = all.iter().filter(|p| !terminating(p)).collect();
        let available = live.iter().filter(|p| ready(p)).count() as i32;
        min_available = min_available.min(available);
        max_live = max_live.max(live.len());
        max_terminating = max_terminating.max(all.len() - live.len());
        live.len() == 10 && live.iter().all(|p| image(p) == "web:v2" && ready(p))
    })
    .await;
    assert!(min_available >= 8, "available fell to {min_available}");
    assert!(max_live <= 13, "{max_live} pods not terminating at once");
    assert_eq!(
        pods.iter().filter(|p| terminating(p)).count(),
        10,
        "the old pods are all still Terminating"
    );
    assert!(max_terminating >= 8);
    // Issue 15 item 7: `get pods` shows the old ones Terminating for their whole grace period.
    let table = w
        .server
        .client
        .get_table("/api/v1/namespaces/default/pods")
        .await
        .unwrap();
    let shown = table
        .rows
        .iter()
        .filter(|row| row.cells.iter().any(|c| c == "Terminating"))
        .count();
    assert_eq!(shown, 10);
    wait_until(&w.deployments, |all| {
        all.iter().any(|d| revision(d) == "2" && complete(d, 10))
    })
    .await;
}
