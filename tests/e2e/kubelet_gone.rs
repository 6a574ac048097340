//! What a kubelet killed with -9 leaves to others (issue 19): a container shim told to stop uses
//! the pod's `terminationGracePeriodSeconds`, recorded when the container started (upstream keeps
//! it as the container label `io.kubernetes.pod.terminationGracePeriod`), not a fixed 10 s; and
//! the pod cgroups the kubelet made are removed when it comes back (reconcile) or, if it never
//! does, when the cluster stops. The cgroup checks run where the node made pod cgroups (the pids
//! controller: root, or a delegated subtree) and say so otherwise.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use minik_client::DeleteParams;
use minik_tests::fixtures::pod;
use minik_tests::procs;
use minik_tests::wait::{eventually, wait_deleted};
use minik_tests::Cluster;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::support::{run_pod, stop_clean};

/// The pids cgroup directory of process `pid`, if it is in one of minik's pod cgroups
/// (`…/minik-node-N-HASH/pod-UID`): the cgroup path from `/proc/PID/cgroup` under the pids (v1)
/// or unified (v2) mount point from `/proc/self/mountinfo`.
fn pod_cgroup(pid: u32) -> Option<PathBuf> {
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = |wanted: &dyn Fn(&str, &str) -> bool| {
        mountinfo.lines().find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut fields = right.split_whitespace();
            let (fstype, options) = (fields.next()?, fields.nth(1)?);
            let point = left.split_whitespace().nth(4)?;
            wanted(fstype, options).then(|| PathBuf::from(point))
        })
    };
    cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if !path.contains("/minik-") || !path.contains("/pod-") {
            return None;
        }
        let root = if controllers.split(',').any(|c| c == "pids") {
            mount(&|fs, opts| fs == "cgroup" && opts.split(',').any(|o| o == "pids"))?
        } else if controllers.is_empty() {
            mount(&|fs, _| fs == "cgroup2")?
        } else {
            return None;
        };
        Some(root.join(path.trim_start_matches('/')))
    })
}

fn gone(path: &Path) -> Option<()> {
    (!path.exists()).then_some(())
}

/// Kubelet killed with -9, then the shim of a container that ignores SIGTERM gets SIGTERM: it
/// waits the pod's grace (3 s), not the old fixed 10 s, then SIGKILLs. The cluster's stop then
/// removes the dead kubelet's cgroups, which nobody else would.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shim_without_its_kubelet_waits_the_pods_grace_then_the_stop_removes_its_cgroups() {
    let _machine = crate::support::shared().await;
    let mut cluster = Cluster::builder()
        .processes(true)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let fixture = pod("stubborn")
        .port(8080)
        .grace(3)
        .on_sigterm("ignore")
        .build();
    run_pod(&cluster, &fixture).await;
    let container = crate::support::web_process(&cluster, "stubborn").await;
    let shim = container.ppid;
    let cgroup = pod_cgroup(container.pid);
    cluster
        .kill("kubelet-node-1", Signal::SIGKILL)
        .await
        .expect("kill the kubelet");
    kill(Pid::from_raw(shim as i32), Signal::SIGTERM).expect("SIGTERM the shim");
    let stopping = Instant::now();
    eventually(
        "the container and its shim to end",
        Duration::from_secs(9),
        || async { (!procs::is_alive(container.pid) && !procs::is_alive(shim)).then_some(()) },
    )
    .await
    .expect("the shim stopped its container before the old 10 s default");
    let took = stopping.elapsed().as_secs_f64();
    eprintln!("the shim SIGKILLed a container ignoring SIGTERM after {took:.2}s (grace 3 s)");
    assert!(
        took >= 2.5,
        "SIGKILL came before the grace period: {took:.2}s"
    );

    let Some(cgroup) = cgroup else {
        eprintln!("no pod cgroup on this machine: the cgroup half is not checked");
        stop_clean(cluster).await;
        return;
    };
    let base = cgroup.parent().expect("the node's cgroup").to_path_buf();
    assert!(
        cgroup.exists(),
        "the dead kubelet's pod cgroup {} is left until someone removes it",
        cgroup.display()
    );
    stop_clean(cluster).await;
    assert!(
        !base.exists(),
        "the stop removes the dead kubelet's cgroups: {} is left",
        base.display()
    );
}

/// The kubelet is killed with -9, its pod's container stops and the pod is force deleted while
/// it is away: when it comes back, the pod's empty cgroup is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_kubelet_removes_the_cgroups_of_pods_gone_while_it_was_down() {
    let _machine = crate::support::shared().await;
    let mut cluster = Cluster::builder()
        .processes(true)
        .without_services()
        .start()
        .await
        .expect("cluster");
    run_pod(&cluster, &pod("fleeting").port(8080).build()).await;
    let container = crate::support::web_process(&cluster, "fleeting").await;
    let Some(cgroup) = pod_cgroup(container.pid) else {
        eprintln!("no pod cgroup on this machine: nothing to check");
        stop_clean(cluster).await;
        return;
    };
    cluster
        .kill("kubelet-node-1", Signal::SIGKILL)
        .await
        .expect("kill the kubelet");
    kill(Pid::from_raw(container.ppid as i32), Signal::SIGTERM).expect("SIGTERM the shim");
    eventually("the container to end", Duration::from_secs(9), || async {
        (!procs::is_alive(container.pid) && !procs::is_alive(container.ppid)).then_some(())
    })
    .await
    .expect("container gone");
    cluster
        .pods()
        .delete("fleeting", &DeleteParams::grace(0))
        .await
        .expect("force delete");
    wait_deleted(&cluster.pods(), "fleeting", Duration::from_secs(10))
        .await
        .expect("pod gone");
    assert!(cgroup.exists(), "left while the kubelet is away");
    cluster.restart("kubelet-node-1").await.expect("restart");
    eventually(
        "the pod's cgroup to be removed",
        Duration::from_secs(10),
        || async { gone(&cgroup) },
    )
    .await
    .expect("the restarted kubelet reconciles its pod cgroups");
    stop_clean(cluster).await;
}
