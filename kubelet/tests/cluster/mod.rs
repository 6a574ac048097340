//! Helpers shared by the kubelet's end-to-end tests (`lifecycle.rs`, `cleanup.rs`): an in-process
//! apiserver on 127.0.0.1:0 over memory storage, a kubelet config with fast timings, a `web` pod
//! and a watch-based wait for a pod's state.
//!
//! Each test binary includes this module (`mod cluster;`) and uses only part of it.

#![allow(dead_code)]

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Event as CoreEvent, HTTPGetAction, Pod, PodSpec, Probe,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use minik_client::{watcher, Api, Client, Event, ListParams};
use tokio_util::sync::CancellationToken;

/// Every wait is bounded by this.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A `web` pod (the built-in image) serving on `port`, Ready once it answers HTTP.
pub fn web_pod(name: &str, port: i32) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "web".into(),
                image: Some("nginx".into()),
                ports: Some(vec![ContainerPort {
                    container_port: port,
                    ..Default::default()
                }]),
                // Ready only once it serves, so the tests never signal a half-started process.
                readiness_probe: Some(Probe {
                    http_get: Some(HTTPGetAction {
                        path: Some("/".into()),
                        port: IntOrString::Int(port),
                        ..Default::default()
                    }),
                    period_seconds: Some(1),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            termination_grace_period_seconds: Some(5),
            ..Default::default()
        }),
        status: None,
    }
}

/// Waits on a watch of `name` until `check` holds for it (or it is deleted, when `deleted`).
pub async fn wait_for(
    pods: &Api<Pod>,
    name: &str,
    deleted: bool,
    check: impl Fn(&Pod) -> bool,
) -> Option<Pod> {
    let lp = ListParams::default().fields(&format!("metadata.name={name}"));
    let stream = watcher(pods.clone(), lp);
    tokio::pin!(stream);
    let wait = async {
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Applied(pod)) if !deleted && check(&pod) => return Some(pod),
                Ok(Event::Restarted(list)) => {
                    if let Some(pod) = list.iter().find(|p| check(p)).filter(|_| !deleted) {
                        return Some(pod.clone());
                    }
                    if deleted && list.is_empty() {
                        return None;
                    }
                }
                Ok(Event::Deleted(_)) if deleted => return None,
                _ => {}
            }
        }
        None
    };
    tokio::time::timeout(TIMEOUT, wait)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for pod {name}"))
}

/// A kubelet config with fast timings, its state under `dir`.
pub fn kubelet_config(
    server: &str,
    dir: &std::path::Path,
    node: &str,
    cidr: &str,
) -> minik_kubelet::Config {
    minik_kubelet::Config {
        server: server.to_string(),
        kubeconfig: None,
        node_name: node.into(),
        root_dir: dir.join("kubelet"),
        pod_cidr: cidr.into(),
        listen: "127.0.0.1:0".parse().expect("addr"),
        tls: None,
        minik_binary: env!("CARGO_BIN_EXE_minik-kubelet").into(),
        capacity: minik_kubelet::Capacity::default(),
        heartbeat_interval: Duration::from_secs(1),
        backoff_base: Duration::from_millis(200),
        backoff_max: Duration::from_secs(2),
        pod_pids_limit: minik_kubelet::pids::DEFAULT_POD_PIDS_LIMIT,
        cluster_dns: Vec::new(),
        cluster_domain: "cluster.local".into(),
        node_labels: Default::default(),
    }
}

/// An apiserver on 127.0.0.1:0 over memory storage; returns its URL.
pub async fn start_apiserver(
    shutdown: &CancellationToken,
) -> (String, tokio::task::JoinHandle<minik_apiserver::Result<()>>) {
    let backend = minik_apiserver::StorageBackend::memory(10_000);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let server = format!("http://{}", listener.local_addr().expect("addr"));
    (
        server,
        tokio::spawn(minik_apiserver::serve(
            listener,
            backend,
            shutdown.child_token(),
        )),
    )
}

/// The reasons of the events about the pod with `uid`.
pub async fn pod_event_reasons(client: &Client, uid: &str) -> Vec<(String, String)> {
    let events: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let list = events.list(&ListParams::default()).await.expect("events");
    list.items
        .iter()
        .filter(|e| e.involved_object.uid.as_deref() == Some(uid))
        .map(|e| {
            (
                e.reason.clone().unwrap_or_default(),
                e.message.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// Running with the Ready condition True.
pub fn is_running(pod: &Pod) -> bool {
    let status = pod.status.clone().unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    status.phase.as_deref() == Some("Running") && ready
}

/// A test's state directory. The kubelet leaves pods running when it stops (as the real one
/// does), so a test that fails before deleting its pods would leave their processes behind:
/// dropping this guard — on success or on a panic — kills every container recorded under it,
/// whose shim then reaps the rest, and removes the directory.
pub struct TestDir {
    dir: tempfile::TempDir,
}

impl TestDir {
    /// A fresh temporary directory.
    pub fn new() -> TestDir {
        TestDir {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// Its path.
    pub fn path(&self) -> &std::path::Path {
        self.dir.path()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let containers = self.dir.path().join("kubelet").join("containers");
        let Ok(entries) = std::fs::read_dir(containers) else {
            return;
        };
        for entry in entries.flatten() {
            let started = entry.path().join(minik_kubelet::shim::STARTED_FILE);
            let Some(pid) = std::fs::read(started).ok().and_then(|bytes| {
                serde_json::from_slice::<minik_kubelet::shim::StartedRecord>(&bytes).ok()
            }) else {
                continue;
            };
            let pid = pid.pid as i32;
            // The container is its own process group; an exited one is simply not found.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}
