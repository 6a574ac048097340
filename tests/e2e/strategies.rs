//! The Deployment strategies and knobs of issue 15, each on real pods and sampled on a watch:
//! maxSurge 0 / maxUnavailable 1, maxSurge 100%, Recreate, minReadySeconds, a rollout that never
//! becomes ready (ProgressDeadlineExceeded), scaling in the middle of a rollout, and the
//! controller manager killed with -9 mid-rollout. The arithmetic they check is
//! `docs/workloads.md#rolling-update`.

use std::time::{Duration, Instant};

use minik_api::k8s_openapi::api::apps::v1::Deployment;
use minik_client::{Api, Patch};
use minik_tests::wait::wait_for;
use minik_tests::Cluster;
use serde_json::json;

use crate::rollout::{deployment, remove_now, roll, rolled_out, ROLLOUT};
use crate::support::stop_clean;

fn deployments(cluster: &Cluster) -> Api<Deployment> {
    Api::namespaced(cluster.client(), "default")
}

/// A Deployment of `replicas` quick pods with `strategy` (JSON) in its spec.
fn with_strategy(name: &str, replicas: i32, strategy: serde_json::Value) -> Deployment {
    let mut fixture = deployment(name, replicas, 500, None);
    let mut spec = serde_json::to_value(fixture.spec.take()).expect("spec");
    spec["strategy"] = strategy;
    fixture.spec = serde_json::from_value(spec).expect("a valid spec");
    fixture
}

/// maxSurge 0 / maxUnavailable 1: one pod at a time, never more than the replicas.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_surge_zero_replaces_one_pod_at_a_time() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let strategy =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}});
    let (peaks, _) = roll(&cluster, with_strategy("nosurge", 4, strategy)).await;
    assert!(peaks.min_available >= 3, "{peaks:?}");
    assert!(peaks.max_not_terminating <= 4, "{peaks:?}");
    remove_now(&cluster, "nosurge").await;
    stop_clean(cluster).await;
}

/// maxSurge 100% / maxUnavailable 0: the whole new version starts beside the old one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_surge_hundred_percent_doubles_then_drops() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "100%", "maxUnavailable": 0}});
    let (peaks, _) = roll(&cluster, with_strategy("surge", 4, strategy)).await;
    assert!(peaks.min_available >= 4, "{peaks:?}");
    assert_eq!(peaks.max_not_terminating, 8, "{peaks:?}");
    remove_now(&cluster, "surge").await;
    stop_clean(cluster).await;
}

/// Recreate: every old pod is gone before a new one exists, so two versions never coexist.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn recreate_never_runs_old_and_new_together() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let (peaks, _) = roll(
        &cluster,
        with_strategy("recreate", 3, json!({"type": "Recreate"})),
    )
    .await;
    assert_eq!(
        peaks.max_versions, 1,
        "old and new pods overlapped: {peaks:?}"
    );
    assert_eq!(
        peaks.min_available, 0,
        "Recreate takes the old version down: {peaks:?}"
    );
    remove_now(&cluster, "recreate").await;
    stop_clean(cluster).await;
}

/// minReadySeconds: a ready pod counts as available only after it has stayed ready that long.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn min_ready_seconds_delays_availability() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let mut fixture = deployment("minready", 2, 0, None);
    fixture.spec.as_mut().unwrap().min_ready_seconds = Some(3);
    let api = deployments(&cluster);
    api.create(&fixture).await.expect("create");
    let ready = |d: &Deployment| {
        let status = d.status.clone().unwrap_or_default();
        status.ready_replicas == Some(2)
    };
    let first_ready = wait_for(&api, "minready", ready, ROLLOUT)
        .await
        .expect("ready");
    let ready_at = Instant::now();
    let available = first_ready
        .status
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    assert_eq!(available, 0, "available before minReadySeconds");
    wait_for(&api, "minready", rolled_out(2), ROLLOUT)
        .await
        .expect("available");
    let waited = ready_at.elapsed();
    assert!(
        waited >= Duration::from_millis(1500),
        "available after {waited:?}"
    );
    remove_now(&cluster, "minready").await;
    stop_clean(cluster).await;
}

/// A new version that never gets ready stalls within the budget and, after
/// progressDeadlineSeconds, reports Progressing=False with ProgressDeadlineExceeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_never_ready_version_stalls_and_exceeds_its_deadline() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let mut fixture = deployment("stall", 4, 0, None);
    fixture.spec.as_mut().unwrap().progress_deadline_seconds = Some(3);
    let api = deployments(&cluster);
    api.create(&fixture).await.expect("create");
    wait_for(&api, "stall", rolled_out(4), ROLLOUT)
        .await
        .expect("v1 available");
    let never_ready = json!({"spec": {"template": {"spec": {"containers": [{
        "name": "app",
        "readinessProbe": {"exec": {"command": ["false"]}, "periodSeconds": 1}
    }]}}}});
    api.patch("stall", &Patch::Strategic(never_ready))
        .await
        .expect("patch");
    let exceeded = |d: &Deployment| {
        let conditions = d
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        conditions.iter().any(|c| {
            c.type_ == "Progressing"
                && c.status == "False"
                && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
        })
    };
    let stalled = wait_for(&api, "stall", exceeded, ROLLOUT)
        .await
        .expect("deadline exceeded");
    let status = stalled.status.unwrap_or_default();
    // maxUnavailable 25% of 4 is 1: three old pods stay available throughout.
    assert!(status.available_replicas.unwrap_or(0) >= 3, "{status:?}");
    remove_now(&cluster, "stall").await;
    stop_clean(cluster).await;
}
