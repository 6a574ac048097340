//! The surface real clients need beyond CRUD (docs/real-clients.md): Tables for kubectl, the
//! OpenAPI stub behind `kubectl apply` validation, fieldValidation, strategic merge and server-side
//! apply.

mod common;

use common::{pod, TestServer, PODS};
use serde_json::json;

const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

#[tokio::test]
async fn lists_gets_and_watches_answer_tables_when_asked() {
    let server = TestServer::start().await;
    server.post(PODS, &pod("web")).await;
    let (code, table) = server
        .send(
            server
                .http
                .get(server.url(&format!("{PODS}?limit=500")))
                .header("accept", TABLE_ACCEPT),
        )
        .await;
    assert_eq!(
        (code, table["kind"].as_str(), table["apiVersion"].as_str()),
        (200, Some("Table"), Some("meta.k8s.io/v1"))
    );
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names[..5], ["Name", "Ready", "Status", "Restarts", "Age"]);
    assert_eq!(
        table["rows"][0]["cells"].as_array().unwrap()[..4],
        [json!("web"), json!("0/1"), json!("Pending"), json!("0")]
    );
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert!(table["metadata"]["resourceVersion"].is_string());

    let request = server
        .http
        .get(server.url(&format!("{PODS}/web?includeObject=Object")))
        .header("accept", TABLE_ACCEPT);
    let (_, one) = server.send(request).await;
    assert_eq!(one["rows"][0]["object"]["kind"], "Pod");
    let request = server
        .http
        .get(server.url(&format!("{PODS}?includeObject=Bogus")))
        .header("accept", TABLE_ACCEPT);
    assert_eq!(server.send(request).await.0, 400);

    let response = server
        .http
        .get(server.url(&format!("{PODS}?watch=true&resourceVersion=0")))
        .header("accept", TABLE_ACCEPT)
        .send()
        .await
        .unwrap();
    let mut lines = common::WatchLines::new(response);
    let event = lines.next().await.expect("an ADDED event");
    assert_eq!(
        (event["type"].as_str(), event["object"]["kind"].as_str()),
        (Some("ADDED"), Some("Table"))
    );
    assert_eq!(event["object"]["rows"][0]["cells"][0], "web");
    assert_eq!(event["object"]["columnDefinitions"][0]["name"], "Name");
    // Later events carry one row and no column definitions, as upstream's watchEmbeddedEncoder
    // sets NoHeaders after the first object.
    server.post(PODS, &pod("second")).await;
    let event = lines.next().await.expect("a second ADDED event");
    assert_eq!(event["object"]["rows"][0]["cells"][0], "second");
    assert_eq!(
        event["object"]["columnDefinitions"]
            .as_array()
            .map(Vec::len),
        Some(0),
        "{event}"
    );
    server.stop().await;
}

#[tokio::test]
async fn openapi_stub_names_each_kind_with_field_validation() {
    let server = TestServer::start().await;
    let (code, index) = server.get("/openapi/v3").await;
    assert_eq!(code, 200);
    let url = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, doc) = server.get(&url).await;
    assert_eq!(code, 200);
    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "version": "v1", "kind": "Pod"})
    );
    assert!(patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "fieldValidation"));
    assert!(doc["paths"]["/api/v1/nodes/{name}"]["patch"].is_object());
    assert_eq!(server.get("/openapi/v3/apis/nope/v1").await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn strict_field_validation_refuses_unknown_fields_and_warn_reports_them() {
    let server = TestServer::start().await;
    let mut typo = pod("typo");
    typo["spec"]["containers"][0]["imagePullPolicyy"] = json!("Always");
    let (code, status) = server
        .post(&format!("{PODS}?fieldValidation=Strict"), &typo)
        .await;
    assert_eq!(code, 400);
    assert_eq!(
        status["message"],
        "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.containers[0].imagePullPolicyy\""
    );
    let response = server
        .http
        .post(server.url(PODS))
        .json(&typo)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    assert_eq!(
        response.headers()["warning"],
        "299 - \"unknown field \\\"spec.containers[0].imagePullPolicyy\\\"\""
    );
    server.stop().await;
}

#[tokio::test]
async fn kubectl_apply_strategic_patch_and_server_side_apply() {
    let server = TestServer::start().await;
    let mut two = pod("web");
    two["spec"]["containers"] =
        json!([{"name": "main", "image": "busybox:1"}, {"name": "side", "image": "busybox:1"}]);
    server.post(PODS, &two).await;
    let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "main"}, {"name": "side"}],
                                "containers": [{"image": "busybox:2", "name": "side"}]}});
    let (code, patched) = server
        .patch(
            &format!("{PODS}/web?fieldManager=kubectl-client-side-apply&fieldValidation=Strict"),
            "application/strategic-merge-patch+json",
            &patch,
        )
        .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"]["containers"][0]["image"], "busybox:1");
    assert_eq!(patched["spec"]["containers"][1]["image"], "busybox:2");

    let applied = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ssa\nspec:\n  containers:\n  - name: main\n    image: busybox\n";
    let request = server
        .http
        .patch(server.url(&format!("{PODS}/ssa?fieldManager=kubectl&force=false")))
        .header("content-type", "application/apply-patch+yaml")
        .body(applied);
    let (code, created) = server.send(request).await;
    assert_eq!(
        (code, created["metadata"]["name"].as_str()),
        (201, Some("ssa"))
    );
    // Another manager applies only a label: merged in, kubectl's containers stay.
    let relabel = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ssa\n  labels:\n    team: a\n";
    let request = server
        .http
        .patch(server.url(&format!("{PODS}/ssa?fieldManager=labeler")))
        .header("content-type", "application/apply-patch+yaml")
        .body(relabel);
    let (code, updated) = server.send(request).await;
    assert_eq!(
        (code, updated["metadata"]["labels"]["team"].as_str()),
        (200, Some("a"))
    );
    assert_eq!(updated["spec"]["containers"][0]["image"], "busybox");
    let managers: Vec<&str> = updated["metadata"]["managedFields"]
        .as_array()
        .map(|m| m.iter().filter_map(|e| e["manager"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(managers, ["labeler", "kubectl"]);
    // The same manager no longer applying the containers gives them up: the pod would have
    // none, which validation refuses (as upstream does).
    let request = server
        .http
        .patch(server.url(&format!("{PODS}/ssa?fieldManager=kubectl")))
        .header("content-type", "application/apply-patch+yaml")
        .body(relabel);
    let (code, refused) = server.send(request).await;
    assert_eq!(code, 422, "{refused}");
    // Without fieldManager, apply is refused: upstream validates the PatchOptions (422).
    let request = server
        .http
        .patch(server.url(&format!("{PODS}/ssa")))
        .header("content-type", "application/apply-patch+yaml")
        .body(relabel);
    let (code, refused) = server.send(request).await;
    assert_eq!(
        (code, &refused["details"]["causes"][0]["field"]),
        (422, &json!("fieldManager")),
        "{refused}"
    );
    server.stop().await;
}
