//! Unmodified kubectl against the TLS apiserver with nothing but a written kubeconfig: the admin
//! lists, `auth whoami` and `auth can-i` answer, and a node's refusal reads as upstream's.
//! Skipped with a notice when kubectl is missing (`MINIK_KUBECTL`, else `/usr/bin/kubectl`),
//! failed under CI (`CI` set).

mod secure;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use minik_client::Method;
use minik_cluster::pki::Identity;
use secure::SecureServer;
use serde_json::json;

fn kubectl_binary() -> Option<PathBuf> {
    let binary = std::env::var_os("MINIK_KUBECTL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/kubectl"));
    if binary.exists() {
        return Some(binary);
    }
    assert!(std::env::var_os("CI").is_none(), "CI must provide kubectl");
    eprintln!("SKIPPED: kubectl not found at {}", binary.display());
    None
}

/// Runs `kubectl --kubeconfig CONFIG ARGS`, answering (exit code, stdout, stderr).
async fn kubectl(binary: &Path, config: &Path, args: &[&str]) -> (i32, String, String) {
    let home = config.parent().unwrap();
    let output = tokio::process::Command::new(binary)
        .env_remove("KUBECONFIG")
        .env("HOME", home)
        .arg("--kubeconfig")
        .arg(config)
        .arg("--cache-dir")
        .arg(home.join("cache"))
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("kubectl in time")
        .expect("kubectl runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn kubeconfig(server: &SecureServer, identity: &Identity) -> PathBuf {
    let path = server
        .dir
        .path()
        .join(format!("{}.kubeconfig", identity.name));
    server
        .pki
        .write_kubeconfig(identity, &server.url, &path)
        .unwrap();
    path
}

#[tokio::test]
async fn kubectl_connects_with_only_the_written_kubeconfig() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let server = SecureServer::start().await;
    let admin = kubeconfig(&server, &Identity::admin());
    let (code, out, err) = kubectl(&binary, &admin, &["get", "namespaces", "-o", "name"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("namespace/kube-system"), "{out}");
    let (code, out, err) = kubectl(&binary, &admin, &["auth", "whoami", "-o", "json"]).await;
    assert_eq!(code, 0, "{err}");
    let whoami: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(whoami["status"]["userInfo"]["username"], "kubernetes-admin");
    let (code, out, err) = kubectl(&binary, &admin, &["auth", "can-i", "create", "pods"]).await;
    assert_eq!((code, out.trim()), (0, "yes"), "{err}");
}

#[tokio::test]
async fn kubectl_shows_can_i_no_and_upstreams_forbidden_message() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let server = SecureServer::start().await;
    let node = kubeconfig(&server, &Identity::node("node-1"));
    let (code, out, _) = kubectl(&binary, &node, &["auth", "can-i", "create", "deployments"]).await;
    assert_eq!((code, out.trim()), (1, "no"));
    let admin = server.client(&Identity::admin());
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "theirs"},
        "spec": {"nodeName": "node-2", "containers": [{"name": "c", "image": "busybox"}]}});
    admin
        .request_json(Method::POST, "/api/v1/namespaces/default/pods", Some(&pod))
        .await
        .unwrap();
    let (code, _, err) =
        kubectl(&binary, &node, &["delete", "pod", "theirs", "--wait=false"]).await;
    assert_ne!(code, 0);
    assert!(
        err.contains("Error from server (Forbidden): pods \"theirs\" is forbidden: User \"system:node:node-1\" cannot delete resource \"pods\" in API group \"\" in the namespace \"default\""),
        "{err}"
    );
}
