//! Tables of custom resources: NAME, then the CRD's `additionalPrinterColumns` (AGE by default).
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor/tableconvertor.go`
//! and `serveDefaultColumnsIfEmpty` in `pkg/apiserver/customresource_handler.go`. Each column's
//! `jsonPath` is read from the object; a `date` column shows the time since (`5m`, `2d`), other
//! types the value itself (numbers stay numbers); a missing value is `null`, which kubectl prints
//! as `<none>`. The columns' `priority` hides the ones above 0 unless `-o wide`.
//!
//! minik simplifies: the JSONPath subset is a dotted path with optional `[n]` indices, with or
//! without `{…}` (`.spec.replicas`, `.status.conditions[0].type`); no filters or wildcards.

use jiff::Timestamp;
use minik_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition;
use minik_api::printers::duration::age;
use serde_json::{json, Value};

use super::kinds::CustomKind;
use crate::table::Include;

/// The columns a version prints: its own, or AGE when it declares none.
pub fn columns(kind: &CustomKind) -> Vec<CustomResourceColumnDefinition> {
    if !kind.columns.is_empty() {
        return kind.columns.clone();
    }
    vec![CustomResourceColumnDefinition {
        name: "Age".into(),
        type_: "date".into(),
        json_path: ".metadata.creationTimestamp".into(),
        description: Some("CreationTimestamp is a timestamp representing the server time when this object was created.".into()),
        format: None,
        priority: None,
    }]
}

/// A Table of `objects`; `headers` false leaves out the column definitions (later watch events).
pub fn table(
    kind: &CustomKind,
    objects: &[&Value],
    metadata: Value,
    api_version: &str,
    include: Include,
    headers: bool,
) -> Value {
    let columns = columns(kind);
    let now = Timestamp::now();
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let mut cells = vec![object["metadata"]["name"].clone()];
            cells.extend(columns.iter().map(|column| cell(column, object, now)));
            let mut row = json!({"cells": cells});
            match include {
                Include::Object => row["object"] = (*object).clone(),
                Include::Metadata => {
                    row["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({}))})
                }
                Include::None => {}
            }
            row
        })
        .collect();
    let definitions: Vec<Value> = if headers {
        let name = json!({"name": "Name", "type": "string", "format": "name", "priority": 0,
            "description": "Name must be unique within a namespace."});
        std::iter::once(name)
            .chain(columns.iter().map(|c| {
                json!({"name": c.name, "type": c.type_, "format": c.format.clone().unwrap_or_default(),
                       "description": c.description.clone().unwrap_or_default(), "priority": c.priority.unwrap_or(0)})
            }))
            .collect()
    } else {
        Vec::new()
    };
    json!({"kind": "Table", "apiVersion": api_version, "metadata": metadata,
           "columnDefinitions": definitions, "rows": rows})
}

/// One cell: the value at the column's path, an age for `date` columns.
pub fn cell(column: &CustomResourceColumnDefinition, object: &Value, now: Timestamp) -> Value {
    let Some(value) = lookup(object, &column.json_path) else {
        return Value::Null;
    };
    match (column.type_.as_str(), value) {
        ("date", Value::String(text)) => match text.parse::<Timestamp>() {
            Ok(time) => Value::from(age(Some(time), now)),
            Err(_) => Value::from(text.clone()),
        },
        (_, Value::Null) => Value::Null,
        (_, Value::Object(_) | Value::Array(_)) => Value::from(value.to_string()),
        (_, scalar) => scalar.clone(),
    }
}

/// The value at a simple JSONPath: `.spec.replicas`, `{.status.conditions[0].type}`.
pub fn lookup<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut node = object;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let (field, indices) = match segment.find('[') {
            Some(at) => (&segment[..at], &segment[at..]),
            None => (segment, ""),
        };
        if !field.is_empty() {
            node = node.get(field)?;
        }
        for index in indices.split('[').filter(|s| !s.is_empty()) {
            let index: usize = index.trim_end_matches(']').parse().ok()?;
            node = node.get(index)?;
        }
    }
    Some(node)
}
