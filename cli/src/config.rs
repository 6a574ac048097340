//! Which apiserver the CLI talks to: `--server`, else `$MINIK_SERVER`, else the `minik` context of
//! the kubeconfig, else `http://127.0.0.1:6443`.
//!
//! Kubernetes counterpart: kubectl's `clientcmd` loading rules
//! (`staging/src/k8s.io/client-go/tools/clientcmd/loader.go`): `$KUBECONFIG` is a `:`-separated list
//! of files, else `~/.kube/config`; a context names a cluster, whose `server` is the address.
//!
//! minik simplifies: it always looks for the context named `minik` (the one `minik up` writes),
//! whatever `current-context` says, and ignores users and certificates (plain http on loopback).

use std::path::PathBuf;

use serde_json::Value;

/// The server address when nothing else names one.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:6443";

/// The apiserver address, by the precedence in the module doc.
pub fn resolve_server(flag: Option<&str>) -> String {
    if let Some(server) = flag.filter(|s| !s.is_empty()) {
        return server.to_string();
    }
    if let Ok(server) = std::env::var("MINIK_SERVER") {
        if !server.is_empty() {
            return server;
        }
    }
    kubeconfig_paths()
        .into_iter()
        .find_map(|path| {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|text| server_of_context(&text, "minik"))
        })
        .unwrap_or_else(|| DEFAULT_SERVER.to_string())
}

/// `$KUBECONFIG`'s files, else `~/.kube/config`.
fn kubeconfig_paths() -> Vec<PathBuf> {
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

    #[test]
    fn the_flag_wins() {
        assert_eq!(
            resolve_server(Some("http://127.0.0.1:1")),
            "http://127.0.0.1:1"
        );
    }
}
