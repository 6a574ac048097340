//! DaemonSets with real processes (issue 20): one daemon pod per node of a three-node cluster, a
//! fourth node joining gets one and a node leaving loses it, a new template rolled node by node,
//! and the controller manager killed with -9 in the middle of that rolling update: the successor
//! ends with exactly one pod per node, never two.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use minik_api::apps::DaemonSet;
use minik_api::core::Pod;
use minik_client::{Api, DeleteParams, ListParams, Patch};
use minik_tests::wait::{pod::is_running, pod::node, wait_for, wait_for_all};
use minik_tests::Cluster;
use nix::sys::signal::Signal;
use serde_json::json;

use crate::support::stop_clean;

/// Bound for pods to start or go on a loaded 2-core machine.
pub const SETTLE: Duration = Duration::from_secs(90);

fn daemon_set(name: &str) -> DaemonSet {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"terminationGracePeriodSeconds": 1,
                                       "containers": [{"name": "agent", "image": "minik/web",
                                                       "env": [{"name": "VERSION", "value": "1"}]}]}}}
    }))
    .expect("a valid DaemonSet")
}

pub fn pods_of(app: &str) -> ListParams {
    ListParams::default().labels(&format!("app={app}"))
}

fn live(pods: &[Pod]) -> Vec<&Pod> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

/// One running, not-terminating pod on each of `nodes`, of template `version`, and nothing else.
fn one_running_per_node(nodes: usize, version: &'static str) -> impl Fn(&[Pod]) -> bool {
    move |pods: &[Pod]| {
        let live = live(pods);
        let per_node: BTreeMap<&str, usize> = live.iter().fold(BTreeMap::new(), |mut m, p| {
            *m.entry(node(p).unwrap_or("")).or_default() += 1;
            m
        });
        let env = |p: &Pod| {
            let container = p.spec.as_ref()?.containers.first()?;
            container.env.as_ref()?.first()?.value.clone()
        };
        live.len() == nodes
            && pods.len() == nodes
            && per_node.len() == nodes
            && !per_node.contains_key("")
            && live
                .iter()
                .all(|p| is_running(p) && env(p).as_deref() == Some(version))
    }
}

/// Watches the pods of `app` and records the most live pods seen on any one node.
fn sample_per_node(
    cluster: &Cluster,
    app: &str,
) -> (Arc<Mutex<usize>>, tokio::task::JoinHandle<()>) {
    let peak = Arc::new(Mutex::new(0));
    let (pods, lp, seen) = (cluster.pods(), pods_of(app), peak.clone());
    let task = tokio::spawn(async move {
        let _ = wait_for_all(
            &pods,
            lp,
            move |pods: &[Pod]| {
                let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
                for pod in live(pods) {
                    let target = serde_json::to_value(pod)
                        .ok()
                        .and_then(|v| {
                            v.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0")
                                .and_then(|n| n.as_str().map(String::from))
                        })
                        .unwrap_or_default();
                    *per_node.entry(target).or_default() += 1;
                }
                let most = per_node.values().copied().max().unwrap_or(0);
                let mut peak = seen.lock().unwrap();
                *peak = (*peak).max(most);
                false
            },
            Duration::from_secs(600),
        )
        .await;
    });
    (peak, task)
}

/// Three nodes, three pods; a fourth node joins and gets one; it leaves and loses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_daemon_set_follows_nodes_joining_and_leaving() {
    let _machine = crate::support::exclusive().await;
    let mut cluster = Cluster::builder()
        .nodes(3)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let api: Api<DaemonSet> = Api::namespaced(cluster.client(), "default");
    api.create(&daemon_set("agent")).await.expect("create");
    let pods = wait_for_all(
        &cluster.pods(),
        pods_of("agent"),
        one_running_per_node(3, "1"),
        SETTLE,
    )
    .await
    .expect("one pod on each of the three nodes");
    assert!(pods
        .iter()
        .all(|p| p.metadata.generate_name.as_deref() == Some("agent-")));
    let ready = |ds: &DaemonSet| {
        ds.status.as_ref().is_some_and(|s| {
            (
                s.desired_number_scheduled,
                s.current_number_scheduled,
                s.number_ready,
            ) == (3, 3, 3)
                && s.updated_number_scheduled == Some(3)
        })
    };
    wait_for(&api, "agent", ready, SETTLE)
        .await
        .expect("status 3/3/3");

    let joined = cluster.add_node().await.expect("a fourth kubelet");
    let pods = wait_for_all(
        &cluster.pods(),
        pods_of("agent"),
        one_running_per_node(4, "1"),
        SETTLE,
    )
    .await
    .expect("the new node gets a pod");
    assert!(pods.iter().any(|p| node(p) == Some(joined.as_str())));

    // The node leaves: its kubelet stops and its Node object is deleted.
    cluster
        .stop_component(&format!("kubelet-{joined}"))
        .await
        .expect("stop the kubelet");
    cluster
        .nodes()
        .delete(&joined, &DeleteParams::default())
        .await
        .expect("delete the node");
    let on_joined = |pods: &[Pod]| {
        pods.iter()
            .filter(|p| node(p) == Some(joined.as_str()))
            .all(|p| p.metadata.deletion_timestamp.is_some())
    };
    wait_for_all(&cluster.pods(), pods_of("agent"), on_joined, SETTLE)
        .await
        .expect("the pod of the node that left is deleted");
    let three = |ds: &DaemonSet| {
        ds.status
            .as_ref()
            .is_some_and(|s| s.desired_number_scheduled == 3)
    };
    wait_for(&api, "agent", three, SETTLE)
        .await
        .expect("desired back to 3");
    // Its kubelet comes back to finish the pod off (and re-registers: a pod again).
    cluster
        .restart(&format!("kubelet-{joined}"))
        .await
        .expect("restart the kubelet");
    wait_for_all(
        &cluster.pods(),
        pods_of("agent"),
        one_running_per_node(4, "1"),
        SETTLE,
    )
    .await
    .expect("the node back, its pod back");
    stop_clean(cluster).await;
}

/// A new template rolls node by node (maxUnavailable 1): in the end every node runs one pod of
/// the new template, and `updatedNumberScheduled` counts them all; a ControllerRevision per
/// template.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_daemon_set_rolls_a_new_template_node_by_node() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .nodes(3)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let api: Api<DaemonSet> = Api::namespaced(cluster.client(), "default");
    api.create(&daemon_set("roll")).await.expect("create");
    wait_for_all(
        &cluster.pods(),
        pods_of("roll"),
        one_running_per_node(3, "1"),
        SETTLE,
    )
    .await
    .expect("version 1 everywhere");
    let (peak, sampler) = sample_per_node(&cluster, "roll");
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "agent", "env": [{"name": "VERSION", "value": "2"}]}]}}}});
    api.patch("roll", &Patch::Strategic(patch))
        .await
        .expect("new template");
    wait_for_all(
        &cluster.pods(),
        pods_of("roll"),
        one_running_per_node(3, "2"),
        SETTLE,
    )
    .await
    .expect("version 2 everywhere");
    let updated = |ds: &DaemonSet| {
        ds.status
            .as_ref()
            .is_some_and(|s| s.updated_number_scheduled == Some(3) && s.number_available == Some(3))
    };
    wait_for(&api, "roll", updated, SETTLE)
        .await
        .expect("status updated 3");
    sampler.abort();
    assert_eq!(
        *peak.lock().unwrap(),
        1,
        "never two live pods for one node without surge"
    );
    let revisions: Api<minik_api::apps::ControllerRevision> =
        Api::namespaced(cluster.client(), "default");
    let listed = revisions
        .list(&pods_of("roll"))
        .await
        .expect("list revisions")
        .items;
    let mut numbers: Vec<i64> = listed.iter().map(|r| r.revision).collect();
    numbers.sort();
    assert_eq!(numbers, [1, 2], "one revision per template");
    stop_clean(cluster).await;
}

/// kill -9 of the controller manager in the middle of a rolling update (the first node has its
/// new pod, two still run the old one): the successor finishes the update with one pod per node,
/// and no node ever had two live pods.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn controller_manager_killed_mid_rollout_makes_no_duplicate() {
    let _machine = crate::support::exclusive().await;
    let mut cluster = Cluster::builder()
        .nodes(3)
        .processes(true)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let api: Api<DaemonSet> = Api::namespaced(cluster.client(), "default");
    let mut fixture = daemon_set("crash");
    // Each new pod counts as available 2 s after it is ready: the rollout takes a while.
    fixture.spec.as_mut().expect("spec").min_ready_seconds = Some(2);
    api.create(&fixture).await.expect("create");
    wait_for_all(
        &cluster.pods(),
        pods_of("crash"),
        one_running_per_node(3, "1"),
        SETTLE,
    )
    .await
    .expect("version 1 everywhere");
    // Old pods that are not yet available would all go at once: wait until they are.
    let available = |ds: &DaemonSet| {
        ds.status
            .as_ref()
            .is_some_and(|s| s.number_available == Some(3))
    };
    wait_for(&api, "crash", available, SETTLE)
        .await
        .expect("version 1 available");
    let (peak, sampler) = sample_per_node(&cluster, "crash");
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "agent", "env": [{"name": "VERSION", "value": "2"}]}]}}}});
    api.patch("crash", &Patch::Strategic(patch))
        .await
        .expect("new template");
    let first_new = |pods: &[Pod]| {
        let hashes: std::collections::BTreeSet<_> = live(pods)
            .iter()
            .filter_map(|p| {
                p.metadata
                    .labels
                    .as_ref()?
                    .get("controller-revision-hash")
                    .cloned()
            })
            .collect();
        hashes.len() == 2
    };
    wait_for_all(&cluster.pods(), pods_of("crash"), first_new, SETTLE)
        .await
        .expect("old and new pods side by side");
    cluster
        .kill("controller-manager", Signal::SIGKILL)
        .await
        .expect("kill -9");
    cluster
        .restart("controller-manager")
        .await
        .expect("restart");
    wait_for_all(
        &cluster.pods(),
        pods_of("crash"),
        one_running_per_node(3, "2"),
        SETTLE,
    )
    .await
    .expect("the successor finishes the rollout");
    sampler.abort();
    assert_eq!(*peak.lock().unwrap(), 1, "no node ever had two live pods");
    stop_clean(cluster).await;
}
