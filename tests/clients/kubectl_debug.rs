//! kubectl 1.32, unmodified, debugging a running pod (issue 21): `kubectl debug` adds an
//! ephemeral container (a strategic-merge PATCH of `pods/ephemeralcontainers`) that runs next to
//! the target and whose log is read; `debug -it` runs a shell fed from kubectl's stdin; `attach
//! -i` writes into a `cat` container's stdin; an invalid ephemeral container is a 422.
//!
//! Kubernetes counterpart: `test/e2e/common/node/ephemeral_containers.go` ("will start an
//! ephemeral container in an existing pod") and `test/e2e/kubectl/kubectl.go` ("should support
//! inline execution and attach").

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::support::{cluster, kubectl_binary, running, stop_clean, Kubectl};

/// busybox sleeping, with an emptyDir at `/data` that a debugger targeting it sees.
const TARGET_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: target\nspec:\n  \
    terminationGracePeriodSeconds: 1\n  volumes: [{name: data, emptyDir: {}}]\n  containers:\n  \
    - name: main\n    image: busybox\n    args: [sleep, \"3600\"]\n    \
    volumeMounts: [{name: data, mountPath: /data}]\n";

/// `cat` reading its stdin once: it ends when the first attach session closes its stdin.
const CAT_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: cat\nspec:\n  \
    restartPolicy: Never\n  terminationGracePeriodSeconds: 1\n  containers:\n  \
    - name: main\n    image: busybox\n    command: [cat]\n    stdin: true\n    stdinOnce: true\n";

async fn pod_json(kubectl: &Kubectl, name: &str) -> Value {
    let out = kubectl.ok(&["get", "pod", name, "-o", "json"]).await;
    serde_json::from_str(&out).expect("pod JSON")
}

/// Polls `kubectl logs POD -c CONTAINER` until it contains `text`.
async fn logs_contain(kubectl: &Kubectl, pod: &str, container: &str, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let logs = kubectl.run(&["logs", pod, "-c", container]).await;
        if logs.stdout.contains(text) {
            return logs.stdout;
        }
        assert!(
            Instant::now() < deadline,
            "no {text:?} in the log: {logs:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn kubectl_debug_adds_an_ephemeral_container_whose_output_is_read() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let manifest = kubectl.manifest("target.yaml", TARGET_YAML);
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    running(&cluster, "target").await;

    let debug = kubectl
        .run(&[
            "debug",
            "target",
            "--image=busybox",
            "--",
            "sh",
            "-c",
            "echo hi from the debugger",
        ])
        .await
        .success();
    // kubectl names it: "Defaulting debug container name to debugger-xxxxx."
    let said = format!("{}{}", debug.stdout, debug.stderr);
    let name = said
        .split_whitespace()
        .find(|w| w.starts_with("debugger-"))
        .map(|w| w.trim_end_matches('.').to_string())
        .unwrap_or_else(|| panic!("no debugger name in {debug:#?}"));
    logs_contain(&kubectl, "target", &name, "hi from the debugger").await;

    let pod = pod_json(&kubectl, "target").await;
    assert_eq!(pod["spec"]["ephemeralContainers"][0]["name"], name.as_str());
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut pod = pod;
    while pod["status"]["ephemeralContainerStatuses"][0]["state"]["terminated"].is_null() {
        assert!(
            Instant::now() < deadline,
            "not reported terminated: {pod:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        pod = pod_json(&kubectl, "target").await;
    }
    let status = &pod["status"]["ephemeralContainerStatuses"][0];
    assert_eq!(status["state"]["terminated"]["exitCode"], 0, "{pod:#}");
    assert_eq!(status["restartCount"], 0);
    // The pod itself is untouched: its container still runs, never restarted.
    let main = &pod["status"]["containerStatuses"][0];
    assert!(main["state"]["running"].is_object(), "{pod:#}");
    assert_eq!(main["restartCount"], 0);

    // An ephemeral container may not be changed, nor have ports: 422 with the field paths.
    let mut changed = pod.clone();
    // Unconditional (pods allow it): a status write meanwhile must not turn the 422 into a 409.
    changed["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    changed["spec"]["ephemeralContainers"][0]["image"] = "alpine".into();
    let ports =
        serde_json::json!({"name": "web", "image": "busybox", "ports": [{"containerPort": 80}]});
    changed["spec"]["ephemeralContainers"]
        .as_array_mut()
        .unwrap()
        .push(ports);
    let body = kubectl.manifest("changed.json", &changed.to_string());
    let url = "/api/v1/namespaces/default/pods/target/ephemeralcontainers";
    let refused = kubectl
        .run(&["replace", "--raw", url, "-f", body.to_str().unwrap()])
        .await;
    assert_eq!(refused.code, 1, "{refused:#?}");
    let text = format!("{}{}", refused.stdout, refused.stderr);
    assert!(text.contains("may not be changed"), "{text}");
    assert!(text.contains("spec.ephemeralContainers[1].ports"), "{text}");
    stop_clean(cluster).await;
}

#[tokio::test]
async fn kubectl_debug_it_runs_a_shell_in_the_targets_world_and_attach_i_feeds_stdin() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    for (file, yaml) in [("target.yaml", TARGET_YAML), ("cat.yaml", CAT_YAML)] {
        let manifest = kubectl.manifest(file, yaml);
        kubectl
            .ok(&["apply", "-f", manifest.to_str().unwrap()])
            .await;
    }
    running(&cluster, "target").await;
    running(&cluster, "cat").await;
    kubectl
        .ok(&[
            "exec",
            "target",
            "--",
            "sh",
            "-c",
            "echo left by main > /data/note",
        ])
        .await;

    // `-it` with a pipe for stdin: kubectl says it cannot use a TTY and attaches with stdin.
    let args = [
        "debug",
        "target",
        "-it",
        "--image=busybox",
        "--target=main",
        "-c",
        "shell",
        "--",
        "sh",
    ];
    let mut debug = kubectl.command(&args);
    debug
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = debug.spawn().expect("kubectl debug -it");
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"echo shell says hi; cat /data/note; exit 0\n")
        .await
        .unwrap();
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("debug -it ends when the shell exits")
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(
        out.contains("shell says hi"),
        "stdout {out:?} stderr {err:?}"
    );
    assert!(
        out.contains("left by main"),
        "stdout {out:?} stderr {err:?}"
    );
    drop(stdin);

    let mut attach = kubectl.command(&["attach", "-i", "cat"]);
    attach.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = attach.spawn().expect("kubectl attach -i");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello through attach\n").await.unwrap();
    drop(stdin); // the session's stdin ends: `stdinOnce` closes cat's, and cat exits
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("attach -i ends when cat exits")
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "hello through attach"
    );
    stop_clean(cluster).await;
}
