//! StatefulSets with real processes (issue 20): pods start in ordinal order, each after its
//! predecessor is Running and Ready, and stop in reverse; a deleted pod comes back with its name
//! and finds the file it wrote in its local-path volume; scaling down keeps the claims (Retain) or
//! deletes them with their volumes (whenScaled: Delete).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use minik_api::apps::StatefulSet;
use minik_api::core::{PersistentVolume, PersistentVolumeClaim, Pod};
use minik_client::{Api, DeleteParams, ListParams, Patch};
use minik_tests::wait::{eventually, pod::is_ready, wait_deleted, wait_for, wait_for_all};
use minik_tests::Cluster;
use serde_json::{json, Value};

use crate::support::stop_clean;

/// Bound for pods to start or go on a loaded 2-core machine.
pub const SETTLE: Duration = Duration::from_secs(120);

/// A set of `replicas` busybox pods labelled `app=NAME` that append a line to `data/log` (their
/// claim, when `claims`) and sleep; `spec` is merged over the defaults.
pub fn stateful_set(name: &str, replicas: i32, claims: bool, spec: Value) -> StatefulSet {
    let script = if claims {
        "echo started >> data/log; exec sleep 3600"
    } else {
        "exec sleep 3600"
    };
    let mut body = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "serviceName": name,
                 "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"terminationGracePeriodSeconds": 1,
                                       "containers": [{"name": "app", "image": "busybox",
                                                       "args": ["sh", "-c", script],
                                                       "env": [{"name": "VERSION", "value": "1"}],
                                                       "volumeMounts": []}]}}}
    });
    if claims {
        body["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]);
        body["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] =
            json!([{"name": "data", "mountPath": "/data"}]);
    }
    if let (Some(target), Value::Object(extra)) = (body["spec"].as_object_mut(), spec) {
        target.extend(extra);
    }
    serde_json::from_value(body).expect("a valid StatefulSet")
}

pub fn pods_of(app: &str) -> ListParams {
    ListParams::default().labels(&format!("app={app}"))
}

fn live(pods: &[Pod]) -> Vec<&Pod> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

fn names(pods: &[&Pod]) -> Vec<String> {
    let mut names: Vec<String> = pods
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    names.sort();
    names
}

/// Exactly these pods, every one Running and Ready, none terminating.
pub fn ready_exactly(expected: &'static [&'static str]) -> impl Fn(&[Pod]) -> bool {
    move |pods: &[Pod]| {
        pods.len() == expected.len() && names(&live(pods)) == expected && pods.iter().all(is_ready)
    }
}

/// Watches the pods of `app` and records every moment the OrderedReady rule was broken: a pod
/// existing while a lower ordinal is missing or not Ready (start), or a pod terminating while a
/// higher ordinal still exists (stop).
pub fn sample_order(
    cluster: &Cluster,
    app: &str,
) -> (Arc<Mutex<Vec<String>>>, tokio::task::JoinHandle<()>) {
    let violations = Arc::new(Mutex::new(Vec::new()));
    let (pods, lp, seen, app) = (
        cluster.pods(),
        pods_of(app),
        violations.clone(),
        app.to_string(),
    );
    let task = tokio::spawn(async move {
        let check = move |pods: &[Pod]| {
            let by_ordinal = |n: usize| {
                pods.iter()
                    .find(|p| p.metadata.name.as_deref() == Some(&format!("{app}-{n}")))
            };
            for n in 1..6 {
                let Some(pod) = by_ordinal(n) else { continue };
                let before = by_ordinal(n - 1);
                let starting = pod.metadata.deletion_timestamp.is_none();
                if starting
                    && !before
                        .is_some_and(|b| is_ready(b) && b.metadata.deletion_timestamp.is_none())
                {
                    seen.lock().unwrap().push(format!(
                        "{app}-{n} exists while {app}-{} is not ready",
                        n - 1
                    ));
                }
                if before.is_some_and(|b| b.metadata.deletion_timestamp.is_some()) {
                    seen.lock().unwrap().push(format!(
                        "{app}-{} terminating while {app}-{n} exists",
                        n - 1
                    ));
                }
            }
            false
        };
        let _ = wait_for_all(&pods, lp, check, Duration::from_secs(600)).await;
    });
    (violations, task)
}

/// Three pods start 0, 1, 2, each after the previous is Ready, and scale to zero stops 2, 1, 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stateful_set_starts_in_order_and_stops_in_reverse() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    let api: Api<StatefulSet> = Api::namespaced(cluster.client(), "default");
    let (violations, sampler) = sample_order(&cluster, "order");
    api.create(&stateful_set("order", 3, false, json!({})))
        .await
        .expect("create");
    let pods = wait_for_all(
        &cluster.pods(),
        pods_of("order"),
        ready_exactly(&["order-0", "order-1", "order-2"]),
        SETTLE,
    )
    .await
    .expect("three ready pods");
    let pod = &pods[0];
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("statefulset.kubernetes.io/pod-name"),
        pod.metadata.name.as_ref()
    );
    assert_eq!(
        pod.spec.as_ref().and_then(|s| s.hostname.clone()),
        pod.metadata.name.clone()
    );
    let ready = |sts: &StatefulSet| {
        sts.status
            .as_ref()
            .is_some_and(|s| s.replicas == 3 && s.ready_replicas == Some(3))
    };
    let sts = wait_for(&api, "order", ready, SETTLE)
        .await
        .expect("status 3/3");
    let status = sts.status.expect("status");
    assert_eq!(status.current_revision, status.update_revision);
    api.patch("order", &Patch::Merge(json!({"spec": {"replicas": 0}})))
        .await
        .expect("scale to 0");
    wait_for_all(
        &cluster.pods(),
        pods_of("order"),
        |pods: &[Pod]| pods.is_empty(),
        SETTLE,
    )
    .await
    .expect("every pod gone");
    sampler.abort();
    let violations = violations.lock().unwrap().clone();
    assert!(violations.is_empty(), "OrderedReady broken: {violations:?}");
    stop_clean(cluster).await;
}

/// Polls `read` until it gives something (files have no watch).
async fn eventually_some(what: &str, read: impl Fn() -> Option<String>) -> String {
    eventually(what, SETTLE, || {
        let value = read();
        async move { value }
    })
    .await
    .expect(what)
}

/// The file a pod wrote in its claim's local-path directory, read on the node's disk.
fn volume_file(cluster: &Cluster, volume: &PersistentVolume) -> Option<String> {
    let path = volume
        .spec
        .as_ref()?
        .local
        .as_ref()?
        .path
        .trim_start_matches('/')
        .to_string();
    let mut stack = vec![cluster.dir().to_path_buf()];
    while let Some(dir) = stack.pop() {
        let candidate = dir.join(&path).join("log");
        if candidate.is_file() {
            return std::fs::read_to_string(candidate).ok();
        }
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            if entry.path().is_dir() && !entry.path().ends_with("pods") {
                stack.push(entry.path());
            }
        }
    }
    None
}

/// `data-keep-0` gets a local-path volume on the pod's node; the pod is deleted, comes back as
/// `keep-0` (a new uid), and appends to the same file: two lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deleted_pod_keeps_its_identity_and_its_data() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .nodes(2)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let api: Api<StatefulSet> = Api::namespaced(cluster.client(), "default");
    api.create(&stateful_set("keep", 1, true, json!({})))
        .await
        .expect("create");
    let pods = wait_for_all(
        &cluster.pods(),
        pods_of("keep"),
        ready_exactly(&["keep-0"]),
        SETTLE,
    )
    .await
    .expect("keep-0 ready");
    let first = pods[0].clone();
    let node = first
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .expect("scheduled");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client(), "default");
    let bound = |c: &PersistentVolumeClaim| {
        c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
    };
    let claim = wait_for(&claims, "data-keep-0", bound, SETTLE)
        .await
        .expect("claim Bound");
    assert_eq!(
        claim
            .spec
            .as_ref()
            .and_then(|s| s.storage_class_name.as_deref()),
        Some("standard")
    );
    let volumes: Api<PersistentVolume> = Api::all(cluster.client());
    let volume_name = claim.spec.and_then(|s| s.volume_name).expect("volumeName");
    let volume = volumes
        .get(&volume_name)
        .await
        .expect("the provisioned volume");
    let affinity = serde_json::to_value(&volume.spec.as_ref().unwrap().node_affinity).unwrap();
    assert_eq!(
        affinity["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"],
        json!([node])
    );
    let written = eventually_some("the pod's line in its volume", || {
        volume_file(&cluster, &volume)
    })
    .await;
    assert_eq!(written, "started\n");

    cluster
        .pods()
        .delete("keep-0", &DeleteParams::default())
        .await
        .expect("delete keep-0");
    let uid = first.metadata.uid.clone();
    let replaced =
        move |pods: &[Pod]| pods.len() == 1 && pods[0].metadata.uid != uid && is_ready(&pods[0]);
    let pods = wait_for_all(&cluster.pods(), pods_of("keep"), replaced, SETTLE)
        .await
        .expect("keep-0 back");
    assert_eq!(pods[0].metadata.name.as_deref(), Some("keep-0"));
    assert_eq!(
        pods[0].spec.as_ref().and_then(|s| s.node_name.clone()),
        Some(node),
        "its volume pins it to its node"
    );
    let both = eventually_some("two lines in the volume", || {
        volume_file(&cluster, &volume).filter(|text| text.lines().count() == 2)
    })
    .await;
    assert_eq!(both, "started\nstarted\n");
    stop_clean(cluster).await;
}

/// Two sets scale from 2 to 1: `keep` (whenScaled: Retain) keeps `data-keep-1`; `drop`
/// (whenScaled: Delete) loses `data-drop-1`, and its volume (reclaimPolicy Delete) goes too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scale_down_keeps_or_deletes_claims_by_policy() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    let api: Api<StatefulSet> = Api::namespaced(cluster.client(), "default");
    let parallel = json!({"podManagementPolicy": "Parallel"});
    api.create(&stateful_set("keep", 2, true, parallel.clone()))
        .await
        .expect("create keep");
    let mut drop = parallel;
    drop["persistentVolumeClaimRetentionPolicy"] = json!({"whenScaled": "Delete"});
    api.create(&stateful_set("drop", 2, true, drop))
        .await
        .expect("create drop");
    for (app, expected) in [
        ("keep", &["keep-0", "keep-1"]),
        ("drop", &["drop-0", "drop-1"]),
    ] {
        wait_for_all(
            &cluster.pods(),
            pods_of(app),
            ready_exactly(expected),
            SETTLE,
        )
        .await
        .expect("two ready pods");
    }
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client(), "default");
    let bound = |c: &PersistentVolumeClaim| {
        c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
    };
    let dropped = wait_for(&claims, "data-drop-1", bound, SETTLE)
        .await
        .expect("data-drop-1 Bound");
    let dropped_volume = dropped
        .spec
        .and_then(|s| s.volume_name)
        .expect("volumeName");
    for app in ["keep", "drop"] {
        api.patch(app, &Patch::Merge(json!({"spec": {"replicas": 1}})))
            .await
            .expect("scale to 1");
    }
    wait_deleted(&claims, "data-drop-1", SETTLE)
        .await
        .expect("data-drop-1 deleted with its pod");
    let volumes: Api<PersistentVolume> = Api::all(cluster.client());
    wait_deleted(&volumes, &dropped_volume, SETTLE)
        .await
        .expect("its volume reclaimed");
    wait_for_all(
        &cluster.pods(),
        pods_of("keep"),
        ready_exactly(&["keep-0"]),
        SETTLE,
    )
    .await
    .expect("keep-1 gone");
    let kept = claims.get("data-keep-1").await.expect("data-keep-1 kept");
    assert!(kept.metadata.deletion_timestamp.is_none());
    assert!(
        claims.get("data-drop-0").await.is_ok(),
        "the remaining pod's claim stays"
    );
    stop_clean(cluster).await;
}
