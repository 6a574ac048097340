//! `x-kubernetes-validations`: CEL rules on schema nodes, with `self` and, on update, `oldSelf`.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go`
//! (`Validator.Validate`). Each rule runs where it is declared, with `self` the value there; a rule
//! that names `oldSelf` is a transition rule and runs only on update, where the old object has a
//! value at the same place (correlated through object properties and map keys). A rule that is
//! false gives `<path>: Invalid value: "<type>": <message>` — the `message`, the result of
//! `messageExpression`, or `failed rule: <rule>` — or the error type its `reason` names, at
//! `fieldPath` below the node when set. The interpreter is the `cel` crate.
//!
//! minik simplifies: rules are only parsed when the CRD is written (upstream also type-checks them
//! and estimates their cost), so an unknown function is found when the rule first runs, and is then
//! an error on that write (never a silent pass); list items are not correlated with the old list;
//! `optionalOldSelf` is not supported (such a rule runs only on update); Kubernetes' CEL libraries
//! (`isSorted`, `quantity`, `url`, …) are missing where the crate lacks them.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, Program};
use minik_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
use serde_json::Value;

use super::{additional, child, declared_type, index, items, property, Schema};
use crate::apiextensions::field::FieldError;

/// Parses a rule: `Err` with the parser's message if it is not CEL.
pub fn compile(rule: &str) -> Result<Program, String> {
    Program::compile(rule).map_err(|e| e.to_string())
}

/// Every failed rule of `schema`'s tree for `value`, `old` being the stored object on update.
pub fn check(schema: &Schema, value: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    check_node(schema, value, old, "", &mut errors);
    errors
}

fn check_node(
    schema: &Schema,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    for rule in schema.x_kubernetes_validations.iter().flatten() {
        if let Some(error) = run_rule(schema, rule, value, old, path) {
            errors.push(error);
        }
    }
    match value {
        Value::Object(map) => {
            for (name, field) in map {
                let Some(field_schema) = property(schema, name).or_else(|| additional(schema))
                else {
                    continue;
                };
                let old_field = old.and_then(|o| o.get(name));
                check_node(field_schema, field, old_field, &child(path, name), errors);
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                for (i, item) in list.iter().enumerate() {
                    check_node(item_schema, item, None, &index(path, i), errors);
                }
            }
        }
        _ => {}
    }
}

/// Runs one rule at one node; the error if it fails (or cannot run).
fn run_rule(
    schema: &Schema,
    rule: &ValidationRule,
    value: &Value,
    old: Option<&Value>,
    path: &str,
) -> Option<FieldError> {
    let field = match rule.field_path.as_deref().filter(|p| !p.is_empty()) {
        Some(relative) => format!("{path}{relative}")
            .trim_start_matches('.')
            .to_string(),
        None => path.to_string(),
    };
    let program = match compile(&rule.rule) {
        Ok(program) => program,
        Err(e) => return Some(invalid(schema, &field, format!("compilation failed: {e}"))),
    };
    let transition = program.references().has_variable("oldSelf");
    if transition && old.is_none() {
        return None;
    }
    let mut context = Context::default();
    context.add_variable_from_value("self", to_cel(Some(schema), value));
    if let Some(old) = old {
        context.add_variable_from_value("oldSelf", to_cel(Some(schema), old));
    }
    match program.execute(&context) {
        Ok(cel::Value::Bool(true)) => None,
        Ok(cel::Value::Bool(false)) => Some(failure(schema, rule, &context, &field)),
        Ok(other) => Some(invalid(
            schema,
            &field,
            format!("{}: rule did not return a bool: {other:?}", rule.rule),
        )),
        Err(e) => Some(invalid(
            schema,
            &field,
            format!("{}: error evaluating rule: {e}", rule.rule),
        )),
    }
}

fn invalid(schema: &Schema, field: &str, message: String) -> FieldError {
    FieldError::invalid(field, Value::from(declared_type(schema)), message)
}

/// The error a false rule gives: its message and its reason's error type.
fn failure(schema: &Schema, rule: &ValidationRule, context: &Context, field: &str) -> FieldError {
    let message = message_of(rule, context);
    match rule.reason.as_deref() {
        Some("FieldValueForbidden") => FieldError::forbidden(field, message),
        Some("FieldValueRequired") => FieldError::required(field, &message),
        Some("FieldValueDuplicate") => {
            let mut error = FieldError::duplicate(field, Value::from(declared_type(schema)));
            error.detail = message;
            error
        }
        _ => invalid(schema, field, message),
    }
}

/// `messageExpression` when it yields a non-empty string, else `message`, else `failed rule: …`.
fn message_of(rule: &ValidationRule, context: &Context) -> String {
    let from_expression = rule
        .message_expression
        .as_deref()
        .and_then(|expression| Program::compile(expression).ok())
        .and_then(|program| match program.execute(context) {
            Ok(cel::Value::String(text)) if !text.trim().is_empty() => Some(text.to_string()),
            _ => None,
        });
    from_expression
        .or_else(|| rule.message.clone().filter(|m| !m.is_empty()))
        .unwrap_or_else(|| format!("failed rule: {}", rule.rule))
}

/// JSON as CEL sees it: whole numbers are `int` (`double` where the schema says `number`),
/// objects are maps keyed by strings.
pub fn to_cel(schema: Option<&Schema>, value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => {
            let double = schema.and_then(|s| s.type_.as_deref()) == Some("number");
            match (n.as_i64(), n.as_u64()) {
                (Some(i), _) if !double => cel::Value::Int(i),
                (None, Some(u)) if !double => cel::Value::UInt(u),
                _ => cel::Value::Float(n.as_f64().unwrap_or_default()),
            }
        }
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(list) => {
            let item_schema = schema.and_then(items);
            cel::Value::List(Arc::new(
                list.iter().map(|item| to_cel(item_schema, item)).collect(),
            ))
        }
        Value::Object(map) => {
            let entries: HashMap<Key, cel::Value> = map
                .iter()
                .map(|(name, field)| {
                    let field_schema =
                        schema.and_then(|s| property(s, name).or_else(|| additional(s)));
                    (Key::from(name.clone()), to_cel(field_schema, field))
                })
                .collect();
            cel::Value::Map(Map {
                map: Arc::new(entries),
            })
        }
    }
}
