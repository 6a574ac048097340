//! kubectl 1.32, unmodified, forced onto plain SPDY/3.1 upgrades (issue 21), as older kubectl
//! and client-go's `remotecommand.NewSPDYExecutor` and `portforward` speak:
//! `KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false` (exec, cp, attach) and
//! `KUBECTL_PORT_FORWARD_WEBSOCKETS=false` (port-forward). exec with both outputs, with stdin
//! and with an exit code, cp both ways, and a port-forward carrying 1,000 requests.
//!
//! Kubernetes counterpart: `test/e2e/kubectl/kubectl.go` and `portforward.go` as they ran before
//! the WebSocket protocols (KEP-4006). The upgrade is `POST …/exec` with `Upgrade: SPDY/3.1` and
//! `X-Stream-Protocol-Version: v5.channel.k8s.io` (and older ones); the apiserver proxies it to
//! the kubelet, which answers `101` with the protocol it chose and serves one SPDY stream per
//! stdin, stdout, stderr, error and resize.

use std::process::Stdio;
use std::time::Instant;

use tokio::io::AsyncWriteExt;

use crate::kubectl_port_forward::{forward, load};
use crate::support::{cluster, kubectl_binary, running, stop_clean, Kubectl};

/// busybox sleeping, with an emptyDir at `/data` for `kubectl cp`.
const BOX_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: box\nspec:\n  \
    terminationGracePeriodSeconds: 1\n  volumes: [{name: data, emptyDir: {}}]\n  containers:\n  \
    - name: main\n    image: busybox\n    args: [sleep, \"3600\"]\n    \
    volumeMounts: [{name: data, mountPath: /data}]\n";

/// kubectl that speaks SPDY only: no WebSocket is tried, so a refused SPDY upgrade fails.
pub fn spdy_kubectl(kubectl: Kubectl) -> Kubectl {
    kubectl
        .with_env("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false")
        .with_env("KUBECTL_PORT_FORWARD_WEBSOCKETS", "false")
}

#[tokio::test]
async fn kubectl_over_plain_spdy_execs_copies_and_forwards() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = spdy_kubectl(Kubectl::new(binary, &cluster));
    let manifest = kubectl.manifest("box.yaml", BOX_YAML);
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    kubectl.apply_web_and_service("app: web").await;
    running(&cluster, "box").await;

    let both = kubectl
        .run(&["exec", "box", "--", "sh", "-c", "echo out; echo err >&2"])
        .await
        .success();
    assert_eq!((both.stdout.as_str(), both.stderr.trim()), ("out\n", "err"));
    let failed = kubectl
        .run(&["exec", "box", "--", "sh", "-c", "exit 3"])
        .await;
    assert_eq!(failed.code, 3, "{failed:#?}");

    let mut piped = kubectl.command(&["exec", "-i", "box", "--", "tr", "a-z", "A-Z"]);
    piped.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = piped.spawn().expect("kubectl exec -i");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello over spdy\n").await.unwrap();
    drop(stdin); // kubectl half-closes the stdin stream (a FIN), and `tr` sees its end
    let output = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("exec -i ends once stdin is closed")
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "HELLO OVER SPDY\n");

    let dir = tempfile::tempdir().unwrap();
    let content: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    let local = dir.path().join("in.txt");
    std::fs::write(&local, &content).unwrap();
    let started = Instant::now();
    kubectl
        .ok(&["cp", local.to_str().unwrap(), "box:/data/in.txt"])
        .await;
    let back = dir.path().join("back.txt");
    kubectl
        .ok(&["cp", "box:/data/in.txt", back.to_str().unwrap()])
        .await;
    assert_eq!(std::fs::read_to_string(&back).unwrap(), content);
    eprintln!(
        "kubectl cp over SPDY of {} bytes in and out: {:?}",
        content.len(),
        started.elapsed()
    );

    running(&cluster, "web").await;
    let (mut pod, port, line, _) = forward(&kubectl, "pod/web", 8080).await;
    assert!(line.ends_with("-> 8080"), "{line}");
    let rate = load(port).await;
    eprintln!("kubectl port-forward over SPDY: 1,000 requests, {rate:.0} req/s");
    pod.kill().await.unwrap();
    stop_clean(cluster).await;
}
