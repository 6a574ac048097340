//! A secure cluster, attacked from outside: no certificate, a foreign CA, a narrow identity, the
//! kubelet's log endpoint, `minik proxy`'s Host filter, the modes of the data dir's files, and another
//! local user.
//!
//! Kubernetes counterpart: `test/e2e/auth/` (`node_authz.go`, the kubelet's `--anonymous-auth`
//! and webhook authorization checks in `test/e2e/node/kubelet_authz.go`) and kubectl proxy's
//! `proxy_server_test.go`. Each refusal is checked on what the caller sees: the code and the
//! message naming who, what and where.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use minik_api::core::{Node, Pod};
use minik_client::{Api, Client};
use minik_cluster::pki::{CertAndKey, Identity, Pki};
use minik_tests::fixtures::pod;
use minik_tests::up::{minik, Up};
use minik_tests::wait::eventually;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{one_node, run_pod, stop_clean};

/// An https client trusting `ca` only, presenting `identity` if given.
fn https(ca: &[u8], identity: Option<&CertAndKey>) -> reqwest::Client {
    let roots = reqwest::Certificate::from_pem_bundle(ca).expect("CA");
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .tls_certs_only(roots);
    if let Some(identity) = identity {
        let pem = format!("{}\n{}", identity.cert_pem, identity.key_pem);
        builder = builder.identity(reqwest::Identity::from_pem(pem.as_bytes()).expect("identity"));
    }
    builder.build().expect("client")
}

/// A minik client for `identity`, through a kubeconfig written for it.
fn client_as(cluster: &minik_tests::Cluster, identity: &Identity) -> Client {
    let pki = cluster.pki();
    pki.issue_client(identity).expect("issue certificate");
    let path = cluster.dir().join(format!("{}.kubeconfig", identity.name));
    pki.write_kubeconfig(identity, cluster.server_url(), &path)
        .expect("kubeconfig");
    Client::from_kubeconfig(&path).expect("client")
}

/// No certificate: 401 with a Status. A server CA the client does not trust, or a client
/// certificate the cluster's CA did not sign: no TLS session at all. A `view` binding lets a user
/// read and not write, and the 403 names the user, the verb, the resource and the namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_get_401_or_no_tls_and_a_viewer_cannot_create() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    let ca = std::fs::read(cluster.pki().ca_file()).unwrap();
    let pods_url = format!("{}/api/v1/namespaces/default/pods", cluster.server_url());

    let anonymous = https(&ca, None).get(&pods_url).send().await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    let status: Value = anonymous.json().await.unwrap();
    assert_eq!(
        (status["kind"].as_str(), status["reason"].as_str()),
        (Some("Status"), Some("Unauthorized"))
    );

    let elsewhere = tempfile::tempdir().unwrap();
    let foreign = Pki::ensure(elsewhere.path(), &[]).unwrap();
    let foreign_ca = std::fs::read(foreign.ca_file()).unwrap();
    let untrusted = https(&foreign_ca, None).get(&pods_url).send().await;
    let error = format!(
        "{:?}",
        untrusted.expect_err("a server signed by another CA")
    );
    assert!(
        error.contains("InvalidCertificate") || error.contains("UnknownIssuer"),
        "{error}"
    );
    let stranger = foreign.client(&Identity::admin()).unwrap();
    let refused = https(&ca, Some(&stranger)).get(&pods_url).send().await;
    assert!(
        refused.is_err(),
        "a certificate of another CA ends the handshake: {refused:?}"
    );

    let jane = client_as(&cluster, &Identity::user("jane", "jane", &[]));
    let pods: Api<Pod> = Api::namespaced(jane, "default");
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "jane-views", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}],
    });
    let path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
    let admin = cluster.client();
    admin
        .request_json(reqwest::Method::POST, path, Some(&binding))
        .await
        .expect("bind view");
    // The authorizer's cache follows the write; reads are allowed once it has.
    eventually("jane may list pods", Duration::from_secs(5), || async {
        pods.list(&Default::default()).await.ok()
    })
    .await
    .expect("view allows list");
    match pods.create(&pod("nope").build()).await {
        Err(minik_client::Error::Api(status)) => assert_eq!(
            (status.code, status.message.as_deref()),
            (
                Some(403),
                Some("pods is forbidden: User \"jane\" cannot create resource \"pods\" in API group \"\" in the namespace \"default\"")
            )
        ),
        other => panic!("view must not create: {other:?}"),
    }
    assert!(cluster.pods().get_opt("nope").await.unwrap().is_none());
    stop_clean(cluster).await;
}

/// The kubelet's log endpoint is TLS only: no certificate is 401, an identity the apiserver does
/// not allow `nodes/proxy` is 403 with upstream's words, the admin is served; and `logs` through
/// the apiserver works, which proves the apiserver presents its own kubelet-client certificate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubelet_serves_logs_only_to_callers_the_apiserver_authorizes() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    run_pod(&cluster, &pod("talker").port(8080).build()).await;
    let node = cluster.nodes().get("node-1").await.unwrap();
    let port = kubelet_port(&node);
    let url = format!("https://127.0.0.1:{port}/containerLogs/default/talker/app");
    let pki = cluster.pki();
    let ca = std::fs::read(pki.ca_file()).unwrap();

    let anonymous = https(&ca, None).get(&url).send().await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    let proxy = pki.client(&Identity::kube_proxy()).unwrap();
    let forbidden = https(&ca, Some(&proxy)).get(&url).send().await.unwrap();
    assert_eq!(forbidden.status().as_u16(), 403);
    assert_eq!(
        forbidden.text().await.unwrap().trim(),
        "Forbidden (user=system:kube-proxy, verb=get, resource=nodes, subresource(s)=[proxy])"
    );
    let admin = pki.client(&Identity::admin()).unwrap();
    let served = https(&ca, Some(&admin)).get(&url).send().await.unwrap();
    assert_eq!(served.status().as_u16(), 200);
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    let cleartext = plain
        .get(format!("http://127.0.0.1:{port}/healthz"))
        .send()
        .await;
    assert!(
        cleartext.map(|r| r.status().as_u16()).unwrap_or(0) != 200,
        "no plain http on the kubelet port"
    );

    let through_apiserver = cluster
        .client()
        .get_text("/api/v1/namespaces/default/pods/talker/log")
        .await;
    assert!(through_apiserver.is_ok(), "{through_apiserver:?}");
    stop_clean(cluster).await;
}

fn kubelet_port(node: &Node) -> i32 {
    node.status
        .as_ref()
        .and_then(|s| s.daemon_endpoints.as_ref())
        .and_then(|d| d.kubelet_endpoint.as_ref())
        .map(|e| e.port)
        .expect("kubelet port")
}

/// `minik proxy` serves plain http on loopback with the kubeconfig's credentials, and refuses a
/// foreign `Host` (DNS rebinding) and `exec` paths with kubectl proxy's 403.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minik_proxy_forwards_with_the_callers_credentials_and_filters_hosts() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    let mut child = tokio::process::Command::new(cluster.minik_binary())
        .args(["proxy", "--port", "0", "--kubeconfig"])
        .arg(cluster.kubeconfig())
        .env("KUBECONFIG", "/nonexistent")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start minik proxy");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("proxy started in time")
        .unwrap()
        .unwrap_or_default();
    let address = first
        .strip_prefix("Starting to serve on ")
        .unwrap_or_else(|| panic!("kubectl proxy's first line, got {first:?}"))
        .to_string();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let pods = format!("http://{address}/api/v1/namespaces/default/pods");

    let listed: Value = http.get(&pods).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["kind"], "PodList");
    let created = http
        .post(&pods)
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&pod("via-proxy").build()).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let rebound = http
        .get(&pods)
        .header("Host", "evil.example:8001")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 403);
    assert_eq!(rebound.text().await.unwrap(), "Forbidden\n");
    let exec = http
        .post(format!("{pods}/via-proxy/exec"))
        .send()
        .await
        .unwrap();
    assert_eq!(exec.status().as_u16(), 403);
    child.kill().await.unwrap();
    stop_clean(cluster).await;
}

/// Every file `minik up` creates in its data dir (database, keys, kubeconfigs, logs, pod logs)
/// is its owner's alone, nothing is merged into the user's kubeconfig unasked, and `minik get`
/// finds the running cluster's kubeconfig by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_file_in_the_data_dir_is_private_to_its_owner() {
    let _machine = crate::support::shared().await;
    let up = Up::start(1).await;
    let said = up.transcript.join("\n");
    assert!(
        said.contains(&up.kubeconfig().display().to_string()),
        "{said}"
    );
    let pods = up.pods();
    pods.create(&pod("private").port(8080).build())
        .await
        .unwrap();
    minik_tests::wait::wait_for(
        &pods,
        "private",
        minik_tests::wait::pod::is_running,
        crate::support::RUNNING,
    )
    .await
    .expect("Running");
    let data = Path::new(&up.data_dir()).to_path_buf();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&up.kubeconfig()), 0o600);
    let mut open = Vec::new();
    let mut seen = 0;
    walk(&data, &mut |path, meta| {
        seen += 1;
        // A pod's volume files keep the mode its spec asks for (`defaultMode`, upstream 0644):
        // the pod may rely on it, and the 0700 data dir above them keeps other users out.
        let in_pod_volume = path.components().any(|c| c.as_os_str() == "volumes");
        if meta.mode() & 0o077 != 0 && !in_pod_volume {
            open.push(format!("{:o} {}", meta.mode() & 0o777, path.display()));
        }
    });
    assert!(seen > 20, "the walk saw the cluster's files ({seen})");
    assert!(
        open.is_empty(),
        "readable or writable by others:\n{}",
        open.join("\n")
    );
    assert!(
        !data.join("untouched-kubeconfig").exists(),
        "$KUBECONFIG was left alone"
    );
    // With no flag and no $KUBECONFIG, the CLI finds the running cluster's own kubeconfig in
    // the default data dir ($XDG_DATA_HOME/minik, here a link to this cluster's).
    let xdg = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&data, xdg.path().join("minik")).unwrap();
    let listed = tokio::process::Command::new(minik_tests::cluster::minik_binary().unwrap())
        .args(["get", "pods"])
        .env("XDG_DATA_HOME", xdg.path())
        .env("HOME", xdg.path())
        .env_remove("KUBECONFIG")
        .env_remove("MINIK_SERVER")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success() && stdout.contains("private"),
        "{listed:?}"
    );
    up.down().await;
}

fn walk(dir: &Path, visit: &mut impl FnMut(&Path, &std::fs::Metadata)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue; // removed meanwhile
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        visit(&path, &meta);
        if meta.is_dir() {
            walk(&path, visit);
        }
    }
}

/// A data dir another user can write is refused with one line, before anything starts.
#[tokio::test]
async fn up_refuses_a_data_dir_others_can_write() {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("shared");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (ok, said) = minik(&[
        "up",
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ])
    .await;
    assert!(!ok, "{said}");
    let errors: Vec<&str> = said.lines().filter(|l| l.contains("✗")).collect();
    assert_eq!(errors.len(), 1, "{said}");
    assert!(
        errors[0].contains("is writable by other users (mode 777)"),
        "{said}"
    );
    assert!(
        std::fs::read_dir(&data).unwrap().next().is_none(),
        "nothing written"
    );
}

/// Another local user (here `nobody`, uid 65534) can neither read the admin kubeconfig nor write
/// through the API: the files are 0600 in a 0700 directory, and without a client certificate a
/// POST is a 401 and nothing is stored. Switching users needs root; elsewhere the test says so
/// and returns (the file modes themselves are checked above for every user).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_local_user_gets_401_and_cannot_read_the_kubeconfig() {
    // /proc/self belongs to the effective user.
    if std::fs::metadata("/proc/self").unwrap().uid() != 0 {
        eprintln!("skipped: acting as another local user needs root");
        return;
    }
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    let as_nobody = |args: &[&str]| {
        let mut command = std::process::Command::new("setpriv");
        command.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        command.args(args).stdin(Stdio::null()).output().unwrap()
    };
    let kubeconfig = cluster.kubeconfig();
    let read = as_nobody(&["cat", kubeconfig.to_str().unwrap()]);
    assert!(!read.status.success(), "nobody read the kubeconfig");
    assert!(String::from_utf8_lossy(&read.stderr).contains("Permission denied"));

    let url = format!("{}/api/v1/namespaces/default/pods", cluster.server_url());
    let body = serde_json::to_string(&pod("intruder").build()).unwrap();
    let post = as_nobody(&[
        "curl",
        "-sk",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-X",
        "POST",
        "-H",
        "Content-Type: application/json",
        "-d",
        &body,
        &url,
    ]);
    assert_eq!(String::from_utf8_lossy(&post.stdout), "401");
    assert!(cluster.pods().get_opt("intruder").await.unwrap().is_none());
    stop_clean(cluster).await;
}
