//! Tests of `webhook_config.rs`: upstream's defaults, and each refusal at its field path.

use super::*;

fn config(webhook: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "policy"}, "webhooks": [webhook]})
}

fn good() -> Value {
    json!({"name": "deny.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://127.0.0.1:9443/validate"},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["configmaps"]}]})
}

fn fields_of(result: ApiResult<Value>) -> Vec<String> {
    let error = result.expect_err("refused");
    assert_eq!(error.code(), 422);
    let causes = error.0.details.and_then(|d| d.causes).unwrap_or_default();
    causes.into_iter().filter_map(|c| c.field).collect()
}

#[test]
fn a_valid_configuration_gets_upstreams_defaults() {
    let prepared = prepare(config(good()), "ValidatingWebhookConfiguration").unwrap();
    let webhook = &prepared["webhooks"][0];
    assert_eq!(webhook["failurePolicy"], "Fail");
    assert_eq!(webhook["matchPolicy"], "Equivalent");
    assert_eq!(webhook["timeoutSeconds"], 10);
    assert_eq!(webhook["namespaceSelector"], json!({}));
    assert_eq!(webhook["rules"][0]["scope"], "*");
    assert!(webhook.get("reinvocationPolicy").is_none());
    let mut mutating = config(good());
    mutating["kind"] = json!("MutatingWebhookConfiguration");
    mutating["webhooks"][0]["clientConfig"] =
        json!({"service": {"name": "hook", "namespace": "default"}});
    let prepared = prepare(mutating, "MutatingWebhookConfiguration").unwrap();
    assert_eq!(prepared["webhooks"][0]["reinvocationPolicy"], "Never");
    assert_eq!(
        prepared["webhooks"][0]["clientConfig"]["service"]["port"],
        443
    );
}

#[test]
fn required_fields_are_reported_at_their_paths() {
    let mut webhook = good();
    let object = webhook.as_object_mut().unwrap();
    object.remove("sideEffects");
    object.remove("admissionReviewVersions");
    assert_eq!(
        fields_of(prepare(config(webhook), "ValidatingWebhookConfiguration")),
        vec![
            "webhooks[0].admissionReviewVersions",
            "webhooks[0].sideEffects"
        ]
    );
}

#[test]
fn bad_values_are_reported_at_their_paths() {
    // (field changed, value, path reported)
    let table = [
        ("name", json!("deny"), "webhooks[0].name"),
        (
            "admissionReviewVersions",
            json!(["v2"]),
            "webhooks[0].admissionReviewVersions",
        ),
        ("sideEffects", json!("Some"), "webhooks[0].sideEffects"),
        ("failurePolicy", json!("Maybe"), "webhooks[0].failurePolicy"),
        ("timeoutSeconds", json!(31), "webhooks[0].timeoutSeconds"),
        (
            "clientConfig",
            json!({"url": "http://127.0.0.1/"}),
            "webhooks[0].clientConfig.url",
        ),
        (
            "clientConfig",
            json!({"url": "https://10.1.2.3/"}),
            "webhooks[0].clientConfig.url",
        ),
        ("clientConfig", json!({}), "webhooks[0].clientConfig"),
        (
            "clientConfig",
            json!({"service": {"name": "h", "namespace": "d", "path": "x"}}),
            "webhooks[0].clientConfig.service.path",
        ),
        (
            "objectSelector",
            json!({"matchExpressions": [{"key": "a", "operator": "Near"}]}),
            "webhooks[0].objectSelector",
        ),
        (
            "rules",
            json!([{"operations": ["PATCH"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]),
            "webhooks[0].rules[0].operations[0]",
        ),
        (
            "rules",
            json!([{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": []}]),
            "webhooks[0].rules[0].resources",
        ),
        (
            "rules",
            json!([{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "Node"}]),
            "webhooks[0].rules[0].scope",
        ),
    ];
    for (field, value, path) in table {
        let mut webhook = good();
        webhook[field] = value;
        let fields = fields_of(prepare(config(webhook), "ValidatingWebhookConfiguration"));
        assert_eq!(fields, vec![path.to_string()], "{field}");
    }
}

#[test]
fn webhook_names_are_unique_within_a_configuration() {
    let mut object = config(good());
    object["webhooks"] = json!([good(), good()]);
    assert_eq!(
        fields_of(prepare(object, "ValidatingWebhookConfiguration")),
        vec!["webhooks[1].name"]
    );
}
