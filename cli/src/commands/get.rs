//! `minik get KIND[,KIND] [NAME…] [-o wide|json|yaml|name] [-w] [-l SEL] [--field-selector SEL] [-n NS | -A]`.
//!
//! Kubernetes counterpart: `kubectl get` (`staging/src/k8s.io/kubectl/pkg/cmd/get/get.go`). It lists
//! (or reads by name) each kind, then prints kubectl's columns; with several kinds each table is
//! separated by a blank line and names are prefixed with the kind (`pod/web`). An empty answer
//! prints `No resources found in default namespace.` on stderr and exits 0; a missing name prints
//! `Error from server (NotFound): …` and exits 1 after printing what was found.
//!
//! minik simplifies: the columns are computed here from the objects (see `printers/`) rather than
//! asked of the server as a Table; no `--sort-by`, `jsonpath` or `custom-columns`.

use anyhow::bail;
use jiff::Timestamp;
use reqwest::Method;
use serde_json::Value;

use minik_api::ResourceInfo;
use minik_client::Client;

use super::get_watch;
use super::resources::{collection_path, object_path, targets, with_query, ClientFlags};
use crate::output::{self, list_of, Format, Reported, Table};
use crate::printers;

/// Flags of `minik get`.
#[derive(clap::Args, Debug)]
pub struct GetArgs {
    /// KIND[,KIND] [NAME…], or KIND/NAME…
    #[arg(required = true, value_name = "KIND [NAME]")]
    pub args: Vec<String>,
    /// Output format: wide, json, yaml or name.
    #[arg(short = 'o', long)]
    pub output: Option<String>,
    /// After listing, watch for changes and print them as they happen.
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// Label selector (`app=web`, `tier in (a,b)`, `!canary`).
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// Field selector (`spec.nodeName=node-1`, `status.phase=Running`).
    #[arg(long)]
    pub field_selector: Option<String>,
    /// List across every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Add a LABELS column.
    #[arg(long)]
    pub show_labels: bool,
    #[command(flatten)]
    pub flags: ClientFlags,
}

/// The objects of one kind that were asked for.
pub struct Section {
    pub info: &'static ResourceInfo,
    pub objects: Vec<Value>,
    /// The list's resourceVersion (where a watch resumes).
    pub resource_version: String,
}

/// Runs `minik get`.
pub async fn get(args: GetArgs) -> anyhow::Result<()> {
    let format = Format::parse(args.output.as_deref())?;
    let targets = targets(&args.args)?;
    let client = args.flags.client()?;
    if args.watch {
        return get_watch::watch(&client, &args, &targets, format).await;
    }
    let mut sections: Vec<Section> = Vec::new();
    let mut failed = false;
    for (info, name) in &targets {
        let objects = match name {
            None => list(&client, &args, info).await?.objects,
            Some(name) => match client
                .request_json(
                    Method::GET,
                    &object_path(info, &args.flags.namespace, name),
                    None,
                )
                .await
            {
                Ok(object) => vec![object],
                Err(error) if error.is_not_found() => {
                    eprintln!("{}", output::error_line(&error.into()));
                    failed = true;
                    continue;
                }
                Err(error) => return Err(error.into()),
            },
        };
        match sections
            .iter_mut()
            .find(|section| section.info.kind == info.kind)
        {
            Some(section) => section.objects.extend(objects),
            None => sections.push(Section {
                info,
                objects,
                resource_version: String::new(),
            }),
        }
    }
    let named = targets.iter().any(|(_, name)| name.is_some());
    print_sections(&sections, &args, format, named)?;
    if failed {
        return Err(Reported.into());
    }
    Ok(())
}

/// Lists one kind with the selectors of `args`, filling in each item's kind and apiVersion.
pub async fn list(
    client: &Client,
    args: &GetArgs,
    info: &'static ResourceInfo,
) -> anyhow::Result<Section> {
    let namespace = (!args.all_namespaces).then_some(args.flags.namespace.as_str());
    let path = with_query(
        &collection_path(info, namespace),
        &[
            ("labelSelector", args.selector.as_deref()),
            ("fieldSelector", args.field_selector.as_deref()),
        ],
    );
    let mut list = client.request_json(Method::GET, &path, None).await?;
    let resource_version = list
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let objects = match list.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| with_kind(item, info))
            .collect(),
        _ => Vec::new(),
    };
    Ok(Section {
        info,
        objects,
        resource_version,
    })
}

/// List items come without `kind` and `apiVersion`; `-o yaml` shows them, as kubectl does.
pub fn with_kind(mut object: Value, info: &ResourceInfo) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.entry("kind").or_insert_with(|| Value::from(info.kind));
        map.entry("apiVersion")
            .or_insert_with(|| Value::from(info.api_version));
    }
    object
}

fn print_sections(
    sections: &[Section],
    args: &GetArgs,
    format: Format,
    named: bool,
) -> anyhow::Result<()> {
    let total: usize = sections.iter().map(|s| s.objects.len()).sum();
    if total == 0 {
        if !named {
            eprintln!("{}", no_resources_message(sections, args));
        }
        return Ok(());
    }
    match format {
        Format::Json | Format::Yaml => {
            let mut items: Vec<Value> = sections
                .iter()
                .flat_map(|s| s.objects.iter().cloned())
                .collect();
            let document = if named && items.len() == 1 {
                items.remove(0)
            } else {
                list_of(items)
            };
            let text = if format == Format::Json {
                output::to_json(&document) + "\n"
            } else {
                output::to_yaml(&document)?
            };
            print!("{text}");
        }
        Format::Name => {
            for section in sections {
                for object in &section.objects {
                    println!(
                        "{}/{}",
                        printers::kind_prefix(section.info),
                        printers::name_of(object)
                    );
                }
            }
        }
        Format::Table | Format::Wide => {
            let prefix = sections.len() > 1;
            let mut first = true;
            for section in sections.iter().filter(|s| !s.objects.is_empty()) {
                if !first {
                    println!();
                }
                first = false;
                let mut table = Table::default();
                let wide = format == Format::Wide;
                let mut rows = vec![header_row(section.info, args, wide)];
                for object in &section.objects {
                    rows.push(object_row(section.info, object, args, wide, prefix)?);
                }
                print!("{}", table.render(&rows));
            }
        }
    }
    Ok(())
}

/// `No resources found in default namespace.` (or without the namespace for -A and cluster kinds).
pub fn no_resources_message(sections: &[Section], args: &GetArgs) -> String {
    let namespaced = sections.iter().any(|s| s.info.namespaced);
    if args.all_namespaces || !namespaced {
        "No resources found".to_string()
    } else {
        format!("No resources found in {} namespace.", args.flags.namespace)
    }
}

/// The header row, with NAMESPACE first for `-A` and LABELS last for `--show-labels`.
pub fn header_row(info: &ResourceInfo, args: &GetArgs, wide: bool) -> Vec<String> {
    let mut header: Vec<String> = printers::headers(info, wide);
    if args.all_namespaces && info.namespaced {
        header.insert(0, "NAMESPACE".to_string());
    }
    if args.show_labels {
        header.push("LABELS".to_string());
    }
    header
}

/// One object's row: the kind's cells, `pod/` before the name when several kinds are shown,
/// the namespace first for `-A`, the labels last for `--show-labels`.
pub fn object_row(
    info: &ResourceInfo,
    object: &Value,
    args: &GetArgs,
    wide: bool,
    prefix: bool,
) -> anyhow::Result<Vec<String>> {
    let mut row = match printers::row(info, object, wide, Timestamp::now()) {
        Ok(row) => row,
        Err(error) => bail!(
            "cannot read {} {:?}: {error}",
            info.kind,
            printers::name_of(object)
        ),
    };
    if prefix {
        if let Some(column) = printers::name_column(info) {
            row[column] = format!("{}/{}", printers::kind_prefix(info), row[column]);
        }
    }
    if args.all_namespaces && info.namespaced {
        row.insert(0, printers::namespace_of(object).to_string());
    }
    if args.show_labels {
        row.push(printers::labels_of(object));
    }
    Ok(row)
}
