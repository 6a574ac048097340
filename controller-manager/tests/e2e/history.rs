//! Rollback, pause and scaling in the middle of a rollout.

use minik_api::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use minik_client::Patch;
use serde_json::json;

use crate::cluster::wait_until;
use crate::workloads::{
    complete, controller_manager, deployment, image, live, revision, workloads, Guard,
};

fn set_image(image: &str) -> Patch {
    Patch::Strategic(
        json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": image}]}}}}),
    )
}

fn rs_image(rs: &ReplicaSet) -> &str {
    let template = rs.spec.as_ref().and_then(|s| s.template.as_ref());
    let spec = template.and_then(|t| t.spec.as_ref());
    spec.and_then(|s| s.containers[0].image.as_deref())
        .unwrap_or_default()
}

fn rs_annotation<'a>(rs: &'a ReplicaSet, key: &str) -> &'a str {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map_or("", String::as_str)
}

fn progressing_reason(d: &Deployment) -> Option<&str> {
    let conditions = d.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| c.type_ == "Progressing")?
        .reason
        .as_deref()
}

/// DP19–DP20, DP27: putting the old template back (what `kubectl rollout undo` sends) revives
/// the old ReplicaSet with revision 3 and its old number in the history; no third RS appears.
#[tokio::test]
async fn undo_revives_the_old_replica_set_under_a_new_revision() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    w.deployments
        .create(&deployment(2, "web:v1"))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| all.iter().any(|d| complete(d, 2))).await;
    w.deployments
        .patch("web", &set_image("web:v2"))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| {
        all.iter().any(|d| revision(d) == "2" && complete(d, 2))
    })
    .await;
    w.deployments
        .patch("web", &set_image("web:v1"))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| {
        all.iter().any(|d| revision(d) == "3" && complete(d, 2))
    })
    .await;
    let sets = w
        .replica_sets
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert_eq!(sets.len(), 2, "the old RS came back instead of a new one");
    let revived = sets.iter().find(|rs| rs_image(rs) == "web:v1").unwrap();
    assert_eq!(
        rs_annotation(revived, "deployment.kubernetes.io/revision"),
        "3"
    );
    assert_eq!(
        rs_annotation(revived, "deployment.kubernetes.io/revision-history"),
        "1"
    );
    let pods = wait_until(&w.pods, |all| {
        live(all).len() == 2 && live(all).iter().all(|p| image(p) == "web:v1")
    })
    .await;
    assert_eq!(live(&pods).len(), 2);
}

/// DP26: a paused Deployment does not roll a new template (Progressing Unknown DeploymentPaused);
/// resumed, it rolls.
#[tokio::test]
async fn a_paused_deployment_rolls_only_once_resumed() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    w.deployments
        .create(&deployment(2, "web:v1"))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| all.iter().any(|d| complete(d, 2))).await;
    w.deployments
        .patch("web", &Patch::Merge(json!({"spec": {"paused": true}})))
        .await
        .unwrap();
    w.deployments
        .patch("web", &set_image("web:v2"))
        .await
        .unwrap();
    // Seen by the controller: the latest generation observed, and the paused condition.
    wait_until(&w.deployments, |all| {
        all.iter().any(|d| {
            d.status.as_ref().and_then(|s| s.observed_generation) == d.metadata.generation
                && progressing_reason(d) == Some("DeploymentPaused")
        })
    })
    .await;
    assert_eq!(
        w.replica_sets
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    w.deployments
        .patch("web", &Patch::Merge(json!({"spec": {"paused": false}})))
        .await
        .unwrap();
    wait_until(&w.pods, |all| {
        live(all).len() == 2 && live(all).iter().all(|p| image(p) == "web:v2")
    })
    .await;
}

/// DP16: scaling 4 → 8 while a rollout is stuck (old 3, new 2) spreads `replicas + maxSurge`
/// = 10 in proportion: old 6, new 4.
#[tokio::test]
async fn scaling_in_the_middle_of_a_rollout_is_proportional() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    w.deployments
        .create(&deployment(4, "web:v1"))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| all.iter().any(|d| complete(d, 4))).await;
    w.deployments
        .patch("web", &set_image("web:unready"))
        .await
        .unwrap();
    let specs = |all: &[ReplicaSet]| {
        let spec = |image: &str| {
            all.iter()
                .find(|rs| rs_image(rs) == image)
                .and_then(|rs| rs.spec.as_ref()?.replicas)
        };
        (spec("web:v1"), spec("web:unready"))
    };
    wait_until(&w.replica_sets, |all| specs(all) == (Some(3), Some(2))).await;
    w.deployments
        .patch("web", &Patch::Merge(json!({"spec": {"replicas": 8}})))
        .await
        .unwrap();
    let sets = wait_until(&w.replica_sets, |all| specs(all) == (Some(6), Some(4))).await;
    for rs in &sets {
        assert_eq!(
            rs_annotation(rs, "deployment.kubernetes.io/desired-replicas"),
            "8"
        );
        assert_eq!(
            rs_annotation(rs, "deployment.kubernetes.io/max-replicas"),
            "10"
        );
    }
}
