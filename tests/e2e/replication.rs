//! ReplicationControllers with real processes (issue 20): the ReplicaSet controller over a
//! ReplicationController keeps its replicas, its pods name a `v1 ReplicationController` as their
//! controller, and its `scale` subresource scales it.

use minik_api::core::{Pod, ReplicationController};
use minik_client::{Api, DeleteParams, Patch};
use minik_tests::wait::{pod::is_running, wait_for, wait_for_all};
use serde_json::json;

use crate::daemonsets::{pods_of, SETTLE};
use crate::support::stop_clean;

/// A ReplicationController keeps its replicas, its pods carry a `v1` controller reference, and
/// its `scale` subresource scales it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replication_controller_keeps_and_scales_its_replicas() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let api: Api<ReplicationController> = Api::namespaced(cluster.client(), "default");
    let rc: ReplicationController = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "old", "namespace": "default"},
        "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "old"}},
                 "spec": {"terminationGracePeriodSeconds": 1,
                          "containers": [{"name": "web", "image": "minik/web"}]}}}
    }))
    .expect("a valid RC");
    api.create(&rc).await.expect("create");
    let running = |n: usize| move |pods: &[Pod]| pods.len() == n && pods.iter().all(is_running);
    let pods = wait_for_all(&cluster.pods(), pods_of("old"), running(2), SETTLE)
        .await
        .expect("two pods");
    let owner = pods[0]
        .metadata
        .owner_references
        .clone()
        .unwrap_or_default();
    assert_eq!(
        (owner[0].api_version.as_str(), owner[0].kind.as_str()),
        ("v1", "ReplicationController")
    );
    let scale = Patch::Merge(json!({"spec": {"replicas": 3}}));
    let path = "/api/v1/namespaces/default/replicationcontrollers/old/scale";
    let scaled = cluster
        .client()
        .patch_json(path, &scale)
        .await
        .expect("scale");
    assert_eq!(scaled["kind"], "Scale");
    assert_eq!(scaled["status"]["selector"], "app=old");
    wait_for_all(&cluster.pods(), pods_of("old"), running(3), SETTLE)
        .await
        .expect("three pods");
    let victim = pods[0].metadata.name.clone().unwrap_or_default();
    cluster
        .pods()
        .delete(&victim, &DeleteParams::default())
        .await
        .expect("delete a pod");
    let replaced = move |pods: &[Pod]| {
        running(3)(pods)
            && pods
                .iter()
                .all(|p| p.metadata.name.as_deref() != Some(&victim))
    };
    wait_for_all(&cluster.pods(), pods_of("old"), replaced, SETTLE)
        .await
        .expect("the deleted pod replaced");
    let ready = |rc: &ReplicationController| {
        rc.status
            .as_ref()
            .is_some_and(|s| s.replicas == 3 && s.ready_replicas == Some(3))
    };
    wait_for(&api, "old", ready, SETTLE)
        .await
        .expect("status 3 ready");
    stop_clean(cluster).await;
}
