//! A webhook's `matchConditions`: CEL expressions over the request that decide whether the
//! webhook is called at all.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions/matcher.go`
//! and `validateMatchConditions` in `pkg/apis/admissionregistration/validation/validation.go`.
//! Each expression sees `object` (null on delete), `oldObject` (null on create) and `request`
//! (the AdmissionReview's request). Any `false` skips the webhook; otherwise an
//! evaluation error refuses the request with a 403 under `failurePolicy: Fail` and skips the
//! webhook under `Ignore`; all `true` calls it. On write a configuration may have at most 64
//! conditions, each with a unique qualified `name` and an `expression` that compiles.
//!
//! minik simplifies: the interpreter is the `cel` crate, as for CRD validation rules: expressions
//! are parsed, not type-checked, when written (a non-bool result is an evaluation error), there is
//! no `authorizer` variable and no cost limit.

use std::collections::BTreeSet;

use cel::Context;
use minik_api::k8s_openapi::api::admissionregistration::v1::MatchCondition;
use minik_api::meta::StatusCause;
use minik_api::status::cause;
use serde_json::Value;

use crate::apiextensions::schema::cel::{compile, to_cel};

/// Upstream's limit on conditions per webhook.
pub const MAX_CONDITIONS: usize = 64;

/// What the conditions decide.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every condition is true (or there are none): call the webhook.
    Call,
    /// A condition is false: do not call it.
    Skip,
    /// No condition is false but some could not be evaluated: the errors, joined.
    Error(String),
}

/// Evaluates `conditions` with the review's `request` (which holds `object` and `oldObject`).
pub fn evaluate(conditions: &[MatchCondition], request: &Value) -> Outcome {
    if conditions.is_empty() {
        return Outcome::Call;
    }
    let mut context = Context::default();
    context.add_variable_from_value("object", to_cel(None, &request["object"]));
    context.add_variable_from_value("oldObject", to_cel(None, &request["oldObject"]));
    context.add_variable_from_value("request", to_cel(None, request));
    let mut errors = Vec::new();
    for condition in conditions {
        let expression = condition.expression.trim();
        let result = compile(expression).and_then(|program| {
            program
                .execute(&context)
                .map_err(|e| e.to_string())
                .and_then(|value| match value {
                    cel::Value::Bool(b) => Ok(b),
                    other => Err(format!("no matching overload: {other:?} is not a bool")),
                })
        });
        match result {
            Ok(false) => return Outcome::Skip,
            Ok(true) => {}
            Err(e) => errors.push(format!("expression '{expression}' resulted in error: {e}")),
        }
    }
    match errors.len() {
        0 => Outcome::Call,
        1 => Outcome::Error(errors.remove(0)),
        _ => Outcome::Error(format!("[{}]", errors.join(", "))),
    }
}

/// The problems of one webhook's `matchConditions` at `path` (`webhooks[0].matchConditions`).
pub fn validate(conditions: &Value, path: &str) -> Vec<StatusCause> {
    let list = conditions.as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut causes = Vec::new();
    if list.len() > MAX_CONDITIONS {
        causes.push(cause(
            path,
            "FieldValueTooMany",
            format!(
                "Too many: {}: must have at most {MAX_CONDITIONS} items",
                list.len()
            ),
        ));
    }
    let mut names = BTreeSet::new();
    for (i, condition) in list.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let expression = condition["expression"].as_str().unwrap_or("").trim();
        if expression.is_empty() {
            causes.push(cause(
                format!("{at}.expression"),
                "FieldValueRequired",
                "Required value",
            ));
        } else if let Err(e) = compile(expression) {
            causes.push(cause(
                format!("{at}.expression"),
                "FieldValueInvalid",
                format!("Invalid value: {expression:?}: compilation failed: {e}"),
            ));
        }
        let name = condition["name"].as_str().unwrap_or("");
        if name.is_empty() {
            causes.push(cause(
                format!("{at}.name"),
                "FieldValueRequired",
                "Required value",
            ));
        } else if !is_qualified_name(name) {
            causes.push(cause(
                format!("{at}.name"),
                "FieldValueInvalid",
                format!("Invalid value: {name:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
            ));
        } else if !names.insert(name) {
            causes.push(cause(
                format!("{at}.name"),
                "FieldValueDuplicate",
                format!("Duplicate value: {name:?}"),
            ));
        }
    }
    causes
}

/// `ValidateQualifiedName`: an optional DNS-subdomain prefix and `/`, then a name part of at
/// most 63 characters.
fn is_qualified_name(name: &str) -> bool {
    let (prefix, part) = match name.split_once('/') {
        Some((prefix, part)) => (Some(prefix), part),
        None => (None, name),
    };
    let part_ok = !part.is_empty()
        && part.len() <= 63
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && part.starts_with(|c: char| c.is_ascii_alphanumeric())
        && part.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(crate::apiextensions::names::is_dns_label)
    });
    part_ok && prefix_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conditions(expressions: &[&str]) -> Vec<MatchCondition> {
        expressions
            .iter()
            .enumerate()
            .map(|(i, e)| MatchCondition {
                name: format!("c{i}"),
                expression: e.to_string(),
            })
            .collect()
    }

    #[test]
    fn a_false_condition_skips_and_an_error_without_false_is_an_error() {
        let request = json!({"operation": "CREATE", "object": {"metadata": {"name": "x",
            "labels": {"team": "a"}}}, "oldObject": null});
        let run = |e: &[&str]| evaluate(&conditions(e), &request);
        assert_eq!(run(&[]), Outcome::Call);
        assert_eq!(
            run(&[
                "request.operation == 'CREATE'",
                "object.metadata.labels.team == 'a'"
            ]),
            Outcome::Call
        );
        assert_eq!(
            run(&["oldObject == null", "object.metadata.name == 'y'"]),
            Outcome::Skip
        );
        assert_eq!(
            run(&["object.spec.x == 1", "false"]),
            Outcome::Skip,
            "false wins over errors"
        );
        let Outcome::Error(error) = run(&["object.spec.x == 1", "true"]) else {
            panic!("an error")
        };
        assert!(
            error.starts_with("expression 'object.spec.x == 1' resulted in error: "),
            "{error}"
        );
        assert!(matches!(run(&["'not a bool'"]), Outcome::Error(_)));
    }

    #[test]
    fn conditions_are_validated_as_upstream() {
        let given = json!([{"name": "ok", "expression": "true"},
            {"name": "ok", "expression": "object.x =="},
            {"name": "-bad", "expression": " "}]);
        let fields: Vec<(String, String)> = validate(&given, "webhooks[0].matchConditions")
            .into_iter()
            .map(|c| (c.field.unwrap(), c.reason.unwrap()))
            .collect();
        let expected = [
            (
                "webhooks[0].matchConditions[1].expression",
                "FieldValueInvalid",
            ),
            ("webhooks[0].matchConditions[1].name", "FieldValueDuplicate"),
            (
                "webhooks[0].matchConditions[2].expression",
                "FieldValueRequired",
            ),
            ("webhooks[0].matchConditions[2].name", "FieldValueInvalid"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(f, r)| (f.to_string(), r.to_string()))
            .collect();
        assert_eq!(fields, expected);
        let many: Vec<Value> = (0..65)
            .map(|i| json!({"name": format!("c{i}"), "expression": "true"}))
            .collect();
        let causes = validate(&Value::from(many), "m");
        assert_eq!(causes.len(), 1);
        assert_eq!(
            causes[0].message.as_deref(),
            Some("Too many: 65: must have at most 64 items")
        );
        assert!(is_qualified_name("example.com/my_name.1"));
        assert!(!is_qualified_name("a/"));
    }
}
