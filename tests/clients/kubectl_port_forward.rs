//! kubectl 1.32, unmodified, `port-forward` (issue 21): `pod/x LOCAL:PORT` and `svc/x LOCAL:80`
//! each carrying 1,000 HTTP requests (one connection each, the requests per second printed), a
//! port with nothing listening reported on the error stream, and a user who may read pods but not
//! forward to them refused with 403.
//!
//! Kubernetes counterpart: `test/e2e/kubectl/portforward.go` ("should support a client that
//! connects, sends DATA, and disconnects"). kubectl opens a WebSocket with the subprotocol
//! `SPDY/3.1+portforward.k8s.io`; the apiserver proxies it to the kubelet, which speaks SPDY
//! inside it and splices each connection's data stream to `POD_IP:PORT`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::StreamExt;
use minik_cluster::pki::Identity;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Child;

use crate::support::{cluster, kubectl_binary, running, stop_clean, Kubectl};

/// A Role that may read pods (not `pods/portforward`), bound to mallory (applied as YAML:
/// `kubectl create role` sends protobuf, which minik refuses for Roles).
const READER_YAML: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  \
    name: reader\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get, list]\n---\n\
    apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: reader\n\
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}\n\
    subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: mallory}]\n";

/// Requests sent through each forward.
const REQUESTS: usize = 1_000;
/// How many connections are open at once.
const PARALLEL: usize = 8;
/// How long kubectl may take to print its `Forwarding from` line.
const READY: Duration = Duration::from_secs(30);

/// A free port on 127.0.0.1 (the kernel's choice; released for kubectl to bind).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().unwrap().port()
}

/// `kubectl port-forward --address 127.0.0.1 TARGET LOCAL:REMOTE`, once it is listening (its
/// `Forwarding from` line is returned); its stderr lines are collected in the returned channel.
pub(crate) async fn forward(
    kubectl: &Kubectl,
    target: &str,
    remote: u16,
) -> (
    Child,
    u16,
    String,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let local = free_port();
    let ports = format!("{local}:{remote}");
    let mut command = kubectl.command(&["port-forward", "--address", "127.0.0.1", target, &ports]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("kubectl port-forward");
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(READY, async {
        while let Some(line) = stdout.next_line().await.unwrap() {
            if line.starts_with("Forwarding from 127.0.0.1") {
                return line;
            }
        }
        panic!("kubectl port-forward {target} ended before listening");
    });
    let line = ready.await.expect("kubectl port-forward listens");
    // Keep draining: kubectl prints "Handling connection for N" per connection.
    tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            let _ = tx.send(line);
        }
    });
    (child, local, line, rx)
}

/// One HTTP/1.1 request on its own connection; the whole answer.
async fn get(port: u16) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: web\r\nConnection: close\r\n\r\n")
        .await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// Sends [`REQUESTS`] requests, [`PARALLEL`] at a time; returns the requests per second.
pub(crate) async fn load(port: u16) -> f64 {
    let started = Instant::now();
    let answers: Vec<_> = futures::stream::iter(0..REQUESTS)
        .map(|_| get(port))
        .buffer_unordered(PARALLEL)
        .collect()
        .await;
    let elapsed = started.elapsed();
    let failed: Vec<_> = answers
        .iter()
        .filter(|a| !matches!(a, Ok(text) if text.starts_with("HTTP/1.1 200 OK")))
        .collect();
    let shown = &failed[..failed.len().min(3)];
    assert!(
        failed.is_empty(),
        "{} of {REQUESTS} failed: {shown:?}",
        failed.len()
    );
    REQUESTS as f64 / elapsed.as_secs_f64()
}

#[tokio::test]
async fn kubectl_port_forward_carries_a_thousand_requests_to_a_pod_and_a_service() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    kubectl.apply_web_and_service("app: web").await;
    running(&cluster, "web").await;

    let (mut pod, port, line, _) = forward(&kubectl, "pod/web", 8080).await;
    assert!(line.ends_with("-> 8080"), "{line}");
    let rate = load(port).await;
    eprintln!(
        "kubectl port-forward pod/web: {REQUESTS} requests, {rate:.0} req/s ({PARALLEL} at a time)"
    );
    pod.kill().await.unwrap();

    // svc/web: kubectl picks a pod behind the Service and maps port 80 to its targetPort 8080.
    let (mut service, port, line, _) = forward(&kubectl, "svc/web", 80).await;
    assert!(
        line.ends_with("-> 8080"),
        "the Service's targetPort: {line}"
    );
    let rate = load(port).await;
    eprintln!(
        "kubectl port-forward svc/web: {REQUESTS} requests, {rate:.0} req/s ({PARALLEL} at a time)"
    );
    service.kill().await.unwrap();
    stop_clean(cluster).await;
}

#[tokio::test]
async fn kubectl_port_forward_reports_a_closed_port_and_strangers_are_refused() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary.clone(), &cluster);
    kubectl.apply_web_and_service("app: web").await;
    running(&cluster, "web").await;

    // Nothing listens on 81: the kubelet's message comes back on the error stream.
    let (mut closed, port, _, mut stderr) = forward(&kubectl, "pod/web", 81).await;
    let answer = get(port).await.unwrap_or_default();
    assert_eq!(answer, "", "nothing answers on a closed port");
    let reported = tokio::time::timeout(READY, async {
        while let Some(line) = stderr.recv().await {
            if line.contains("error forwarding port 81 to pod web") {
                return line;
            }
        }
        panic!("kubectl ended without reporting the error");
    });
    let line = reported.await.expect("kubectl reports the error");
    assert!(line.to_lowercase().contains("connection refused"), "{line}");
    // Since kubectl 1.23 (kubernetes#103526) an error on the error stream closes the whole
    // forward, so kubectl exits ("lost connection to pod") rather than serving a broken tunnel.
    let ended = tokio::time::timeout(READY, closed.wait()).await;
    let status = ended.expect("kubectl ends after the error").unwrap();
    assert_eq!(status.code(), Some(1));
    let lost = tokio::time::timeout(READY, stderr.recv()).await.unwrap();
    assert_eq!(lost.as_deref(), Some("error: lost connection to pod"));

    // May read pods, may not forward to them: the 403 is the subresource's.
    let pki = cluster.pki();
    let mallory = Identity::user("mallory", "mallory", &[]);
    pki.issue_client(&mallory).expect("certificate");
    let config = cluster.dir().join("mallory.kubeconfig");
    pki.write_kubeconfig(&mallory, cluster.server_url(), &config)
        .expect("kubeconfig");
    let rbac = kubectl.manifest("reader.yaml", READER_YAML);
    kubectl.ok(&["apply", "-f", rbac.to_str().unwrap()]).await;
    let target = format!("{}:8080", free_port());
    let refused = kubectl
        .command(&[
            "--kubeconfig",
            config.to_str().unwrap(),
            "port-forward",
            "--address",
            "127.0.0.1",
            "pod/web",
            &target,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output();
    let refused = tokio::time::timeout(READY, refused).await.unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.to_lowercase().contains("forbidden"), "{stderr}");
    stop_clean(cluster).await;
}
