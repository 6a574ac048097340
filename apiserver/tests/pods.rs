//! The pod-specific API: binding (the scheduler's write) and graceful deletion
//! (docs/kubernetes-rules.md#deletion).

mod common;

use common::{pod, rv, TestServer, PODS};
use serde_json::json;

async fn bound_pod(server: &TestServer, name: &str) -> serde_json::Value {
    assert_eq!(server.post(PODS, &pod(name)).await.0, 201);
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}});
    let (code, status) = server
        .post(&format!("{PODS}/{name}/binding"), &binding)
        .await;
    assert_eq!(
        (code, status["status"].as_str()),
        (201, Some("Success")),
        "{status}"
    );
    server.get(&format!("{PODS}/{name}")).await.1
}

#[tokio::test]
async fn binding_sets_node_name_once_and_a_second_binding_conflicts() {
    let server = TestServer::start().await;
    let pod = bound_pod(&server, "web").await;
    assert_eq!(pod["spec"]["nodeName"], "node-1");
    assert_eq!(pod["status"]["conditions"][0]["type"], "PodScheduled");
    assert_eq!(pod["status"]["conditions"][0]["status"], "True");
    let again = json!({"target": {"kind": "Node", "name": "node-2"}});
    let (code, status) = server.post(&format!("{PODS}/web/binding"), &again).await;
    assert_eq!((code, status["reason"].as_str()), (409, Some("Conflict")));
    assert!(status["message"]
        .as_str()
        .unwrap()
        .contains("already assigned to node \"node-1\""));
    assert_eq!(
        server.get(&format!("{PODS}/web")).await.1["spec"]["nodeName"],
        "node-1"
    );
    server.stop().await;
}

#[tokio::test]
async fn deleting_a_bound_pod_sets_a_deletion_timestamp_and_watchers_see_modified() {
    let server = TestServer::start().await;
    let pod = bound_pod(&server, "web").await;
    let mut watch = server
        .watch(&format!("{PODS}?watch=true&resourceVersion={}", rv(&pod)))
        .await;
    let before = jiff::Timestamp::now();
    let (code, marked) = server.delete(&format!("{PODS}/web"), None).await;
    assert_eq!(code, 200);
    assert_eq!(marked["kind"], "Pod", "the pod store returns the object");
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    let deadline: jiff::Timestamp = marked["metadata"]["deletionTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let ahead = deadline.duration_since(before).as_secs();
    assert!((29..=31).contains(&ahead), "deadline {ahead}s ahead");
    let event = watch.next().await.unwrap();
    assert_eq!(event["type"], "MODIFIED");
    assert!(event["object"]["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        server.get(&format!("{PODS}/web")).await.0,
        200,
        "still there until the kubelet finishes"
    );

    // A second delete may shorten the grace, never lengthen it.
    let (_, longer) = server
        .delete(
            &format!("{PODS}/web"),
            Some(&json!({"gracePeriodSeconds": 100})),
        )
        .await;
    assert_eq!(longer["metadata"]["deletionGracePeriodSeconds"], 30);
    let (_, shorter) = server
        .delete(&format!("{PODS}/web?gracePeriodSeconds=10"), None)
        .await;
    assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 10);
    let shortened: jiff::Timestamp = shorter["metadata"]["deletionTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(deadline.duration_since(shortened).as_secs(), 20);

    // The kubelet's final delete: grace 0 with a uid precondition.
    let wrong_uid = json!({"gracePeriodSeconds": 0, "preconditions": {"uid": "not-the-uid"}});
    assert_eq!(
        server
            .delete(&format!("{PODS}/web"), Some(&wrong_uid))
            .await
            .0,
        409
    );
    let final_delete =
        json!({"gracePeriodSeconds": 0, "preconditions": {"uid": pod["metadata"]["uid"]}});
    assert_eq!(
        server
            .delete(&format!("{PODS}/web"), Some(&final_delete))
            .await
            .0,
        200
    );
    // The shortening, then the final delete: marked with grace 0, then removed.
    let mut types = Vec::new();
    for _ in 0..3 {
        types.push(
            watch.next().await.unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(types, ["MODIFIED", "MODIFIED", "DELETED"]);
    assert_eq!(server.get(&format!("{PODS}/web")).await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn unscheduled_pods_and_force_deletes_are_removed_at_once() {
    let server = TestServer::start().await;
    server.post(PODS, &pod("pending")).await;
    let (code, _) = server.delete(&format!("{PODS}/pending"), None).await;
    assert_eq!(code, 200);
    assert_eq!(server.get(&format!("{PODS}/pending")).await.0, 404);
    bound_pod(&server, "forced").await;
    let (code, _) = server
        .delete(
            &format!("{PODS}/forced"),
            Some(&json!({"gracePeriodSeconds": 0, "propagationPolicy": "Background"})),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(server.get(&format!("{PODS}/forced")).await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn a_force_delete_shows_watchers_the_deletion_timestamp_before_deleted() {
    // Upstream's store marks the pod (deletionTimestamp, grace 0) and then removes it
    // (`updateForGracefulDeletionAndFinalizers`): a watcher sees MODIFIED, then DELETED.
    let server = TestServer::start().await;
    let pod = bound_pod(&server, "forced").await;
    let mut watch = server
        .watch(&format!("{PODS}?watch=true&resourceVersion={}", rv(&pod)))
        .await;
    let force = json!({"gracePeriodSeconds": 0});
    let (code, last) = server.delete(&format!("{PODS}/forced"), Some(&force)).await;
    assert_eq!(code, 200, "{last}");
    assert_eq!(last["metadata"]["deletionGracePeriodSeconds"], 0, "{last}");
    let marked = watch.next().await.unwrap();
    assert_eq!(marked["type"], "MODIFIED", "{marked}");
    assert!(marked["object"]["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        marked["object"]["metadata"]["deletionGracePeriodSeconds"],
        0
    );
    let gone = watch.next().await.unwrap();
    assert_eq!(gone["type"], "DELETED", "{gone}");
    assert_eq!(rv(&gone["object"]), rv(&marked["object"]) + 1);
    assert_eq!(server.get(&format!("{PODS}/forced")).await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn delete_collection_deletes_only_the_selected_pods() {
    let server = TestServer::start().await;
    server.post(PODS, &pod("a")).await;
    let mut other = pod("b");
    other["metadata"]["labels"] = json!({"app": "db"});
    server.post(PODS, &other).await;
    let (code, deleted) = server
        .delete(&format!("{PODS}?labelSelector=app%3Dweb"), None)
        .await;
    assert_eq!((code, deleted["items"].as_array().unwrap().len()), (200, 1));
    assert_eq!(server.get(&format!("{PODS}/a")).await.0, 404);
    assert_eq!(server.get(&format!("{PODS}/b")).await.0, 200);
    server.stop().await;
}

#[tokio::test]
async fn dry_run_creates_and_deletes_store_nothing() {
    let server = TestServer::start().await;
    let (code, _) = server
        .post(&format!("{PODS}?dryRun=All"), &pod("dry"))
        .await;
    assert_eq!(code, 201);
    assert_eq!(server.get(&format!("{PODS}/dry")).await.0, 404);
    server.post(PODS, &pod("kept")).await;
    assert_eq!(
        server
            .delete(&format!("{PODS}/kept?dryRun=All"), None)
            .await
            .0,
        200
    );
    assert_eq!(server.get(&format!("{PODS}/kept")).await.0, 200);
    server.stop().await;
}
