//! Defaulting: every missing property with a `default` gets it, and `null` where the schema does
//! not allow it is dropped first.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting/algorithm.go`
//! (`Default`) and `prunenulls.go` (`PruneNonNullableNullsWithoutDefaults`). Upstream defaults on
//! the way in (create, update, patch) and on the way out of storage, so an object stored before a
//! default was added reads with it; minik does both (`apiextensions/strategy.rs` and
//! `apiextensions/convert.rs`). Defaults apply top-down: a defaulted object gets its own
//! properties' defaults too.
//!
//! minik simplifies: nulls inside lists are left alone; the root's `metadata` is never defaulted
//! (upstream allows defaults only for `metadata.name`/`generateName` there, rarely used).

use serde_json::Value;

use super::{additional, items, property, Schema};

/// Applies `schema`'s defaults to `value` in place (the root object of a custom resource).
pub fn apply(schema: &Schema, value: &mut Value) {
    default_node(schema, value, true);
}

fn default_node(schema: &Schema, value: &mut Value, root: bool) {
    match value {
        Value::Object(map) => {
            if let Some(properties) = &schema.properties {
                for (name, field_schema) in properties {
                    if root && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                        continue;
                    }
                    let nullable = field_schema.nullable == Some(true);
                    if map.get(name).is_some_and(Value::is_null) && !nullable {
                        map.remove(name);
                    }
                    if !map.contains_key(name) {
                        if let Some(default) = &field_schema.default {
                            map.insert(name.clone(), default.0.clone());
                        }
                    }
                }
            }
            for (name, field) in map.iter_mut() {
                if root && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(field_schema) = property(schema, name).or_else(|| additional(schema)) {
                    default_node(field_schema, field, false);
                }
            }
            if let Some(values) = additional(schema).filter(|v| v.nullable != Some(true)) {
                prune_map_nulls(schema, values, map);
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                for item in list.iter_mut() {
                    default_node(item_schema, item, false);
                }
            }
        }
        _ => {}
    }
}

/// A map's `null` values (keys outside `properties`) take the values' default, or go.
fn prune_map_nulls(schema: &Schema, values: &Schema, map: &mut serde_json::Map<String, Value>) {
    let nulls: Vec<String> = map
        .iter()
        .filter(|(name, v)| v.is_null() && property(schema, name).is_none())
        .map(|(name, _)| name.clone())
        .collect();
    for name in nulls {
        match &values.default {
            Some(default) => map.insert(name, default.0.clone()),
            None => map.remove(&name),
        };
    }
}
