//! Checks of an `openAPIV3Schema` itself, when a CustomResourceDefinition is written.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/validation.go`
//! (`ValidateStructural`: every node has a type, an object's properties and additionalProperties
//! exclude each other, lists have items) and the per-node checks of
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`
//! (types, patterns that compile, defaults that validate, CEL rules that compile). Paths read as
//! upstream's: `spec.versions[0].schema.openAPIV3Schema.properties[spec].type`.
//!
//! minik simplifies: no check of `metadata` restrictions at the root, of `allOf`/`anyOf`/`oneOf`
//! value validations, of list-type and map-type extensions, or of CEL cost.

use serde_json::Value;

use super::{additional, cel, int_or_string, items, preserves_unknown, validate, Schema};
use crate::apiextensions::field::FieldError;

const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// Every problem of the schema at `path` (the root: `spec.versions[N].schema.openAPIV3Schema`).
pub fn check(schema: &Schema, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if schema.type_.as_deref() != Some("object") {
        let found = schema.type_.clone().unwrap_or_default();
        errors.push(FieldError::invalid(
            &format!("{path}.type"),
            Value::from(found),
            "must be object at the root",
        ));
    }
    check_node(schema, path, "", &mut errors);
    errors
}

/// `role` says where the node sits, for the "must not be empty" wording.
fn check_node(schema: &Schema, path: &str, role: &str, errors: &mut Vec<FieldError>) {
    check_type(schema, path, role, errors);
    if let Some(pattern) = &schema.pattern {
        if let Err(e) = regex::Regex::new(pattern) {
            errors.push(FieldError::invalid(
                &format!("{path}.pattern"),
                Value::from(pattern.clone()),
                format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }
    if schema.unique_items == Some(true) {
        errors.push(FieldError::forbidden(
            &format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if schema.properties.is_some() && additional(schema).is_some() {
        errors.push(FieldError::forbidden(
            &format!("{path}.additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    if schema.type_.as_deref() == Some("array") && items(schema).is_none() {
        errors.push(FieldError::required(
            &format!("{path}.items"),
            "must be specified",
        ));
    }
    if let Some(default) = &schema.default {
        check_default(schema, &default.0, path, errors);
    }
    check_rules(schema, path, errors);
    for (name, property) in schema.properties.iter().flatten() {
        check_node(
            property,
            &format!("{path}.properties[{name}]"),
            "object fields",
            errors,
        );
    }
    if let Some(item_schema) = items(schema) {
        check_node(item_schema, &format!("{path}.items"), "array items", errors);
    }
    if let Some(values) = additional(schema) {
        check_node(
            values,
            &format!("{path}.additionalProperties"),
            "object fields",
            errors,
        );
    }
}

fn check_type(schema: &Schema, path: &str, role: &str, errors: &mut Vec<FieldError>) {
    let kind = schema.type_.as_deref().unwrap_or("");
    if kind.is_empty() {
        if !role.is_empty() && !int_or_string(schema) && !preserves_unknown(schema) {
            errors.push(FieldError::required(
                &format!("{path}.type"),
                &format!("must not be empty for specified {role}"),
            ));
        }
    } else if !TYPES.contains(&kind) {
        let supported: Vec<String> = TYPES.iter().map(|t| t.to_string()).collect();
        errors.push(FieldError::not_supported(
            &format!("{path}.type"),
            Value::from(kind),
            &supported,
        ));
    }
}

/// A default must itself be valid where it sits (upstream also requires it to survive pruning).
fn check_default(schema: &Schema, default: &Value, path: &str, errors: &mut Vec<FieldError>) {
    for error in validate::validate(schema, default, "") {
        errors.push(FieldError::invalid(
            &format!("{path}.default"),
            default.clone(),
            error.to_string().trim_start_matches(": ").to_string(),
        ));
    }
}

fn check_rules(schema: &Schema, path: &str, errors: &mut Vec<FieldError>) {
    for (i, rule) in schema.x_kubernetes_validations.iter().flatten().enumerate() {
        let rule_path = format!("{path}.x-kubernetes-validations[{i}]");
        if let Err(e) = cel::compile(&rule.rule) {
            errors.push(FieldError::invalid(
                &format!("{rule_path}.rule"),
                Value::from(rule.rule.clone()),
                format!("compilation failed: {e}"),
            ));
        }
        if let Some(expression) = &rule.message_expression {
            if let Err(e) = cel::compile(expression) {
                errors.push(FieldError::invalid(
                    &format!("{rule_path}.messageExpression"),
                    Value::from(expression.clone()),
                    format!("messageExpression compilation failed: {e}"),
                ));
            }
        }
        let reasons = [
            "FieldValueInvalid",
            "FieldValueForbidden",
            "FieldValueRequired",
            "FieldValueDuplicate",
        ];
        if let Some(reason) = rule.reason.as_deref().filter(|r| !reasons.contains(r)) {
            let supported: Vec<String> = reasons.iter().map(|r| r.to_string()).collect();
            errors.push(FieldError::not_supported(
                &format!("{rule_path}.reason"),
                Value::from(reason),
                &supported,
            ));
        }
    }
}
