//! kube-rs 5 (`kube` with its own client and `kube::runtime::watcher`), unmodified, against minik.
//!
//! The client is built from the kubeconfig the cluster wrote, the same file kubectl reads. The watcher is run in
//! both of its modes: the default list-then-watch, and `streaming_lists()` (a watch with
//! `sendInitialEvents=true` that only reports `InitDone` after the server's bookmark annotated
//! `k8s.io/initial-events-end`, docs/real-clients.md#kube-rs).

use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Config};
use minik_api::core::Pod;
use serde_json::json;

use crate::support::{cluster, stop_clean, Kubectl, RUNNING};

/// A kube-rs client from the cluster's written kubeconfig alone (CA, admin certificate).
async fn kube_client(cluster: &minik_tests::Cluster) -> (Client, Kubectl) {
    let files = Kubectl::new("kubectl".into(), cluster);
    let kubeconfig = Kubeconfig::read_from(files.kubeconfig()).expect("read kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube config");
    (Client::try_from(config).expect("kube client"), files)
}

fn web_pod(name: &str, app: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"terminationGracePeriodSeconds": 5, "containers": [{"name": "web", "image": "nginx",
                 "env": [{"name": "PORT", "value": "8080"}], "ports": [{"containerPort": 8080}]}]}
    }))
    .expect("pod JSON")
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

#[tokio::test]
async fn kube_rs_api_creates_gets_lists_and_deletes_a_pod() {
    let cluster = cluster().await;
    let (client, _files) = kube_client(&cluster).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");

    let created = pods
        .create(&PostParams::default(), &web_pod("rs-web", "rs"))
        .await
        .expect("create");
    assert!(created.metadata.uid.is_some() && created.metadata.resource_version.is_some());
    match pods
        .create(&PostParams::default(), &web_pod("rs-web", "rs"))
        .await
    {
        Err(kube::Error::Api(status)) => assert_eq!(
            (status.code, status.reason.as_str()),
            (409, "AlreadyExists")
        ),
        other => panic!("a duplicate create must be 409 AlreadyExists, got {other:?}"),
    }
    assert_eq!(
        pods.get("rs-web")
            .await
            .expect("get")
            .metadata
            .name
            .as_deref(),
        Some("rs-web")
    );
    assert!(pods.get_opt("nope").await.expect("get_opt").is_none());
    match pods.get("nope").await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"))
        }
        other => panic!("get of a missing pod must be 404 NotFound, got {other:?}"),
    }
    let listed = pods
        .list(&ListParams::default().labels("app=rs"))
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 1);
    assert!(listed
        .metadata
        .resource_version
        .is_some_and(|rv| !rv.is_empty()));

    let deleted = pods
        .delete("rs-web", &DeleteParams::default().grace_period(1))
        .await
        .expect("delete");
    assert!(deleted.is_left(), "a graceful delete returns the pod");
    stop_clean(cluster).await;
}

/// Reads watcher events until `done` holds for one, failing after `RUNNING`.
async fn until<S>(
    events: &mut S,
    what: &str,
    mut done: impl FnMut(&Event<Pod>) -> bool,
) -> Vec<String>
where
    S: Stream<Item = Result<Event<Pod>, watcher::Error>> + Unpin,
{
    let mut seen = Vec::new();
    let found = tokio::time::timeout(RUNNING, async {
        while let Some(event) = events.next().await {
            let event = event.expect("watcher error");
            seen.push(describe(&event));
            if done(&event) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        found,
        Ok(true),
        "waiting for {what}, the watcher gave {seen:?}"
    );
    seen
}

fn describe(event: &Event<Pod>) -> String {
    match event {
        Event::Init => "Init".into(),
        Event::InitDone => "InitDone".into(),
        Event::InitApply(pod) => {
            format!("InitApply({})", pod.metadata.name.as_deref().unwrap_or(""))
        }
        Event::Apply(pod) => format!(
            "Apply({} {})",
            pod.metadata.name.as_deref().unwrap_or(""),
            phase(pod)
        ),
        Event::Delete(pod) => format!("Delete({})", pod.metadata.name.as_deref().unwrap_or("")),
    }
}

async fn follow_a_pod(pods: &Api<Pod>, config: watcher::Config, name: &str, app: &str) {
    let mut events = watcher::watcher(pods.clone(), config.labels(&format!("app={app}"))).boxed();
    until(&mut events, "InitDone", |e| matches!(e, Event::InitDone)).await;
    pods.create(&PostParams::default(), &web_pod(name, app))
        .await
        .expect("create");
    until(
        &mut events,
        "Running",
        |e| matches!(e, Event::Apply(p) if phase(p) == "Running"),
    )
    .await;
    pods.delete(name, &DeleteParams::default().grace_period(1))
        .await
        .expect("delete");
    until(&mut events, "Delete", |e| matches!(e, Event::Delete(_))).await;
}

#[tokio::test]
async fn kube_rs_watcher_follows_a_pod_to_running_and_deletion_in_both_modes() {
    let cluster = cluster().await;
    let (client, _files) = kube_client(&cluster).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let run = async {
        follow_a_pod(&pods, watcher::Config::default(), "rs-listed", "rs-listed").await;
        follow_a_pod(
            &pods,
            watcher::Config::default().streaming_lists(),
            "rs-streamed",
            "rs-streamed",
        )
        .await;
    };
    tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("watchers finished in time");
    stop_clean(cluster).await;
}
