//! What a preStop hook starts goes with the pod (issue 19): a hook that runs `setsid sleep` (a
//! process in its own session, out of the hook's process group) and is force-deleted during the
//! hook leaves no process behind; and, as upstream, a preStop that outlasts the grace period keeps
//! running after SIGTERM until the container's processes are killed.

use std::time::Duration;

use minik_client::DeleteParams;
use minik_tests::fixtures::pod;
use minik_tests::procs;
use minik_tests::wait::{eventually, wait_deleted};

use crate::support::{run_pod, stop_clean};

/// `60.N`: a minute's sleep no other test runs, so its processes can be found by command line
/// (and one that escapes a failing test is gone a minute later).
fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("60.{}", 10_000 + nanos % 90_000)
}

/// The processes whose command line starts with `needle`.
fn found(needle: &str) -> Vec<procs::ProcInfo> {
    procs::all()
        .into_iter()
        .filter(|p| p.cmdline.starts_with(needle) && p.state != 'Z')
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_force_deleted_pods_prestop_leaves_no_setsid_child() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let marker = marker();
    let hook = format!("(setsid sleep {marker}1 &); exec sleep {marker}2");
    let fixture = pod("hooked")
        .port(8080)
        .grace(30)
        .pre_stop_exec(&["sh", "-c", &hook]);
    run_pod(&cluster, &fixture.build()).await;
    cluster
        .pods()
        .delete("hooked", &DeleteParams::default())
        .await
        .expect("delete");
    let needle = format!("sleep {marker}");
    eventually("the hook's two sleeps", Duration::from_secs(10), || {
        let count = found(&needle).len();
        async move { (count == 2).then_some(()) }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: found {:#?}", found(&needle)));
    cluster
        .pods()
        .delete("hooked", &DeleteParams::grace(0))
        .await
        .expect("force delete");
    wait_deleted(&cluster.pods(), "hooked", Duration::from_secs(10))
        .await
        .expect("deleted");
    // The kubelet stops the container after the force delete (at most 1 s of hook, then SIGTERM,
    // then SIGKILL 2 s later): by then every process the hook started must be gone.
    let left = eventually("the hook's processes to go", Duration::from_secs(8), || {
        let left = found(&needle);
        async move { left.is_empty().then_some(()) }
    })
    .await;
    assert!(left.is_ok(), "the hook left {:#?}", found(&needle));
    stop_clean(cluster).await;
}

/// Upstream lets a preStop that outlives the grace period run on after SIGTERM (seed 001 prints
/// its output then): here the hook writes a file 1.5 s in, past a 1 s grace, while the app ignores
/// SIGTERM until its SIGKILL at 3 s; the hook's processes are gone with the pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_prestop_past_the_grace_period_runs_on_until_the_container_stops() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let late = dir.path().join("late");
    let marker = marker();
    let hook = format!(
        "sleep {marker}1 & sleep 1.5; touch {}; wait",
        late.display()
    );
    let fixture = pod("outlives")
        .port(8080)
        .grace(1)
        .on_sigterm("ignore")
        .pre_stop_exec(&["sh", "-c", &hook]);
    run_pod(&cluster, &fixture.build()).await;
    cluster
        .pods()
        .delete("outlives", &DeleteParams::default())
        .await
        .expect("delete");
    eventually(
        "the hook's write after SIGTERM",
        Duration::from_secs(10),
        || {
            let written = late.exists();
            async move { written.then_some(()) }
        },
    )
    .await
    .expect("the preStop ran past the grace period");
    wait_deleted(&cluster.pods(), "outlives", Duration::from_secs(10))
        .await
        .expect("deleted");
    let needle = format!("sleep {marker}");
    let left = eventually("the hook's processes to go", Duration::from_secs(5), || {
        let left = found(&needle);
        async move { left.is_empty().then_some(()) }
    })
    .await;
    assert!(left.is_ok(), "the hook left {:#?}", found(&needle));
    stop_clean(cluster).await;
}
