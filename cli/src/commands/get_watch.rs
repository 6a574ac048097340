//! `minik get … -w`: list, print, then print every change as it arrives.
//!
//! Kubernetes counterpart: kubectl's watch path in `get.go` (`watch`): it lists, prints the table,
//! then watches from the list's resourceVersion and prints one row per event, keeping the column
//! widths of the first table (tabwriter's `RememberWidths`). A named `get pod web -w` watches with
//! `fieldSelector=metadata.name=web`. Unlike kubectl, minik resumes a watch the server ended, from
//! the last resourceVersion it saw, instead of exiting.

use anyhow::bail;
use futures::StreamExt;
use serde_json::Value;

use minik_api::{ResourceInfo, WatchEvent};
use minik_client::Client;

use super::get::{header_row, list, object_row, with_kind, GetArgs};
use super::resources::{collection_path, with_query};
use crate::output::{self, Format, Table};
use crate::printers;

/// Prints objects (and later changes) one at a time in the chosen format.
struct Printer<'a> {
    info: &'static ResourceInfo,
    args: &'a GetArgs,
    format: Format,
    table: Table,
    header_printed: bool,
}

impl Printer<'_> {
    fn print(&mut self, object: &Value) -> anyhow::Result<()> {
        match self.format {
            Format::Json => println!("{}", output::to_json(object)),
            Format::Yaml => print!("---\n{}", output::to_yaml(object)?),
            Format::Name => println!(
                "{}/{}",
                printers::kind_prefix(self.info),
                printers::name_of(object)
            ),
            Format::Table | Format::Wide => {
                let wide = self.format == Format::Wide;
                let mut rows = Vec::new();
                if !self.header_printed {
                    rows.push(header_row(self.info, self.args, wide));
                    self.header_printed = true;
                }
                rows.push(object_row(self.info, object, self.args, wide, false)?);
                print!("{}", self.table.render(&rows));
            }
        }
        Ok(())
    }
}

/// Runs `minik get -w` for one kind (all its objects, or the named ones).
pub async fn watch(
    client: &Client,
    args: &GetArgs,
    targets: &[(&'static ResourceInfo, Option<String>)],
    format: Format,
) -> anyhow::Result<()> {
    let info = targets[0].0;
    if targets.iter().any(|(other, _)| other.kind != info.kind) {
        bail!("watch is only supported on individual resources and resource collections, but {} resources were found", targets.len());
    }
    let names: Vec<&str> = targets
        .iter()
        .filter_map(|(_, name)| name.as_deref())
        .collect();
    if names.len() > 1 {
        bail!("watch is only supported on individual resources and resource collections, but {} resources were found", names.len());
    }
    let field_selector = join_selectors(
        args.field_selector.as_deref(),
        names.first().map(|name| format!("metadata.name={name}")),
    );
    let list_args = GetArgs {
        args: Vec::new(),
        output: None,
        watch: true,
        selector: args.selector.clone(),
        field_selector: field_selector.clone(),
        all_namespaces: args.all_namespaces,
        show_labels: args.show_labels,
        flags: args.flags.clone(),
    };
    let section = list(client, &list_args, info).await?;
    if let (Some(name), true) = (names.first(), section.objects.is_empty()) {
        return Err(
            minik_client::Error::Api(minik_api::status::not_found(info.plural, name)).into(),
        );
    }
    let mut printer = Printer {
        info,
        args,
        format,
        table: Table::default(),
        header_printed: false,
    };
    for object in &section.objects {
        printer.print(object)?;
    }
    let namespace = (!args.all_namespaces).then_some(args.flags.namespace.as_str());
    let mut resource_version = section.resource_version;
    loop {
        let path = with_query(
            &collection_path(info, namespace),
            &[
                ("watch", Some("true")),
                ("resourceVersion", Some(resource_version.as_str())),
                ("labelSelector", args.selector.as_deref()),
                ("fieldSelector", field_selector.as_deref()),
                ("allowWatchBookmarks", Some("true")),
            ],
        );
        let mut events = client.watch_raw::<Value>(&path).await?;
        while let Some(event) = events.next().await {
            match event? {
                WatchEvent::Added(object)
                | WatchEvent::Modified(object)
                | WatchEvent::Deleted(object) => {
                    resource_version = rv_of(&object).unwrap_or(resource_version);
                    printer.print(&with_kind(object, info))?;
                }
                WatchEvent::Bookmark(object) => {
                    resource_version = rv_of(&object).unwrap_or(resource_version)
                }
                WatchEvent::Error(status) => return Err(minik_client::Error::Api(status).into()),
            }
        }
    }
}

fn rv_of(object: &Value) -> Option<String> {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string)
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
