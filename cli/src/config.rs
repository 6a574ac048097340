//! Which apiserver the CLI talks to, and with which credentials, as kubectl finds them: the
//! kubeconfig is `--kubeconfig FILE`, else the first of `$KUBECONFIG`'s files that holds the
//! context, else the running `minik up`'s own `DATA/kubeconfig`, else `~/.kube/config` (when
//! `$KUBECONFIG` is unset). The server is `--server`, else `$MINIK_SERVER`, else that
//! kubeconfig's, else `http://127.0.0.1:6443` (an `--insecure` cluster). The context is
//! `--context NAME`, else `minik`.
//!
//! Kubernetes counterpart: kubectl's `clientcmd` loading rules
//! (`staging/src/k8s.io/client-go/tools/clientcmd/loader.go`): an explicit `--kubeconfig` file
//! must exist and replaces `$KUBECONFIG`, which is a `:`-separated list of files, else
//! `~/.kube/config`; a context names a cluster, whose `server` is the address; `--server`
//! overrides whatever the kubeconfig says but keeps its credentials.
//!
//! minik simplifies: without `--context` it looks for the context named `minik` (the one
//! `minik up` writes), whatever `current-context` says; the running cluster is found in the
//! default data directory (`$XDG_DATA_HOME/minik`), where `minik up` keeps its pid file.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde_json::Value;

/// The server address when nothing else names one.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:6443";

/// The context `minik up` writes, read when `--context` is not given.
pub const DEFAULT_CONTEXT: &str = "minik";

/// The apiserver address and the kubeconfig file its credentials come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// `https://127.0.0.1:6443`.
    pub server: String,
    /// The kubeconfig holding the context, if one does.
    pub kubeconfig: Option<PathBuf>,
}

/// The server and kubeconfig, by the precedence in the module doc.
pub fn resolve(
    server: Option<&str>,
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> anyhow::Result<Resolved> {
    let env_server = std::env::var("MINIK_SERVER").ok();
    resolve_from(server, kubeconfig, context, env_server, candidate_files())
}

/// [`resolve`] with the environment passed in: `$MINIK_SERVER` and the files to look in.
fn resolve_from(
    server: Option<&str>,
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    env_server: Option<String>,
    candidates: Vec<PathBuf>,
) -> anyhow::Result<Resolved> {
    let context_name = context.unwrap_or(DEFAULT_CONTEXT);
    let explicit = server
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or(env_server.filter(|s| !s.is_empty()));
    // An explicit file must be readable and hold the context (kubectl: `stat F: no such file`).
    if let Some(path) = kubeconfig.filter(|p| !p.as_os_str().is_empty()) {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
        let Some(found) = server_of_context(&text, context_name) else {
            bail!("context \"{context_name}\" not found in {}", path.display());
        };
        return Ok(Resolved {
            server: explicit.unwrap_or(found),
            kubeconfig: Some(path.to_path_buf()),
        });
    }
    let found = candidates.into_iter().find_map(|path| {
        let text = std::fs::read_to_string(&path).ok()?;
        server_of_context(&text, context_name).map(|server| (server, path))
    });
    match (found, explicit, context) {
        (Some((found, path)), explicit, _) => Ok(Resolved {
            server: explicit.unwrap_or(found),
            kubeconfig: Some(path),
        }),
        (None, Some(server), _) => Ok(Resolved {
            server,
            kubeconfig: None,
        }),
        (None, None, Some(name)) => bail!("context \"{name}\" not found in the kubeconfig"),
        (None, None, None) => Ok(Resolved {
            server: DEFAULT_SERVER.to_string(),
            kubeconfig: None,
        }),
    }
}

/// Where a context is looked for without `--kubeconfig`: `$KUBECONFIG`'s files, the running
/// cluster's `DATA/kubeconfig`, then `~/.kube/config` when `$KUBECONFIG` is unset.
pub fn candidate_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let list = std::env::var("KUBECONFIG").unwrap_or_default();
    files.extend(list.split(':').filter(|p| !p.is_empty()).map(PathBuf::from));
    files.extend(running_cluster_kubeconfig());
    if list.is_empty() {
        files.extend(
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".kube").join("config")),
        );
    }
    files
}

/// The admin kubeconfig of the `minik up` running from the default data directory.
pub fn running_cluster_kubeconfig() -> Option<PathBuf> {
    let data = minik_cluster::default_data_dir();
    let pid = std::fs::read_to_string(minik_cluster::pid_file(&data)).ok()?;
    let running = pid.trim().parse().is_ok_and(minik_cluster::is_minik_up);
    let path = minik_cluster::secure::admin_kubeconfig(&data);
    (running && path.is_file()).then_some(path)
}

/// The `server` of the cluster that context `context` points at, in one kubeconfig's text.
pub fn server_of_context(kubeconfig: &str, context: &str) -> Option<String> {
    let config: Value = serde_saphyr::from_str(kubeconfig).ok()?;
    let named = |list: &str, name: &str| -> Option<Value> {
        config
            .get(list)?
            .as_array()?
            .iter()
            .find(|entry| entry.get("name").and_then(Value::as_str) == Some(name))
            .cloned()
    };
    let context = named("contexts", context)?;
    let cluster_name = context.pointer("/context/cluster")?.as_str()?;
    let cluster = named("clusters", cluster_name)?;
    cluster
        .pointer("/cluster/server")?
        .as_str()
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECONFIG: &str = r#"
apiVersion: v1
kind: Config
clusters:
- name: kind-kind
  cluster: {server: "https://127.0.0.1:40000"}
- name: minik
  cluster: {server: "http://127.0.0.1:18081"}
contexts:
- {name: kind-kind, context: {cluster: kind-kind, user: kind}}
- {name: minik, context: {cluster: minik, user: minik, namespace: default}}
users: [{name: minik, user: {}}]
current-context: kind-kind
"#;

    #[test]
    fn the_minik_context_names_the_server() {
        assert_eq!(
            server_of_context(KUBECONFIG, "minik").as_deref(),
            Some("http://127.0.0.1:18081")
        );
        assert_eq!(server_of_context(KUBECONFIG, "other"), None);
        assert_eq!(server_of_context("not: [valid", "minik"), None);
    }

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config");
        std::fs::write(&path, text).expect("write kubeconfig");
        (dir, path)
    }

    fn server_of(resolved: anyhow::Result<Resolved>) -> String {
        resolved.unwrap().server
    }

    #[test]
    fn the_server_flag_wins_but_keeps_the_kubeconfig() {
        let (_dir, file) = write(KUBECONFIG);
        let resolved = resolve_from(
            Some("http://127.0.0.1:1"),
            Some(&file),
            Some("kind-kind"),
            Some("http://127.0.0.1:2".into()),
            vec![file.clone()],
        )
        .unwrap();
        assert_eq!(resolved.server, "http://127.0.0.1:1");
        assert_eq!(resolved.kubeconfig, Some(file));
    }

    #[test]
    fn an_explicit_kubeconfig_beats_the_files_and_must_hold_the_context() {
        let (_dir, file) = write(KUBECONFIG);
        let resolve = |context| resolve_from(None, Some(&file), context, None, vec![]);
        assert_eq!(server_of(resolve(None)), "http://127.0.0.1:18081");
        assert_eq!(
            server_of(resolve(Some("kind-kind"))),
            "https://127.0.0.1:40000"
        );
        assert_eq!(
            resolve(Some("other")).unwrap_err().to_string(),
            format!("context \"other\" not found in {}", file.display())
        );
        let missing = Path::new("/nonexistent/kubeconfig");
        let error = resolve_from(None, Some(missing), None, None, vec![]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot read kubeconfig /nonexistent/kubeconfig"
        );
    }

    #[test]
    fn without_flags_the_first_file_with_the_context_then_the_environment_then_the_default() {
        let (_dir, file) = write(KUBECONFIG);
        let resolve = |env, files, context| resolve_from(None, None, context, env, files);
        let files = vec![PathBuf::from("/nonexistent"), file.clone()];
        let found = resolve(None, files, None).unwrap();
        assert_eq!(
            (found.server.as_str(), found.kubeconfig),
            ("http://127.0.0.1:18081", Some(file.clone()))
        );
        // $MINIK_SERVER names the address; the file still lends its credentials.
        let env = Some("https://127.0.0.1:2".to_string());
        assert_eq!(
            server_of(resolve(env.clone(), vec![file.clone()], None)),
            "https://127.0.0.1:2"
        );
        assert_eq!(server_of(resolve(env, vec![], None)), "https://127.0.0.1:2");
        assert_eq!(server_of(resolve(None, vec![], None)), DEFAULT_SERVER);
        // A named context that is nowhere is an error, not a silent fall-back to the default.
        assert!(resolve(None, vec![file], Some("other")).is_err());
    }
}
