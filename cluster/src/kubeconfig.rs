//! Merging a `minik` context into the user's kubeconfig, the way `kind create cluster` does, but
//! only when asked (`minik up --merge-kubeconfig`): the admin's credentials never land in
//! `~/.kube/config` silently.
//!
//! Kubernetes counterpart: client-go's `clientcmd` loading rules (`$KUBECONFIG`, else
//! `~/.kube/config`) and kind's `pkg/cluster/internal/kubeconfig` merge: the cluster, user and
//! context named `minik` are added or replaced, every other entry is left untouched, and
//! `current-context` is switched to `minik`.
//!
//! What minik simplifies: the file is handled as an untyped `serde_json::Value` (read and written
//! as YAML with serde-saphyr), so fields minik does not know survive the round trip; only the first
//! path of a `$KUBECONFIG` list is written (kubectl writes new entries there too). The cluster and
//! user bodies are copied from the cluster's own `DATA/kubeconfig` ([`Entries::from_kubeconfig`]):
//! the CA and the admin's client certificate; an insecure cluster has only a server and `user: {}`.
//!
//! Read next: `cli/src/commands/up.rs`, which calls [`write_minik_context`] once the cluster is ready.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::{Error, Result};

/// The name of the cluster, user and context entries minik owns in a kubeconfig.
pub const CONTEXT_NAME: &str = "minik";

/// The kubeconfig file to update: the first path of `$KUBECONFIG`, else `~/.kube/config`.
pub fn default_path() -> Option<PathBuf> {
    if let Some(list) = std::env::var_os("KUBECONFIG") {
        if let Some(first) = std::env::split_paths(&list).find(|p| !p.as_os_str().is_empty()) {
            return Some(first);
        }
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".kube").join("config"))
}

/// The bodies of the `minik` cluster and user entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Entries {
    /// `{server, certificate-authority-data}`.
    pub cluster: Value,
    /// `{client-certificate-data, client-key-data}`, or `{}`.
    pub user: Value,
}

impl Entries {
    /// A plain-http server and no credentials (an insecure cluster).
    pub fn plain(server: &str) -> Entries {
        Entries {
            cluster: json!({ "server": server }),
            user: json!({}),
        }
    }

    /// The current context's cluster and user of a kubeconfig written by the cluster
    /// (`DATA/kubeconfig`).
    pub fn from_kubeconfig(path: &Path) -> Result<Entries> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        let config: Value = serde_saphyr::from_str(&text)
            .map_err(|e| Error::Kubeconfig(format!("parsing {}: {e}", path.display())))?;
        let current = config["current-context"].as_str().unwrap_or_default();
        let find = |list: &str, name: &str, field: &str| {
            config[list]
                .as_array()
                .and_then(|l| l.iter().find(|e| e["name"] == name))
                .map(|e| e[field].clone())
        };
        let missing = || Error::Kubeconfig(format!("{}: no current context", path.display()));
        let context = find("contexts", current, "context").ok_or_else(missing)?;
        let cluster = context["cluster"].as_str().unwrap_or_default();
        let user = context["user"].as_str().unwrap_or_default();
        Ok(Entries {
            cluster: find("clusters", cluster, "cluster").ok_or_else(missing)?,
            user: find("users", user, "user").unwrap_or_else(|| json!({})),
        })
    }
}

/// Adds (or replaces) the `minik` cluster, user and context in `config` and makes it the current
/// context. Any other entry, and any field minik does not know, is kept as it was.
///
/// This is a pure function so that the merge rules are unit-tested without touching a file.
pub fn merge(config: Option<Value>, entries: &Entries) -> Value {
    let mut config = match config {
        Some(Value::Object(map)) => map,
        // An empty file parses as null; anything else that is not a mapping is not a kubeconfig
        // minik could merge into without losing data, and `write_minik_context` refuses it first.
        _ => Map::new(),
    };
    config.entry("apiVersion").or_insert_with(|| json!("v1"));
    config.entry("kind").or_insert_with(|| json!("Config"));
    upsert_named(&mut config, "clusters", "cluster", entries.cluster.clone());
    upsert_named(
        &mut config,
        "contexts",
        "context",
        json!({ "cluster": CONTEXT_NAME, "user": CONTEXT_NAME, "namespace": "default" }),
    );
    upsert_named(&mut config, "users", "user", entries.user.clone());
    config.insert("current-context".into(), json!(CONTEXT_NAME));
    Value::Object(config)
}

/// Replaces the entry named `minik` in the list `config[list]` (each entry is `{name, <field>}`),
/// or appends it; the list is created when missing.
fn upsert_named(config: &mut Map<String, Value>, list: &str, field: &str, body: Value) {
    let entry = json!({ "name": CONTEXT_NAME, field: body });
    let slot = config.entry(list).or_insert_with(|| json!([]));
    if !slot.is_array() {
        // `clusters: null` (or `clusters:` left empty) is how an empty list often looks in YAML.
        *slot = json!([]);
    }
    let Some(entries) = slot.as_array_mut() else {
        return;
    };
    match entries
        .iter_mut()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(CONTEXT_NAME))
    {
        Some(existing) => *existing = entry,
        None => entries.push(entry),
    }
}

/// Reads the kubeconfig at `path` (a missing file counts as empty), merges the `minik` entries
/// into it and writes it back with mode 0600.
pub fn write_minik_context(path: &Path, entries: &Entries) -> Result<()> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => None,
        Ok(text) => {
            let value: Value = serde_saphyr::from_str(&text).map_err(|e| {
                Error::Kubeconfig(format!("parsing kubeconfig {}: {e}", path.display()))
            })?;
            if !(value.is_object() || value.is_null()) {
                return Err(Error::Kubeconfig(format!(
                    "kubeconfig {} is not a YAML mapping; not touching it",
                    path.display()
                )));
            }
            Some(value)
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => {
            return Err(Error::io(
                format!("reading kubeconfig {}", path.display()),
                err,
            ))
        }
    };
    let merged = merge(existing, entries);
    let text = serde_saphyr::to_string(&merged)
        .map_err(|e| Error::Kubeconfig(format!("serializing kubeconfig: {e}")))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    // Write a sibling file and rename it over the old one, so a crash never leaves half a config.
    let tmp = path.with_extension("minik-tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        });
    written.map_err(|e| Error::io(format!("writing {}", tmp.display()), e))?;
    std::fs::rename(&tmp, path)
        .map_err(|e| Error::io(format!("replacing {}", path.display()), e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty or missing kubeconfig becomes a complete one whose current context is minik.
    #[test]
    fn merge_into_nothing_creates_a_complete_config() {
        let merged = merge(None, &Entries::plain("http://127.0.0.1:6443"));
        assert_eq!(merged["apiVersion"], "v1");
        assert_eq!(merged["kind"], "Config");
        assert_eq!(merged["current-context"], "minik");
        assert_eq!(
            merged["clusters"][0]["cluster"]["server"],
            "http://127.0.0.1:6443"
        );
        assert_eq!(merged["contexts"][0]["context"]["cluster"], "minik");
        assert_eq!(merged["contexts"][0]["context"]["user"], "minik");
        assert_eq!(merged["users"][0], json!({"name": "minik", "user": {}}));
    }

    /// Other clusters, users, contexts and unknown top-level fields survive the merge.
    #[test]
    fn merge_keeps_other_entries_untouched() {
        let existing = json!({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "kind-kind", "cluster": {"server": "https://127.0.0.1:1234",
                          "certificate-authority-data": "AAAA"}}],
            "contexts": [{"name": "kind-kind", "context": {"cluster": "kind-kind", "user": "kind-kind"}}],
            "users": [{"name": "kind-kind", "user": {"token": "secret"}}],
            "current-context": "kind-kind",
            "preferences": {"colors": true},
        });
        let merged = merge(
            Some(existing.clone()),
            &Entries::plain("http://127.0.0.1:6443"),
        );
        assert_eq!(merged["clusters"][0], existing["clusters"][0]);
        assert_eq!(merged["contexts"][0], existing["contexts"][0]);
        assert_eq!(merged["users"][0], existing["users"][0]);
        assert_eq!(merged["preferences"], existing["preferences"]);
        assert_eq!(merged["clusters"].as_array().unwrap().len(), 2);
        assert_eq!(merged["current-context"], "minik");
    }

    /// Running `minik up` twice replaces the minik entries instead of duplicating them.
    #[test]
    fn merge_replaces_an_existing_minik_entry() {
        let once = merge(None, &Entries::plain("http://127.0.0.1:6443"));
        let twice = merge(Some(once), &Entries::plain("http://127.0.0.1:7000"));
        assert_eq!(twice["clusters"].as_array().unwrap().len(), 1);
        assert_eq!(twice["contexts"].as_array().unwrap().len(), 1);
        assert_eq!(twice["users"].as_array().unwrap().len(), 1);
        assert_eq!(
            twice["clusters"][0]["cluster"]["server"],
            "http://127.0.0.1:7000"
        );
    }

    /// The entries of a cluster's own kubeconfig carry its CA and the admin's certificate.
    #[test]
    fn entries_come_from_the_clusters_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        let pki = crate::pki::Pki::ensure(dir.path(), &[]).unwrap();
        let path = dir.path().join("kubeconfig");
        pki.write_kubeconfig(
            &crate::pki::Identity::admin(),
            "https://127.0.0.1:6443",
            &path,
        )
        .unwrap();
        let entries = Entries::from_kubeconfig(&path).unwrap();
        assert_eq!(entries.cluster["server"], "https://127.0.0.1:6443");
        assert!(entries.cluster["certificate-authority-data"].is_string());
        assert!(entries.user["client-key-data"].is_string());
        let merged = merge(None, &entries);
        assert_eq!(merged["users"][0]["user"], entries.user);
    }

    /// A kubeconfig with `clusters:` left empty (null in YAML) still gets the minik entry.
    #[test]
    fn merge_treats_null_lists_as_empty() {
        let merged = merge(
            Some(json!({"clusters": null, "users": null})),
            &Entries::plain("http://127.0.0.1:6443"),
        );
        assert_eq!(merged["clusters"].as_array().unwrap().len(), 1);
        assert_eq!(merged["users"].as_array().unwrap().len(), 1);
    }

    /// The file round-trips through YAML, keeps other entries and is written with mode 0600.
    #[test]
    fn write_minik_context_round_trips_yaml_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kube").join("config");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: other\n  cluster:\n    server: https://10.0.0.1\ncurrent-context: other\n",
        )
        .unwrap();
        write_minik_context(&path, &Entries::plain("http://127.0.0.1:6443")).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let text = std::fs::read_to_string(&path).unwrap();
        let value: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(value["current-context"], "minik");
        assert_eq!(value["clusters"][0]["name"], "other");
        assert_eq!(
            value["clusters"][1]["cluster"]["server"],
            "http://127.0.0.1:6443"
        );
    }
}
