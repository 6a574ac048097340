//! kubectl 1.32, unmodified, streaming into pods (issue 21): `exec` with piped stdin, with a
//! terminal (`-it`, driven through `script`'s pty), the exit code carried back, `cp` in and out
//! (tar through exec), a caller without RBAC refused with 403, and a 404 that kubectl can read.
//!
//! Kubernetes counterpart: `test/e2e/kubectl/kubectl.go` ("should support exec", "should support
//! exec through an HTTP proxy", "kubectl cp"). The WebSocket (`v5.channel.k8s.io`) goes from
//! kubectl through the apiserver to the kubelet, which starts the command in the container.

use std::process::Stdio;
use std::time::{Duration, Instant};

use minik_cluster::pki::Identity;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::{cluster, kubectl_binary, running, stop_clean, Kubectl};

/// busybox sleeping, with an emptyDir at `/data` for `kubectl cp`.
const BOX_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: box\nspec:\n  \
    terminationGracePeriodSeconds: 1\n  volumes: [{name: data, emptyDir: {}}]\n  containers:\n  \
    - name: main\n    image: busybox\n    args: [sleep, \"3600\"]\n    \
    volumeMounts: [{name: data, mountPath: /data}]\n";

#[tokio::test]
async fn kubectl_exec_pipes_stdin_returns_exit_codes_and_serves_a_terminal() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary.clone(), &cluster);
    let manifest = kubectl.manifest("box.yaml", BOX_YAML);
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    running(&cluster, "box").await;

    let both = kubectl
        .run(&["exec", "box", "--", "sh", "-c", "echo out; echo err >&2"])
        .await
        .success();
    assert_eq!((both.stdout.as_str(), both.stderr.trim()), ("out\n", "err"));

    let mut piped = kubectl.command(&["exec", "-i", "box", "--", "tr", "a-z", "A-Z"]);
    piped.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = piped.spawn().expect("kubectl exec -i");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello from stdin\n").await.unwrap();
    drop(stdin); // kubectl sends the v5 close of stdin, and `tr` sees its end
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("exec -i ends once stdin is closed")
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "HELLO FROM STDIN\n"
    );

    let failed = kubectl
        .run(&["exec", "box", "--", "sh", "-c", "exit 3"])
        .await;
    assert_eq!(failed.code, 3, "{failed:#?}");
    let missing = kubectl.run(&["exec", "nope", "--", "true"]).await;
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains("pods \"nope\" not found"),
        "{missing:#?}"
    );

    // `-it` needs a terminal on kubectl's side: `script` gives it one.
    let line = format!(
        "{} --cache-dir {}/tty-cache exec -it box -- sh -c 'tty; echo term=$TERM'",
        binary.display(),
        kubectl.kubeconfig().parent().unwrap().display()
    );
    let tty = tokio::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("KUBECONFIG", kubectl.kubeconfig())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let tty = tokio::time::timeout(Duration::from_secs(30), tty)
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&tty.stdout);
    assert!(
        text.contains("/dev/pts/"),
        "the command runs on a terminal: {text}"
    );
    stop_clean(cluster).await;
}

#[tokio::test]
async fn kubectl_cp_copies_both_ways_and_strangers_may_not_exec() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary.clone(), &cluster);
    let manifest = kubectl.manifest("box.yaml", BOX_YAML);
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    running(&cluster, "box").await;

    let dir = tempfile::tempdir().unwrap();
    let content: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    let local = dir.path().join("in.txt");
    std::fs::write(&local, &content).unwrap();
    let started = Instant::now();
    kubectl
        .ok(&["cp", local.to_str().unwrap(), "box:/data/in.txt"])
        .await;
    let inside = kubectl
        .ok(&["exec", "box", "--", "wc", "-c", "/data/in.txt"])
        .await;
    assert_eq!(
        inside.split_whitespace().next(),
        Some(content.len().to_string().as_str())
    );
    let back = dir.path().join("back.txt");
    kubectl
        .ok(&["cp", "box:/data/in.txt", back.to_str().unwrap()])
        .await;
    assert_eq!(std::fs::read_to_string(&back).unwrap(), content);
    eprintln!(
        "kubectl cp of {} bytes in and out: {:?}",
        content.len(),
        started.elapsed()
    );

    // A user with a certificate and no binding: the 403 names what was refused.
    let pki = cluster.pki();
    let mallory = Identity::user("mallory", "mallory", &[]);
    pki.issue_client(&mallory).expect("certificate");
    let config = cluster.dir().join("mallory.kubeconfig");
    pki.write_kubeconfig(&mallory, cluster.server_url(), &config)
        .expect("kubeconfig");
    let refused = kubectl
        .command(&[
            "--kubeconfig",
            config.to_str().unwrap(),
            "exec",
            "box",
            "--",
            "true",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Forbidden") || stderr.contains("forbidden"),
        "{stderr}"
    );
    assert!(stderr.contains("mallory"), "{stderr}");
    stop_clean(cluster).await;
}

/// `attach` streams what the container prints from then on; `kubectl debug` of a missing pod reads
/// minik's 404 (which has `details`, as upstream's) instead of crashing (it once did).
#[tokio::test]
async fn kubectl_attach_follows_the_output_and_debug_reads_the_404() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let ticker = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ticker\nspec:\n  \
        terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox\n    \
        args: [sh, -c, 'i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done']\n";
    let manifest = kubectl.manifest("ticker.yaml", ticker);
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    running(&cluster, "ticker").await;

    let mut attach = kubectl.command(&["attach", "ticker"]);
    attach.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = attach.spawn().expect("kubectl attach");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ticks = Vec::new();
    while ticks.len() < 3 {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("attach prints the container's new lines")
            .unwrap()
            .expect("attach keeps streaming");
        ticks.push(line);
    }
    assert!(ticks.iter().all(|t| t.starts_with("tick ")), "{ticks:?}");
    child.kill().await.unwrap();

    let debug = kubectl.run(&["debug", "nope", "--image=busybox"]).await;
    assert_eq!(debug.code, 1, "{debug:#?}");
    assert!(
        debug.stderr.contains("pods \"nope\" not found"),
        "{debug:#?}"
    );
    assert!(!debug.stderr.contains("panic"), "{debug:#?}");
    stop_clean(cluster).await;
}
