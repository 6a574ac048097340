//! CRUD over HTTP against a real apiserver: the object lifecycle, optimistic concurrency,
//! subresources and paging, with Kubernetes' status codes and bodies.

mod common;

use common::{pod, rv, TestServer, PODS};
use serde_json::json;

#[tokio::test]
async fn pod_create_get_list_update_patch_delete_round_trip() {
    let server = TestServer::start().await;
    let (code, created) = server.post(PODS, &pod("web")).await;
    assert_eq!(code, 201, "{created}");
    assert!(created["metadata"]["uid"]
        .as_str()
        .is_some_and(|u| u.len() == 36));
    assert!(created["metadata"]["creationTimestamp"]
        .as_str()
        .is_some_and(|t| t.ends_with('Z')));
    assert_eq!(created["metadata"]["namespace"], "default");
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["spec"]["terminationGracePeriodSeconds"], 30);
    assert_eq!(created["spec"]["restartPolicy"], "Always");
    assert_eq!(
        created["spec"]["containers"][0]["ports"][0]["protocol"],
        "TCP"
    );
    assert_eq!(created["status"]["phase"], "Pending");
    assert_eq!(
        (created["kind"].as_str(), created["apiVersion"].as_str()),
        (Some("Pod"), Some("v1"))
    );

    let (code, got) = server.get(&format!("{PODS}/web")).await;
    assert_eq!((code, &got), (200, &created));

    let (code, list) = server.get(PODS).await;
    assert_eq!(code, 200);
    assert_eq!(list["kind"], "PodList");
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let list_rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(list_rv >= rv(&created));

    let mut changed = created.clone();
    changed["spec"]["containers"][0]["image"] = json!("minik/web:2");
    let (code, updated) = server.put(&format!("{PODS}/web"), &changed).await;
    assert_eq!(code, 200, "{updated}");
    assert!(rv(&updated) > rv(&created));
    assert_eq!(updated["metadata"]["generation"], 2);
    assert_eq!(updated["metadata"]["uid"], created["metadata"]["uid"]);

    let (code, patched) = server
        .patch(
            &format!("{PODS}/web"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"tier": "front"}}}),
        )
        .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(
        patched["metadata"]["labels"],
        json!({"app": "web", "tier": "front"})
    );

    let ops = json!([{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]);
    let (code, patched) = server
        .patch(&format!("{PODS}/web"), "application/json-patch+json", &ops)
        .await;
    assert_eq!(
        (code, &patched["metadata"]["annotations"]["a"]),
        (200, &json!("b"))
    );

    // Unscheduled, so the delete removes it at once and answers with the last state.
    let (code, deleted) = server.delete(&format!("{PODS}/web"), None).await;
    assert_eq!(
        (code, deleted["metadata"]["name"].as_str()),
        (200, Some("web"))
    );
    let (code, status) = server.get(&format!("{PODS}/web")).await;
    assert_eq!(code, 404);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "pods \"web\" not found");
    server.stop().await;
}

#[tokio::test]
async fn update_with_a_stale_resource_version_is_a_conflict() {
    let server = TestServer::start().await;
    let (_, created) = server.post(PODS, &pod("web")).await;
    let mut first = created.clone();
    first["metadata"]["labels"]["v"] = json!("1");
    assert_eq!(server.put(&format!("{PODS}/web"), &first).await.0, 200);
    let mut stale = created.clone();
    stale["metadata"]["labels"]["v"] = json!("2");
    let (code, status) = server.put(&format!("{PODS}/web"), &stale).await;
    assert_eq!(
        (code, status["reason"].as_str(), status["code"].as_i64()),
        (409, Some("Conflict"), Some(409))
    );
    server.stop().await;
}

#[tokio::test]
async fn creating_a_taken_name_is_already_exists() {
    let server = TestServer::start().await;
    assert_eq!(server.post(PODS, &pod("web")).await.0, 201);
    let (code, status) = server.post(PODS, &pod("web")).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (409, Some("AlreadyExists"))
    );
    assert_eq!(status["message"], "pods \"web\" already exists");
    server.stop().await;
}

#[tokio::test]
async fn initial_namespaces_exist_and_missing_namespaces_are_not_found() {
    let server = TestServer::start().await;
    let (code, list) = server.get("/api/v1/namespaces").await;
    assert_eq!(code, 200);
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
    let (code, status) = server
        .post("/api/v1/namespaces/nope/pods", &pod("web"))
        .await;
    assert_eq!(
        (code, status["message"].as_str()),
        (404, Some("namespaces \"nope\" not found"))
    );
    let (code, _) = server
        .post(
            "/api/v1/namespaces",
            &json!({"metadata": {"name": "team-a"}}),
        )
        .await;
    assert_eq!(code, 201);
    assert_eq!(
        server
            .post("/api/v1/namespaces/team-a/pods", &pod("web"))
            .await
            .0,
        201
    );
    let (code, all) = server.get("/api/v1/pods").await;
    assert_eq!((code, all["items"].as_array().unwrap().len()), (200, 1));
    assert_eq!(
        server.delete("/api/v1/namespaces/default", None).await.0,
        403
    );
    server.stop().await;
}

#[tokio::test]
async fn yaml_bodies_and_a_missing_content_type_are_accepted() {
    let server = TestServer::start().await;
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: from-yaml\nspec:\n  containers:\n  - name: main\n    image: busybox\n";
    let request = server
        .http
        .post(server.url(PODS))
        .header("content-type", "application/yaml")
        .body(yaml);
    assert_eq!(server.send(request).await.0, 201);
    // The Python client sends no Content-Type at all.
    let request = server
        .http
        .post(server.url(PODS))
        .body(pod("no-type").to_string());
    assert_eq!(server.send(request).await.0, 201);
    server.stop().await;
}

#[tokio::test]
async fn status_subresource_writes_only_status_and_main_writes_keep_it() {
    let server = TestServer::start().await;
    let (_, created) = server.post(PODS, &pod("web")).await;
    let mut with_status = created.clone();
    with_status["status"]["phase"] = json!("Running");
    with_status["spec"]["containers"][0]["image"] = json!("ignored:1");
    let (code, updated) = server
        .put(&format!("{PODS}/web/status"), &with_status)
        .await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["status"]["phase"], "Running");
    assert_eq!(
        updated["spec"]["containers"][0]["image"], "minik/web",
        "status writes leave spec alone"
    );
    let mut main = updated.clone();
    main["status"]["phase"] = json!("Failed");
    let (_, after) = server.put(&format!("{PODS}/web"), &main).await;
    assert_eq!(
        after["status"]["phase"], "Running",
        "main writes leave status alone"
    );
    let patch = json!({"status": {"podIP": "127.244.1.5"}});
    let (code, patched) = server
        .patch(
            &format!("{PODS}/web/status"),
            "application/merge-patch+json",
            &patch,
        )
        .await;
    assert_eq!(
        (code, patched["status"]["podIP"].as_str()),
        (200, Some("127.244.1.5"))
    );
    let (code, _) = server.get(&format!("{PODS}/web/status")).await;
    assert_eq!(code, 200);
    server.stop().await;
}

#[tokio::test]
async fn pod_spec_is_immutable_except_images() {
    let server = TestServer::start().await;
    let (_, created) = server.post(PODS, &pod("web")).await;
    let mut changed = created.clone();
    changed["spec"]["containers"][0]["command"] = json!(["sh"]);
    let (code, status) = server.put(&format!("{PODS}/web"), &changed).await;
    assert_eq!((code, status["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(status["details"]["causes"][0]["field"], "spec");
    server.stop().await;
}

#[tokio::test]
async fn unchanged_update_does_not_write_a_new_revision() {
    let server = TestServer::start().await;
    let (_, created) = server.post(PODS, &pod("web")).await;
    let (code, same) = server.put(&format!("{PODS}/web"), &created).await;
    assert_eq!((code, rv(&same)), (200, rv(&created)));
    server.stop().await;
}

#[tokio::test]
async fn list_pages_with_limit_and_continue() {
    let server = TestServer::start().await;
    for i in 0..5 {
        assert_eq!(server.post(PODS, &pod(&format!("p{i}"))).await.0, 201);
    }
    let mut names = Vec::new();
    let mut token = String::new();
    for _ in 0..3 {
        let (code, page) = server
            .get(&format!("{PODS}?limit=2&continue={token}"))
            .await;
        assert_eq!(code, 200);
        names.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["metadata"]["name"].as_str().unwrap().to_string()),
        );
        token = page["metadata"]["continue"]
            .as_str()
            .unwrap_or("")
            .to_string();
    }
    assert_eq!(names, ["p0", "p1", "p2", "p3", "p4"]);
    assert!(token.is_empty(), "the last page has no continue token");
    server.stop().await;
}

#[tokio::test]
async fn label_and_field_selectors_filter_lists() {
    let server = TestServer::start().await;
    let mut db = pod("db");
    db["metadata"]["labels"] = json!({"app": "db", "tier": "back"});
    server.post(PODS, &db).await;
    server.post(PODS, &pod("web")).await;
    let names = |list: serde_json::Value| -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, list) = server.get(&format!("{PODS}?labelSelector=app%3Dweb")).await;
    assert_eq!(names(list), ["web"]);
    let (_, list) = server
        .get(&format!("{PODS}?&labelSelector=app%20in%20(web,db),!tier"))
        .await;
    assert_eq!(names(list), ["web"]);
    let (_, list) = server.get(&format!("{PODS}?labelSelector=tier")).await;
    assert_eq!(names(list), ["db"]);
    let (_, list) = server
        .get("/api/v1/pods?fieldSelector=metadata.name%3Ddb,metadata.namespace%3Ddefault")
        .await;
    assert_eq!(names(list), ["db"]);
    let (_, list) = server
        .get(&format!(
            "{PODS}?fieldSelector=spec.nodeName%3D,status.phase%3DPending"
        ))
        .await;
    assert_eq!(names(list), ["db", "web"]);
    let (code, _) = server
        .get(&format!("{PODS}?fieldSelector=spec.bogus%3Dx"))
        .await;
    assert_eq!(code, 400);
    let (code, _) = server
        .get(&format!("{PODS}?labelSelector=app%20in%20web"))
        .await;
    assert_eq!(code, 400);
    server.stop().await;
}

#[tokio::test]
async fn finalizers_hold_a_deleted_object_until_an_update_empties_them() {
    let server = TestServer::start().await;
    let mut held = pod("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    server.post(PODS, &held).await;
    let (code, marked) = server
        .delete(
            &format!("{PODS}/held"),
            Some(&json!({"gracePeriodSeconds": 0})),
        )
        .await;
    assert_eq!(code, 200);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        server.get(&format!("{PODS}/held")).await.0,
        200,
        "still there while the finalizer remains"
    );
    let patch = json!({"metadata": {"finalizers": null}});
    let (code, _) = server
        .patch(
            &format!("{PODS}/held"),
            "application/merge-patch+json",
            &patch,
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(server.get(&format!("{PODS}/held")).await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn cluster_scoped_nodes_and_namespaced_leases_round_trip() {
    let server = TestServer::start().await;
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
                      "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}});
    let (code, created) = server.post("/api/v1/nodes", &node).await;
    assert_eq!(code, 201, "{created}");
    assert!(created["metadata"].get("namespace").is_none());
    let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    let (code, patched) = server
        .patch(
            "/api/v1/nodes/node-1/status",
            "application/strategic-merge-patch+json",
            &patch,
        )
        .await;
    assert_eq!(
        (code, patched["status"]["conditions"][0]["type"].as_str()),
        (200, Some("Ready"))
    );
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "node-1"},
                       "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40}});
    let leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
    let (code, created) = server.post(leases, &lease).await;
    assert_eq!(
        (code, created["spec"]["holderIdentity"].as_str()),
        (201, Some("node-1"))
    );
    assert_eq!(server.get(&format!("{leases}/node-1")).await.0, 200);
    server.stop().await;
}

#[tokio::test]
async fn put_creates_missing_endpoints_but_not_missing_pods() {
    let server = TestServer::start().await;
    let endpoints = json!({"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "127.244.1.2"}], "ports": [{"port": 8080}]}]});
    let (code, created) = server
        .put("/api/v1/namespaces/default/endpoints/web", &endpoints)
        .await;
    assert_eq!(
        (code, created["subsets"][0]["addresses"][0]["ip"].as_str()),
        (201, Some("127.244.1.2"))
    );
    let (code, status) = server.put(&format!("{PODS}/nope"), &pod("nope")).await;
    assert_eq!((code, status["reason"].as_str()), (404, Some("NotFound")));
    server.stop().await;
}

#[tokio::test]
async fn deleting_a_namespace_empties_it_then_removes_it() {
    let server = TestServer::start().await;
    server
        .post(
            "/api/v1/namespaces",
            &json!({"metadata": {"name": "team-a"}}),
        )
        .await;
    let pods = "/api/v1/namespaces/team-a/pods";
    server.post(pods, &pod("running")).await;
    server
        .post(
            &format!("{pods}/running/binding"),
            &json!({"target": {"kind": "Node", "name": "node-1"}}),
        )
        .await;
    server
        .post(
            "/api/v1/namespaces/team-a/services",
            &common::service("web"),
        )
        .await;

    let (code, namespace) = server.delete("/api/v1/namespaces/team-a", None).await;
    assert_eq!(code, 200);
    assert_eq!(namespace["status"]["phase"], "Terminating");
    assert_eq!(
        server.get("/api/v1/namespaces/team-a/services/web").await.0,
        404
    );
    let (_, running) = server.get(&format!("{pods}/running")).await;
    assert!(
        running["metadata"]["deletionTimestamp"].is_string(),
        "the bound pod terminates gracefully"
    );
    let (code, status) = server.post(pods, &pod("late")).await;
    assert_eq!((code, status["reason"].as_str()), (403, Some("Forbidden")));

    // The kubelet's final delete of the last pod lets the namespace go.
    server
        .delete(
            &format!("{pods}/running"),
            Some(&json!({"gracePeriodSeconds": 0})),
        )
        .await;
    assert_eq!(server.get("/api/v1/namespaces/team-a").await.0, 404);
    server.stop().await;
}
