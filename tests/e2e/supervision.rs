//! `minik up` restarts what dies (issue 19): every component of a process-mode cluster killed
//! with -9 while writes are flowing comes back within seconds, `minik status` counts its restarts,
//! no acknowledged write is lost, and the restarted pipeline still runs a new pod.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use minik_api::k8s_openapi::api::coordination::v1::Lease;
use minik_api::meta::ObjectMeta;
use minik_client::{Api, ListParams};
use minik_tests::fixtures::pod;
use minik_tests::procs;
use minik_tests::up::{minik, Up};
use minik_tests::wait::eventually;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio_util::sync::CancellationToken;

/// How long a killed component may take to be running again (the first backoff is 0.5 s).
const BACK_WITHIN: Duration = Duration::from_secs(20);

/// Creates Leases one after another until `stop`; records the names the API acknowledged.
async fn write_load(
    leases: Api<Lease>,
    acknowledged: Arc<Mutex<Vec<String>>>,
    stop: CancellationToken,
) {
    for i in 0.. {
        if stop.is_cancelled() {
            return;
        }
        let name = format!("load-{i}");
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..ObjectMeta::default()
            },
            spec: None,
        };
        match leases.create(&lease).await {
            Ok(_) => acknowledged.lock().unwrap().push(name),
            // The apiserver is down for a moment: not acknowledged, nothing to find later.
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// The `restarts` of a component in the state file `minik up` rewrites after each restart.
fn restarts_of(up: &Up, component: &str) -> u64 {
    let path = std::path::Path::new(&up.data_dir()).join("minik.state.json");
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap_or_default()).unwrap_or_default();
    state["components"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["name"] == component))
        .and_then(|c| c["restarts"].as_u64())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_component_killed_under_load_comes_back_and_no_write_is_lost() {
    let _machine = crate::support::shared().await;
    let up = Up::start(1).await;
    let leases: Api<Lease> = Api::namespaced(up.client(), "default");
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let stop = CancellationToken::new();
    let load = tokio::spawn(write_load(
        leases.clone(),
        acknowledged.clone(),
        stop.clone(),
    ));
    for component in [
        "apiserver",
        "scheduler",
        "controller-manager",
        "kubelet-node-1",
        "endpoint-controller",
        "proxy",
    ] {
        let old = up.pid_of(component);
        kill(Pid::from_raw(old as i32), Signal::SIGKILL).unwrap();
        let started = std::time::Instant::now();
        eventually(&format!("{component} restarted"), BACK_WITHIN, || async {
            let pid = up.pid_of(component);
            (pid != old && procs::is_alive(pid) && restarts_of(&up, component) == 1).then_some(())
        })
        .await
        .expect("restarted");
        eprintln!("{component} back after {:?}", started.elapsed());
    }
    let (ok, status) = minik(&["status", "--data-dir", &up.data_dir()]).await;
    assert!(ok, "every component runs again:\n{status}");
    assert!(
        status.lines().any(|l| l.starts_with("kubelet-node-1")
            && l.contains("restarts 1 (last exit: signal: 9 (SIGKILL))")),
        "{status}"
    );
    // Writes went through again after the apiserver's restart, then stop.
    let before = acknowledged.lock().unwrap().len();
    eventually("writes to flow again", Duration::from_secs(10), || async {
        (acknowledged.lock().unwrap().len() > before + 5).then_some(())
    })
    .await
    .expect("writes flow");
    stop.cancel();
    load.await.unwrap();
    let stored: Vec<String> = leases
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|l| l.metadata.name)
        .collect();
    let acknowledged = acknowledged.lock().unwrap().clone();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|n| !stored.contains(n))
        .collect();
    eprintln!(
        "writes acknowledged: {}, lost: {}",
        acknowledged.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    // The restarted scheduler and kubelet watch again: a new pod runs.
    let pods = up.pods();
    pods.create(&pod("after").build()).await.expect("create");
    minik_tests::wait::wait_for(
        &pods,
        "after",
        minik_tests::wait::pod::is_running,
        crate::support::RUNNING,
    )
    .await
    .expect("a pod runs on the restarted components");
    up.down().await;
}
