//! No orphans: a stopped cluster leaves no process behind, grandchildren included.

use minik_tests::fixtures::pod;
use minik_tests::procs;
use minik_tests::Cluster;

use crate::support::run_pod;

/// A pod whose container forks a child and a `setsid` grandchild, on a 2-node cluster.
async fn start_cluster_with_forking_pods(processes: bool) -> (Cluster, String) {
    let cluster = Cluster::builder()
        .processes(processes)
        .nodes(2)
        .without_services()
        .start()
        .await
        .expect("cluster");
    // A number no other test uses, so the scan below finds only this pod's sleeps.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let marker = format!("{}", 1000 + nanos % 100_000);
    let script = format!("sleep {marker}.1 & setsid sleep {marker}.2 & exec sleep {marker}.3");
    run_pod(
        &cluster,
        &pod("forks")
            .command(&["sh", "-c", &script])
            .grace(1)
            .build(),
    )
    .await;
    run_pod(&cluster, &pod("web").port(8080).build()).await;
    (cluster, marker)
}

async fn assert_nothing_left(processes: bool) {
    let (cluster, marker) = start_cluster_with_forking_pods(processes).await;
    let dir = cluster.dir().to_path_buf();
    assert!(
        !cluster.processes().is_empty(),
        "the scan sees the cluster's processes while it runs"
    );
    let report = cluster.stop().await.expect("stop");
    assert!(
        report.leftovers.is_empty(),
        "left behind: {:#?}",
        report.leftovers
    );
    let stragglers: Vec<_> = procs::all()
        .into_iter()
        .filter(|p| {
            p.state != 'Z'
                && (p.cmdline.contains(&dir.display().to_string())
                    || p.cmdline.contains(&format!("sleep {marker}.")))
        })
        .collect();
    assert!(
        stragglers.is_empty(),
        "no process of the cluster survives: {stragglers:#?}"
    );
}

/// In-process components: after `stop()`, nothing of the cluster runs, grandchildren included.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_is_left_running_after_the_cluster_stops() {
    let _machine = crate::support::shared().await;
    assert_nothing_left(false).await;
}

/// The same with every component as a child process.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_is_left_running_after_a_process_cluster_stops() {
    let _machine = crate::support::shared().await;
    assert_nothing_left(true).await;
}
