//! Pruning: fields the schema does not name are dropped, as upstream drops them before storing.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning/algorithm.go`
//! (`PruneWithOptions`). An object keeps the properties its schema lists, every key when
//! `additionalProperties` is a schema or `true`, and everything under
//! `x-kubernetes-preserve-unknown-fields: true` (whose listed properties are still pruned inside).
//! The root and every `x-kubernetes-embedded-resource` keep `apiVersion`, `kind` and `metadata`;
//! the root's `metadata` keeps only ObjectMeta's fields. The paths dropped are returned: they are
//! the "unknown field" warnings of `fieldValidation=Warn` and the errors of `Strict`.
//!
//! minik simplifies: an embedded resource's `metadata` is kept as sent.

use serde_json::{Map, Value};

use super::{
    additional, allows_any_key, child, embedded_resource, index, items, preserves_unknown,
    property, Schema,
};

/// The fields of ObjectMeta (what a custom resource's `metadata` may hold).
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Prunes the root object of a custom resource in place; returns the paths it dropped.
pub fn prune(schema: &Schema, value: &mut Value) -> Vec<String> {
    let mut pruned = Vec::new();
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        let unknown: Vec<String> = metadata
            .keys()
            .filter(|key| !OBJECT_META.contains(&key.as_str()))
            .cloned()
            .collect();
        for key in unknown {
            metadata.remove(&key);
            pruned.push(child("metadata", &key));
        }
    }
    prune_node(schema, value, "", true, &mut pruned);
    pruned
}

fn prune_node(
    schema: &Schema,
    value: &mut Value,
    path: &str,
    keeps_type: bool,
    pruned: &mut Vec<String>,
) {
    match value {
        Value::Object(map) => prune_object(schema, map, path, keeps_type, pruned),
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                for (i, item) in list.iter_mut().enumerate() {
                    prune_node(item_schema, item, &index(path, i), false, pruned);
                }
            }
        }
        _ => {}
    }
}

fn prune_object(
    schema: &Schema,
    map: &mut Map<String, Value>,
    path: &str,
    keeps_type: bool,
    pruned: &mut Vec<String>,
) {
    let keeps_type = keeps_type || embedded_resource(schema);
    let mut unknown = Vec::new();
    for (name, field) in map.iter_mut() {
        if keeps_type && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let field_path = child(path, name);
        match property(schema, name).or_else(|| additional(schema)) {
            Some(field_schema) => prune_node(field_schema, field, &field_path, false, pruned),
            None if preserves_unknown(schema) || allows_any_key(schema) => {}
            None => unknown.push(name.clone()),
        }
    }
    for name in unknown {
        map.remove(&name);
        pruned.push(child(path, &name));
    }
}
