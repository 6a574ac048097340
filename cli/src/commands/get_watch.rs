//! `minik get … -w`: list, print, then print every change as it arrives.
//!
//! Kubernetes counterpart: kubectl's watch path in `get.go` (`watch`): it lists, prints the table,
//! then watches from the list's resourceVersion and prints one row per event, keeping the column
//! widths of the first table (tabwriter's `RememberWidths`). A named `get pod web -w` watches with
//! `fieldSelector=metadata.name=web`. Unlike kubectl, minik resumes a watch the server ended, from
//! the last resourceVersion it saw, instead of exiting — also when the apiserver went away for a
//! while (a restart), retrying with a doubling wait up to 5 s; a version the server no longer has
//! (410) makes it list again and go on from there, as an informer does.

use anyhow::bail;
use futures::StreamExt;
use serde_json::Value;

use minik_api::table::{Table, TableColumnDefinition};
use minik_api::{ResourceInfo, WatchEvent};
use minik_client::Client;

use super::get::{items_of, list_path, table_options, with_kind, GetArgs};
use super::resources::with_query;
use crate::output::{self, Format, TabWriter};
use crate::printers;
use crate::printers::table::TableOptions;

/// Prints objects (and later changes) one at a time in the chosen format.
struct Printer {
    info: &'static ResourceInfo,
    format: Format,
    /// The server Table's columns (from the list, or the first event that carries them).
    columns: Vec<TableColumnDefinition>,
    options: TableOptions,
    writer: TabWriter,
    header_printed: bool,
}

impl Printer {
    /// Prints a plain object (`-o json|yaml|name`).
    fn print_object(&mut self, object: &Value) -> anyhow::Result<()> {
        match self.format {
            Format::Yaml => print!("---\n{}", output::to_yaml(object)?),
            Format::Name => println!(
                "{}/{}",
                printers::kind_prefix(self.info),
                printers::name_of(object)
            ),
            _ => println!("{}", output::to_json(object)),
        }
        Ok(())
    }

    /// Prints the rows of a server Table, the header first the first time.
    fn print_table(&mut self, table: &Table) {
        if self.columns.is_empty() {
            self.columns = table.column_definitions.clone();
        }
        if table.rows.is_empty() || self.columns.is_empty() {
            return;
        }
        let mut rows = Vec::new();
        if !self.header_printed {
            rows.push(self.options.header(&self.columns));
            self.header_printed = true;
        }
        rows.extend(
            table
                .rows
                .iter()
                .map(|row| self.options.row(&self.columns, row)),
        );
        print!("{}", self.writer.render(&rows));
    }

    fn as_table(&self) -> bool {
        matches!(self.format, Format::Table | Format::Wide)
    }
}

/// Runs `minik get -w` for one kind (all its objects, or the named ones).
pub async fn watch(
    client: &Client,
    args: &GetArgs,
    namespace: &str,
    targets: &[(&'static ResourceInfo, Option<String>)],
    format: Format,
) -> anyhow::Result<()> {
    let info = targets[0].0;
    let names: Vec<&str> = targets
        .iter()
        .filter_map(|(_, name)| name.as_deref())
        .collect();
    if targets.iter().any(|(other, _)| other.kind != info.kind) || names.len() > 1 {
        bail!("watch is only supported on individual resources and resource collections, but {} resources were found", targets.len());
    }
    let field_selector = join_selectors(
        args.field_selector.as_deref(),
        names.first().map(|name| format!("metadata.name={name}")),
    );
    let mut printer = Printer {
        info,
        format,
        columns: Vec::new(),
        options: table_options(info, args, format, false),
        writer: TabWriter::default(),
        header_printed: false,
    };
    let list = list_path(args, namespace, info, field_selector.as_deref());
    let (found, mut resource_version) = list_and_print(client, &list, &mut printer).await?;
    if let (Some(name), 0) = (names.first(), found) {
        return Err(
            minik_client::Error::Api(minik_api::status::not_found(info.plural, name)).into(),
        );
    }
    let mut backoff = RECONNECT_FIRST;
    loop {
        let watch_path = with_query(
            &list,
            &[
                ("watch", Some("true")),
                ("resourceVersion", Some(resource_version.as_str())),
                ("allowWatchBookmarks", Some("true")),
            ],
        );
        let followed = if printer.as_table() {
            follow_tables(client, &watch_path, &mut printer, &mut resource_version).await
        } else {
            follow_objects(client, &watch_path, &mut printer, &mut resource_version).await
        };
        match followed {
            // The server ended the watch (its timeout): resume from the last version seen.
            Ok(()) => backoff = RECONNECT_FIRST,
            // The apiserver is away (restarting): resume from the same version once it answers,
            // as client-go's RetryWatcher does; a 410 or another Status still ends the command.
            Err(error) if is_transport(&error) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(RECONNECT_MAX);
            }
            // The version is too old for the server (a restarted apiserver's history starts
            // later): list again and go on from the new list, as an informer relists.
            Err(error) if is_expired(&error) => {
                resource_version = list_and_print(client, &list, &mut printer).await?.1;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Lists the objects and prints them; returns how many and the list's resourceVersion.
async fn list_and_print(
    client: &Client,
    path: &str,
    printer: &mut Printer,
) -> anyhow::Result<(usize, String)> {
    if printer.as_table() {
        let table = client.get_table(path).await?;
        printer.print_table(&table);
        return Ok((table.rows.len(), rv_of_table(&table).unwrap_or_default()));
    }
    let list = client
        .request_json(reqwest::Method::GET, path, None)
        .await?;
    let resource_version = rv_of(&list).unwrap_or_default();
    let objects = items_of(list, printer.info);
    for object in &objects {
        printer.print_object(object)?;
    }
    Ok((objects.len(), resource_version))
}

/// A 410 Gone: the watch's version is older than the server's history.
fn is_expired(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<minik_client::Error>()
        .and_then(|e| e.status())
        .is_some_and(|status| status.code == Some(410))
}

/// The first wait before reconnecting a watch the apiserver dropped.
const RECONNECT_FIRST: std::time::Duration = std::time::Duration::from_millis(200);
/// The longest wait between reconnection attempts.
const RECONNECT_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// A failure to reach the apiserver (refused, reset), not an answer from it.
fn is_transport(error: &anyhow::Error) -> bool {
    matches!(
        error.downcast_ref::<minik_client::Error>(),
        Some(minik_client::Error::Http(_))
    )
}

/// Prints every event of one watch as plain objects, keeping the last resourceVersion seen.
async fn follow_objects(
    client: &Client,
    path: &str,
    printer: &mut Printer,
    resource_version: &mut String,
) -> anyhow::Result<()> {
    let mut events = client.watch_raw::<Value>(path).await?;
    while let Some(event) = events.next().await {
        match event? {
            WatchEvent::Added(object)
            | WatchEvent::Modified(object)
            | WatchEvent::Deleted(object) => {
                if let Some(rv) = rv_of(&object) {
                    *resource_version = rv;
                }
                printer.print_object(&with_kind(object, printer.info))?;
            }
            WatchEvent::Bookmark(object) => {
                if let Some(rv) = rv_of(&object) {
                    *resource_version = rv;
                }
            }
            WatchEvent::Error(status) => return Err(minik_client::Error::Api(status).into()),
        }
    }
    Ok(())
}

/// Prints every event of one watch as server Table rows, keeping the last resourceVersion seen.
async fn follow_tables(
    client: &Client,
    path: &str,
    printer: &mut Printer,
    resource_version: &mut String,
) -> anyhow::Result<()> {
    let mut events = client.watch_tables(path).await?;
    while let Some(event) = events.next().await {
        match event? {
            WatchEvent::Added(table) | WatchEvent::Modified(table) | WatchEvent::Deleted(table) => {
                if let Some(rv) = rv_of_table(&table) {
                    *resource_version = rv;
                }
                printer.print_table(&table);
            }
            WatchEvent::Bookmark(table) => {
                if let Some(rv) = rv_of_table(&table) {
                    *resource_version = rv;
                }
            }
            WatchEvent::Error(status) => return Err(minik_client::Error::Api(status).into()),
        }
    }
    Ok(())
}

fn rv_of(object: &Value) -> Option<String> {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn rv_of_table(table: &Table) -> Option<String> {
    table.metadata.resource_version.clone()
}

/// `a=b` and `metadata.name=web` → `a=b,metadata.name=web` (a comma means AND).
fn join_selectors(user: Option<&str>, name: Option<String>) -> Option<String> {
    let parts: Vec<String> = user
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .into_iter()
        .chain(name)
        .collect();
    (!parts.is_empty()).then(|| parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_watch_adds_a_name_field_selector() {
        assert_eq!(
            join_selectors(None, Some("metadata.name=web".into())).as_deref(),
            Some("metadata.name=web")
        );
        assert_eq!(
            join_selectors(Some("spec.nodeName=n1"), Some("metadata.name=web".into())).as_deref(),
            Some("spec.nodeName=n1,metadata.name=web")
        );
        assert_eq!(join_selectors(None, None), None);
    }
}
