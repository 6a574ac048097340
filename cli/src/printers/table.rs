//! Printing a server Table the way kubectl does.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/cli-runtime/pkg/printers/tableprinter.go`
//! (`printTable`, `printRows`, `decorateTable`). kubectl does not know how to print a pod: it asks
//! the API server for a Table and prints its cells verbatim, dropping the `priority > 0` columns
//! unless `-o wide`, and decorating the result from each row's embedded object metadata: a
//! NAMESPACE column first for `-A`, a LABELS column last for `--show-labels`, and `pod/` before the
//! name when several kinds are printed together. `minik get` does exactly that, so what it prints
//! is what the server (and therefore kubectl) says.
//!
//! minik simplifies: no `--sort-by`, `--label-columns` (`-L`) or `--no-headers`.

use minik_api::table::{Table, TableColumnDefinition, TableRow};
use serde_json::Value;

/// How to decorate the server's columns (kubectl's `PrintOptions`).
#[derive(Clone, Debug, Default)]
pub struct TableOptions {
    /// `-o wide`: keep the priority-1 columns.
    pub wide: bool,
    /// `-A` on a namespaced kind: a NAMESPACE column first.
    pub with_namespace: bool,
    /// `--show-labels`: a LABELS column last.
    pub show_labels: bool,
    /// `pod` when several kinds are printed together: the name becomes `pod/web`.
    pub kind_prefix: Option<String>,
}

impl TableOptions {
    /// The header row: the shown columns' names, upper-cased (`Nominated Node` → `NOMINATED NODE`).
    pub fn header(&self, columns: &[TableColumnDefinition]) -> Vec<String> {
        let mut header: Vec<String> = columns
            .iter()
            .filter(|column| self.shows(column))
            .map(|column| column.name.to_uppercase())
            .collect();
        if self.with_namespace {
            header.insert(0, "NAMESPACE".to_string());
        }
        if self.show_labels {
            header.push("LABELS".to_string());
        }
        header
    }

    /// One row, cell by cell under the same columns as [`TableOptions::header`].
    pub fn row(&self, columns: &[TableColumnDefinition], row: &TableRow) -> Vec<String> {
        let mut cells: Vec<String> = columns
            .iter()
            .zip(&row.cells)
            .filter(|(column, _)| self.shows(column))
            .map(
                |(column, cell)| match (&self.kind_prefix, column.format.as_str()) {
                    (Some(kind), "name") => format!("{kind}/{}", print_cell(cell)),
                    _ => print_cell(cell),
                },
            )
            .collect();
        if self.with_namespace {
            cells.insert(0, row.object_str("/metadata/namespace").to_string());
        }
        if self.show_labels {
            cells.push(labels(row));
        }
        cells
    }

    /// Whether a column is printed: priority 0 always, the others with `-o wide`.
    fn shows(&self, column: &TableColumnDefinition) -> bool {
        self.wide || column.priority == 0
    }
}

/// Every row of `tables` under the columns of the first one that has any (kubectl prints one
/// table per kind; several names of one kind give several one-row tables).
pub fn render_rows(tables: &[Table], options: &TableOptions) -> Vec<Vec<String>> {
    let Some(columns) = tables
        .iter()
        .map(|table| &table.column_definitions)
        .find(|columns| !columns.is_empty())
    else {
        return Vec::new();
    };
    let mut rows = vec![options.header(columns)];
    for table in tables {
        rows.extend(table.rows.iter().map(|row| options.row(columns, row)));
    }
    rows
}

/// A cell as kubectl prints it: strings verbatim up to the first line break (then `...`), other
/// values in their JSON form; a missing value as `<none>`.
fn print_cell(cell: &Value) -> String {
    match cell {
        Value::String(text) => match text.find(['\n', '\r', '\x0c']) {
            // tableprinter.go: "Truncate at the first newline, carriage return or formfeed".
            Some(end) => format!("{}...", &text[..end]),
            None => text.clone(),
        },
        Value::Null => "<none>".to_string(),
        other => other.to_string(),
    }
}

/// The LABELS cell from the row's embedded metadata: `app=web,tier=front` sorted by key, or `<none>`.
fn labels(row: &TableRow) -> String {
    row.object
        .as_ref()
        .map_or_else(|| "<none>".to_string(), minik_api::printers::labels_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pods_table() -> Table {
        serde_json::from_value(json!({
            "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "9"},
            "columnDefinitions": [
                {"name": "Name", "type": "string", "format": "name", "priority": 0},
                {"name": "Status", "type": "string", "priority": 0},
                {"name": "Nominated Node", "type": "string", "priority": 1}
            ],
            "rows": [{"cells": ["web", "Running", "<none>"],
                      "object": {"metadata": {"name": "web", "namespace": "team-a",
                                              "labels": {"tier": "front", "app": "web"}}}}]
        }))
        .unwrap()
    }

    #[test]
    fn wide_columns_are_hidden_unless_asked_for() {
        let table = pods_table();
        let plain = render_rows(std::slice::from_ref(&table), &TableOptions::default());
        assert_eq!(plain, [vec!["NAME", "STATUS"], vec!["web", "Running"]]);
        let wide = TableOptions {
            wide: true,
            ..Default::default()
        };
        assert_eq!(
            render_rows(&[table], &wide)[0],
            ["NAME", "STATUS", "NOMINATED NODE"]
        );
    }

    #[test]
    fn namespace_labels_and_kind_decorate_the_server_row() {
        let options = TableOptions {
            with_namespace: true,
            show_labels: true,
            kind_prefix: Some("pod".into()),
            ..Default::default()
        };
        assert_eq!(
            render_rows(&[pods_table()], &options),
            [
                vec!["NAMESPACE", "NAME", "STATUS", "LABELS"],
                vec!["team-a", "pod/web", "Running", "app=web,tier=front"]
            ]
        );
    }

    #[test]
    fn cells_print_like_kubectl() {
        assert_eq!(print_cell(&json!("two\nlines")), "two...");
        assert_eq!(print_cell(&json!(3)), "3");
        assert_eq!(print_cell(&Value::Null), "<none>");
    }

    #[test]
    fn tables_without_columns_print_nothing() {
        assert!(render_rows(&[Table::default()], &TableOptions::default()).is_empty());
    }
}
