//! kubectl 1.32, unmodified, driving DaemonSets and ReplicationControllers (issue 20):
//! `apply -f` of each, `rollout status ds/NAME`, `describe ds`, `get all`, `get ds` and `get rc` (their columns as kubectl
//! prints them, short names `ds` and `rc`), `scale rc --replicas` (the `scale` subresource), and
//! `delete` taking the pods along.

use std::time::Duration;

use minik_api::core::Pod;
use minik_client::ListParams;
use minik_tests::wait::wait_for_all;

use crate::support::{cells, cluster, kubectl_binary, line_of, stop_clean, Kubectl};

const DAEMON_SET: &str = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  \
    selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n    \
    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - {name: agent, image: nginx}\n";

const REPLICATION_CONTROLLER: &str = "apiVersion: v1\nkind: ReplicationController\nmetadata:\n  \
    name: old\nspec:\n  replicas: 1\n  template:\n    metadata: {labels: {app: old}}\n    spec:\n      \
    terminationGracePeriodSeconds: 1\n      containers:\n      - {name: web, image: nginx}\n";

#[tokio::test]
async fn kubectl_rolls_out_a_daemon_set_and_scales_a_replication_controller() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let manifest = kubectl.manifest("ds.yaml", DAEMON_SET);
    let applied = kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(
        applied.contains("daemonset.apps/agent created"),
        "{applied}"
    );
    let rolled = kubectl
        .ok(&["rollout", "status", "ds/agent", "--timeout=90s"])
        .await;
    assert!(
        rolled.contains("daemon set \"agent\" successfully rolled out"),
        "{rolled}"
    );
    let listed = kubectl.ok(&["get", "ds"]).await;
    let header = cells(listed.lines().next().unwrap());
    assert_eq!(
        header,
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "NODE",
            "SELECTOR",
            "AGE"
        ]
    );
    let row = cells(line_of(&listed, "agent").expect("a row for agent"));
    assert_eq!(
        row[..7],
        ["agent", "1", "1", "1", "1", "1", "<none>"],
        "{listed}"
    );

    let described = kubectl.ok(&["describe", "ds", "agent"]).await;
    assert!(
        described.contains("Desired Number of Nodes Scheduled: 1"),
        "{described}"
    );
    assert!(
        described.contains("1 Running / 0 Waiting / 0 Succeeded / 0 Failed"),
        "{described}"
    );
    let all = kubectl.ok(&["get", "all"]).await;
    assert!(all.contains("daemonset.apps/agent"), "{all}");

    let manifest = kubectl.manifest("rc.yaml", REPLICATION_CONTROLLER);
    let applied = kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(
        applied.contains("replicationcontroller/old created"),
        "{applied}"
    );
    let scaled = kubectl.ok(&["scale", "rc", "old", "--replicas=3"]).await;
    assert!(
        scaled.contains("replicationcontroller/old scaled"),
        "{scaled}"
    );
    let three_running =
        |pods: &[Pod]| pods.len() == 3 && pods.iter().all(minik_tests::wait::pod::is_running);
    let lp = ListParams::default().labels("app=old");
    wait_for_all(
        &cluster.pods(),
        lp.clone(),
        three_running,
        Duration::from_secs(90),
    )
    .await
    .expect("three pods");
    let waited = kubectl
        .ok(&[
            "wait",
            "--for=jsonpath={.status.readyReplicas}=3",
            "rc/old",
            "--timeout=60s",
        ])
        .await;
    assert!(waited.contains("condition met"), "{waited}");
    let listed = kubectl.ok(&["get", "rc", "-o", "wide"]).await;
    let header = cells(listed.lines().next().unwrap());
    assert_eq!(
        header,
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    let row = cells(line_of(&listed, "old").expect("a row for old"));
    assert_eq!(row[..4], ["old", "3", "3", "3"], "{listed}");
    assert_eq!(row[5..], ["web", "nginx", "app=old"], "{listed}");

    let deleted = kubectl.ok(&["delete", "rc", "old"]).await;
    assert!(
        deleted.contains("replicationcontroller \"old\" deleted"),
        "{deleted}"
    );
    wait_for_all(
        &cluster.pods(),
        lp,
        |pods: &[Pod]| pods.is_empty(),
        Duration::from_secs(60),
    )
    .await
    .expect("kubectl deletes the pods in the background");
    kubectl.ok(&["delete", "ds", "agent"]).await;
    stop_clean(cluster).await;
}
