//! ServiceAccounts end to end on a secure cluster, with unmodified kubectl: the controller
//! manager gives every namespace its `default` account (and gives it back when deleted),
//! `kubectl create token default` prints a token that authenticates as that account, the token
//! dies with its account, and the `kubernetes` Service points at the apiserver through its
//! Endpoints and EndpointSlice (issues 16 and 18).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use minik_api::core::ServiceAccount;
use minik_client::wait::await_condition;
use minik_client::{Api, Client};
use minik_cluster::{Cluster, ClusterConfig, Mode};
use serde_json::{json, Value};

use crate::support::kubectl_binary;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs kubectl with `config`, answering (exit code, stdout, stderr).
async fn kubectl(binary: &Path, config: &Path, args: &[&str]) -> (i32, String, String) {
    let home = config.parent().unwrap();
    let output = tokio::process::Command::new(binary)
        .env_remove("KUBECONFIG")
        .env("HOME", home)
        .arg("--kubeconfig")
        .arg(config)
        .arg("--cache-dir")
        .arg(home.join("kubectl-cache"))
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(TIMEOUT, output)
        .await
        .expect("kubectl in time")
        .expect("kubectl runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A kubeconfig that authenticates with `token` alone (no client certificate).
fn token_kubeconfig(dir: &Path, server: &str, ca: &Path, token: &str) -> PathBuf {
    let config = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "minik", "cluster": {"server": server, "certificate-authority": ca}}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "minik", "user": "sa", "namespace": "default"}}],
    });
    let path = dir.join("sa.kubeconfig");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// Waits (on a watch) until the account `namespace/name` exists and differs from `not_uid`.
async fn account(
    client: &Client,
    namespace: &str,
    name: &str,
    not_uid: Option<&str>,
) -> ServiceAccount {
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), namespace);
    let found = tokio::time::timeout(
        TIMEOUT,
        await_condition(&accounts, name, |a| a.metadata.uid.as_deref() != not_uid),
    )
    .await
    .unwrap_or_else(|_| panic!("no service account {namespace}/{name}"));
    found.unwrap_or_else(|| panic!("no service account {namespace}/{name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_create_token_authenticates_as_the_default_service_account() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = ClusterConfig {
        data_dir: data.clone(),
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        nodes: 1,
        progress: false,
        mode: Mode::InProcess,
        reap_leftovers: false,
        drain_grace: Some(0),
        secure: true,
        ..ClusterConfig::default()
    };
    let cluster = tokio::time::timeout(TIMEOUT, Cluster::start(config))
        .await
        .expect("started in time")
        .expect("started");
    let client = cluster.client().unwrap();
    let admin = cluster.kubeconfig().unwrap();

    // The service-account controller made `default` in `default`.
    let default = account(&client, "default", "default", None).await;
    let (code, token, err) = kubectl(&binary, &admin, &["create", "token", "default"]).await;
    assert_eq!(code, 0, "{err}");
    let token = token.trim().to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let ca = data.join("pki").join("ca.crt");
    let as_account = token_kubeconfig(dir.path(), &cluster.server_url, &ca, &token);
    let (code, out, err) = kubectl(&binary, &as_account, &["auth", "whoami", "-o", "json"]).await;
    assert_eq!(code, 0, "{err}");
    let whoami: Value = serde_json::from_str(&out).unwrap();
    let user = &whoami["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:default:default");
    assert_eq!(user["uid"].as_str(), default.metadata.uid.as_deref());
    assert!(user["groups"]
        .as_array()
        .unwrap()
        .contains(&json!("system:serviceaccounts:default")));
    // No binding: RBAC refuses, naming the account.
    let (code, _, err) = kubectl(&binary, &as_account, &["get", "pods"]).await;
    assert_ne!(code, 0);
    assert!(
        err.contains("system:serviceaccount:default:default"),
        "{err}"
    );

    // kubectl sends its RBAC objects as protobuf: `create role` and `create rolebinding` grant the
    // account reads (and only reads) of pods.
    for args in [
        &[
            "create",
            "role",
            "pod-reader",
            "--verb=get,list,watch",
            "--resource=pods",
        ][..],
        &[
            "create",
            "rolebinding",
            "read",
            "--role=pod-reader",
            "--serviceaccount=default:default",
        ],
        &[
            "create",
            "clusterrole",
            "node-reader",
            "--verb=get,list",
            "--resource=nodes",
        ],
        &[
            "create",
            "clusterrolebinding",
            "nodes",
            "--clusterrole=node-reader",
            "--serviceaccount=default:default",
        ],
    ] {
        let (code, _, err) = kubectl(&binary, &admin, args).await;
        assert_eq!(code, 0, "kubectl {args:?}: {err}");
    }
    let (code, out, err) = kubectl(
        &binary,
        &admin,
        &["get", "role", "pod-reader", "-o", "json"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let role: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(role["rules"][0]["apiGroups"], json!([""]));
    assert_eq!(role["rules"][0]["resources"], json!(["pods"]));
    let (code, _, err) = kubectl(&binary, &as_account, &["get", "pods"]).await;
    assert_eq!(code, 0, "the binding lets the account list pods: {err}");
    let (code, _, err) = kubectl(&binary, &as_account, &["get", "nodes"]).await;
    assert_eq!(code, 0, "the cluster binding lets it list nodes: {err}");
    let (code, out, _) = kubectl(&binary, &as_account, &["auth", "can-i", "create", "pods"]).await;
    assert_eq!((code, out.trim()), (1, "no"));

    // A new namespace gets its `default` too; deleted, it comes back (with a new UID), and the
    // old account's token is then refused.
    let (code, _, err) = kubectl(&binary, &admin, &["create", "namespace", "team"]).await;
    assert_eq!(code, 0, "{err}");
    let team = account(&client, "team", "default", None).await;
    let (code, team_token, err) = kubectl(
        &binary,
        &admin,
        &[
            "create",
            "token",
            "default",
            "-n",
            "team",
            "--duration",
            "10m",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let team_config = token_kubeconfig(dir.path(), &cluster.server_url, &ca, team_token.trim());
    assert_eq!(
        kubectl(&binary, &team_config, &["auth", "whoami"]).await.0,
        0
    );
    let (code, _, err) = kubectl(
        &binary,
        &admin,
        &["delete", "serviceaccount", "default", "-n", "team"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    account(&client, "team", "default", team.metadata.uid.as_deref()).await;
    let (code, _, err) = kubectl(&binary, &team_config, &["auth", "whoami"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("Unauthorized"), "{err}");

    // `kubectl get sa` prints the server's Table.
    let (code, out, err) = kubectl(&binary, &admin, &["get", "sa", "-n", "team"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("NAME") && out.contains("SECRETS") && out.contains("default"),
        "{out}"
    );

    // The kubernetes Service, its Endpoints (the apiserver) and the mirrored EndpointSlice.
    let (code, out, err) = kubectl(
        &binary,
        &admin,
        &["get", "service", "kubernetes", "-o", "json"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let service: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(service["spec"]["clusterIP"], "127.96.0.1");
    let port: u16 = cluster
        .server_url
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(service["spec"]["ports"][0]["targetPort"], port);
    let slices = Api::<minik_api::k8s_openapi::api::discovery::v1::EndpointSlice>::namespaced(
        client.clone(),
        "default",
    );
    let slice = tokio::time::timeout(TIMEOUT, await_condition(&slices, "kubernetes", |_| true))
        .await
        .expect("a slice for kubernetes")
        .expect("a slice for kubernetes");
    assert_eq!(slice.endpoints[0].addresses, ["127.0.0.1"]);
    assert_eq!(slice.ports.as_ref().unwrap()[0].port, Some(i32::from(port)));
    cluster.stop().await;
}
