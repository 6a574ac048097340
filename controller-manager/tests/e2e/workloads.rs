//! Deployments, ReplicaSets and the garbage collector end to end, with a fake kubelet.

use minik_api::core::Pod;
use minik_api::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use minik_client::{Api, Client, DeleteParams, Patch};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::cluster::{apiserver, fast_election, wait_until, Apiserver};

/// Starts a controller manager (with its own identity) against `server`.
pub fn controller_manager(server: &Apiserver, identity: &str) -> CancellationToken {
    let shutdown = CancellationToken::new();
    let config = minik_controller_manager::Config {
        server: server.url.clone(),
        kubeconfig: None,
        workers: 2,
        leader_election: fast_election(identity),
        cronjob_clock_offset: std::time::Duration::ZERO,
    };
    tokio::spawn(minik_controller_manager::run(config, shutdown.clone()));
    shutdown
}

pub fn deployment(replicas: i32, image: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": image}]}
            }
        }
    }))
    .unwrap()
}

pub fn live(pods: &[Pod]) -> Vec<&Pod> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

pub fn image(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers[0].image.as_deref())
        .unwrap_or_default()
}

/// The Deployment's `deployment.kubernetes.io/revision` (its annotations bump its generation).
pub fn revision(d: &Deployment) -> &str {
    let annotations = d.metadata.annotations.as_ref();
    annotations
        .and_then(|a| a.get("deployment.kubernetes.io/revision"))
        .map_or("", String::as_str)
}

pub fn complete(d: &Deployment, replicas: i32) -> bool {
    let status = d.status.clone().unwrap_or_default();
    status.updated_replicas == Some(replicas)
        && status.available_replicas == Some(replicas)
        && status.replicas == Some(replicas)
        && status.observed_generation == d.metadata.generation
}

pub struct Workloads {
    pub server: Apiserver,
    pub deployments: Api<Deployment>,
    pub replica_sets: Api<ReplicaSet>,
    pub pods: Api<Pod>,
    _kubelet: Guard,
}

/// Cancels a token when dropped.
pub struct Guard(pub CancellationToken);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

pub async fn workloads() -> Workloads {
    workloads_with(true).await
}

/// [`workloads`] with a kubelet that finishes graceful deletes or leaves pods Terminating.
pub async fn workloads_with(finish_deletes: bool) -> Workloads {
    minik_client::logging::init("test");
    let server = apiserver().await;
    let kubelet = CancellationToken::new();
    crate::kubelet::start_with(server.client.clone(), kubelet.clone(), finish_deletes);
    let client: Client = server.client.clone();
    Workloads {
        deployments: Api::namespaced(client.clone(), "default"),
        replica_sets: Api::namespaced(client.clone(), "default"),
        pods: Api::namespaced(client, "default"),
        server,
        _kubelet: Guard(kubelet),
    }
}

/// A Deployment of 3 creates one RS `web-<hash>` and 3 pods it owns; a new image rolls to a
/// second RS and ends with 3 new pods and the old RS at 0, revision 2.
#[tokio::test]
async fn a_deployment_creates_a_replica_set_and_rolls_to_a_new_one() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    w.deployments
        .create(&deployment(3, "web:v1"))
        .await
        .unwrap();
    let all = wait_until(&w.deployments, |all| all.iter().any(|d| complete(d, 3))).await;
    let uid = all[0].metadata.uid.clone().unwrap();
    let sets = wait_until(&w.replica_sets, |all| all.len() == 1).await;
    let rs = &sets[0];
    let hash = rs.metadata.labels.as_ref().unwrap()["pod-template-hash"].clone();
    assert_eq!(rs.metadata.name, Some(format!("web-{hash}")));
    let owner = &rs.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("Deployment", uid.as_str(), Some(true))
    );
    let pods = wait_until(&w.pods, |all| live(all).len() == 3).await;
    for pod in &pods {
        let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("ReplicaSet", rs.metadata.name.as_deref().unwrap())
        );
        assert!(pod
            .metadata
            .name
            .as_deref()
            .unwrap()
            .starts_with(&format!("web-{hash}-")));
    }

    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:v2"}]}}}});
    w.deployments
        .patch("web", &Patch::Strategic(patch))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| {
        all.iter().any(|d| revision(d) == "2" && complete(d, 3))
    })
    .await;
    let pods = wait_until(&w.pods, |all| {
        live(all).len() == 3 && live(all).iter().all(|p| image(p) == "web:v2")
    })
    .await;
    assert_eq!(live(&pods).len(), 3);
    let sets = w
        .replica_sets
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert_eq!(sets.len(), 2);
    let old = sets
        .iter()
        .find(|rs| {
            rs.metadata.name == rs.metadata.name
                && rs.metadata.labels.as_ref().unwrap()["pod-template-hash"] == hash
        })
        .unwrap();
    assert_eq!(old.spec.as_ref().unwrap().replicas, Some(0));
    let d = w.deployments.get("web").await.unwrap();
    assert_eq!(
        d.metadata.annotations.unwrap()["deployment.kubernetes.io/revision"],
        "2"
    );
}

/// Background (the default): the Deployment goes at once, the GC removes its RS and their pods.
#[tokio::test]
async fn deleting_a_deployment_in_the_background_collects_its_replica_sets_and_pods() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    w.deployments
        .create(&deployment(2, "web:v1"))
        .await
        .unwrap();
    wait_until(&w.pods, |all| live(all).len() == 2).await;
    w.deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    wait_until(&w.replica_sets, |all| all.is_empty()).await;
    wait_until(&w.pods, |all| all.is_empty()).await;
}

/// Foreground: the Deployment stays, with `foregroundDeletion`, until its RS is gone.
#[tokio::test]
async fn deleting_a_deployment_in_the_foreground_removes_dependents_first() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    w.deployments
        .create(&deployment(2, "web:v1"))
        .await
        .unwrap();
    wait_until(&w.pods, |all| live(all).len() == 2).await;
    w.deployments
        .delete("web", &DeleteParams::default().propagation("Foreground"))
        .await
        .unwrap();
    let d = w.deployments.get("web").await.unwrap();
    assert!(d
        .metadata
        .finalizers
        .unwrap_or_default()
        .contains(&"foregroundDeletion".to_string()));
    wait_until(&w.deployments, |all| all.is_empty()).await;
    assert!(
        w.replica_sets
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "the owner went last"
    );
    wait_until(&w.pods, |all| all.is_empty()).await;
}

/// Orphan: the Deployment goes; its RS stays, without the reference, and keeps its pods.
#[tokio::test]
async fn deleting_a_deployment_with_orphan_keeps_the_replica_set() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    w.deployments
        .create(&deployment(2, "web:v1"))
        .await
        .unwrap();
    wait_until(&w.pods, |all| live(all).len() == 2).await;
    w.deployments
        .delete("web", &DeleteParams::default().propagation("Orphan"))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| all.is_empty()).await;
    let sets = wait_until(&w.replica_sets, |all| {
        all.len() == 1
            && all[0]
                .metadata
                .owner_references
                .as_ref()
                .is_none_or(|r| r.is_empty())
    })
    .await;
    assert_eq!(sets[0].spec.as_ref().unwrap().replicas, Some(2));
    assert_eq!(
        live(&w.pods.list(&Default::default()).await.unwrap().items).len(),
        2
    );
}

/// Two instances: only the leader acts. Stopped mid-rollout, the other takes over and finishes
/// with exactly the right pods, none extra.
#[tokio::test]
async fn a_standby_finishes_a_rollout_the_leader_left_without_extra_pods() {
    let w = workloads().await;
    let first = controller_manager(&w.server, "cm-1");
    let _second = Guard(controller_manager(&w.server, "cm-2"));
    w.deployments
        .create(&deployment(4, "web:v1"))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| all.iter().any(|d| complete(d, 4))).await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:v2"}]}}}});
    w.deployments
        .patch("web", &Patch::Strategic(patch))
        .await
        .unwrap();
    wait_until(&w.replica_sets, |all| all.len() == 2).await;
    first.cancel();
    wait_until(&w.deployments, |all| {
        all.iter().any(|d| revision(d) == "2" && complete(d, 4))
    })
    .await;
    let pods = wait_until(&w.pods, |all| {
        live(all).len() == 4 && live(all).iter().all(|p| image(p) == "web:v2")
    })
    .await;
    assert_eq!(live(&pods).len(), 4, "no extra pods");
}

/// DP13: Recreate never runs old and new pods together, terminating ones included.
#[tokio::test]
async fn recreate_removes_every_old_pod_before_starting_new_ones() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    let mut recreate = deployment(3, "web:v1");
    recreate.spec.as_mut().unwrap().strategy =
        Some(serde_json::from_value(json!({"type": "Recreate"})).unwrap());
    w.deployments.create(&recreate).await.unwrap();
    wait_until(&w.deployments, |all| all.iter().any(|d| complete(d, 3))).await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:v2"}]}}}});
    w.deployments
        .patch("web", &Patch::Strategic(patch))
        .await
        .unwrap();
    let mut overlap = false;
    let pods = wait_until(&w.pods, |all| {
        let images: Vec<&str> = all.iter().map(image).collect();
        overlap |= images.contains(&"web:v1") && images.contains(&"web:v2");
        all.len() == 3 && images.iter().all(|i| *i == "web:v2")
    })
    .await;
    assert!(!overlap, "old and new pods existed together");
    assert_eq!(pods.len(), 3);
}

/// DP22, DP24: a new version that never becomes ready stalls within maxUnavailable and reports
/// ProgressDeadlineExceeded; the old pods keep serving.
#[tokio::test]
async fn a_never_ready_rollout_stalls_and_exceeds_its_deadline() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    let mut d = deployment(4, "web:v1");
    d.spec.as_mut().unwrap().progress_deadline_seconds = Some(1);
    w.deployments.create(&d).await.unwrap();
    wait_until(&w.deployments, |all| all.iter().any(|d| complete(d, 4))).await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:unready"}]}}}});
    w.deployments
        .patch("web", &Patch::Strategic(patch))
        .await
        .unwrap();
    let all = wait_until(&w.deployments, |all| {
        all.iter()
            .flat_map(|d| d.status.iter().flat_map(|s| s.conditions.iter().flatten()))
            .any(|c| {
                c.type_ == "Progressing" && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
            })
    })
    .await;
    let status = all[0].status.clone().unwrap();
    // 4 replicas at 25%: surge 1, unavailable 1: one old pod went, two new ones never got ready.
    assert_eq!(
        status.available_replicas,
        Some(3),
        "never below replicas - maxUnavailable"
    );
    assert_eq!(status.updated_replicas, Some(2));
    let progressing = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Progressing")
        .unwrap();
    assert_eq!(progressing.status, "False");
}
