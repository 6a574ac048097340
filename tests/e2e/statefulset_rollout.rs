//! StatefulSet updates with real processes (issue 20): a RollingUpdate with a partition replaces
//! only the ordinals at or above it, highest first; the controller manager killed with -9 in the
//! middle of a rollout leaves no ordinal twice and the successor finishes the update.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use minik_api::apps::StatefulSet;
use minik_api::core::Pod;
use minik_client::{Api, Patch};
use minik_tests::wait::{pod::is_ready, wait_for, wait_for_all};
use minik_tests::Cluster;
use nix::sys::signal::Signal;
use serde_json::json;

use crate::statefulsets::{pods_of, ready_exactly, stateful_set, SETTLE};
use crate::support::stop_clean;

fn version(pod: &Pod) -> Option<String> {
    let container = pod.spec.as_ref()?.containers.first()?;
    container.env.as_ref()?.first()?.value.clone()
}

/// The template version of each live pod, by name.
fn versions(pods: &[Pod]) -> BTreeMap<String, String> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| Some((p.metadata.name.clone()?, version(p)?)))
        .collect()
}

fn new_template() -> Patch {
    Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "env": [{"name": "VERSION", "value": "2"}]}]}}}}))
}

/// Watches the pods of `app`: the most pods seen at once, every pod name seen, and whether a
/// lower ordinal ever ran the new template while a higher one still ran the old.
struct Sampler {
    peak: Arc<Mutex<usize>>,
    out_of_order: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

fn sample(cluster: &Cluster, app: &str, replicas: usize) -> Sampler {
    let (peak, out_of_order) = (Arc::new(Mutex::new(0)), Arc::new(Mutex::new(Vec::new())));
    let (seen_peak, seen_order) = (peak.clone(), out_of_order.clone());
    let (pods, lp, app) = (cluster.pods(), pods_of(app), app.to_string());
    let task = tokio::spawn(async move {
        let check = move |pods: &[Pod]| {
            let mut peak = seen_peak.lock().unwrap();
            *peak = (*peak).max(pods.len());
            let versions = versions(pods);
            for n in 0..replicas.saturating_sub(1) {
                let lower = versions.get(&format!("{app}-{n}"));
                let higher = versions.get(&format!("{app}-{}", n + 1));
                if lower.map(String::as_str) == Some("2") && higher.map(String::as_str) == Some("1")
                {
                    seen_order
                        .lock()
                        .unwrap()
                        .push(format!("{app}-{n} updated before {app}-{}", n + 1));
                }
            }
            false
        };
        let _ = wait_for_all(&pods, lp, check, Duration::from_secs(600)).await;
    });
    Sampler {
        peak,
        out_of_order,
        task,
    }
}

/// Three pods, partition 1: a new template replaces web-2 then web-1; web-0 keeps the old one and
/// the status counts one current and two updated pods.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partitioned_rolling_update_replaces_the_ordinals_above_the_partition_highest_first() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    let api: Api<StatefulSet> = Api::namespaced(cluster.client(), "default");
    let partitioned =
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}});
    api.create(&stateful_set("part", 3, false, partitioned))
        .await
        .expect("create");
    wait_for_all(
        &cluster.pods(),
        pods_of("part"),
        ready_exactly(&["part-0", "part-1", "part-2"]),
        SETTLE,
    )
    .await
    .expect("three ready pods");
    let sampler = sample(&cluster, "part", 3);
    api.patch("part", &new_template())
        .await
        .expect("new template");
    let done = |pods: &[Pod]| {
        let expected: BTreeMap<String, String> =
            [("part-0", "1"), ("part-1", "2"), ("part-2", "2")]
                .into_iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
        pods.len() == 3 && versions(pods) == expected && pods.iter().all(is_ready)
    };
    wait_for_all(&cluster.pods(), pods_of("part"), done, SETTLE)
        .await
        .expect("ordinals 1 and 2 updated, 0 kept");
    let counted = |sts: &StatefulSet| {
        sts.status.as_ref().is_some_and(|s| {
            s.updated_replicas == Some(2)
                && s.current_replicas == Some(1)
                && s.ready_replicas == Some(3)
        })
    };
    let sts = wait_for(&api, "part", counted, SETTLE)
        .await
        .expect("1 current, 2 updated");
    let status = sts.status.expect("status");
    assert_ne!(
        status.current_revision, status.update_revision,
        "the rollout is partial"
    );
    sampler.task.abort();
    assert!(
        sampler.out_of_order.lock().unwrap().is_empty(),
        "{:?}",
        sampler.out_of_order.lock().unwrap()
    );
    assert!(
        *sampler.peak.lock().unwrap() <= 3,
        "never more than one pod per ordinal"
    );
    stop_clean(cluster).await;
}

/// kill -9 of the controller manager once the first pod runs the new template: the successor
/// finishes the rollout; never more than three pods, never a name outside web-0..2.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn controller_manager_killed_mid_stateful_rollout_makes_no_duplicate_ordinal() {
    let _machine = crate::support::exclusive().await;
    let mut cluster = Cluster::builder()
        .processes(true)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let api: Api<StatefulSet> = Api::namespaced(cluster.client(), "default");
    api.create(&stateful_set("crash", 3, false, json!({})))
        .await
        .expect("create");
    wait_for_all(
        &cluster.pods(),
        pods_of("crash"),
        ready_exactly(&["crash-0", "crash-1", "crash-2"]),
        SETTLE,
    )
    .await
    .expect("three ready pods");
    let sampler = sample(&cluster, "crash", 3);
    api.patch("crash", &new_template())
        .await
        .expect("new template");
    let first_new = |pods: &[Pod]| versions(pods).values().any(|v| v == "2");
    wait_for_all(&cluster.pods(), pods_of("crash"), first_new, SETTLE)
        .await
        .expect("the first pod of the new template");
    cluster
        .kill("controller-manager", Signal::SIGKILL)
        .await
        .expect("kill -9");
    cluster
        .restart("controller-manager")
        .await
        .expect("restart");
    let all_new = |pods: &[Pod]| {
        pods.len() == 3
            && pods.iter().all(is_ready)
            && versions(pods).values().all(|v| v == "2")
            && versions(pods).len() == 3
    };
    let pods = wait_for_all(&cluster.pods(), pods_of("crash"), all_new, SETTLE)
        .await
        .expect("the successor finishes the rollout");
    let mut names: Vec<_> = pods
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["crash-0", "crash-1", "crash-2"]);
    sampler.task.abort();
    assert!(
        *sampler.peak.lock().unwrap() <= 3,
        "never a second pod for an ordinal"
    );
    assert!(
        sampler.out_of_order.lock().unwrap().is_empty(),
        "{:?}",
        sampler.out_of_order.lock().unwrap()
    );
    stop_clean(cluster).await;
}
