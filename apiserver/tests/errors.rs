//! Bad input gets a 4xx `Status`, never a 500 or a dropped connection.

mod common;

use common::{pod, TestServer, PODS};
use serde_json::{json, Value};

fn assert_status(code: u16, body: &Value, expected_code: u16, reason: &str) {
    assert_eq!(code, expected_code, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["apiVersion"], "v1", "{body}");
    assert_eq!(body["status"], "Failure", "{body}");
    assert_eq!(body["reason"], reason, "{body}");
    assert_eq!(body["code"], expected_code, "{body}");
}

#[tokio::test]
async fn malformed_json_is_a_bad_request() {
    let server = TestServer::start().await;
    let request = server
        .http
        .post(server.url(PODS))
        .header("content-type", "application/json")
        .body("{\"metadata\": ");
    let (code, body) = server.send(request).await;
    assert_status(code, &body, 400, "BadRequest");
    let wrong_shape = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a", "image": "b", "ports": [{"containerPort": "80"}]}]}});
    let (code, body) = server.post(PODS, &wrong_shape).await;
    assert_status(code, &body, 400, "BadRequest");
    let (code, body) = server
        .post(
            PODS,
            &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}}),
        )
        .await;
    assert_status(code, &body, 400, "BadRequest");
    server.stop().await;
}

#[tokio::test]
async fn a_body_over_three_mebibytes_is_refused_with_413() {
    let server = TestServer::start().await;
    let big = format!(
        "{{\"metadata\":{{\"name\":\"big\",\"annotations\":{{\"a\":\"{}\"}}}}}}",
        "x".repeat(4 * 1024 * 1024)
    );
    let request = server
        .http
        .post(server.url(PODS))
        .header("content-type", "application/json")
        .body(big);
    let (code, body) = server.send(request).await;
    assert_status(code, &body, 413, "RequestEntityTooLarge");
    server.stop().await;
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_is_refused_with_413_too() {
    let server = TestServer::start().await;
    let chunks = (0..5).map(|_| Ok::<_, std::io::Error>(vec![b' '; 1024 * 1024]));
    let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
    let request = server
        .http
        .post(server.url(PODS))
        .header("content-type", "application/json")
        .body(body);
    let (code, body) = server.send(request).await;
    assert_status(code, &body, 413, "RequestEntityTooLarge");
    server.stop().await;
}

#[tokio::test]
async fn an_unknown_content_type_is_415() {
    let server = TestServer::start().await;
    let request = server
        .http
        .post(server.url(PODS))
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .body("x");
    let (code, body) = server.send(request).await;
    assert_status(code, &body, 415, "UnsupportedMediaType");
    let (code, body) = server
        .patch(&format!("{PODS}/web"), "text/csv", &json!({}))
        .await;
    assert_status(code, &body, 415, "UnsupportedMediaType");
    server.stop().await;
}

#[tokio::test]
async fn an_invalid_pod_is_422_with_a_cause_per_field() {
    let server = TestServer::start().await;
    let bad = json!({"metadata": {"name": "Bad_Name"}, "spec": {"containers": [
        {"name": "main", "image": ""}, {"name": "main", "image": "x", "ports": [{"containerPort": 0}]}]}});
    let (code, body) = server.post(PODS, &bad).await;
    assert_status(code, &body, 422, "Invalid");
    let (code, body) = server.post(PODS, &json!({"metadata": {"name": "web"}, "spec": {"containers": [
        {"name": "main", "image": ""}, {"name": "main", "image": "x", "ports": [{"containerPort": 0}]}]}})).await;
    assert_status(code, &body, 422, "Invalid");
    let fields: Vec<&str> = body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert_eq!(
        fields,
        [
            "spec.containers[0].image",
            "spec.containers[1].name",
            "spec.containers[1].ports[0].containerPort"
        ]
    );
    assert_eq!(body["details"]["kind"], "Pod");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .starts_with("Pod \"web\" is invalid: spec.containers[0].image: Required value"));
    let (code, body) = server
        .post(
            PODS,
            &json!({"metadata": {"name": "web"}, "spec": {"containers": []}}),
        )
        .await;
    assert_status(code, &body, 422, "Invalid");
    server.stop().await;
}

#[tokio::test]
async fn unknown_paths_and_verbs_get_status_answers() {
    let server = TestServer::start().await;
    let (code, body) = server.get("/api/v1/namespaces/default/deployments").await;
    assert_status(code, &body, 404, "NotFound");
    let (code, body) = server.get("/nothing/here").await;
    assert_status(code, &body, 404, "NotFound");
    let (code, body) = server.put(PODS, &pod("web")).await;
    assert_status(code, &body, 405, "MethodNotAllowed");
    let (code, body) = server.send(server.http.post(server.url("/version"))).await;
    assert_status(code, &body, 405, "MethodNotAllowed");
    // No deletecollection on namespaces, as upstream: every namespace is still there after it.
    let (code, body) = server.delete("/api/v1/namespaces", None).await;
    assert_status(code, &body, 405, "MethodNotAllowed");
    assert_eq!(server.get("/api/v1/namespaces/default").await.0, 200);
    let (code, body) = server.get(&format!("{PODS}?limit=abc")).await;
    assert_status(code, &body, 400, "BadRequest");
    let (code, body) = server
        .post(
            &format!("{PODS}/web/binding"),
            &json!({"target": {"name": "n1"}}),
        )
        .await;
    assert_status(code, &body, 404, "NotFound");
    server.stop().await;
}

#[tokio::test]
async fn health_version_and_discovery_answer() {
    let server = TestServer::start().await;
    for path in ["/healthz", "/readyz", "/livez"] {
        let (code, body) = server.get(path).await;
        assert_eq!((code, body), (200, Value::String("ok".into())));
    }
    let (_, version) = server.get("/version").await;
    assert_eq!(
        (version["major"].as_str(), version["minor"].as_str()),
        (Some("1"), Some("32"))
    );
    for field in [
        "gitVersion",
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    ] {
        assert!(version[field].is_string(), "{field}");
    }
    let (_, api) = server.get("/api").await;
    assert_eq!(api["versions"], json!(["v1"]));
    let (_, apis) = server.get("/apis").await;
    assert_eq!(apis["groups"][0]["name"], "coordination.k8s.io");
    let (_, v1) = server.get("/api/v1").await;
    assert!(v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "pods" && r["shortNames"] == json!(["po"])));
    let (code, coordination) = server.get("/apis/coordination.k8s.io/v1").await;
    assert_eq!(
        (code, coordination["resources"][0]["name"].as_str()),
        (200, Some("leases"))
    );
    server.stop().await;
}
