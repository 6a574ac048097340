//! `minik get`: kubectl's columns, several kinds, output formats, and `-w`.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::{manifest, pod_yaml, Server};

/// `get pods` prints kubectl's header and one aligned row per pod.
#[tokio::test(flavor = "multi_thread")]
async fn get_pods_prints_kubectls_columns() {
    let server = Server::start().await;
    let (_dir, path) = manifest(&pod_yaml("web", "nginx"));
    server.minik(&["apply", "-f", &path]).await.ok();
    let out = server.minik(&["get", "pods"]).await.ok().to_string();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "NAME   READY   STATUS    RESTARTS   AGE");
    assert!(
        lines[1].starts_with("web    0/1     Pending   0          "),
        "{out}"
    );
    let wide = server
        .minik(&["get", "po", "web", "-o", "wide"])
        .await
        .ok()
        .to_string();
    assert!(wide.starts_with("NAME   READY   STATUS    RESTARTS   AGE   IP       NODE     NOMINATED NODE   READINESS GATES\n"), "{wide}");
    assert_eq!(
        server.minik(&["get", "pods", "-o", "name"]).await.ok(),
        "pod/web\n"
    );
    let json: serde_json::Value = serde_json::from_str(
        server
            .minik(&["get", "pod", "web", "-o", "json"])
            .await
            .ok(),
    )
    .unwrap();
    assert_eq!(json["kind"], "Pod");
    assert_eq!(json["metadata"]["name"], "web");
    let yaml = server
        .minik(&["get", "pods", "-o", "yaml"])
        .await
        .ok()
        .to_string();
    assert!(
        yaml.contains("kind: List") && yaml.contains("name: web"),
        "{yaml}"
    );
}

/// Several kinds: one table each, names prefixed with the kind, a blank line between.
#[tokio::test(flavor = "multi_thread")]
async fn get_several_kinds_prefixes_names() {
    let server = Server::start().await;
    let service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector:\n    app: web\n  ports:\n  - port: 80\n";
    let (_dir, path) = manifest(&format!("{service}---\n{}", pod_yaml("web", "nginx")));
    server.minik(&["apply", "-f", &path]).await.ok();
    let out = server.minik(&["get", "svc,pods"]).await.ok().to_string();
    let sections: Vec<&str> = out.split("\n\n").collect();
    assert_eq!(sections.len(), 2, "{out}");
    // `default` also holds the apiserver's own `kubernetes` Service, as upstream.
    assert!(
        sections[0].starts_with("NAME                 TYPE        CLUSTER-IP"),
        "{out}"
    );
    assert!(
        sections[0].contains("\nservice/kubernetes   ClusterIP   127.96.0.1 "),
        "{out}"
    );
    assert!(
        sections[0].contains("\nservice/web          ClusterIP   127.96."),
        "{out}"
    );
    assert!(sections[0].contains("80/TCP"), "{out}");
    assert!(sections[1].contains("\npod/web   0/1     Pending"), "{out}");
}

/// Nothing to show: kubectl's message on stderr, empty stdout, exit 0.
#[tokio::test(flavor = "multi_thread")]
async fn get_with_nothing_says_no_resources_found() {
    let server = Server::start().await;
    let run = server.minik(&["get", "pods"]).await;
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "No resources found in default namespace.\n")
    );
    let run = server
        .minik(&["get", "svc,endpoints", "-n", "kube-system"])
        .await;
    assert_eq!(run.stderr, "No resources found in kube-system namespace.\n");
    let run = server.minik(&["get", "pods", "-A"]).await;
    assert_eq!(run.stderr, "No resources found\n");
}

/// `get pods -w` prints the existing pods, then a row for each change as it happens.
#[tokio::test(flavor = "multi_thread")]
async fn get_watch_prints_rows_as_changes_arrive() {
    let server = Server::start().await;
    let (_dir, path) = manifest(&pod_yaml("first", "nginx"));
    server.minik(&["apply", "-f", &path]).await.ok();
    let mut child = server.command(&["get", "pods", "-w"]).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(next_line(&mut lines).await.starts_with("NAME"));
    assert!(next_line(&mut lines).await.starts_with("first "));
    std::fs::write(&path, pod_yaml("second", "nginx")).unwrap();
    server.minik(&["apply", "-f", &path]).await.ok();
    assert!(
        next_line(&mut lines).await.starts_with("second "),
        "the new pod appears on the watch"
    );
    child.kill().await.unwrap();
}

/// The next line of a child's output, within 10 s.
async fn next_line(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> String {
    tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("a line in time")
        .unwrap()
        .expect("output not ended")
}

/// `-A` puts NAMESPACE first; `--show-labels` adds LABELS last; `-l` filters.
#[tokio::test(flavor = "multi_thread")]
async fn all_namespaces_labels_and_selectors() {
    let server = Server::start().await;
    let (_dir, path) = manifest(&format!(
        "{}---\n{}",
        pod_yaml("a", "nginx"),
        pod_yaml("b", "nginx")
    ));
    server.minik(&["apply", "-f", &path]).await.ok();
    let out = server
        .minik(&["get", "pods", "-A", "--show-labels"])
        .await
        .ok()
        .to_string();
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("NAMESPACE   NAME   READY") && lines[0].ends_with("LABELS"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("default     a      0/1") && lines[1].ends_with("app=a"),
        "{out}"
    );
    let selected = server
        .minik(&["get", "pods", "-l", "app=b", "-o", "name"])
        .await;
    assert_eq!(selected.ok(), "pod/b\n");
}
