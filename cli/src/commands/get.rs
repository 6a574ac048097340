//! `minik get KIND[,KIND] [NAME…] [-o wide|json|yaml|name] [-w] [-l SEL] [--field-selector SEL] [-n NS | -A]`.
//!
//! Kubernetes counterpart: `kubectl get` (`staging/src/k8s.io/kubectl/pkg/cmd/get/get.go`). It lists
//! (or reads by name) each kind, then prints kubectl's columns; with several kinds each table is
//! separated by a blank line and names are prefixed with the kind (`pod/web`). An empty answer
//! prints `No resources found in default namespace.` on stderr and exits 0; a missing name prints
//! `Error from server (NotFound): …` and exits 1 after printing what was found.
//!
//! The table is the server's: `get` sends kubectl's `Accept: application/json;as=Table;v=v1;
//! g=meta.k8s.io` and prints the Table's cells (see `printers/table.rs`), so `minik get` and
//! `kubectl get` print the same thing. `-o json|yaml|name` read the plain objects.
//!
//! minik simplifies: no `--sort-by`, `jsonpath` or `custom-columns`.

use reqwest::Method;
use serde_json::Value;

use minik_api::table::Table;
use minik_api::ResourceInfo;
use minik_client::Client;

use super::get_watch;
use super::resources::{collection_path, object_path, targets, with_query, GlobalFlags};
use crate::output::{self, list_of, Format, Reported, TabWriter};
use crate::printers;
use crate::printers::table::{render_rows, TableOptions};

/// Flags of `minik get` (`-o`, `-n` and `--server` are global: `resources::GlobalFlags`).
#[derive(clap::Args, Debug)]
pub struct GetArgs {
    /// KIND[,KIND] [NAME…], or KIND/NAME…
    #[arg(required = true, value_name = "KIND [NAME]")]
    pub args: Vec<String>,
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
}

/// What was found of one kind: the objects (`-o json|yaml|name`), or the server's Tables.
pub enum Found {
    /// Plain objects, with their kind and apiVersion filled in.
    Objects(Vec<Value>),
    /// One Table per request (a list, or one named object).
    Tables(Vec<Table>),
}

impl Found {
    fn len(&self) -> usize {
        match self {
            Found::Objects(objects) => objects.len(),
            Found::Tables(tables) => tables.iter().map(|t| t.rows.len()).sum(),
        }
    }

    fn extend(&mut self, other: Found) {
        match (self, other) {
            (Found::Objects(mine), Found::Objects(more)) => mine.extend(more),
            (Found::Tables(mine), Found::Tables(more)) => mine.extend(more),
            // One `get` asks for one format, so both sides are of the same variant.
            _ => {}
        }
    }
}

/// What was found of one kind.
pub struct Section {
    pub info: &'static ResourceInfo,
    pub found: Found,
}

/// Runs `minik get`.
pub async fn get(args: GetArgs, flags: &GlobalFlags) -> anyhow::Result<()> {
    let format = Format::parse(flags.output.as_deref())?;
    let client = flags.client()?;
    super::discovered::learn_unknown_kinds(&client, &args.args).await;
    let targets = targets(&args.args)?;
    if args.watch {
        return get_watch::watch(&client, &args, flags.namespace(), &targets, format).await;
    }
    let as_table = matches!(format, Format::Table | Format::Wide);
    let mut sections: Vec<Section> = Vec::new();
    let mut failed = false;
    for (info, name) in &targets {
        let found = match fetch(
            &client,
            &args,
            flags.namespace(),
            info,
            name.as_deref(),
            as_table,
        )
        .await
        {
            Ok(found) => found,
            Err(error) if name.is_some() && error.is_not_found() => {
                eprintln!("{}", output::error_line(&error.into()));
                failed = true;
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        match sections
            .iter_mut()
            .find(|section| section.info.kind == info.kind)
        {
            Some(section) => section.found.extend(found),
            None => sections.push(Section { info, found }),
        }
    }
    let named = targets.iter().any(|(_, name)| name.is_some());
    print_sections(&sections, &args, flags.namespace(), format, named)?;
    if failed {
        return Err(Reported.into());
    }
    Ok(())
}

/// Reads one object (`name`) or lists a kind, as a Table when printing one (kubectl's `Accept`).
async fn fetch(
    client: &Client,
    args: &GetArgs,
    namespace: &str,
    info: &'static ResourceInfo,
    name: Option<&str>,
    as_table: bool,
) -> minik_client::Result<Found> {
    let path = match name {
        Some(name) => object_path(info, namespace, name),
        None => list_path(args, namespace, info, args.field_selector.as_deref()),
    };
    if as_table {
        return Ok(Found::Tables(vec![client.get_table(&path).await?]));
    }
    let answer = client.request_json(Method::GET, &path, None).await?;
    Ok(Found::Objects(match name {
        Some(_) => vec![answer],
        None => items_of(answer, info),
    }))
}

/// The collection path with the namespace (or `-A`) and the selectors of `args` (`field_selector` may add the
/// name of a watched object to the user's).
pub fn list_path(
    args: &GetArgs,
    namespace: &str,
    info: &ResourceInfo,
    field_selector: Option<&str>,
) -> String {
    let namespace = (!args.all_namespaces).then_some(namespace);
    with_query(
        &collection_path(info, namespace),
        &[
            ("labelSelector", args.selector.as_deref()),
            ("fieldSelector", field_selector),
        ],
    )
}

/// A list's items, each with its kind and apiVersion filled in.
pub fn items_of(mut list: Value, info: &ResourceInfo) -> Vec<Value> {
    match list.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| with_kind(item, info))
            .collect(),
        _ => Vec::new(),
    }
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
    namespace: &str,
    format: Format,
    named: bool,
) -> anyhow::Result<()> {
    let total: usize = sections.iter().map(|s| s.found.len()).sum();
    if total == 0 {
        if !named {
            eprintln!("{}", no_resources_message(sections, args, namespace));
        }
        return Ok(());
    }
    let prefix = sections.len() > 1;
    let mut first = true;
    let mut documents: Vec<Value> = Vec::new();
    for section in sections.iter().filter(|s| s.found.len() > 0) {
        match &section.found {
            Found::Tables(tables) => {
                if !first {
                    println!();
                }
                first = false;
                let options = table_options(section.info, args, format, prefix);
                print!(
                    "{}",
                    TabWriter::default().render(&render_rows(tables, &options))
                );
            }
            Found::Objects(objects) if format == Format::Name => {
                for object in objects {
                    let kind = printers::kind_prefix(section.info);
                    println!("{kind}/{}", printers::name_of(object));
                }
            }
            Found::Objects(objects) => documents.extend(objects.iter().cloned()),
        }
    }
    if matches!(format, Format::Json | Format::Yaml) {
        let document = if named && documents.len() == 1 {
            documents.remove(0)
        } else {
            list_of(documents)
        };
        let text = if format == Format::Json {
            output::to_json(&document) + "\n"
        } else {
            output::to_yaml(&document)?
        };
        print!("{text}");
    }
    Ok(())
}

/// `No resources found in default namespace.` (or without the namespace for -A and cluster kinds).
pub fn no_resources_message(sections: &[Section], args: &GetArgs, namespace: &str) -> String {
    let namespaced = sections.iter().any(|s| s.info.namespaced);
    if args.all_namespaces || !namespaced {
        "No resources found".to_string()
    } else {
        format!("No resources found in {namespace} namespace.")
    }
}

/// How to decorate a kind's server Table: wide columns, NAMESPACE for `-A`, LABELS for
/// `--show-labels`, `pod/` before names when several kinds are printed.
pub fn table_options(
    info: &ResourceInfo,
    args: &GetArgs,
    format: Format,
    prefix: bool,
) -> TableOptions {
    TableOptions {
        wide: format == Format::Wide,
        with_namespace: args.all_namespaces && info.namespaced,
        show_labels: args.show_labels,
        kind_prefix: prefix.then(|| printers::kind_prefix(info)),
    }
}
