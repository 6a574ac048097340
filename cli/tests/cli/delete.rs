//! `minik delete`: the printed lines, force deletion, and waiting for a graceful deletion to finish.

use std::time::Duration;

use futures::StreamExt;
use minik_api::core::Pod;
use minik_api::WatchEvent;
use minik_client::{Api, DeleteParams, ListParams};

use crate::{manifest, pod_yaml, Server};

/// An unscheduled pod is removed at once: `pod "web" deleted`, and it is gone.
#[tokio::test(flavor = "multi_thread")]
async fn delete_prints_deleted_and_the_pod_is_gone() {
    let server = Server::start().await;
    let (_dir, path) = manifest(&pod_yaml("web", "nginx"));
    server.minik(&["apply", "-f", &path]).await.ok();
    assert_eq!(
        server.minik(&["delete", "pod", "web"]).await.ok(),
        "pod \"web\" deleted\n"
    );
    let run = server.minik(&["get", "pod", "web"]).await;
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (1, "Error from server (NotFound): pods \"web\" not found\n")
    );
}

/// `--grace-period=0 --force` warns on stderr and says `force deleted`.
#[tokio::test(flavor = "multi_thread")]
async fn force_delete_warns_and_says_force_deleted() {
    let server = Server::start().await;
    let (_dir, path) = manifest(&pod_yaml("web", "nginx"));
    server.minik(&["apply", "-f", &path]).await.ok();
    let run = server
        .minik(&["delete", "pod", "web", "--grace-period=0", "--force"])
        .await;
    assert_eq!(run.ok(), "pod \"web\" force deleted\n");
    assert!(
        run.stderr
            .starts_with("Warning: Immediate deletion does not wait for confirmation"),
        "{run:?}"
    );
}

/// A bound pod's delete only marks it Terminating; `minik delete` returns once the kubelet (played
/// here by the test) removes it, having waited on a watch.
#[tokio::test(flavor = "multi_thread")]
async fn delete_waits_until_a_terminating_pod_is_gone() {
    let server = Server::start().await;
    let (_dir, path) = manifest(&pod_yaml("web", "nginx"));
    server.minik(&["apply", "-f", &path]).await.ok();
    let pods: Api<Pod> = Api::namespaced(server.client.clone(), "default");
    pods.bind("web", "node-1").await.unwrap();
    let list = pods.list(&ListParams::default()).await.unwrap();
    let mut events = pods
        .watch(
            &ListParams::default(),
            list.metadata.resource_version.as_deref().unwrap(),
        )
        .await
        .unwrap();
    let mut child = server.command(&["delete", "pod", "web"]).spawn().unwrap();
    // Wait for the graceful deletion to be recorded (deletionTimestamp set).
    let uid = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(Ok(WatchEvent::Modified(pod))) = events.next().await {
                if pod.metadata.deletion_timestamp.is_some() {
                    return pod.metadata.uid.unwrap();
                }
            }
        }
    })
    .await
    .expect("the pod became Terminating");
    let still_waiting = tokio::time::timeout(Duration::from_millis(300), child.wait()).await;
    assert!(
        still_waiting.is_err(),
        "minik delete returned before the pod was gone"
    );
    pods.delete("web", &DeleteParams::grace(0).with_uid(&uid))
        .await
        .unwrap();
    let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "pod \"web\" deleted\n"
    );
    assert!(output.status.success());
}

/// `--wait=false` returns right after the DELETE, leaving the pod Terminating.
#[tokio::test(flavor = "multi_thread")]
async fn delete_without_wait_returns_at_once() {
    let server = Server::start().await;
    let (_dir, path) = manifest(&pod_yaml("web", "nginx"));
    server.minik(&["apply", "-f", &path]).await.ok();
    let pods: Api<Pod> = Api::namespaced(server.client.clone(), "default");
    pods.bind("web", "node-1").await.unwrap();
    assert_eq!(
        server
            .minik(&["delete", "pod", "web", "--wait=false"])
            .await
            .ok(),
        "pod \"web\" deleted\n"
    );
    let out = server.minik(&["get", "pods"]).await.ok().to_string();
    assert!(out.contains("Terminating"), "{out}");
}

/// `delete -f` deletes every object of a manifest, each in its own namespace.
#[tokio::test(flavor = "multi_thread")]
async fn delete_from_a_manifest_deletes_each_object() {
    let server = Server::start().await;
    let service =
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: websvc\nspec:\n  ports:\n  - port: 80\n";
    let (_dir, path) = manifest(&format!("{service}---\n{}", pod_yaml("web", "nginx")));
    server.minik(&["apply", "-f", &path]).await.ok();
    let run = server.minik(&["delete", "-f", &path, "--wait=false"]).await;
    assert_eq!(
        run.ok(),
        "service \"websvc\" deleted\npod \"web\" deleted\n"
    );
}
