//! Admission webhooks against a real apiserver and real HTTPS webhook servers on loopback:
//! denials and their messages (through kubectl too), JSON patches, failurePolicy with the server
//! down, timeouts, selectors, custom resources and deletes, and the exemption of the
//! configurations themselves.

mod common;
mod webhook_server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{kubectl, TestServer, TIMEOUT};
use serde_json::{json, Value};
use webhook_server::{allow, deny, WebhookServer};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}})
}

/// One webhook named `name` on `resources` of `group` for `operations`, at `client`.
fn webhook(
    name: &str,
    client: Value,
    group: &str,
    resources: &[&str],
    operations: &[&str],
) -> Value {
    json!({"name": name, "clientConfig": client, "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "rules": [{"operations": operations, "apiGroups": [group], "apiVersions": ["*"],
            "resources": resources}]})
}

fn by_url(server: &WebhookServer, path: &str) -> Value {
    json!({"url": server.url(path), "caBundle": base64(&server.ca_pem)})
}

fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn configuration(kind: &str, name: &str, webhooks: Vec<Value>) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "webhooks": webhooks})
}

async fn register(api: &TestServer, path: &str, config: Value) {
    let (code, body) = api.post(path, &config).await;
    assert_eq!(code, 201, "{body}");
}

/// Registers `policy.example.com`, a validating webhook on ConfigMap creates that refuses names
/// starting with `forbidden` (403) and warns on every other; answers its server.
async fn register_name_policy(api: &TestServer) -> WebhookServer {
    let hook = WebhookServer::start(Arc::new(|request: &Value| {
        let name = request["name"].as_str().unwrap_or("");
        Some(if name.starts_with("forbidden") {
            deny(403, "names may not start with forbidden")
        } else {
            allow(None, &["checked by policy.example.com"])
        })
    }))
    .await;
    let hooks = vec![webhook(
        "policy.example.com",
        by_url(&hook, "/validate"),
        "",
        &["configmaps"],
        &["CREATE"],
    )];
    register(
        api,
        VALIDATING,
        configuration("ValidatingWebhookConfiguration", "policy", hooks),
    )
    .await;
    hook
}

#[tokio::test]
async fn a_validating_webhook_refuses_with_its_code_and_message_and_warns() {
    let api = TestServer::start().await;
    let hook = register_name_policy(&api).await;

    let (code, status) = api.post(CONFIGMAPS, &config_map("forbidden-one")).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"policy.example.com\" denied the request: names may not start with forbidden"
    );
    let (code, _) = api.get(&format!("{CONFIGMAPS}/forbidden-one")).await;
    assert_eq!(code, 404, "a refused object is not stored");

    let response = api
        .http
        .post(api.url(CONFIGMAPS))
        .json(&config_map("fine"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    let warning = response
        .headers()
        .get("warning")
        .map(|w| w.to_str().unwrap().to_string());
    assert_eq!(
        warning.as_deref(),
        Some("299 - \"checked by policy.example.com\"")
    );

    let calls = hook.received();
    assert_eq!(calls.len(), 2);
    let review = &calls[1];
    assert_eq!(review["operation"], "CREATE");
    assert_eq!(
        review["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(review["resource"]["resource"], "configmaps");
    assert_eq!(
        (review["namespace"].as_str(), review["name"].as_str()),
        (Some("default"), Some("fine"))
    );
    assert_eq!(review["object"]["data"]["a"], "1");
    assert_eq!(review["dryRun"], false);
    // UPDATE is not among the rule's operations: no call.
    let (code, _) = api
        .patch(
            &format!("{CONFIGMAPS}/fine"),
            "application/merge-patch+json",
            &json!({"data": {"b": "2"}}),
        )
        .await;
    assert_eq!((code, hook.received().len()), (200, 2));
}

#[tokio::test]
async fn a_mutating_webhook_patches_before_validation_and_the_validating_one_sees_the_patch() {
    let api = TestServer::start().await;
    let mutator = WebhookServer::start(Arc::new(|request: &Value| {
        let patch =
            json!([{"op": "add", "path": "/metadata/labels", "value": {"injected": "yes"}}]);
        // On an update, a label with an invalid value: the registry must refuse it.
        let bad =
            json!([{"op": "add", "path": "/metadata/labels", "value": {"injected": "not valid!"}}]);
        let update =
            request["operation"] == "UPDATE" && request["object"]["data"]["bad"].is_string();
        Some(allow(Some(if update { bad } else { patch }), &[]))
    }))
    .await;
    let validator = WebhookServer::start(Arc::new(|request: &Value| {
        let labelled = request["object"]["metadata"]["labels"]["injected"] == "yes";
        Some(if labelled {
            allow(None, &[])
        } else {
            deny(400, "not labelled")
        })
    }))
    .await;
    // The mutating webhook through a Service (hook.default.svc) and its Endpoints.
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hook"},
        "spec": {"ports": [{"name": "https", "port": 443}]}});
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hook"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
            "ports": [{"name": "https", "port": mutator.addr.port()}]}]});
    assert_eq!(
        api.post("/api/v1/namespaces/default/services", &service)
            .await
            .0,
        201
    );
    assert_eq!(
        api.post("/api/v1/namespaces/default/endpoints", &endpoints)
            .await
            .0,
        201
    );
    let client = json!({"service": {"name": "hook", "namespace": "default", "path": "/mutate"},
        "caBundle": base64(&mutator.ca_pem)});
    let ops = ["CREATE", "UPDATE"];
    register(
        &api,
        MUTATING,
        configuration(
            "MutatingWebhookConfiguration",
            "labeller",
            vec![webhook(
                "label.example.com",
                client,
                "",
                &["configmaps"],
                &ops,
            )],
        ),
    )
    .await;
    register(
        &api,
        VALIDATING,
        configuration(
            "ValidatingWebhookConfiguration",
            "check",
            vec![webhook(
                "check.example.com",
                by_url(&validator, "/"),
                "",
                &["configmaps"],
                &ops,
            )],
        ),
    )
    .await;

    let (code, created) = api.post(CONFIGMAPS, &config_map("patched")).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["labels"]["injected"], "yes");
    let (_, stored) = api.get(&format!("{CONFIGMAPS}/patched")).await;
    assert_eq!(stored["metadata"]["labels"]["injected"], "yes");
    // The mutating webhook was called before the validating one.
    assert_eq!(
        (mutator.received().len(), validator.received().len()),
        (1, 1)
    );
    assert!(
        validator.received()[0]["object"]["metadata"]["uid"].is_string(),
        "validation sees the prepared object"
    );

    // A patch that makes the object invalid is refused by the registry's validation (422).
    let (code, status) = api
        .patch(
            &format!("{CONFIGMAPS}/patched"),
            "application/merge-patch+json",
            &json!({"data": {"bad": "x"}}),
        )
        .await;
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("metadata.labels"),
        "{status}"
    );
    let update = &mutator.received()[1];
    assert_eq!(update["operation"], "UPDATE");
    assert_eq!(update["oldObject"]["metadata"]["name"], "patched");
}

#[tokio::test]
async fn failure_policy_fail_refuses_and_ignore_proceeds_when_the_webhook_is_down() {
    let api = TestServer::start().await;
    // A port that was just free: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let client = json!({"url": format!("https://{closed}/validate")});
    let mut fail = webhook(
        "fail.example.com",
        client.clone(),
        "",
        &["configmaps"],
        &["CREATE"],
    );
    fail["objectSelector"] = json!({"matchLabels": {"policy": "fail"}});
    let mut ignore = webhook(
        "ignore.example.com",
        client,
        "",
        &["configmaps"],
        &["CREATE"],
    );
    ignore["failurePolicy"] = json!("Ignore");
    register(
        &api,
        VALIDATING,
        configuration("ValidatingWebhookConfiguration", "down", vec![fail, ignore]),
    )
    .await;

    let (code, created) = api.post(CONFIGMAPS, &config_map("ignored")).await;
    assert_eq!(code, 201, "Ignore lets the write through: {created}");
    let mut guarded = config_map("guarded");
    guarded["metadata"]["labels"] = json!({"policy": "fail"});
    let (code, status) = api.post(CONFIGMAPS, &guarded).await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["reason"], "InternalError");
    let message = status["message"].as_str().unwrap();
    let expected = format!("Internal error occurred: failed calling webhook \"fail.example.com\": failed to call webhook: Post \"https://{closed}/validate?timeout=10s\":");
    assert!(message.starts_with(&expected), "{message}");
}

#[tokio::test]
async fn a_webhook_that_does_not_answer_within_its_timeout_fails_the_call() {
    let api = TestServer::start().await;
    let silent = WebhookServer::start(Arc::new(|_: &Value| None)).await;
    let mut slow = webhook(
        "slow.example.com",
        by_url(&silent, "/"),
        "",
        &["configmaps"],
        &["CREATE"],
    );
    slow["timeoutSeconds"] = json!(1);
    register(
        &api,
        VALIDATING,
        configuration("ValidatingWebhookConfiguration", "slow", vec![slow]),
    )
    .await;
    let started = Instant::now();
    let (code, status) = api.post(CONFIGMAPS, &config_map("late")).await;
    let elapsed = started.elapsed();
    assert_eq!(code, 500, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .ends_with("context deadline exceeded"),
        "{status}"
    );
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
    assert_eq!(silent.received().len(), 1);
}

#[tokio::test]
async fn namespace_and_object_selectors_choose_what_is_sent() {
    let api = TestServer::start().await;
    let hook = WebhookServer::start(Arc::new(|_: &Value| Some(deny(400, "")))).await;
    let mut scoped = webhook(
        "scoped.example.com",
        by_url(&hook, "/"),
        "",
        &["configmaps"],
        &["*"],
    );
    scoped["namespaceSelector"] = json!({"matchLabels": {"admission": "on"}});
    scoped["objectSelector"] =
        json!({"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]});
    register(
        &api,
        VALIDATING,
        configuration("ValidatingWebhookConfiguration", "scoped", vec![scoped]),
    )
    .await;
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "watched", "labels": {"admission": "on"}}});
    assert_eq!(api.post("/api/v1/namespaces", &namespace).await.0, 201);

    assert_eq!(
        api.post(CONFIGMAPS, &config_map("elsewhere")).await.0,
        201,
        "default is not selected"
    );
    let watched = "/api/v1/namespaces/watched/configmaps";
    let (code, status) = api.post(watched, &config_map("caught")).await;
    assert_eq!(code, 400);
    assert_eq!(
        status["message"],
        "admission webhook \"scoped.example.com\" denied the request without explanation"
    );
    let mut skipped = config_map("skipped");
    skipped["metadata"]["labels"] = json!({"skip": "true"});
    assert_eq!(
        api.post(watched, &skipped).await.0,
        201,
        "the object selector excludes it"
    );
    assert_eq!(hook.received().len(), 1);
}

#[tokio::test]
async fn custom_resources_and_deletes_are_sent_with_their_objects() {
    let api = TestServer::start().await;
    let hook = WebhookServer::start(Arc::new(|request: &Value| {
        let size = request["object"]["spec"]["size"].as_i64().unwrap_or(0);
        Some(if size > 10 {
            deny(422, "size is at most 10")
        } else {
            allow(None, &[])
        })
    }))
    .await;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(
        api.post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd
        )
        .await
        .0,
        201
    );
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    tokio::time::timeout(TIMEOUT, async {
        while api.get(widgets).await.0 != 200 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the CRD is served");
    let ops = ["CREATE", "DELETE"];
    register(
        &api,
        VALIDATING,
        configuration(
            "ValidatingWebhookConfiguration",
            "widgets",
            vec![webhook(
                "widgets.example.com",
                by_url(&hook, "/"),
                "example.com",
                &["widgets"],
                &ops,
            )],
        ),
    )
    .await;

    let widget = |name: &str, size: i64| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"size": size}})
    };
    let (code, status) = api.post(widgets, &widget("huge", 99)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"widgets.example.com\" denied the request: size is at most 10"
    );
    assert_eq!(api.post(widgets, &widget("small", 3)).await.0, 201);
    let (code, _) = api.delete(&format!("{widgets}/small"), None).await;
    assert_eq!(code, 200);
    let calls = hook.received();
    let delete = calls.last().unwrap();
    assert_eq!(delete["operation"], "DELETE");
    assert_eq!(delete["kind"]["kind"], "Widget");
    assert_eq!(delete["object"], Value::Null);
    assert_eq!(delete["oldObject"]["spec"]["size"], 3);
    assert_eq!(delete["options"]["kind"], "DeleteOptions");
}

#[tokio::test]
async fn the_configurations_are_validated_and_never_sent_to_a_webhook() {
    let api = TestServer::start().await;
    let hook = WebhookServer::start(Arc::new(|_: &Value| {
        Some(deny(403, "everything is refused"))
    }))
    .await;
    let everything = webhook("all.example.com", by_url(&hook, "/"), "*", &["*/*"], &["*"]);
    register(
        &api,
        VALIDATING,
        configuration("ValidatingWebhookConfiguration", "all", vec![everything]),
    )
    .await;
    assert_eq!(api.post(CONFIGMAPS, &config_map("refused")).await.0, 403);

    let mut invalid = webhook("bad", by_url(&hook, "/"), "", &["pods"], &["CREATE"]);
    invalid.as_object_mut().unwrap().remove("sideEffects");
    let (code, status) = api
        .post(
            MUTATING,
            &configuration("MutatingWebhookConfiguration", "bad", vec![invalid]),
        )
        .await;
    assert_eq!(code, 422, "{status}");
    let fields: Vec<&str> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert_eq!(fields, vec!["webhooks[0].name", "webhooks[0].sideEffects"]);

    // The refusing webhook can always be removed.
    let (code, _) = api.delete(&format!("{VALIDATING}/all"), None).await;
    assert_eq!(code, 200);
    assert_eq!(api.post(CONFIGMAPS, &config_map("accepted")).await.0, 201);
    assert_eq!(hook.received().len(), 1);
}

#[tokio::test]
async fn kubectl_prints_the_denial_the_warning_and_the_configurations() {
    let api = TestServer::start().await;
    let home = tempfile::tempdir().unwrap();
    let _hook = register_name_policy(&api).await;
    let Some((ok, _, stderr)) = kubectl(
        &api,
        home.path(),
        &["create", "configmap", "forbidden-x", "--from-literal=a=1"],
    )
    .await
    else {
        return;
    };
    assert!(!ok);
    assert_eq!(stderr.trim(), "error: failed to create configmap: admission webhook \"policy.example.com\" denied the request: names may not start with forbidden");
    let (ok, stdout, stderr) = kubectl(
        &api,
        home.path(),
        &["create", "configmap", "fine", "--from-literal=a=1"],
    )
    .await
    .unwrap();
    assert!(ok, "{stderr}");
    assert_eq!(
        (stdout.trim(), stderr.trim()),
        (
            "configmap/fine created",
            "Warning: checked by policy.example.com"
        )
    );
    let (ok, stdout, _) = kubectl(
        &api,
        home.path(),
        &["get", "validatingwebhookconfigurations"],
    )
    .await
    .unwrap();
    assert!(ok);
    let lines: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], vec!["NAME", "WEBHOOKS", "AGE"]);
    assert_eq!(lines[1][..2], ["policy", "1"]);
}
