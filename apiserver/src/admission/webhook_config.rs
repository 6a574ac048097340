//! The strategy of ValidatingWebhookConfiguration and MutatingWebhookConfiguration: defaults
//! and validation with upstream's field paths.
//!
//! Kubernetes counterpart: `pkg/apis/admissionregistration/v1/defaults.go` (failurePolicy Fail,
//! matchPolicy Equivalent, empty selectors, timeoutSeconds 10, scope `*`, service port 443,
//! reinvocationPolicy Never) and `pkg/apis/admissionregistration/validation/validation.go`
//! (`ValidateValidatingWebhookConfiguration`, `ValidateMutatingWebhookConfiguration`). minik
//! adds one rule of its own: a `clientConfig.url` must name a loopback host.
//! `matchConditions` are validated by `match_conditions.rs`.

use std::collections::BTreeSet;

use minik_api::k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use minik_api::meta::{LabelSelector, StatusCause};
use minik_api::status::{self, cause};
use minik_api::workloads::selector_from_meta;
use serde_json::{json, Map, Value};

use super::match_conditions;
use super::webhook_client::url_loopback;
use crate::error::ApiResult;
use crate::registry::{typed, untyped};

const OPERATIONS: [&str; 5] = ["*", "CREATE", "UPDATE", "DELETE", "CONNECT"];

/// Normalises (through the typed struct), defaults and validates a configuration.
pub fn prepare(object: Value, kind: &str) -> ApiResult<Value> {
    let mut object = match kind {
        "MutatingWebhookConfiguration" => {
            untyped(&typed::<MutatingWebhookConfiguration>(object, kind)?)?
        }
        _ => untyped(&typed::<ValidatingWebhookConfiguration>(object, kind)?)?,
    };
    let mutating = kind == "MutatingWebhookConfiguration";
    for webhook in object["webhooks"].as_array_mut().into_iter().flatten() {
        if let Some(webhook) = webhook.as_object_mut() {
            set_defaults(webhook, mutating);
        }
    }
    let causes = validate(&object, mutating);
    if causes.is_empty() {
        Ok(object)
    } else {
        let name = object.pointer("/metadata/name").and_then(Value::as_str);
        Err(status::invalid(kind, name.unwrap_or(""), causes).into())
    }
}

fn set_defaults(webhook: &mut Map<String, Value>, mutating: bool) {
    let mut default = |field: &str, value: Value| {
        webhook.entry(field).or_insert(value);
    };
    default("failurePolicy", json!("Fail"));
    default("matchPolicy", json!("Equivalent"));
    default("namespaceSelector", json!({}));
    default("objectSelector", json!({}));
    default("timeoutSeconds", json!(10));
    if mutating {
        default("reinvocationPolicy", json!("Never"));
    }
    for rule in webhook
        .get_mut("rules")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(rule) = rule.as_object_mut() {
            rule.entry("scope").or_insert(json!("*"));
        }
    }
    if let Some(service) = webhook
        .get_mut("clientConfig")
        .and_then(|c| c.get_mut("service"))
    {
        if let Some(service) = service.as_object_mut() {
            service.entry("port").or_insert(json!(443));
        }
    }
}

fn required(field: &str, message: &str) -> StatusCause {
    let text = if message.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {message}")
    };
    cause(field, "FieldValueRequired", text)
}

fn invalid(field: &str, value: &Value, why: &str) -> StatusCause {
    cause(
        field,
        "FieldValueInvalid",
        format!("Invalid value: {value}: {why}"),
    )
}

fn unsupported(field: &str, value: &Value, allowed: &[&str]) -> StatusCause {
    let allowed: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
    let message = format!(
        "Unsupported value: {value}: supported values: {}",
        allowed.join(", ")
    );
    cause(field, "FieldValueNotSupported", message)
}

/// Every problem of the configuration, each at its field path.
pub fn validate(object: &Value, mutating: bool) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let mut names = BTreeSet::new();
    for (i, webhook) in object["webhooks"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("webhooks[{i}]");
        let name = webhook["name"].as_str().unwrap_or("");
        if name.is_empty() {
            causes.push(required(&format!("{path}.name"), ""));
        } else if name.split('.').filter(|s| !s.is_empty()).count() < 3 {
            causes.push(invalid(
                &format!("{path}.name"),
                &webhook["name"],
                "should be a domain with at least three segments separated by dots",
            ));
        } else if !names.insert(name) {
            causes.push(cause(
                format!("{path}.name"),
                "FieldValueDuplicate",
                format!("Duplicate value: \"{name}\""),
            ));
        }
        causes.extend(validate_webhook(webhook, &path, mutating));
    }
    causes
}

fn validate_webhook(webhook: &Value, path: &str, mutating: bool) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let field = |f: &str| format!("{path}.{f}");
    let versions: Vec<&str> = webhook["admissionReviewVersions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if versions.is_empty() {
        causes.push(required(
            &field("admissionReviewVersions"),
            "must specify one of v1, v1beta1",
        ));
    } else if !versions.iter().any(|v| *v == "v1" || *v == "v1beta1") {
        causes.push(invalid(
            &field("admissionReviewVersions"),
            &webhook["admissionReviewVersions"],
            "must include at least one of v1, v1beta1",
        ));
    }
    match webhook.get("sideEffects") {
        None | Some(Value::Null) => causes.push(required(
            &field("sideEffects"),
            "must specify one of None, NoneOnDryRun",
        )),
        Some(v) if !matches!(v.as_str(), Some("None" | "NoneOnDryRun")) => causes.push(
            unsupported(&field("sideEffects"), v, &["None", "NoneOnDryRun"]),
        ),
        _ => {}
    }
    let policy = &webhook["failurePolicy"];
    if !matches!(policy.as_str(), Some("Fail" | "Ignore")) {
        causes.push(unsupported(
            &field("failurePolicy"),
            policy,
            &["Fail", "Ignore"],
        ));
    }
    let match_policy = &webhook["matchPolicy"];
    if !matches!(match_policy.as_str(), Some("Exact" | "Equivalent")) {
        causes.push(unsupported(
            &field("matchPolicy"),
            match_policy,
            &["Equivalent", "Exact"],
        ));
    }
    let reinvocation = &webhook["reinvocationPolicy"];
    if mutating && !matches!(reinvocation.as_str(), Some("Never" | "IfNeeded")) {
        causes.push(unsupported(
            &field("reinvocationPolicy"),
            reinvocation,
            &["IfNeeded", "Never"],
        ));
    }
    let timeout = &webhook["timeoutSeconds"];
    if !timeout.as_i64().is_some_and(|t| (1..=30).contains(&t)) {
        causes.push(invalid(
            &field("timeoutSeconds"),
            timeout,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        let parsed = serde_json::from_value::<LabelSelector>(webhook[selector].clone());
        if let Err(e) = parsed
            .map_err(|e| e.to_string())
            .and_then(|s| selector_from_meta(&s).map_err(|e| e.to_string()))
        {
            causes.push(invalid(&field(selector), &webhook[selector], &e));
        }
    }
    causes.extend(validate_client_config(
        &webhook["clientConfig"],
        &field("clientConfig"),
    ));
    causes.extend(match_conditions::validate(
        &webhook["matchConditions"],
        &field("matchConditions"),
    ));
    for (j, rule) in webhook["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        causes.extend(validate_rule(rule, &format!("{path}.rules[{j}]")));
    }
    causes
}

fn validate_client_config(config: &Value, path: &str) -> Vec<StatusCause> {
    let url = config.get("url").filter(|u| !u.is_null());
    let service = config.get("service").filter(|s| !s.is_null());
    match (url, service) {
        (Some(_), Some(_)) => vec![required(path, "exactly one of url or service is required")],
        (None, None) => vec![required(path, "exactly one of url or service is required")],
        (Some(url), None) => validate_url(url, &format!("{path}.url")),
        (None, Some(service)) => {
            let mut causes = Vec::new();
            for field in ["name", "namespace"] {
                if service[field].as_str().unwrap_or("").is_empty() {
                    causes.push(required(&format!("{path}.service.{field}"), ""));
                }
            }
            let port = &service["port"];
            if !port.as_i64().is_some_and(|p| (1..=65535).contains(&p)) {
                causes.push(invalid(
                    &format!("{path}.service.port"),
                    port,
                    "port is not valid: must be between 1 and 65535, inclusive",
                ));
            }
            if service["path"]
                .as_str()
                .is_some_and(|p| !p.starts_with('/'))
            {
                causes.push(invalid(
                    &format!("{path}.service.path"),
                    &service["path"],
                    "must start with a '/'",
                ));
            }
            causes
        }
    }
}

fn validate_url(url: &Value, path: &str) -> Vec<StatusCause> {
    match url_problem(url.as_str().unwrap_or("")) {
        Some(why) => vec![invalid(path, url, why)],
        None => Vec::new(),
    }
}

/// What is wrong with a webhook URL (`ValidateWebhookURL` with https forced), if anything;
/// also used for CRD conversion webhooks.
pub fn url_problem(url: &str) -> Option<&'static str> {
    let why = match reqwest::Url::parse(url) {
        Ok(parsed) if parsed.scheme() != "https" => "'https' is the only allowed URL scheme",
        Ok(parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            "user information is not permitted in the URL"
        }
        Ok(parsed) if parsed.fragment().is_some() || parsed.query().is_some() => {
            "query parameters and fragments are not permitted in the URL"
        }
        Ok(parsed) if url_loopback(&parsed).is_none() => {
            "minik calls webhooks on loopback addresses only (127.0.0.0/8 or localhost)"
        }
        Ok(_) => return None,
        Err(_) => "host must be specified",
    };
    Some(why)
}

fn validate_rule(rule: &Value, path: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for field in ["operations", "apiGroups", "apiVersions", "resources"] {
        let list = rule[field].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if list.is_empty() {
            causes.push(required(&format!("{path}.{field}"), ""));
        }
        if field == "operations" {
            for (k, op) in list.iter().enumerate() {
                if !op.as_str().is_some_and(|o| OPERATIONS.contains(&o)) {
                    causes.push(unsupported(
                        &format!("{path}.operations[{k}]"),
                        op,
                        &OPERATIONS,
                    ));
                }
            }
        }
    }
    let scope = &rule["scope"];
    if !matches!(scope.as_str(), Some("*" | "Cluster" | "Namespaced")) {
        causes.push(unsupported(
            &format!("{path}.scope"),
            scope,
            &["*", "Cluster", "Namespaced"],
        ));
    }
    causes
}

#[cfg(test)]
#[path = "webhook_config_tests.rs"]
mod tests;
