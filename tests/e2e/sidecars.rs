//! Native sidecars (issue 18): an init container with `restartPolicy: Always` starts before the
//! next init container, keeps running after it, is restarted when it dies, counts for READY, and
//! on deletion stops only after the main container has exited.
//!
//! Kubernetes counterpart: `test/e2e_node/container_lifecycle_test.go` (restartable init
//! containers) and https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/.

use std::time::Duration;

use minik_api::core::Pod;
use minik_client::DeleteParams;
use minik_tests::procs;
use minik_tests::wait::{eventually, pod as p, wait_for};
use serde_json::json;

use crate::support::{container_logs, event_time, one_node, stop_clean, RUNNING};

fn init_status<'a>(pod: &'a Pod, name: &str) -> &'a minik_api::core::ContainerStatus {
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.init_container_statuses.as_ref());
    statuses
        .into_iter()
        .flatten()
        .find(|s| s.name == name)
        .expect("init status")
}

async fn process(cluster: &minik_tests::Cluster, marker: &str) -> procs::ProcInfo {
    eventually(&format!("a process running {marker}"), RUNNING, || {
        let found = cluster
            .pod_processes("with-sidecar")
            .into_iter()
            .find(|p| p.cmdline.contains(marker));
        async move { found }
    })
    .await
    .expect("process")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sidecar_outlives_its_init_peers_restarts_and_stops_last() {
    let _machine = crate::support::exclusive().await;
    let cluster = one_node().await;
    let pod: Pod = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "with-sidecar"},
        "spec": {"terminationGracePeriodSeconds": 10,
            "initContainers": [
                {"name": "logger", "image": "minik/sleep", "restartPolicy": "Always"},
                {"name": "setup", "image": "busybox", "args": ["sh", "-c", "exit 0"]}],
            "containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 8080}],
                "env": [{"name": "MINIK_ON_SIGTERM", "value": "drain:1000"}]}]}}))
    .unwrap();
    cluster.pods().create(&pod).await.expect("create");
    let ready = wait_for(&cluster.pods(), "with-sidecar", p::is_ready, RUNNING)
        .await
        .expect("Ready");
    assert_eq!(p::phase(&ready), "Running");
    let logger = init_status(&ready, "logger");
    assert_eq!(logger.started, Some(true));
    assert!(
        logger.state.as_ref().unwrap().running.is_some(),
        "the sidecar keeps running"
    );
    let setup = init_status(&ready, "setup");
    assert_eq!(
        setup
            .state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .map(|t| t.exit_code),
        Some(0)
    );
    let table = serde_json::to_value(&ready).unwrap();
    let row = minik_api::printers::row("Pod", &table, jiff::Timestamp::now());
    assert_eq!(
        (row[1].as_str(), row[2].as_str()),
        (Some("2/2"), Some("Running")),
        "{row:?}"
    );

    // Killed, the sidecar is restarted although its pod runs under restartPolicy Always only by
    // its own policy; the main container is untouched.
    let first = process(&cluster, "image sleep").await;
    std::process::Command::new("kill")
        .args(["-9", &first.pid.to_string()])
        .status()
        .expect("kill");
    let restarted = wait_for(
        &cluster.pods(),
        "with-sidecar",
        |pod| init_status(pod, "logger").restart_count == 1 && p::is_ready(pod),
        RUNNING,
    )
    .await
    .expect("sidecar restarted");
    assert_eq!(p::restarts(&restarted), 0);

    // Deletion: the main container drains for 1 s; the sidecar gets SIGTERM only after it exited.
    let sidecar = process(&cluster, "image sleep").await;
    let uid = restarted.metadata.uid.clone().unwrap();
    let mut files: Vec<(std::path::PathBuf, std::fs::File)> = container_logs(cluster.dir(), &uid)
        .into_iter()
        .filter_map(|path| std::fs::File::open(&path).ok().map(|f| (path, f)))
        .collect();
    cluster
        .pods()
        .delete("with-sidecar", &DeleteParams::default())
        .await
        .expect("delete");
    eventually(
        "the sidecar process to end",
        Duration::from_secs(20),
        || {
            let alive = procs::is_alive(sidecar.pid);
            async move { (!alive).then_some(()) }
        },
    )
    .await
    .expect("sidecar stopped");
    tokio::time::sleep(Duration::from_millis(100)).await; // the shim flushes the last line
    let mut web_log = String::new();
    let mut sidecar_log = String::new();
    for (path, file) in &mut files {
        use std::io::Read;
        let target = if path.to_string_lossy().contains("/web/") {
            &mut web_log
        } else {
            &mut sidecar_log
        };
        let _ = file.read_to_string(target);
    }
    let web_exit = event_time(&web_log, "exit").expect("web exit line");
    let sidecar_term = sidecar_log
        .lines()
        .rfind(|l| l.contains("event=sigterm "))
        .and_then(|l| event_time(l, "sigterm"))
        .expect("sidecar sigterm line");
    assert!(
        sidecar_term >= web_exit,
        "sidecar SIGTERM at {sidecar_term}, web exit at {web_exit}"
    );
    stop_clean(cluster).await;
}
