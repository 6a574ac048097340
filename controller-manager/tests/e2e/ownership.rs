//! Adoption, release and collection by labels and ownerReferences, on bare ReplicaSets and pods.

use minik_api::core::{Pod, Service};
use minik_api::k8s_openapi::api::apps::v1::ReplicaSet;
use minik_api::meta::OwnerReference;
use minik_client::{Api, DeleteParams, Patch};
use serde_json::json;

use crate::cluster::wait_until;
use crate::workloads::{controller_manager, live, workloads, Guard};

fn pod(name: &str, app: &str, owner: Option<OwnerReference>) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app}, "ownerReferences": owner.map(|o| vec![o])},
        "spec": {"containers": [{"name": "web", "image": "web:v1"}]}
    }))
    .unwrap()
}

fn owned_by<'a>(pods: &'a [Pod], uid: &str) -> Vec<&'a Pod> {
    live(pods)
        .into_iter()
        .filter(|p| {
            p.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.uid == uid)
        })
        .collect()
}

/// RS2: a bare ReplicaSet adopts a matching orphan (and creates only the missing pod); a pod
/// relabelled out of its selector is released and replaced.
#[tokio::test]
async fn a_replica_set_adopts_matching_orphans_and_releases_relabelled_pods() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    w.pods.create(&pod("orphan", "web", None)).await.unwrap();
    let rs: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "web:v1"}]}}}
    }))
    .unwrap();
    let uid = w
        .replica_sets
        .create(&rs)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let pods = wait_until(&w.pods, |all| owned_by(all, &uid).len() == 2).await;
    assert_eq!(
        live(&pods).len(),
        2,
        "the orphan counts: only one pod created"
    );
    let orphan = pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some("orphan"))
        .unwrap();
    let reference = &orphan.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (reference.controller, reference.block_owner_deletion),
        (Some(true), Some(true))
    );

    let relabel = json!({"metadata": {"labels": {"app": "elsewhere"}}});
    w.pods
        .patch("orphan", &Patch::Merge(relabel))
        .await
        .unwrap();
    let pods = wait_until(&w.pods, |all| {
        let released = all.iter().any(|p| {
            p.metadata.name.as_deref() == Some("orphan")
                && p.metadata
                    .owner_references
                    .as_ref()
                    .is_none_or(|r| r.is_empty())
        });
        released && owned_by(all, &uid).len() == 2
    })
    .await;
    assert_eq!(live(&pods).len(), 3);
    let status = wait_until(&w.replica_sets, |all| {
        all.iter().any(|rs| {
            rs.status
                .as_ref()
                .is_some_and(|s| s.available_replicas == Some(2))
        })
    })
    .await;
    let status = status[0].status.clone().unwrap();
    assert_eq!(
        (status.replicas, status.fully_labeled_replicas),
        (2, Some(2))
    );
}

/// GC6: a pod naming an owner by the right name but another uid (a recreated owner) is
/// collected; one naming the live owner stays until that owner is deleted.
#[tokio::test]
async fn dependents_of_a_missing_or_replaced_owner_are_collected() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    let services = Api::<Service>::namespaced(w.server.client.clone(), "default");
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "owner"}, "spec": {"ports": [{"port": 80}]}
    }))
    .unwrap();
    let uid = services
        .create(&service)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let reference = |uid: &str| OwnerReference {
        api_version: "v1".into(),
        kind: "Service".into(),
        name: "owner".into(),
        uid: uid.into(),
        ..OwnerReference::default()
    };
    w.pods
        .create(&pod("stale", "db", Some(reference("another-uid"))))
        .await
        .unwrap();
    w.pods
        .create(&pod("owned", "db", Some(reference(&uid))))
        .await
        .unwrap();
    let pods = wait_until(&w.pods, |all| {
        !all.iter()
            .any(|p| p.metadata.name.as_deref() == Some("stale"))
    })
    .await;
    assert!(live(&pods)
        .iter()
        .any(|p| p.metadata.name.as_deref() == Some("owned")));
    services
        .delete("owner", &DeleteParams::default())
        .await
        .unwrap();
    wait_until(&w.pods, |all| all.is_empty()).await;
}
