//! Deletion flow (issue 4), timed from the web image's `event=… t=…` lines and from `/proc`:
//! preStop, then SIGTERM, then SIGKILL at the deadline (+2 s while preStop runs), force delete.
//! Durations are scaled down; the tolerance is ±300 ms as the issue asks.

use std::time::Duration;

use jiff::Timestamp;
use minik_api::core::Pod;
use minik_client::DeleteParams;
use minik_tests::fixtures::{pod, PodBuilder};
use minik_tests::procs;
use minik_tests::wait::{eventually, wait_deleted};
use minik_tests::Cluster;

use crate::support::{assert_near, event_time, run_pod, seconds, stop_clean, Termination};

const TOLERANCE: f64 = 0.3;

/// What a deletion looked like: when it was asked, SIGTERM seen by the app, the process gone.
struct Timeline {
    deleted: Timestamp,
    log: String,
    sigterm: Option<f64>,
    app_exit: Option<f64>,
    gone: f64,
}

/// Runs the pod, deletes it with `params`, and measures the timeline until its process is gone
/// and the object is removed.
async fn delete_and_time(
    cluster: &Cluster,
    fixture: PodBuilder,
    params: DeleteParams,
) -> (Pod, Timeline) {
    let running = run_pod(cluster, &fixture.build()).await;
    let name = running.metadata.name.clone().unwrap();
    let uid = running.metadata.uid.clone().unwrap();
    let process = crate::support::web_process(cluster, &name).await;
    let follow = Termination::follow(cluster.dir(), &uid, process.pid);
    let deleted = Timestamp::now();
    cluster.pods().delete(&name, &params).await.expect("delete");
    let (log, gone) = follow.finish().await;
    wait_deleted(&cluster.pods(), &name, Duration::from_secs(10))
        .await
        .expect("object removed");
    let since = |t: Option<Timestamp>| t.map(|t| seconds(deleted, t));
    let timeline = Timeline {
        deleted,
        log: log.clone(),
        sigterm: since(event_time(&log, "sigterm")),
        app_exit: since(event_time(&log, "exit")),
        gone: seconds(deleted, gone),
    };
    // Shown with `--nocapture`: the figures the issue asks for.
    eprintln!("timeline of {name}: {timeline:?}");
    (running, timeline)
}

/// preStop shorter than the grace: SIGTERM right after preStop ends, and the app exits cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pre_stop_shorter_than_grace_then_sigterm_and_clean_exit() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let fixture = pod("short-prestop")
        .port(8080)
        .grace(3)
        .pre_stop_sleep(Duration::from_secs(1));
    let (_, t) = delete_and_time(&cluster, fixture, DeleteParams::default()).await;
    assert_near(
        "SIGTERM after a 1 s preStop",
        t.sigterm
            .unwrap_or_else(|| panic!("no event=sigterm: {t:?}\n{}", t.log)),
        1.0,
        TOLERANCE,
    );
    // The app exits on its own right after SIGTERM, long before the 3 s deadline. Its
    // `event=exit` line is the proof when the log was copied before the pod's removal.
    let sigterm = t.sigterm.unwrap_or_default();
    assert!(
        t.app_exit.is_some() || t.gone - sigterm < 0.2,
        "the app exited cleanly on SIGTERM: {t:?}"
    );
    assert_near("process gone", t.gone, 1.0, TOLERANCE);
    stop_clean(cluster).await;
}

/// preStop longer than the grace: SIGTERM at the end of the grace, SIGKILL about 2 s later.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pre_stop_longer_than_grace_gets_sigterm_at_deadline_and_sigkill_2s_later() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let fixture = pod("long-prestop")
        .port(8080)
        .grace(2)
        .on_sigterm("ignore")
        .pre_stop_sleep(Duration::from_secs(10));
    let (_, t) = delete_and_time(&cluster, fixture, DeleteParams::default()).await;
    assert_near(
        "SIGTERM at the 2 s deadline",
        t.sigterm
            .unwrap_or_else(|| panic!("no event=sigterm: {t:?}\n{}", t.log)),
        2.0,
        TOLERANCE,
    );
    assert_near("SIGKILL 2 s after the deadline", t.gone, 4.0, TOLERANCE);
    assert!(t.app_exit.is_none(), "a SIGKILLed app logs no exit");
    stop_clean(cluster).await;
}

/// SIGTERM at once (no preStop), then SIGKILL at the 2 s deadline for an app that does not exit.
async fn assert_killed_at_the_deadline(fixture: PodBuilder) {
    let cluster = crate::support::one_node().await;
    let (_, t) = delete_and_time(&cluster, fixture, DeleteParams::default()).await;
    assert_near(
        "SIGTERM at once",
        t.sigterm
            .unwrap_or_else(|| panic!("no event=sigterm: {t:?}\n{}", t.log)),
        0.0,
        TOLERANCE,
    );
    assert_near("SIGKILL at the 2 s deadline", t.gone, 2.0, TOLERANCE);
    stop_clean(cluster).await;
}

/// An app whose shutdown is longer than what is left of the grace is killed at the deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_shutdown_is_killed_at_the_deadline() {
    let _machine = crate::support::exclusive().await;
    assert_killed_at_the_deadline(
        pod("slow-exit")
            .port(8080)
            .grace(2)
            .on_sigterm("drain:5000"),
    )
    .await;
}

/// A process that ignores SIGTERM is killed at the deadline. (The kubelet never gives less than
/// 2 s: `minimumGracePeriodInSeconds`, so grace 2 is the shortest meaningful deadline.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn process_ignoring_sigterm_is_killed_at_the_deadline() {
    let _machine = crate::support::exclusive().await;
    assert_killed_at_the_deadline(pod("stubborn").port(8080).grace(2).on_sigterm("ignore")).await;
}

/// A second delete with a shorter grace brings the deadline forward.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn second_delete_with_shorter_grace_shortens_the_deadline() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let running = run_pod(
        &cluster,
        &pod("shorten")
            .port(8080)
            .grace(30)
            .on_sigterm("ignore")
            .build(),
    )
    .await;
    let process = crate::support::web_process(&cluster, "shorten").await;
    let follow = Termination::follow(
        cluster.dir(),
        running.metadata.uid.as_deref().unwrap(),
        process.pid,
    );
    cluster
        .pods()
        .delete("shorten", &DeleteParams::default())
        .await
        .expect("first delete");
    // The first delete is visible as a deletionTimestamp before the second one is sent.
    minik_tests::wait::wait_for(
        &cluster.pods(),
        "shorten",
        |p| p.metadata.deletion_timestamp.is_some(),
        Duration::from_secs(5),
    )
    .await
    .expect("terminating");
    let second = Timestamp::now();
    cluster
        .pods()
        .delete("shorten", &DeleteParams::grace(2))
        .await
        .expect("second delete");
    let (_, gone) = follow.finish().await;
    assert_near(
        "killed 2 s after the second delete",
        seconds(second, gone),
        2.0,
        TOLERANCE,
    );
    stop_clean(cluster).await;
}

/// Force delete (grace 0): the object is gone at once, and the process still stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn force_delete_removes_the_object_at_once_and_still_stops_the_process() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    run_pod(&cluster, &pod("forced").port(8080).grace(30).build()).await;
    let process = crate::support::web_process(&cluster, "forced").await;
    cluster
        .pods()
        .delete("forced", &DeleteParams::grace(0))
        .await
        .expect("force delete");
    assert!(
        cluster
            .pods()
            .get_opt("forced")
            .await
            .expect("get")
            .is_none(),
        "gone as soon as the delete returns"
    );
    eventually(
        "the forced pod's process to stop",
        Duration::from_secs(10),
        || {
            let alive = procs::is_alive(process.pid);
            async move { (!alive).then_some(()) }
        },
    )
    .await
    .expect("process stopped");
    stop_clean(cluster).await;
}

/// A container's children and a grandchild that called setsid are gone after the pod is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn grandchildren_are_gone_after_the_pod_is_deleted() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let marker = format!("{}", 2000 + nanos % 100_000);
    let script = format!("sleep {marker}.1 & (setsid sleep {marker}.2 &) ; exec sleep {marker}.3");
    run_pod(
        &cluster,
        &pod("family")
            .command(&["sh", "-c", &script])
            .grace(1)
            .build(),
    )
    .await;
    let needle = format!("sleep {marker}.");
    // The shim's command line holds the whole script: count only the sleeps themselves.
    let sleeps = || -> Vec<procs::ProcInfo> {
        procs::all()
            .into_iter()
            .filter(|p| p.cmdline.starts_with(&needle))
            .collect()
    };
    eventually("the three sleeps", Duration::from_secs(5), || {
        let count = sleeps().len();
        async move { (count == 3).then_some(()) }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: found {:#?}", sleeps()));
    cluster
        .pods()
        .delete("family", &DeleteParams::default())
        .await
        .expect("delete");
    wait_deleted(&cluster.pods(), "family", Duration::from_secs(10))
        .await
        .expect("deleted");
    let left = sleeps();
    assert!(
        left.is_empty(),
        "no process of the pod survives, zombies included: {left:#?}"
    );
    stop_clean(cluster).await;
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = |t: Option<f64>| t.map(|s| format!("{s:.3}s")).unwrap_or_else(|| "-".into());
        write!(
            f,
            "deleted at {}: SIGTERM {}, app exit {}, process gone {:.3}s",
            self.deleted,
            at(self.sigterm),
            at(self.app_exit),
            self.gone
        )
    }
}

/// postStart runs alongside the main process, and Running is reported only after it completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn post_start_runs_alongside_and_running_waits_for_it() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let created = Timestamp::now();
    let running = run_pod(
        &cluster,
        &pod("hooked")
            .port(8080)
            .post_start_sleep(Duration::from_secs(1))
            .build(),
    )
    .await;
    let running_seen = Timestamp::now();
    let uid = running.metadata.uid.clone().unwrap();
    let log: String = crate::support::container_logs(cluster.dir(), &uid)
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect();
    let started = event_time(&log, "started").expect("event=started");
    assert!(
        seconds(created, started) < 0.8,
        "the main process starts without waiting for postStart"
    );
    assert!(
        seconds(started, running_seen) >= 1.0 - TOLERANCE,
        "Running only after the 1 s postStart: {:.3}s",
        seconds(started, running_seen)
    );
    assert_near(
        "Running after postStart",
        seconds(started, running_seen),
        1.0,
        TOLERANCE + 0.2,
    );
    stop_clean(cluster).await;
}

/// A pod's process can still read from the API server during its graceful shutdown (seed 001,
/// "What Happens When Deleting a Pod", scenario 3): on SIGTERM it runs `minik get pod` and sees
/// itself Terminating.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn app_reads_its_pod_from_the_api_during_shutdown() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let minik = cluster.minik_binary().display().to_string();
    // The answer goes to a file outside the kubelet's directories: the container's own log is
    // removed with the pod, possibly before the test could read it.
    let answer_file = cluster.dir().join("reader.out");
    // The API is https with client certificates: the app is handed a kubeconfig file for its
    // credentials, and reaches the server through the address its environment names.
    let on_term = format!(
        "MINIK_SERVER=https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT {minik} get pod reader --kubeconfig {} > {} 2>&1; exit 0",
        cluster.kubeconfig().display(),
        answer_file.display()
    );
    let ready_file = cluster.dir().join("reader.ready");
    let script = format!(
        "trap '{on_term}' TERM; touch {}; while :; do sleep 0.1; done",
        ready_file.display()
    );
    let fixture = pod("reader").command(&["sh", "-c", &script]).grace(10);
    run_pod(&cluster, &fixture.build()).await;
    // The trap is installed once the ready file exists (a file is not watchable).
    eventually("the shell's trap", Duration::from_secs(5), || {
        let ready = ready_file.exists();
        async move { ready.then_some(()) }
    })
    .await
    .expect("trap installed");
    let deleted = Timestamp::now();
    cluster
        .pods()
        .delete("reader", &DeleteParams::default())
        .await
        .expect("delete");
    wait_deleted(&cluster.pods(), "reader", Duration::from_secs(10))
        .await
        .expect("deleted");
    let answer = std::fs::read_to_string(&answer_file).unwrap_or_default();
    assert!(
        answer
            .lines()
            .any(|l| l.contains("reader") && l.contains("Terminating")),
        "the app saw its own pod Terminating through the API:\n{answer}"
    );
    eprintln!(
        "the app read its pod during shutdown; deleted {:.3}s ago",
        seconds(deleted, Timestamp::now())
    );
    stop_clean(cluster).await;
}
