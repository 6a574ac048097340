//! A pod cannot take the machine down (issue 19): a bounded fork bomb (a shell loop starting 3000
//! `sleep`s — never an unbounded one) in a pod is stopped by the kubelet's `--pod-pids-limit`
//! (the pod's pids cgroup where the machine allows one, else the watchdog), the pod fails with a `PidsLimitExceeded` event, none of its processes is left, and
//! the node still runs the next pod.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use minik_api::core::Event;
use minik_client::{Api, ListParams};
use minik_tests::fixtures::pod;
use minik_tests::procs;
use minik_tests::wait::{eventually, pod as pod_state, wait_for};
use minik_tests::Cluster;
use tokio_util::sync::CancellationToken;

use crate::support::{run_pod, stop_clean};

const LIMIT: i64 = 200;
const FORKS: usize = 3000;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fork_bomb_is_contained_by_the_pod_pids_limit() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .without_services()
        .pod_pids_limit(LIMIT)
        .start()
        .await
        .expect("start cluster");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    // A minute's sleep with a number no other test uses: found by command line, gone soon anyway.
    let marker = format!("60.{}", 10_000 + nanos % 90_000);
    let bomb = format!("i=0; while [ $i -lt {FORKS} ]; do sleep {marker} & i=$((i+1)); done; wait");
    let needle = format!("sleep {marker}");
    let count = move || {
        procs::all()
            .into_iter()
            .filter(|p| p.cmdline.starts_with(&needle) && p.state != 'Z')
            .count()
    };
    // The peak, sampled from /proc while the bomb goes off (a measurement, not a wait).
    let peak = Arc::new(AtomicUsize::new(0));
    let sampling = CancellationToken::new();
    let sampler = tokio::spawn({
        let (peak, sampling, count) = (peak.clone(), sampling.clone(), count.clone());
        async move {
            while !sampling.is_cancelled() {
                peak.fetch_max(count(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    let fixture = pod("bomb")
        .command(&["sh", "-c", &bomb])
        .restart_policy("Never");
    cluster
        .pods()
        .create(&fixture.build())
        .await
        .expect("create");
    wait_for(
        &cluster.pods(),
        "bomb",
        pod_state::is_finished,
        Duration::from_secs(60),
    )
    .await
    .expect("the bomb's pod is stopped");
    sampling.cancel();
    sampler.await.unwrap();
    // With a pids cgroup the kernel refuses the fork and the shell fails by itself; the
    // watchdog's event follows within its one-second period.
    let events: Api<Event> = Api::namespaced(cluster.client(), "default");
    let exceeded = eventually("a PidsLimitExceeded event", Duration::from_secs(5), || {
        let events = events.clone();
        async move {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items.into_iter().find(|e| {
                e.involved_object.name.as_deref() == Some("bomb")
                    && e.reason.as_deref() == Some("PidsLimitExceeded")
            })
        }
    })
    .await;
    assert!(exceeded.is_ok(), "no PidsLimitExceeded event");
    let left = eventually(
        "the bomb's processes to go",
        Duration::from_secs(10),
        || {
            let left = count();
            async move { (left == 0).then_some(()) }
        },
    )
    .await;
    assert!(left.is_ok(), "{} of the bomb's processes are left", count());
    let peak = peak.load(Ordering::Relaxed);
    eprintln!("fork bomb: peak {peak} processes (limit {LIMIT}, {FORKS} forks asked)");
    assert!(
        peak < FORKS,
        "the bomb was stopped before it finished: peak {peak}"
    );
    // The node is still usable.
    run_pod(&cluster, &pod("after").port(8080).build()).await;
    stop_clean(cluster).await;
}
