//! Structural schemas: what a CustomResourceDefinition's `openAPIV3Schema` does to each object.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/`
//! (`structural.go`, `defaulting/`, `pruning/`, `cel/`) and the schema validator of
//! `k8s.io/kube-openapi/pkg/validation/validate`. A write of a custom resource goes, as upstream's
//! `customResourceStrategy` does it:
//!
//! 1. [`defaults::apply`]: `null` where the schema says not `nullable` is dropped, then every
//!    missing property with a `default` gets it (also on read from storage, so objects stored
//!    before a default was added show it);
//! 2. [`prune::prune`]: fields the schema does not name are dropped, unless
//!    `x-kubernetes-preserve-unknown-fields`; the dropped paths are what `fieldValidation=Strict`
//!    reports as unknown fields;
//! 3. [`validate::validate`]: types, formats, bounds, patterns, enums, required fields, with
//!    upstream's field paths (`spec.items[0].name`) and messages;
//! 4. [`cel::check`]: the `x-kubernetes-validations` rules, with `self` and, on update, `oldSelf`.
//!
//! [`structural`] checks the schema itself when a CRD is written. Every function here is pure: a
//! schema and JSON in, JSON or field errors out.
//!
//! minik simplifies: no `allOf`/`anyOf`/`oneOf`/`not` (they are accepted in the CRD and ignored
//! when validating), no list-type (`x-kubernetes-list-type: map`) correlation for `oldSelf`, no
//! CEL cost budget, and validation ratcheting is not done (an unchanged invalid field still fails).
//!
//! Read next: `validate.rs`, then `apiextensions/strategy.rs`, which runs these steps.

pub mod cel;
pub mod defaults;
pub mod prune;
pub mod structural;
pub mod validate;

#[cfg(test)]
mod tests;

use minik_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::Value;

/// One node of an `openAPIV3Schema`.
pub type Schema = JSONSchemaProps;

/// The path of a property below `path`, as upstream's field paths write it: `spec.replicas`.
pub fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// The path of the item at `index` of the list at `path`: `spec.ports[0]`.
pub fn index(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}

/// The schema of a list's items, if it has one (a list of schemas is not structural).
pub fn items(schema: &Schema) -> Option<&Schema> {
    match schema.items.as_ref()? {
        JSONSchemaPropsOrArray::Schema(items) => Some(items),
        JSONSchemaPropsOrArray::Schemas(_) => None,
    }
}

/// The schema of the values of a map (`additionalProperties: {…}`), if it has one.
pub fn additional(schema: &Schema) -> Option<&Schema> {
    match schema.additional_properties.as_ref()? {
        JSONSchemaPropsOrBool::Schema(values) => Some(values),
        JSONSchemaPropsOrBool::Bool(_) => None,
    }
}

/// Whether `additionalProperties` lets any key through (`true` or a schema).
pub fn allows_any_key(schema: &Schema) -> bool {
    matches!(
        schema.additional_properties,
        Some(JSONSchemaPropsOrBool::Bool(true)) | Some(JSONSchemaPropsOrBool::Schema(_))
    )
}

/// The property `name` of an object schema.
pub fn property<'a>(schema: &'a Schema, name: &str) -> Option<&'a Schema> {
    schema.properties.as_ref()?.get(name)
}

/// `x-kubernetes-preserve-unknown-fields: true`.
pub fn preserves_unknown(schema: &Schema) -> bool {
    schema.x_kubernetes_preserve_unknown_fields == Some(true)
}

/// `x-kubernetes-embedded-resource: true`: an object with its own apiVersion, kind and metadata.
pub fn embedded_resource(schema: &Schema) -> bool {
    schema.x_kubernetes_embedded_resource == Some(true)
}

/// `x-kubernetes-int-or-string: true`: an integer or a string, such as a port.
pub fn int_or_string(schema: &Schema) -> bool {
    schema.x_kubernetes_int_or_string == Some(true)
}

/// The JSON type of a value as OpenAPI names it (`integer` for whole numbers).
pub fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The type a schema node declares, as CEL error messages name it (`object` when unset).
pub fn declared_type(schema: &Schema) -> &str {
    match schema.type_.as_deref() {
        Some(kind) if !kind.is_empty() => kind,
        _ if int_or_string(schema) => "integer-or-string",
        _ => "object",
    }
}
