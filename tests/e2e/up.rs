//! `minik up`, `minik status` and `minik down` as a user runs them, from a real terminal's view,
//! in the default processes mode and with `--one-process`.

use std::time::Duration;

use minik_tests::fixtures::pod;
use minik_tests::procs;
use minik_tests::up::{minik, Up};
use minik_tests::wait::eventually;

use crate::support::http_answer;

/// `up` starts a 2-node cluster that runs pods, `status` lists every component, `down` drains
/// and stops it, and nothing of it is left running afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn up_status_down_runs_a_cluster_and_leaves_nothing_behind() {
    let _machine = crate::support::shared().await;
    let up = Up::start(2).await;
    eprintln!("{}", up.transcript.join("\n"));
    for step in [
        "Starting apiserver",
        "Starting scheduler",
        "node-1, node-2 Ready",
        "Starting endpoint-controller",
        "Starting proxy",
        "Starting ingress on http://127.0.0.1:",
        "Starting loadbalancer",
        "Starting metrics-server",
    ] {
        assert!(
            up.transcript
                .iter()
                .any(|l| l.contains('✓') && l.contains(step)),
            "progress line for {step}:\n{}",
            up.transcript.join("\n")
        );
    }
    let (ok, status) = minik(&["status", "--data-dir", &up.data_dir()]).await;
    assert!(ok, "status exits 0 while everything runs:\n{status}");
    for component in [
        "apiserver",
        "scheduler",
        "kubelet-node-1",
        "kubelet-node-2",
        "endpoint-controller",
        "proxy",
        "ingress",
        "loadbalancer",
        "metrics-server",
    ] {
        assert!(
            status
                .lines()
                .any(|l| l.starts_with(component) && l.contains("running")),
            "{component} running:\n{status}"
        );
    }
    // `status` shows where the ingress serves, as `up` printed it.
    let ingress = status
        .lines()
        .find(|l| l.starts_with("ingress"))
        .and_then(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("http://127.0.0.1:"))
        })
        .expect("the ingress address in status");
    assert!(
        up.transcript.iter().any(|l| l.contains(ingress)),
        "up printed {ingress}:\n{}",
        up.transcript.join("\n")
    );
    // The cluster works: a pod runs and answers.
    let running = run_pod_via(&up.pods(), &pod("hello").port(8080).build()).await;
    http_answer(&format!("{}:8080", running.status.unwrap().pod_ip.unwrap())).await;
    up.down().await;
}

/// A kubelet killed with -9 is restarted by `up` (and re-adopts its pod), and `down` still leaves
/// no process behind: `minik up` is the subreaper of whatever the kill orphaned.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn down_after_a_kubelet_crash_still_leaves_nothing_behind() {
    let _machine = crate::support::shared().await;
    let up = Up::start(1).await;
    run_pod_via(&up.pods(), &pod("orphan").port(8080).grace(1).build()).await;
    let kubelet = up.pid_of("kubelet-node-1");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(kubelet as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // kill(2) returns before the process is gone: wait until /proc says it died.
    eventually("the kubelet to die", Duration::from_secs(5), || async {
        (!procs::is_alive(kubelet)).then_some(())
    })
    .await
    .expect("kubelet dead");
    eventually(
        "the kubelet to be restarted",
        Duration::from_secs(20),
        || async {
            let pid = up.pid_of("kubelet-node-1");
            (pid != kubelet && procs::is_alive(pid)).then_some(())
        },
    )
    .await
    .expect("kubelet restarted");
    let (ok, status) = minik(&["status", "--data-dir", &up.data_dir()]).await;
    assert!(
        ok && status
            .lines()
            .any(|l| l.starts_with("kubelet-node-1") && l.contains("restarts 1")),
        "{status}"
    );
    up.down().await;
}

/// `up --one-process` runs every component as a task of the one `minik up` process (as `k3s
/// server` does): `status` lists each under up's own pid, a pod runs and answers (its container
/// the only other process), each component logs to its own file, and `down` leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn up_one_process_runs_a_pod_and_down_leaves_nothing_behind() {
    let _machine = crate::support::shared().await;
    let up = Up::start_with_flags(1, &["--one-process"]).await;
    let transcript = up.transcript.join("\n");
    assert!(transcript.contains("(one process)"), "{transcript}");
    assert!(transcript.contains("node-1 Ready"), "{transcript}");
    let (ok, status) = minik(&["status", "--data-dir", &up.data_dir()]).await;
    assert!(ok, "status exits 0 while everything runs:\n{status}");
    let up_pid = up.pid_of("apiserver");
    for component in ["apiserver", "scheduler", "kubelet-node-1", "proxy", "dns"] {
        assert!(
            status.lines().any(|l| l.starts_with(component)
                && l.contains("running")
                && l.contains(&format!("pid {up_pid} "))),
            "{component} running in minik up (pid {up_pid}):\n{status}"
        );
    }
    let cluster = procs::related_to(std::path::Path::new(&up.data_dir()));
    assert_eq!(
        cluster
            .iter()
            .filter(|p| p.state != 'Z')
            .map(|p| p.pid)
            .collect::<Vec<_>>(),
        [up_pid],
        "one process before any pod: {cluster:?}"
    );
    let running = run_pod_via(&up.pods(), &pod("hello").port(8080).build()).await;
    http_answer(&format!("{}:8080", running.status.unwrap().pod_ip.unwrap())).await;
    let logs = std::path::Path::new(&up.data_dir()).join("logs");
    for log in ["apiserver.log", "kubelet.log", "scheduler.log"] {
        let text = std::fs::read_to_string(logs.join(log)).unwrap_or_default();
        assert!(
            text.contains(" INFO "),
            "{log} has the component's lines:\n{text}"
        );
    }
    up.down().await;
}

/// `run_pod` for a client that is not a test `Cluster`'s.
async fn run_pod_via(
    pods: &minik_client::Api<minik_api::core::Pod>,
    fixture: &minik_api::core::Pod,
) -> minik_api::core::Pod {
    let name = fixture.metadata.name.clone().unwrap();
    pods.create(fixture).await.expect("create");
    minik_tests::wait::wait_for(
        pods,
        &name,
        minik_tests::wait::pod::is_running,
        crate::support::RUNNING,
    )
    .await
    .expect("Running")
}
