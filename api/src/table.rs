//! `meta.k8s.io/v1` Table: the server-side printing format `kubectl get` asks for.
//!
//! Kubernetes counterpart: `k8s.io/apimachinery/pkg/apis/meta/v1/types.go` (`Table`,
//! `TableColumnDefinition`, `TableRow`). A client that sends
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` gets, instead of a list, the columns of
//! the kind and one row of already-formatted cells per object; it prints the cells verbatim, so
//! every client shows what the server decided (README "Tables"). k8s-openapi does not generate
//! these types (they are not part of the OpenAPI document), so minik defines them here.
//!
//! minik simplifies: rows carry no `conditions` (upstream marks completed pods with one; kubectl
//! only uses it to hide them, which it does not do by default).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::ListMeta;

/// A Table: column definitions, then one row per object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Table {
    /// `meta.k8s.io/v1` (or `v1beta1`, for old clients).
    pub api_version: String,
    /// Always `Table`.
    pub kind: String,
    /// The list's resourceVersion (where a watch resumes) and `continue` token.
    #[serde(default)]
    pub metadata: ListMeta,
    /// The columns; empty in watch events after the first one, as upstream sends them.
    #[serde(default)]
    pub column_definitions: Vec<TableColumnDefinition>,
    /// One row per object.
    #[serde(default)]
    pub rows: Vec<TableRow>,
}

/// One column (`metav1.TableColumnDefinition`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableColumnDefinition {
    /// As upstream spells it (`Nominated Node`); kubectl prints it upper-cased.
    pub name: String,
    /// The cell's OpenAPI type: `string`, `integer`, `number`, `boolean`, `date`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `name` marks the column holding the object's name.
    #[serde(default)]
    pub format: String,
    /// What the column shows.
    #[serde(default)]
    pub description: String,
    /// 0 = always shown; higher = only with `-o wide`.
    #[serde(default)]
    pub priority: i32,
}

/// One object's row (`metav1.TableRow`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableRow {
    /// One cell per column definition, already formatted.
    pub cells: Vec<Value>,
    /// The object as `includeObject` asked: `PartialObjectMetadata` by default, the whole object,
    /// or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
}

impl TableRow {
    /// A string at `pointer` in the embedded object (`/metadata/namespace`), or "".
    pub fn object_str(&self, pointer: &str) -> &str {
        self.object
            .as_ref()
            .and_then(|object| object.pointer(pointer))
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_table_round_trips_through_its_wire_form() {
        let wire = json!({
            "kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "42"},
            "columnDefinitions": [
                {"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0},
                {"name": "IP", "type": "string", "format": "", "description": "", "priority": 1}
            ],
            "rows": [{"cells": ["web", "127.244.1.7"],
                      "object": {"kind": "PartialObjectMetadata", "metadata": {"name": "web", "namespace": "default"}}}]
        });
        let table: Table = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(table.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(table.column_definitions[1].priority, 1);
        assert_eq!(table.rows[0].object_str("/metadata/namespace"), "default");
        assert_eq!(serde_json::to_value(&table).unwrap(), wire);
    }

    #[test]
    fn a_row_without_an_object_reads_as_empty() {
        let row: TableRow = serde_json::from_value(json!({"cells": ["web"]})).unwrap();
        assert_eq!(row.object_str("/metadata/name"), "");
    }
}
