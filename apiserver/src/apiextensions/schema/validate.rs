//! Validation of a custom resource against its structural schema, with upstream's paths and words.
//!
//! Kubernetes counterpart: kube-openapi's `pkg/validation/validate` (`type.go`, `object_validator.go`,
//! `slice_validator.go`, the string, number and enum validators) and
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/validation/validation.go`
//! (`kubeOpenAPIResultToFieldErrors`), which turns each failure into a `field.Error`. So a missing
//! field reads `spec.cronSpec: Required value`, a bound
//! `spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`, a
//! wrong type `spec.replicas: Invalid value: "string": spec.replicas in body must be of type
//! integer: "string"`.
//!
//! minik simplifies: `uniqueItems`, `allOf`/`anyOf`/`oneOf`/`not` and `patternProperties` are not
//! checked (structural schemas forbid most of them); `format` is checked for the string formats
//! listed in [`format_ok`] (upstream, like minik, does not range-check `int32`/`int64`).

use serde_json::Value;

use super::{additional, child, index, int_or_string, items, type_of, Schema};
use crate::apiextensions::field::FieldError;

/// Every way `value` (at `path`) breaks `schema`. The root's `apiVersion`, `kind` and `metadata`
/// are checked elsewhere (ObjectMeta validation), as upstream does.
pub fn validate(schema: &Schema, value: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    check(schema, value, path, &mut errors);
    errors
}

fn check(schema: &Schema, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    if !type_ok(schema, value, path, errors) {
        return;
    }
    match value {
        Value::String(text) => check_string(schema, text, path, errors),
        Value::Number(number) => check_number(schema, number, value, path, errors),
        Value::Array(list) => check_array(schema, list, path, errors),
        Value::Object(map) => check_object(schema, map, path, errors),
        _ => {}
    }
    check_enum(schema, value, path, errors);
}

/// The type check, first in upstream's validator chain: a mismatch stops the node's other checks.
fn type_ok(schema: &Schema, value: &Value, path: &str, errors: &mut Vec<FieldError>) -> bool {
    let found = type_of(value);
    let expected: &str = if int_or_string(schema) {
        "integer,string"
    } else {
        match schema.type_.as_deref() {
            Some(kind) if !kind.is_empty() => kind,
            // No type: x-kubernetes-preserve-unknown-fields (anything goes).
            _ => return true,
        }
    };
    let fits = match found {
        "null" => schema.nullable == Some(true),
        // A whole number is an integer, and also a valid `number`.
        "integer" => expected.split(',').any(|t| t == "integer" || t == "number"),
        "number" => expected == "number" || (expected.contains("integer") && whole(value)),
        other => expected.split(',').any(|t| t == other),
    };
    if !fits {
        let detail = format!("{path} in body must be of type {expected}: \"{found}\"");
        errors.push(FieldError::type_invalid(path, Value::from(found), detail));
    }
    fits
}

/// `1.0` decodes as a float; upstream accepts it where an integer is expected.
fn whole(value: &Value) -> bool {
    value.as_f64().is_some_and(|f| f.fract() == 0.0)
}

fn check_string(schema: &Schema, text: &str, path: &str, errors: &mut Vec<FieldError>) {
    let length = text.chars().count() as i64;
    let bad = || Value::String(text.to_string());
    if let Some(max) = schema.max_length.filter(|max| length > *max) {
        errors.push(FieldError::too_long(path, bad(), max));
    }
    if let Some(min) = schema.min_length.filter(|min| length < *min) {
        let detail = format!("{path} in body should be at least {min} chars long");
        errors.push(FieldError::invalid(path, bad(), detail));
    }
    if let Some(pattern) = &schema.pattern {
        // An unparsable pattern was refused when the CRD was written.
        if regex::Regex::new(pattern).is_ok_and(|re| !re.is_match(text)) {
            let detail = format!("{path} in body should match '{pattern}'");
            errors.push(FieldError::invalid(path, bad(), detail));
        }
    }
    if let Some(format) = schema.format.as_deref() {
        if !format_ok(format, text) {
            let detail = format!("{path} in body must be of type {format}: \"{text}\"");
            errors.push(FieldError::type_invalid(path, bad(), detail));
        }
    }
}

/// The string formats minik checks (a subset of kube-openapi's `strfmt` registry); any other
/// format name passes, as an unknown format does upstream.
pub fn format_ok(format: &str, text: &str) -> bool {
    match format {
        "date-time" | "datetime" => text.parse::<jiff::Timestamp>().is_ok(),
        "date" => text.len() == 10 && text.parse::<jiff::civil::Date>().is_ok(),
        "uuid" | "uuid4" | "uuid3" | "uuid5" => uuid::Uuid::parse_str(text).is_ok(),
        "byte" => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .is_ok()
        }
        "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => cidr_ok(text),
        "hostname" => hostname_ok(text),
        "email" => text
            .split_once('@')
            .is_some_and(|(user, host)| !user.is_empty() && hostname_ok(host)),
        "duration" => humantime::parse_duration(text).is_ok(),
        _ => true,
    }
}

fn cidr_ok(text: &str) -> bool {
    let Some((address, bits)) = text.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => bits <= 32,
        Ok(std::net::IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// RFC 1123 host names: dot-separated labels of letters, digits and inner dashes.
fn hostname_ok(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn check_number(
    schema: &Schema,
    number: &serde_json::Number,
    value: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(n) = number.as_f64() else { return };
    if let Some(max) = schema.maximum {
        let exclusive = schema.exclusive_maximum == Some(true);
        if n > max || (exclusive && n == max) {
            let than = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            let detail = format!("{path} in body should be {than} {}", go_number(max));
            errors.push(FieldError::invalid(path, value.clone(), detail));
        }
    }
    if let Some(min) = schema.minimum {
        let exclusive = schema.exclusive_minimum == Some(true);
        if n < min || (exclusive && n == min) {
            let than = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let detail = format!("{path} in body should be {than} {}", go_number(min));
            errors.push(FieldError::invalid(path, value.clone(), detail));
        }
    }
    if let Some(factor) = schema.multiple_of.filter(|f| *f > 0.0) {
        if (n / factor).fract() != 0.0 {
            let detail = format!(
                "{path} in body should be a multiple of {}",
                go_number(factor)
            );
            errors.push(FieldError::invalid(path, value.clone(), detail));
        }
    }
}

/// A bound as Go's `%v` prints a float64: `10`, `1.5`.
pub fn go_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

fn check_array(schema: &Schema, list: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    if let Some(item_schema) = items(schema) {
        for (i, item) in list.iter().enumerate() {
            check(item_schema, item, &index(path, i), errors);
        }
    }
    let size = list.len() as i64;
    if let Some(min) = schema.min_items.filter(|min| size < *min) {
        let detail = format!("{path} in body should have at least {min} items");
        errors.push(FieldError::invalid(path, Value::from(size), detail));
    }
    if let Some(max) = schema.max_items.filter(|max| size > *max) {
        errors.push(FieldError::too_many(path, size, max));
    }
}

fn check_object(
    schema: &Schema,
    map: &serde_json::Map<String, Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let count = map.len() as i64;
    if let Some(max) = schema.max_properties.filter(|max| count > *max) {
        errors.push(FieldError::too_many(path, count, max));
    }
    if let Some(min) = schema.min_properties.filter(|min| count < *min) {
        let detail = format!("{path} in body should have at least {min} properties");
        errors.push(FieldError::invalid(path, Value::from(count), detail));
    }
    let root = path.is_empty();
    for (name, field) in map {
        // The root's type and object metadata are the API machinery's, not the schema's.
        if root && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(field_schema) = super::property(schema, name).or_else(|| additional(schema)) {
            check(field_schema, field, &child(path, name), errors);
        }
    }
    for name in schema.required.iter().flatten() {
        if !map.contains_key(name) {
            errors.push(FieldError::required(&child(path, name), ""));
        }
    }
    if super::embedded_resource(schema) {
        for name in ["apiVersion", "kind"] {
            let given = map.get(name).and_then(Value::as_str).unwrap_or("");
            if given.is_empty() {
                errors.push(FieldError::required(
                    &child(path, name),
                    "must not be empty",
                ));
            }
        }
    }
}

fn check_enum(schema: &Schema, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let Some(allowed) = schema.enum_.as_ref().filter(|e| !e.is_empty()) else {
        return;
    };
    if allowed.iter().any(|json| &json.0 == value) {
        return;
    }
    let values: Vec<String> = allowed
        .iter()
        .map(|json| match &json.0 {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    errors.push(FieldError::not_supported(path, value.clone(), &values));
}
