//! `fieldValidation`: what happens to fields the kind does not have.
//!
//! Kubernetes counterpart: the strict decoding in `k8s.io/apiserver/pkg/endpoints/handlers`
//! (`fieldValidation=Strict|Warn|Ignore`, KEP-2885). Upstream's decoder reports unknown fields
//! while it decodes; minik finds them by decoding into the typed k8s-openapi struct (which drops
//! what it does not know), encoding again, and listing the input keys that did not survive.
//! `Strict` answers 400 as upstream words it, `Warn` (the default) answers with a
//! `Warning: 299 - "unknown field \"spec.foo\""` header per field, which kubectl prints.

use axum::http::HeaderValue;
use axum::response::Response;
use minik_api::core::{Endpoints, Event, Namespace, Node, Pod, Service};
use minik_api::k8s_openapi::api::coordination::v1::Lease;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::handlers::request::Params;

/// The three `fieldValidation` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop them and warn (the default).
    Warn,
    /// Refuse the request with 400.
    Strict,
}

impl FieldValidation {
    /// Reads `fieldValidation` from the query; an unknown value is a 400.
    pub fn from_params(params: &Params) -> ApiResult<Self> {
        match params.get("fieldValidation").unwrap_or("") {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of Ignore, Warn or Strict, not {other:?}"
            ))),
        }
    }
}

fn survivors<K: DeserializeOwned + Serialize>(value: &Value) -> Option<Value> {
    let typed: K = serde_json::from_value(value.clone()).ok()?;
    serde_json::to_value(typed).ok()
}

/// The dotted paths of the fields in `value` that `kind` does not have.
pub fn unknown_fields(kind: &str, value: &Value) -> Vec<String> {
    let decoded = match kind {
        "Pod" => survivors::<Pod>(value),
        "Service" => survivors::<Service>(value),
        "Endpoints" => survivors::<Endpoints>(value),
        "Event" => survivors::<Event>(value),
        "Node" => survivors::<Node>(value),
        "Namespace" => survivors::<Namespace>(value),
        "Lease" => survivors::<Lease>(value),
        _ => None,
    };
    let mut unknown = Vec::new();
    if let Some(decoded) = decoded {
        diff(value, &decoded, "", &mut unknown);
    }
    unknown
}

fn diff(input: &Value, output: &Value, path: &str, unknown: &mut Vec<String>) {
    match (input, output) {
        (Value::Object(input), Value::Object(output)) => {
            for (key, value) in input {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match output.get(key) {
                    None if !value.is_null() => unknown.push(child),
                    None => {}
                    Some(out) => diff(value, out, &child, unknown),
                }
            }
        }
        (Value::Array(input), Value::Array(output)) => {
            for (index, (value, out)) in input.iter().zip(output).enumerate() {
                diff(value, out, &format!("{path}[{index}]"), unknown);
            }
        }
        _ => {}
    }
}

/// Applies the mode to an incoming object: Strict fails, Warn returns the warnings to send.
pub fn check(mode: FieldValidation, kind: &str, value: &Value) -> ApiResult<Vec<String>> {
    if mode == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    let unknown = unknown_fields(kind, value);
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    if mode == FieldValidation::Strict {
        let fields: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field \"{f}\""))
            .collect();
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a {kind}: strict decoding error: {}",
            fields.join(", ")
        )));
    }
    Ok(unknown
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect())
}

/// Adds one `Warning: 299 - "…"` header per warning.
pub fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for warning in warnings {
        let text = format!(
            "299 - \"{}\"",
            warning.replace('\\', "\\\\").replace('"', "\\\"")
        );
        if let Ok(value) = HeaderValue::from_str(&text) {
            response.headers_mut().append("warning", value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_found_at_any_depth() {
        let pod = json!({"metadata": {"name": "web", "bogus": 1},
                         "spec": {"containers": [{"name": "a", "image": "b", "imagePullPolicyy": "x"}], "foo": true}});
        assert_eq!(
            unknown_fields("Pod", &pod),
            [
                "metadata.bogus",
                "spec.containers[0].imagePullPolicyy",
                "spec.foo"
            ]
        );
        let clean = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a", "image": "b"}]}});
        assert!(unknown_fields("Pod", &clean).is_empty());
    }

    #[test]
    fn strict_refuses_and_warn_reports() {
        let pod = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a", "image": "b"}], "foo": 1}});
        let error = check(FieldValidation::Strict, "Pod", &pod).unwrap_err();
        assert_eq!(error.code(), 400);
        assert!(error
            .0
            .message
            .as_deref()
            .unwrap()
            .ends_with("strict decoding error: unknown field \"spec.foo\""));
        assert_eq!(
            check(FieldValidation::Warn, "Pod", &pod).unwrap(),
            ["unknown field \"spec.foo\""]
        );
        assert!(check(FieldValidation::Ignore, "Pod", &pod)
            .unwrap()
            .is_empty());
    }
}
