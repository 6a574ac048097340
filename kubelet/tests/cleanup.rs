//! What a deleted pod leaves behind on its node: nothing. A pod with a crash-looping container
//! (so that it has exited attempts and `previous` logs) and a long-running one is deleted; once
//! the object is gone, no directory of the pod or of its containers remains under the kubelet's
//! `root_dir` (`pods/{uid}`, `containers/{id}`, `logs/{ns}_{name}_{uid}`), its IP is free again,
//! and none of its processes runs or is a zombie.
//!
//! Kubernetes counterpart: the kubelet's `SyncTerminatedPod` + `HandlePodCleanups`
//! (`pkg/kubelet/kubelet.go`, `kubelet_pods.go`) and the container GC that removes a deleted
//! pod's containers and log directories (`pkg/kubelet/kuberuntime/kuberuntime_gc.go`).

mod cluster;

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod};
use minik_client::{Api, Client, DeleteParams, LogParams};
use minik_kubelet::network::IpAllocator;
use tokio_util::sync::CancellationToken;

use cluster::{kubelet_config, start_apiserver, wait_for, web_pod};

const CIDR: &str = "127.244.216.0/24";

/// The web pod plus a `crash` container that prints a line and exits 3 (restarted: Always).
fn leaky_pod() -> Pod {
    let mut pod = web_pod("leaky", 18_083);
    let spec = pod.spec.as_mut().expect("spec");
    spec.containers.push(Container {
        name: "crash".into(),
        image: Some("busybox".into()),
        command: Some(vec![
            "sh".into(),
            "-c".into(),
            "echo crash-run; exit 3".into(),
        ]),
        ..Default::default()
    });
    pod
}

fn restart_count(pod: &Pod, container: &str) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|all| all.iter().find(|c| c.name == container))
        .map_or(0, |c| c.restart_count)
}

fn web_running(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|all| all.iter().find(|c| c.name == "web"))
        .is_some_and(|c| c.ready)
}

/// The entries of `dir` whose name contains `needle`.
fn entries_with(dir: &Path, needle: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().contains(needle))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// The pids (container process and shim) recorded in each container directory.
fn recorded_pids(container_dirs: &[PathBuf]) -> Vec<u32> {
    let mut pids = Vec::new();
    for dir in container_dirs {
        let started =
            std::fs::read(dir.join(minik_kubelet::shim::STARTED_FILE)).unwrap_or_default();
        if let Ok(record) = serde_json::from_slice::<minik_kubelet::shim::StartedRecord>(&started) {
            pids.extend([record.pid, record.shim_pid]);
        }
    }
    pids
}

/// Alive or a zombie: `/proc/PID` still exists.
fn process_exists(pid: u32) -> bool {
    minik_kubelet::shim::proc_stat(pid).is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_pod_leaves_no_directory_process_or_ip_behind() {
    let dir = cluster::TestDir::new();
    let shutdown = CancellationToken::new();
    let (server, apiserver) = start_apiserver(&shutdown).await;
    let config = kubelet_config(&server, dir.path(), "node-clean", CIDR);
    let root = config.root_dir.clone();
    let token = shutdown.child_token();
    let kubelet = tokio::spawn(minik_kubelet::run(config, token.clone()));
    let client = Client::new(&server).expect("client");
    let pods: Api<Pod> = Api::namespaced(client, "default");

    let uid = pods
        .create(&leaky_pod())
        .await
        .expect("create")
        .metadata
        .uid
        .expect("uid");
    pods.bind("leaky", "node-clean").await.expect("bind");
    let crashed_twice = |pod: &Pod| web_running(pod) && restart_count(pod, "crash") >= 2;
    wait_for(&pods, "leaky", false, crashed_twice)
        .await
        .expect("web ready and crash restarted twice");

    // While the pod exists, the previous attempt's log is served.
    let previous = LogParams {
        container: Some("crash".into()),
        previous: true,
        ..Default::default()
    };
    let logs = pods.logs("leaky", &previous).await.expect("previous logs");
    assert!(logs.contains("crash-run"), "{logs:?}");

    // Sanity: the pod did leave things on disk that must go away.
    let containers = entries_with(&root.join("containers"), &uid);
    assert!(
        containers.len() >= 3,
        "web + two crash attempts: {containers:?}"
    );
    let pids = recorded_pids(&containers);
    assert!(!pids.is_empty());
    assert!(!entries_with(&root.join("logs"), &uid).is_empty());
    assert!(root.join("pods").join(&uid).exists());

    pods.delete("leaky", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(wait_for(&pods, "leaky", true, |_| false).await.is_none());

    let left: Vec<PathBuf> = [
        entries_with(&root.join("containers"), &uid),
        entries_with(&root.join("logs"), &uid),
        entries_with(&root.join("pods"), &uid),
    ]
    .concat();
    assert!(left.is_empty(), "left behind by the deleted pod: {left:?}");
    let running: Vec<u32> = pids.into_iter().filter(|p| process_exists(*p)).collect();
    assert!(
        running.is_empty(),
        "processes (or zombies) left: {running:?}"
    );

    token.cancel();
    kubelet.await.expect("kubelet task").expect("kubelet ran");
    let ips = IpAllocator::open(&root.join("network").join("allocations.json"), CIDR)
        .expect("allocations");
    assert_eq!(ips.get(&uid), None, "the pod's IP is released");
    shutdown.cancel();
    let _ = apiserver.await;
}
