//! Deployments under change and under faults (issue 15): scaled in the middle of a rollout, and
//! the controller manager killed with -9 mid-rollout then restarted. Both must end with exactly
//! the replicas asked for, no extra pod at any time beyond the surge, and one ReplicaSet per
//! template — the expectations and the level-triggered sync of `controller-manager/` at work.

use std::collections::BTreeSet;

use minik_api::core::Pod;
use minik_api::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use minik_client::{Api, ListParams, Patch};
use minik_tests::wait::{wait_for, wait_for_all};
use minik_tests::Cluster;
use nix::sys::signal::Signal;
use serde_json::json;

use crate::rollout::{deployment, remove_now, rolled_out, Sampler, ROLLOUT};
use crate::support::stop_clean;

/// A change of template that starts a rollout.
fn new_version(version: &str) -> Patch {
    Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "env": [{"name": "VERSION", "value": version}]}
    ]}}}}))
}

/// Creates a Deployment of `replicas` web pods rolled one at a time (maxSurge 1,
/// maxUnavailable 0, each new pod available only after 1 s: minReadySeconds) and waits until it
/// is available.
async fn slow_rolling(cluster: &Cluster, name: &str, replicas: i32) -> Api<Deployment> {
    let mut fixture = deployment(name, replicas, 0, None);
    let mut spec = serde_json::to_value(fixture.spec.take()).expect("spec");
    spec["strategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
    spec["minReadySeconds"] = json!(1);
    fixture.spec = serde_json::from_value(spec).expect("a valid spec");
    let api: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    api.create(&fixture).await.expect("create");
    wait_for(&api, name, rolled_out(replicas), ROLLOUT)
        .await
        .expect("first version available");
    api
}

/// The ReplicaSets of `app=NAME`.
async fn replica_sets(cluster: &Cluster, name: &str) -> Vec<ReplicaSet> {
    let api: Api<ReplicaSet> = Api::namespaced(cluster.client(), "default");
    let lp = ListParams::default().labels(&format!("app={name}"));
    api.list(&lp).await.expect("list").items
}

/// Scaling from 4 to 8 while a rollout runs ends with 8 updated, available replicas.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scaling_during_a_rollout_ends_at_the_new_count() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let api = slow_rolling(&cluster, "midscale", 4).await;
    let sampler = Sampler::start(cluster.pods(), "midscale", 4).await;
    api.patch("midscale", &new_version("2"))
        .await
        .expect("new version");
    let scale = Patch::Merge(json!({"spec": {"replicas": 8}}));
    api.patch("midscale", &scale).await.expect("scale");
    wait_for(&api, "midscale", rolled_out(8), ROLLOUT)
        .await
        .expect("8 replicas of the new version");
    let peaks = sampler.peaks();
    eprintln!("scaled mid-rollout: {peaks:?}");
    // maxSurge 1 over the final 8 replicas: at most 9 pods not terminating at any time.
    assert!(peaks.max_not_terminating <= 9, "{peaks:?}");
    assert_eq!(replica_sets(&cluster, "midscale").await.len(), 2);
    remove_now(&cluster, "midscale").await;
    stop_clean(cluster).await;
}

/// kill -9 of the controller manager in the middle of a rollout: its successor (after the
/// Lease expires) finishes the rollout with the right counts and no extra pods.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn controller_manager_killed_mid_rollout_finishes_it() {
    let _machine = crate::support::exclusive().await;
    let mut cluster = Cluster::builder()
        .processes(true)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let api = slow_rolling(&cluster, "crash", 6).await;
    let sampler = Sampler::start(cluster.pods(), "crash", 6).await;
    api.patch("crash", &new_version("2"))
        .await
        .expect("new version");
    // Mid-rollout: pods of both templates are live (not terminating) at once.
    let labelled = ListParams::default().labels("app=crash");
    let both_live = |pods: &[Pod]| {
        let hashes: BTreeSet<&str> = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.metadata.labels.as_ref()?.get("pod-template-hash"))
            .map(String::as_str)
            .collect();
        hashes.len() == 2
    };
    wait_for_all(&cluster.pods(), labelled, both_live, ROLLOUT)
        .await
        .expect("the rollout under way");
    let mid = api.get("crash").await.expect("get");
    let updated = mid.status.and_then(|s| s.updated_replicas).unwrap_or(0);
    cluster
        .kill("controller-manager", Signal::SIGKILL)
        .await
        .expect("kill -9");
    cluster
        .restart("controller-manager")
        .await
        .expect("restart");
    wait_for(&api, "crash", rolled_out(6), ROLLOUT)
        .await
        .expect("the successor finishes the rollout");
    let peaks = sampler.peaks();
    eprintln!("killed with {updated} of 6 updated: {peaks:?}");
    assert!(
        peaks.max_not_terminating <= 7,
        "an extra pod appeared: {peaks:?}"
    );
    assert!(peaks.min_available >= 6, "maxUnavailable 0 held: {peaks:?}");
    assert_eq!(replica_sets(&cluster, "crash").await.len(), 2);
    remove_now(&cluster, "crash").await;
    stop_clean(cluster).await;
}
