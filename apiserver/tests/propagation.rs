//! `propagationPolicy` on DELETE, for every kind: the garbage collector's finalizers.
//! Foreground keeps the owner readable with `foregroundDeletion` until the finalizer goes,
//! Orphan adds `orphan`, Background (the default) removes the object at once.

mod common;

use common::{service, TestServer};
use serde_json::{json, Value};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const SERVICES: &str = "/api/v1/namespaces/default/services";

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
    })
}

fn finalizers(object: &Value) -> Value {
    object["metadata"]["finalizers"].clone()
}

/// Foreground: the DELETE answers the object marked for deletion with `foregroundDeletion`; it
/// stays readable until an update (the garbage collector's) removes the finalizer.
#[tokio::test]
async fn foreground_deletion_keeps_the_owner_until_its_finalizer_goes() {
    let server = TestServer::start().await;
    server.post(DEPLOYMENTS, &deployment("web")).await;
    let web = format!("{DEPLOYMENTS}/web");
    let body =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"});
    let (code, marked) = server.delete(&web, Some(&body)).await;
    assert_eq!(code, 200, "{marked}");
    assert_eq!(finalizers(&marked), json!(["foregroundDeletion"]));
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let (code, still) = server.get(&web).await;
    assert_eq!(
        (code, finalizers(&still)),
        (200, json!(["foregroundDeletion"]))
    );

    let (code, _) = server
        .patch(
            &web,
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(
        server.get(&web).await.0,
        404,
        "gone once the finalizer is removed"
    );
}

/// Orphan (here as a query parameter, as the Python client sends it) adds `orphan`, on any
/// kind; a later Background DELETE swaps it away and lets the object go.
#[tokio::test]
async fn orphan_adds_its_finalizer_and_background_removes_it() {
    let server = TestServer::start().await;
    server.post(SERVICES, &service("web")).await;
    let web = format!("{SERVICES}/web");
    let (code, marked) = server
        .delete(&format!("{web}?propagationPolicy=Orphan"), None)
        .await;
    assert_eq!(code, 200, "{marked}");
    assert_eq!(finalizers(&marked), json!(["orphan"]));
    assert_eq!(server.get(&web).await.0, 200);

    let body = json!({"propagationPolicy": "Background"});
    let (code, _) = server.delete(&web, Some(&body)).await;
    assert_eq!(code, 200);
    assert_eq!(server.get(&web).await.0, 404);
}

/// Background (kubectl's default `--cascade`) and no policy at all remove the object at once;
/// an unknown policy is a 422 on `propagationPolicy`.
#[tokio::test]
async fn background_deletes_at_once_and_unknown_policies_are_422() {
    let server = TestServer::start().await;
    server.post(DEPLOYMENTS, &deployment("web")).await;
    server.post(DEPLOYMENTS, &deployment("api")).await;
    let (code, status) = server
        .delete(
            &format!("{DEPLOYMENTS}/web"),
            Some(&json!({"propagationPolicy": "Sideways"})),
        )
        .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["details"]["causes"][0]["field"], "propagationPolicy");
    let body = json!({"propagationPolicy": "Background"});
    assert_eq!(
        server
            .delete(&format!("{DEPLOYMENTS}/web"), Some(&body))
            .await
            .0,
        200
    );
    assert_eq!(server.get(&format!("{DEPLOYMENTS}/web")).await.0, 404);
    assert_eq!(
        server.delete(&format!("{DEPLOYMENTS}/api"), None).await.0,
        200
    );
    assert_eq!(server.get(&format!("{DEPLOYMENTS}/api")).await.0, 404);
}

/// deletecollection honours the policy too: each match is only marked.
#[tokio::test]
async fn delete_collection_applies_the_policy_to_each_object() {
    let server = TestServer::start().await;
    server.post(DEPLOYMENTS, &deployment("web")).await;
    server.post(DEPLOYMENTS, &deployment("api")).await;
    let (code, list) = server
        .delete(
            DEPLOYMENTS,
            Some(&json!({"propagationPolicy": "Foreground"})),
        )
        .await;
    assert_eq!(code, 200, "{list}");
    let (_, left) = server.get(DEPLOYMENTS).await;
    let items = left["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert!(items
        .iter()
        .all(|d| finalizers(d) == json!(["foregroundDeletion"])));
}
