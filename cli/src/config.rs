//! Which apiserver the CLI talks to: `--server`, else the context of `--kubeconfig FILE`, else
//! `$MINIK_SERVER`, else the context of `$KUBECONFIG`'s files or `~/.kube/config`, else
//! `http://127.0.0.1:6443`. The context is `--context NAME`, else `minik`.
//!
//! Kubernetes counterpart: kubectl's `clientcmd` loading rules
//! (`staging/src/k8s.io/client-go/tools/clientcmd/loader.go`): an explicit `--kubeconfig` file
//! must exist and replaces `$KUBECONFIG`, which is a `:`-separated list of files, else
//! `~/.kube/config`; a context names a cluster, whose `server` is the address; `--server`
//! overrides whatever the kubeconfig says.
//!
//! minik simplifies: without `--context` it looks for the context named `minik` (the one
//! `minik up` writes), whatever `current-context` says. With nothing named at all, a running
//! `minik up --secure` is found through its `DATA/kubeconfig`; an https server's CA and
//! credentials come from the kubeconfig context that named it (`commands/resources.rs`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde_json::Value;

/// The server address when nothing else names one.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:6443";

/// The context `minik up` writes, read when `--context` is not given.
pub const DEFAULT_CONTEXT: &str = "minik";

/// The apiserver address, by the precedence in the module doc.
pub fn resolve_server(
    server: Option<&str>,
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> anyhow::Result<String> {
    let env_server = std::env::var("MINIK_SERVER").ok();
    resolve_server_from(server, kubeconfig, context, env_server, kubeconfig_paths())
}

/// [`resolve_server`] with the environment passed in: `$MINIK_SERVER` and the default files.
fn resolve_server_from(
    server: Option<&str>,
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    env_server: Option<String>,
    default_files: Vec<PathBuf>,
) -> anyhow::Result<String> {
    if let Some(server) = server.filter(|s| !s.is_empty()) {
        return Ok(server.to_string());
    }
    let context_name = context.unwrap_or(DEFAULT_CONTEXT);
    // An explicit file must be readable and hold the context (kubectl: `stat F: no such file`).
    if let Some(path) = kubeconfig.filter(|p| !p.as_os_str().is_empty()) {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
        return match server_of_context(&text, context_name) {
            Some(server) => Ok(server),
            None => bail!("context \"{context_name}\" not found in {}", path.display()),
        };
    }
    if let Some(server) = env_server.filter(|s| !s.is_empty()) {
        return Ok(server);
    }
    let found = default_files.into_iter().find_map(|path| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| server_of_context(&text, context_name))
    });
    match (found, context) {
        (Some(server), _) => Ok(server),
        (None, Some(name)) => bail!("context \"{name}\" not found in the kubeconfig"),
        (None, None) => Ok(DEFAULT_SERVER.to_string()),
    }
}

/// `$KUBECONFIG`'s files, else `~/.kube/config`.
pub fn kubeconfig_paths() -> Vec<PathBuf> {
    if let Ok(list) = std::env::var("KUBECONFIG") {
        if !list.is_empty() {
            return list
                .split(':')
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .collect();
        }
    }
    std::env::var_os("HOME")
        .map(|home| vec![PathBuf::from(home).join(".kube").join("config")])
        .unwrap_or_default()
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

    #[test]
    fn the_server_flag_wins_over_everything() {
        let (_dir, file) = write(KUBECONFIG);
        let server = resolve_server_from(
            Some("http://127.0.0.1:1"),
            Some(&file),
            Some("kind-kind"),
            Some("http://127.0.0.1:2".into()),
            vec![file.clone()],
        );
        assert_eq!(server.unwrap(), "http://127.0.0.1:1");
    }

    #[test]
    fn an_explicit_kubeconfig_beats_the_environment_and_must_hold_the_context() {
        let (_dir, file) = write(KUBECONFIG);
        let env = || Some("http://127.0.0.1:2".to_string());
        let resolve = |context| resolve_server_from(None, Some(&file), context, env(), vec![]);
        assert_eq!(resolve(None).unwrap(), "http://127.0.0.1:18081");
        assert_eq!(
            resolve(Some("kind-kind")).unwrap(),
            "https://127.0.0.1:40000"
        );
        assert_eq!(
            resolve(Some("other")).unwrap_err().to_string(),
            format!("context \"other\" not found in {}", file.display())
        );
        let missing = Path::new("/nonexistent/kubeconfig");
        let error = resolve_server_from(None, Some(missing), None, env(), vec![]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot read kubeconfig /nonexistent/kubeconfig"
        );
    }

    #[test]
    fn without_flags_the_environment_then_the_default_files_then_the_default() {
        let (_dir, file) = write(KUBECONFIG);
        let env = Some("http://127.0.0.1:2".to_string());
        let resolve = |env, files, context| resolve_server_from(None, None, context, env, files);
        assert_eq!(
            resolve(env, vec![file.clone()], None).unwrap(),
            "http://127.0.0.1:2"
        );
        let files = vec![PathBuf::from("/nonexistent"), file.clone()];
        assert_eq!(
            resolve(None, files, None).unwrap(),
            "http://127.0.0.1:18081"
        );
        assert_eq!(resolve(None, vec![], None).unwrap(), DEFAULT_SERVER);
        // A named context that is nowhere is an error, not a silent fall-back to the default.
        assert!(resolve(None, vec![file], Some("other")).is_err());
    }
}
