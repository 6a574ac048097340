//! Reading a kubeconfig into what a [`crate::Client`] needs: the server, the CA to trust, and the
//! credential to present.
//!
//! Kubernetes counterpart: client-go's `tools/clientcmd` (`loader.go` for which file,
//! `client_config.go` for the current context, `api/types.go` for the fields). minik reads the
//! fields kubectl's own kubeconfigs use: `server`, `certificate-authority[-data]`,
//! `insecure-skip-tls-verify`, `client-certificate[-data]`, `client-key[-data]`, `token` and
//! `tokenFile`. Relative file paths are resolved against the kubeconfig's directory, as clientcmd
//! does.
//!
//! What minik simplifies: of a `$KUBECONFIG` list only the first file that exists is read (kubectl
//! merges them all); no exec or auth-provider plugins, no proxy-url, no impersonation.
//!
//! Read next: `client.rs` ([`crate::Client::from_kubeconfig`]).

use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Deserialize;

use crate::error::{Error, Result};

/// Everything needed to reach and authenticate to one apiserver.
#[derive(Clone, Default)]
pub struct ClientConfig {
    /// `https://127.0.0.1:6443` (or `http://` for a server without TLS).
    pub server: String,
    /// The PEM CA bundle to trust instead of the system roots.
    pub ca_pem: Option<Vec<u8>>,
    /// Do not verify the server's certificate (`insecure-skip-tls-verify`).
    pub insecure_skip_tls_verify: bool,
    /// The client certificate and key, PEM.
    pub client_cert_pem: Option<Vec<u8>>,
    /// The client key, PEM.
    pub client_key_pem: Option<Vec<u8>>,
    /// A bearer token.
    pub token: Option<String>,
}

impl std::fmt::Debug for ClientConfig {
    // Keys and tokens never reach a log line (docs/security.md#local-control-plane).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("server", &self.server)
            .field("ca", &self.ca_pem.is_some())
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("client_cert", &self.client_cert_pem.is_some())
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Which kubeconfig file to read, as kubectl decides: `--kubeconfig`, else the first existing file
/// of `$KUBECONFIG`, else `~/.kube/config` if it exists.
pub fn kubeconfig_path(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = explicit {
        return Some(path.to_path_buf());
    }
    if let Some(list) = std::env::var_os("KUBECONFIG") {
        if let Some(found) = std::env::split_paths(&list).find(|p| p.is_file()) {
            return Some(found);
        }
    }
    let home = PathBuf::from(std::env::var_os("HOME")?)
        .join(".kube")
        .join("config");
    home.is_file().then_some(home)
}

/// Reads the kubeconfig at `path` and resolves its current context.
pub fn load(path: &Path) -> Result<ClientConfig> {
    load_context(path, None)
}

/// Reads the kubeconfig at `path` and resolves `context` (`None`: its current context).
pub fn load_context(path: &Path, context: Option<&str>) -> Result<ClientConfig> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Kubeconfig(format!("reading {}: {e}", path.display())))?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse_context(&text, base, context)
        .map_err(|e| Error::Kubeconfig(format!("{}: {e}", path.display())))
}

/// Parses a kubeconfig's text; relative paths inside resolve against `base`.
pub fn parse(text: &str, base: &Path) -> Result<ClientConfig, String> {
    parse_context(text, base, None)
}

/// Like [`parse`], for `context` instead of the current one.
pub fn parse_context(
    text: &str,
    base: &Path,
    context: Option<&str>,
) -> Result<ClientConfig, String> {
    let config: Kubeconfig = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
    let context_name = context
        .or(config.current_context.as_deref())
        .filter(|c| !c.is_empty())
        .ok_or("no current-context")?;
    let context = find(&config.contexts, context_name, "context")?;
    let cluster = find(&config.clusters, &context.cluster, "cluster")?;
    let user = match context.user.as_deref().filter(|u| !u.is_empty()) {
        Some(name) => find(&config.users, name, "user")?.clone(),
        None => AuthInfo::default(),
    };
    let read = |data: &Option<String>, file: &Option<PathBuf>| -> Result<Option<Vec<u8>>, String> {
        if let Some(data) = data {
            return base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map(Some)
                .map_err(|e| format!("bad base64: {e}"));
        }
        file.as_ref()
            .map(|f| std::fs::read(base.join(f)).map_err(|e| format!("{}: {e}", f.display())))
            .transpose()
    };
    let token = match (&user.token, &user.token_file) {
        (Some(token), _) => Some(token.clone()),
        (None, Some(file)) => Some(
            std::fs::read_to_string(base.join(file))
                .map_err(|e| format!("{}: {e}", file.display()))?
                .trim()
                .to_string(),
        ),
        (None, None) => None,
    };
    Ok(ClientConfig {
        server: cluster.server.clone(),
        ca_pem: read(
            &cluster.certificate_authority_data,
            &cluster.certificate_authority,
        )?,
        insecure_skip_tls_verify: cluster.insecure_skip_tls_verify,
        client_cert_pem: read(&user.client_certificate_data, &user.client_certificate)?,
        client_key_pem: read(&user.client_key_data, &user.client_key)?,
        token,
    })
}

fn find<'a, T>(entries: &'a [Named<T>], name: &str, what: &str) -> Result<&'a T, String> {
    entries
        .iter()
        .find(|e| e.name == name)
        .map(|e| &e.value)
        .ok_or_else(|| format!("{what} {name:?} not found"))
}

#[derive(Deserialize)]
struct Kubeconfig {
    #[serde(default)]
    clusters: Vec<Named<ClusterEntry>>,
    #[serde(default)]
    users: Vec<Named<AuthInfo>>,
    #[serde(default)]
    contexts: Vec<Named<ContextEntry>>,
    #[serde(rename = "current-context")]
    current_context: Option<String>,
}

/// `{name, cluster|user|context}`: the value's key differs per list, so it is found by alias.
#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    value: T,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ClusterEntry {
    server: String,
    certificate_authority: Option<PathBuf>,
    certificate_authority_data: Option<String>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
}

#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "kebab-case")]
struct AuthInfo {
    client_certificate: Option<PathBuf>,
    client_certificate_data: Option<String>,
    client_key: Option<PathBuf>,
    client_key_data: Option<String>,
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<PathBuf>,
}

#[derive(Deserialize)]
struct ContextEntry {
    cluster: String,
    user: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
apiVersion: v1
kind: Config
clusters:
- name: other
  cluster: {server: "https://10.0.0.1"}
- name: minik
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: Q0E=
users:
- name: admin
  user:
    client-certificate-data: Q0VSVA==
    client-key: key.pem
- name: robot
  user: {token: abc}
contexts:
- name: minik
  context: {cluster: minik, user: admin}
- name: bot
  context: {cluster: other, user: robot}
current-context: minik
"#;

    /// The current context picks the cluster and user; data fields are base64, file fields are
    /// read relative to the kubeconfig's directory.
    #[test]
    fn current_context_resolves_data_and_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("key.pem"), "KEY").unwrap();
        let config = parse(CONFIG, dir.path()).unwrap();
        assert_eq!(config.server, "https://127.0.0.1:6443");
        assert_eq!(config.ca_pem.as_deref(), Some(&b"CA"[..]));
        assert_eq!(config.client_cert_pem.as_deref(), Some(&b"CERT"[..]));
        assert_eq!(config.client_key_pem.as_deref(), Some(&b"KEY"[..]));
        assert!(config.token.is_none());
        assert!(!format!("{config:?}").contains("KEY"));
    }

    /// Another current context selects its own cluster and token.
    #[test]
    fn token_users_and_insecure_clusters() {
        let text = CONFIG.replace("current-context: minik", "current-context: bot");
        let config = parse(&text, Path::new("/nonexistent")).unwrap();
        assert_eq!(config.server, "https://10.0.0.1");
        assert_eq!(config.token.as_deref(), Some("abc"));
        assert!(!format!("{config:?}").contains("abc"));
        let insecure = r#"
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
contexts: [{name: c, context: {cluster: c}}]
current-context: c
"#;
        assert!(
            parse(insecure, Path::new("/"))
                .unwrap()
                .insecure_skip_tls_verify
        );
    }

    /// Missing pieces are errors that name what is missing.
    #[test]
    fn missing_context_or_cluster_is_an_error() {
        let no_current = CONFIG.replace("current-context: minik", "");
        assert!(parse(&no_current, Path::new("/"))
            .unwrap_err()
            .contains("current-context"));
        let unknown = CONFIG.replace("current-context: minik", "current-context: nope");
        assert!(parse(&unknown, Path::new("/"))
            .unwrap_err()
            .contains("\"nope\""));
    }
}
