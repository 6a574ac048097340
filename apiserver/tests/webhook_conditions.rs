//! Admission webhooks' `matchConditions` (CEL over `object`, `oldObject` and `request`) and
//! mutating webhooks' `reinvocationPolicy: IfNeeded`, against a real apiserver and real HTTPS
//! webhook servers on loopback.

mod common;
mod webhook_server;

use std::sync::Arc;

use common::TestServer;
use serde_json::{json, Value};
use webhook_server::{allow, deny, WebhookServer};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";

fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// A webhook on ConfigMap creates at `server`, with `extra` fields merged in.
fn webhook(name: &str, server: &WebhookServer, extra: Value) -> Value {
    let mut hook = json!({"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": server.url("/"), "caBundle": base64(&server.ca_pem)},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["configmaps"]}]});
    for (key, value) in extra.as_object().into_iter().flatten() {
        hook[key] = value.clone();
    }
    hook
}

fn configuration(kind: &str, name: &str, webhooks: Vec<Value>) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "webhooks": webhooks})
}

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

#[tokio::test]
async fn match_conditions_decide_whether_the_webhook_is_called() {
    let api = TestServer::start().await;
    let hook = WebhookServer::start(Arc::new(|_: &Value| {
        Some(deny(403, "strict ones are refused"))
    }))
    .await;
    let conditions = json!({"matchConditions": [
        {"name": "creates", "expression": "request.operation == 'CREATE' && oldObject == null"},
        {"name": "strict", "expression": "object.data.kind == 'strict'"}]});
    let hooks = vec![webhook("strict.example.com", &hook, conditions)];
    let config = configuration("ValidatingWebhookConfiguration", "strict", hooks);
    assert_eq!(api.post(VALIDATING, &config).await.0, 201);

    let (code, body) = api
        .post(CONFIGMAPS, &config_map("loose", json!({"kind": "loose"})))
        .await;
    assert_eq!(code, 201, "a false condition skips the webhook: {body}");
    assert!(hook.received().is_empty());
    let (code, status) = api
        .post(CONFIGMAPS, &config_map("strict", json!({"kind": "strict"})))
        .await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"strict.example.com\" denied the request: strict ones are refused"
    );
    assert_eq!(hook.received().len(), 1);

    // No data.kind: the condition cannot be evaluated, and failurePolicy Fail refuses.
    let (code, status) = api
        .post(CONFIGMAPS, &config_map("unknown", json!({})))
        .await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (403, Some("Forbidden")),
        "{status}"
    );
    let message = status["message"].as_str().unwrap();
    let expected = "configmaps \"unknown\" is forbidden: expression 'object.data.kind == 'strict'' resulted in error: ";
    assert!(message.starts_with(expected), "{message}");
    assert_eq!(hook.received().len(), 1, "the webhook was not called");
}

#[tokio::test]
async fn bad_match_conditions_are_refused_with_their_fields() {
    let api = TestServer::start().await;
    let hook = WebhookServer::start(Arc::new(|_: &Value| Some(allow(None, &[])))).await;
    let conditions = json!({"matchConditions": [
        {"name": "same", "expression": "object.data.kind =="},
        {"name": "same", "expression": "true"}]});
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "bad",
        vec![webhook("bad.example.com", &hook, conditions)],
    );
    let (code, status) = api.post(VALIDATING, &config).await;
    assert_eq!(code, 422, "{status}");
    let fields = common::cause_fields(&status);
    assert_eq!(
        fields,
        [
            "webhooks[0].matchConditions[0].expression",
            "webhooks[0].matchConditions[1].name"
        ]
    );
    let many: Vec<Value> = (0..65)
        .map(|i| json!({"name": format!("c{i}"), "expression": "true"}))
        .collect();
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "many",
        vec![webhook(
            "many.example.com",
            &hook,
            json!({"matchConditions": many}),
        )],
    );
    let (code, status) = api.post(VALIDATING, &config).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Too many: 65: must have at most 64 items"
    );
}

/// A mutating webhook that records in an annotation whether it saw label `b`.
async fn observer() -> WebhookServer {
    WebhookServer::start(Arc::new(|request: &Value| {
        let saw = request["object"]["metadata"]["labels"]["b"].is_string();
        let patch = json!([{"op": "add", "path": "/metadata/annotations", "value": {"saw-b": saw.to_string()}}]);
        Some(allow(Some(patch), &[]))
    }))
    .await
}

/// A mutating webhook that adds label `b` when it is missing.
async fn labeller() -> WebhookServer {
    WebhookServer::start(Arc::new(|request: &Value| {
        if request["object"]["metadata"]["labels"]["b"].is_string() {
            return Some(allow(None, &[]));
        }
        let patch = json!([{"op": "add", "path": "/metadata/labels", "value": {"b": "1"}}]);
        Some(allow(Some(patch), &[]))
    }))
    .await
}

#[tokio::test]
async fn an_if_needed_webhook_runs_again_after_a_later_one_changed_the_object() {
    let api = TestServer::start().await;
    let (first, second) = (observer().await, labeller().await);
    let hooks = vec![
        webhook(
            "observer.example.com",
            &first,
            json!({"reinvocationPolicy": "IfNeeded"}),
        ),
        webhook("labeller.example.com", &second, json!({})),
    ];
    let config = configuration("MutatingWebhookConfiguration", "pair", hooks);
    assert_eq!(api.post(MUTATING, &config).await.0, 201);

    let (code, created) = api.post(CONFIGMAPS, &config_map("plain", json!({}))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["labels"]["b"], "1");
    assert_eq!(
        created["metadata"]["annotations"]["saw-b"], "true",
        "reinvoked after the label was added"
    );
    assert_eq!((first.received().len(), second.received().len()), (2, 1));

    // Nothing changed after the observer: it runs once.
    let mut labelled = config_map("labelled", json!({}));
    labelled["metadata"]["labels"] = json!({"b": "0"});
    let (code, created) = api.post(CONFIGMAPS, &labelled).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["annotations"]["saw-b"], "true");
    assert_eq!((first.received().len(), second.received().len()), (3, 2));
}

#[tokio::test]
async fn a_never_webhook_runs_once() {
    let api = TestServer::start().await;
    let (first, second) = (observer().await, labeller().await);
    let hooks = vec![
        webhook("observer.example.com", &first, json!({})),
        webhook("labeller.example.com", &second, json!({})),
    ];
    let config = configuration("MutatingWebhookConfiguration", "pair", hooks);
    assert_eq!(api.post(MUTATING, &config).await.0, 201);
    let (code, created) = api.post(CONFIGMAPS, &config_map("plain", json!({}))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["annotations"]["saw-b"], "false");
    assert_eq!(first.received().len(), 1);
}
