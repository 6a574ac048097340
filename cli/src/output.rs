//! Output: kubectl's table layout, `-o json|yaml|name`, and kubectl's one-line error messages.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/cli-runtime/pkg/printers/{tabwriter.go,json.go,yaml.go,name.go}`
//! and kubectl's `cmdutil.CheckErr` (`staging/src/k8s.io/kubectl/pkg/cmd/util/helpers.go`), which
//! turns an API `Status` into `Error from server (NotFound): pods "x" not found`.
//!
//! The table is Go's `tabwriter` as kubectl configures it (minwidth 6, padding 3, `RememberWidths`):
//! a column is as wide as its widest cell plus 3, at least 6; the last column is not padded; and
//! widths only grow, so rows printed later by `get -w` stay aligned with the first table.

use std::fmt::Write as _;

use anyhow::anyhow;
use serde::Serialize;
use serde_json::Value;

/// Go tabwriter's minwidth and padding as kubectl sets them.
const MIN_WIDTH: usize = 6;
const PADDING: usize = 3;

/// An aligned table whose column widths are remembered between renders (for watch output).
#[derive(Debug, Default)]
pub struct TabWriter {
    widths: Vec<usize>,
}

impl TabWriter {
    /// Renders rows (the header is just the first row), growing the remembered widths.
    pub fn render(&mut self, rows: &[Vec<String>]) -> String {
        for row in rows {
            for (column, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
                let width = (cell.chars().count() + PADDING).max(MIN_WIDTH);
                if self.widths.len() <= column {
                    self.widths.resize(column + 1, 0);
                }
                self.widths[column] = self.widths[column].max(width);
            }
        }
        let mut out = String::new();
        for row in rows {
            for (column, cell) in row.iter().enumerate() {
                if column + 1 == row.len() {
                    out.push_str(cell);
                } else {
                    let _ = write!(out, "{cell:<width$}", width = self.widths[column]);
                }
            }
            out.push('\n');
        }
        out
    }
}

/// The `-o` formats minik prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The default table.
    Table,
    /// The table with the priority-1 columns.
    Wide,
    /// The objects as JSON (a `List` when there are several).
    Json,
    /// The objects as YAML.
    Yaml,
    /// `pod/web`, one per line.
    Name,
}

impl Format {
    /// Parses `-o`; the error names the formats minik knows, as kubectl does.
    pub fn parse(text: Option<&str>) -> anyhow::Result<Format> {
        match text {
            None | Some("") => Ok(Format::Table),
            Some("wide") => Ok(Format::Wide),
            Some("json") => Ok(Format::Json),
            Some("yaml") => Ok(Format::Yaml),
            Some("name") => Ok(Format::Name),
            Some(other) => Err(anyhow!(
                "unable to match a printer suitable for the output format \"{other}\", allowed formats are: json,name,wide,yaml"
            )),
        }
    }
}

/// JSON with 4-space indentation, as kubectl prints it.
pub fn to_json(value: &Value) -> String {
    let mut buffer = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut buffer, formatter);
    // Serializing a `Value` into memory cannot fail.
    let _ = value.serialize(&mut serializer);
    String::from_utf8_lossy(&buffer).into_owned()
}

/// YAML, as `-o yaml` prints it.
pub fn to_yaml(value: &Value) -> anyhow::Result<String> {
    Ok(serde_saphyr::to_string(value)?)
}

/// Several objects the way kubectl wraps them: `{"apiVersion":"v1","kind":"List","items":[…]}`.
pub fn list_of(items: Vec<Value>) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}})
}

/// The command already printed its errors on stderr; only the exit code (1) remains to be set.
#[derive(Debug)]
pub struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("errors were reported above")
    }
}

impl std::error::Error for Reported {}

/// A usage error as kubectl prints one: the error, then where to read the usage
/// (`error: unexpected argument '--bogus' found` / `See 'minik get --help' for usage.`).
pub fn usage_error(error: &clap::Error, args: &[String]) -> String {
    let rendered = error.render().to_string();
    let mut lines = rendered.lines().filter(|line| !line.trim().is_empty());
    let mut first = lines
        .next()
        .unwrap_or("error: invalid arguments")
        .to_string();
    if first.ends_with(':') {
        // `the following required arguments were not provided:` names them on the next line.
        first = format!("{first} {}", lines.next().unwrap_or("").trim());
    }
    let subcommand = args.get(1).filter(|arg| !arg.starts_with('-'));
    match subcommand {
        Some(subcommand) if !first.contains("unrecognized subcommand") => {
            format!("{first}\nSee 'minik {subcommand} --help' for usage.")
        }
        _ => format!("{first}\nSee 'minik --help' for usage."),
    }
}

/// The one line kubectl prints on stderr for a failed command.
pub fn error_line(error: &anyhow::Error) -> String {
    let mut context = Vec::new();
    for cause in error.chain() {
        if let Some(client_error) = cause.downcast_ref::<minik_client::Error>() {
            return client_error_line(client_error, &context);
        }
        context.push(cause.to_string());
    }
    format!("error: {}", context.join(": "))
}

/// A `minik-lab` error as the chain [`error_line`] reads: its contexts outermost first, and an
/// API client error as itself, so `minik demo` and `minik bench` report a refused connection or an
/// API Status the way every other verb does.
pub fn from_lab(error: minik_lab::Error) -> anyhow::Error {
    match error {
        minik_lab::Error::Context { context, inner } => from_lab(*inner).context(context),
        minik_lab::Error::Client(client) => anyhow::Error::new(*client),
        other => anyhow::Error::new(other),
    }
}

fn client_error_line(error: &minik_client::Error, context: &[String]) -> String {
    match error {
        minik_client::Error::Api(status) => {
            let message = status.message.clone().unwrap_or_default();
            let reason = status
                .reason
                .clone()
                .unwrap_or_else(|| "Unknown".to_string());
            if reason == "Invalid" {
                return format!("The {message}");
            }
            let mut parts = context.to_vec();
            parts.push(message);
            format!("Error from server ({reason}): {}", parts.join(": "))
        }
        minik_client::Error::Http(http) if http.is_connect() => {
            let address = http.url().map(|url| {
                format!(
                    "{}:{}",
                    url.host_str().unwrap_or(""),
                    url.port_or_known_default().unwrap_or(80)
                )
            });
            format!(
                "The connection to the server {} was refused - did you specify the right host or port?",
                address.unwrap_or_else(|| "(unknown)".to_string())
            )
        }
        minik_client::Error::Http(http) => format!("Unable to connect to the server: {http}"),
        other => format!("error: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(row: &[&str]) -> Vec<String> {
        row.iter().map(|cell| cell.to_string()).collect()
    }

    #[test]
    fn table_pads_columns_by_three_with_a_minimum_of_six_and_leaves_the_last_alone() {
        let mut table = TabWriter::default();
        let text = table.render(&[
            cells(&["NAME", "READY", "AGE"]),
            cells(&["web", "1/1", "5m"]),
        ]);
        assert_eq!(text, "NAME   READY   AGE\nweb    1/1     5m\n");
        // Widths are remembered: a later, longer row widens, a shorter one keeps alignment.
        assert_eq!(
            table.render(&[cells(&["a", "0/1", "1s"])]),
            "a      0/1     1s\n"
        );
    }

    #[test]
    fn api_errors_read_as_kubectl_prints_them() {
        let not_found = anyhow::Error::new(minik_client::Error::Api(minik_api::status::not_found(
            "pods", "x",
        )));
        assert_eq!(
            error_line(&not_found),
            "Error from server (NotFound): pods \"x\" not found"
        );
        let exists = anyhow::Error::new(minik_client::Error::Api(
            minik_api::status::already_exists("pods", "web"),
        ))
        .context("error when creating \"pod.yaml\"");
        assert_eq!(error_line(&exists), "Error from server (AlreadyExists): error when creating \"pod.yaml\": pods \"web\" already exists");
        let causes = vec![minik_api::status::cause(
            "spec.containers[0].image",
            "FieldValueRequired",
            "Required value",
        )];
        let invalid = anyhow::Error::new(minik_client::Error::Api(minik_api::status::invalid(
            "Pod", "web", causes,
        )));
        assert_eq!(
            error_line(&invalid),
            "The Pod \"web\" is invalid: spec.containers[0].image: Required value"
        );
        assert_eq!(error_line(&anyhow!("boom")), "error: boom");
    }

    #[test]
    fn usage_errors_are_one_line_and_a_pointer_to_help() {
        use clap::Parser;
        #[derive(clap::Parser, Debug)]
        struct Cli {
            #[arg(long)]
            count: u32,
        }
        let args = vec!["minik".to_string(), "get".to_string()];
        let error = Cli::try_parse_from(["minik", "--count", "x"]).unwrap_err();
        assert_eq!(
            usage_error(&error, &args),
            "error: invalid value 'x' for '--count <COUNT>': invalid digit found in string\nSee 'minik get --help' for usage."
        );
        let missing = Cli::try_parse_from(["minik"]).unwrap_err();
        assert!(usage_error(&missing, &args).starts_with(
            "error: the following required arguments were not provided: --count <COUNT>\n"
        ));
    }

    #[test]
    fn unknown_output_formats_are_refused() {
        assert_eq!(Format::parse(Some("wide")).unwrap(), Format::Wide);
        assert!(Format::parse(Some("jsonpath={.x}")).is_err());
    }

    /// A lab error keeps its contexts and lets the client error inside read as kubectl's line.
    #[test]
    fn lab_errors_read_as_kubectl_prints_them() {
        let not_found = minik_lab::Error::Context {
            context: "deleting pod \"web\"".into(),
            inner: Box::new(minik_lab::Error::Client(Box::new(
                minik_client::Error::Api(minik_api::status::not_found("pods", "web")),
            ))),
        };
        assert_eq!(
            error_line(&from_lab(not_found)),
            "Error from server (NotFound): deleting pod \"web\": pods \"web\" not found"
        );
        let message = minik_lab::Error::Message("the watch ended".into());
        assert_eq!(error_line(&from_lab(message)), "error: the watch ended");
    }
}
