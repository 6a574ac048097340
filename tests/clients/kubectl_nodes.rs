//! kubectl 1.32, unmodified, on nodes (issue 19): `cordon`, `uncordon`, `taint nodes N k=v:Effect`
//! and its removal with a trailing `-`, and what the scheduler says meanwhile.

use std::time::Duration;

use minik_api::core::{Node, Pod};
use minik_tests::fixtures::pod;
use minik_tests::wait::{pod as p, wait_for};

use crate::support::{cells, cluster, kubectl_binary, line_of, stop_clean, Kubectl};

const WAIT: Duration = Duration::from_secs(30);

/// The message of the pod's `PodScheduled=False` condition.
fn unschedulable_message(pod: &Pod) -> Option<&str> {
    let conditions = pod.status.as_ref()?.conditions.as_deref()?;
    let scheduled = conditions.iter().find(|c| c.type_ == "PodScheduled")?;
    (scheduled.status == "False").then_some(scheduled.message.as_deref()?)
}

fn taints(node: &Node) -> Vec<String> {
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    taints
        .iter()
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect()
}

#[tokio::test]
async fn kubectl_cordons_uncordons_and_taints_a_node() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);

    let cordoned = kubectl.ok(&["cordon", "node-1"]).await;
    assert_eq!(cordoned.trim(), "node/node-1 cordoned");
    let listed = kubectl.ok(&["get", "nodes"]).await;
    let row = cells(line_of(&listed, "node-1").expect("a row for node-1"));
    assert_eq!(row[1], "Ready,SchedulingDisabled", "{listed}");
    // The node lifecycle controller mirrors the cordon as a taint (TaintNodesByCondition).
    let has = |key: &'static str| move |n: &Node| taints(n).iter().any(|t| t == key);
    wait_for(
        &cluster.nodes(),
        "node-1",
        has("node.kubernetes.io/unschedulable:NoSchedule"),
        WAIT,
    )
    .await
    .expect("the unschedulable taint");
    cluster
        .pods()
        .create(&pod("waiting").build())
        .await
        .expect("create");
    let pending = wait_for(
        &cluster.pods(),
        "waiting",
        |pod| unschedulable_message(pod).is_some(),
        WAIT,
    )
    .await
    .expect("unschedulable");
    assert_eq!(
        unschedulable_message(&pending),
        Some("0/1 nodes are available: 1 node(s) were unschedulable.")
    );
    let uncordoned = kubectl.ok(&["uncordon", "node-1"]).await;
    assert_eq!(uncordoned.trim(), "node/node-1 uncordoned");
    wait_for(&cluster.pods(), "waiting", p::is_scheduled, WAIT)
        .await
        .expect("scheduled once uncordoned");
    wait_for(&cluster.nodes(), "node-1", |n| taints(n).is_empty(), WAIT)
        .await
        .expect("the taint goes");

    let tainted = kubectl
        .ok(&["taint", "nodes", "node-1", "dedicated=gpu:NoSchedule"])
        .await;
    assert_eq!(tainted.trim(), "node/node-1 tainted");
    cluster
        .pods()
        .create(&pod("repelled").build())
        .await
        .expect("create");
    let pending = wait_for(
        &cluster.pods(),
        "repelled",
        |pod| unschedulable_message(pod).is_some(),
        WAIT,
    )
    .await
    .expect("unschedulable");
    assert_eq!(
        unschedulable_message(&pending),
        Some("0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}.")
    );
    let untainted = kubectl
        .ok(&["taint", "nodes", "node-1", "dedicated=gpu:NoSchedule-"])
        .await;
    assert_eq!(untainted.trim(), "node/node-1 untainted");
    wait_for(&cluster.pods(), "repelled", p::is_scheduled, WAIT)
        .await
        .expect("scheduled once untainted");
    stop_clean(cluster).await;
}
