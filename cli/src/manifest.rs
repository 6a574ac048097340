//! Manifests: reading `-f FILE|DIR|-` into JSON objects, YAML or JSON, one or many per file.
//!
//! Kubernetes counterpart: kubectl's resource builder (`staging/src/k8s.io/cli-runtime/pkg/resource/builder.go`,
//! `visitor.go`): a directory means its `.yaml`, `.yml` and `.json` files (not recursively), `-` means
//! stdin, a YAML stream is split on `---`, and a `kind: List` (or `…List`) is flattened into its items.
//!
//! minik simplifies: no URLs, no `--recursive`, no kustomize.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::Value;

/// One object from a manifest, with the file it came from (for messages).
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// The file name as given (`pod.yaml`, or `STDIN`).
    pub source: String,
    /// The object.
    pub object: Value,
}

/// Reads every object of every `-f` argument, in order.
pub fn read_all(filenames: &[String]) -> anyhow::Result<Vec<Manifest>> {
    if filenames.is_empty() {
        bail!("must specify one of -f and -k");
    }
    let mut manifests = Vec::new();
    for filename in filenames {
        for (source, text) in read_sources(filename)? {
            for object in parse(&text).with_context(|| format!("error parsing {source}"))? {
                manifests.push(Manifest {
                    source: source.clone(),
                    object,
                });
            }
        }
    }
    Ok(manifests)
}

/// The texts behind one `-f` argument: stdin, one file, or a directory's manifest files.
fn read_sources(filename: &str) -> anyhow::Result<Vec<(String, String)>> {
    if filename == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading stdin")?;
        return Ok(vec![("STDIN".to_string(), text)]);
    }
    let path = Path::new(filename);
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading directory {filename}"))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|file| {
                matches!(
                    file.extension().and_then(|e| e.to_str()),
                    Some("yaml" | "yml" | "json")
                )
            })
            .collect();
        files.sort();
        return files
            .iter()
            .map(|file| Ok((file.display().to_string(), read_file(file)?)))
            .collect();
    }
    Ok(vec![(filename.to_string(), read_file(path)?)])
}

fn read_file(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            bail!("the path \"{}\" does not exist", path.display())
        }
        Err(error) => Err(error).with_context(|| format!("reading {}", path.display())),
    }
}

/// Parses one text: JSON (one or several concatenated values) or a YAML stream; Lists are flattened
/// and empty documents skipped.
pub fn parse(text: &str) -> anyhow::Result<Vec<Value>> {
    let trimmed = text.trim_start();
    let documents: Vec<Value> = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        serde_json::Deserializer::from_str(trimmed)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()?
    } else {
        serde_saphyr::from_multiple::<Value>(text)?
    };
    let mut objects = Vec::new();
    for document in documents {
        flatten(document, &mut objects)?;
    }
    Ok(objects)
}

fn flatten(document: Value, objects: &mut Vec<Value>) -> anyhow::Result<()> {
    match document {
        Value::Null => Ok(()),
        Value::Array(items) => items
            .into_iter()
            .try_for_each(|item| flatten(item, objects)),
        Value::Object(ref map) => {
            let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
            if kind.ends_with("List") {
                if let Some(Value::Array(items)) = map.get("items") {
                    return items
                        .clone()
                        .into_iter()
                        .try_for_each(|item| flatten(item, objects));
                }
            }
            objects.push(document);
            Ok(())
        }
        other => bail!("expected an object, found {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_stream_gives_one_object_per_document() {
        let text = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels:\n    app: \"yes\"\n---\n";
        let objects = parse(text).unwrap();
        assert_eq!(objects.len(), 2);
        assert_eq!(objects[0]["spec"]["ports"][0]["port"], 80);
        assert_eq!(objects[1]["metadata"]["labels"]["app"], "yes");
    }

    #[test]
    fn json_and_lists_are_flattened() {
        let text = r#"{"apiVersion":"v1","kind":"List","items":[{"kind":"Pod","metadata":{"name":"a"}},{"kind":"Pod","metadata":{"name":"b"}}]}
{"kind":"Pod","metadata":{"name":"c"}}"#;
        let names: Vec<String> = parse(text)
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn a_directory_is_read_in_name_order_and_a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("b.yaml"),
            "kind: Pod\nmetadata:\n  name: b\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("a.json"),
            r#"{"kind":"Pod","metadata":{"name":"a"}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        let manifests = read_all(&[dir.path().display().to_string()]).unwrap();
        let names: Vec<&str> = manifests
            .iter()
            .map(|m| m.object["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        let missing = read_all(&["/nonexistent/pod.yaml".to_string()]).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "the path \"/nonexistent/pod.yaml\" does not exist"
        );
    }
}
