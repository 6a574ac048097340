//! Helpers shared by the scenarios: HTTP to a pod, timing lines from the web image's log, and
//! the moment a process disappears.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use minik_api::core::Pod;
use minik_tests::procs;
use minik_tests::wait::{eventually, pod, wait_for};
use minik_tests::Cluster;

/// Generous bound for a pod to reach Running on a loaded 2-core machine.
pub const RUNNING: Duration = Duration::from_secs(30);

/// A one-node cluster without the endpoint controller and proxy (most tests need no Service).
pub async fn one_node() -> Cluster {
    Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster")
}

/// Creates the pod and waits until it is Running with an IP.
pub async fn run_pod(cluster: &Cluster, fixture: &Pod) -> Pod {
    let name = fixture.metadata.name.clone().unwrap_or_default();
    cluster.pods().create(fixture).await.expect("create pod");
    wait_for(&cluster.pods(), &name, pod::is_running, RUNNING)
        .await
        .expect("pod Running")
}

/// `GET http://ADDR/` with a short timeout: `Some(body)` if it answered.
pub async fn http_get(address: &str) -> Option<String> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .ok()?;
    let response = http.get(format!("http://{address}/")).send().await.ok()?;
    response.text().await.ok()
}

/// Waits until `GET http://ADDR/` answers (a server needs a moment after Running).
pub async fn http_answer(address: &str) -> String {
    eventually(
        &format!("an HTTP answer from {address}"),
        Duration::from_secs(10),
        || http_get(address),
    )
    .await
    .expect("HTTP answer")
}

/// Stops the cluster and asserts that it left no process behind.
pub async fn stop_clean(cluster: Cluster) {
    let report = cluster.stop().await.expect("stop cluster");
    assert!(
        report.leftovers.is_empty(),
        "processes left behind: {:#?}",
        report.leftovers
    );
}

/// The container log files of the pod with this uid under the cluster's node directories.
pub fn container_logs(dir: &Path, uid: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.join("nodes")];
    while let Some(current) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().contains(uid)
                && path.extension().is_some_and(|e| e == "log")
            {
                found.push(path);
            }
        }
    }
    found
}

/// Collects what a pod's container logs said while it terminates, and when its process vanished:
/// a background task copies the log files (they are removed with the pod) and watches `/proc`.
pub struct Termination {
    task: tokio::task::JoinHandle<(String, Option<Timestamp>)>,
}

impl Termination {
    /// Starts following the pod (uid) whose main process is `pid`.
    pub fn follow(dir: &Path, uid: &str, pid: u32) -> Self {
        // Open the log files now and keep them open: the kubelet unlinks them when it removes
        // the pod, possibly within milliseconds of the exit, but an open file stays readable.
        let mut files: Vec<std::fs::File> = container_logs(dir, uid)
            .iter()
            .filter_map(|f| std::fs::File::open(f).ok())
            .collect();
        assert!(!files.is_empty(), "the container log of pod {uid} exists");
        let task = tokio::spawn(async move {
            let mut text = String::new();
            let mut exited = None;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while tokio::time::Instant::now() < deadline {
                // Gone means gone twice in a row, 20 ms apart (a /proc read is not atomic).
                if exited.is_none() && !procs::is_alive(pid) {
                    let first_seen = Timestamp::now();
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    if !procs::is_alive(pid) {
                        exited = Some(first_seen);
                    }
                }
                if exited.is_some() {
                    break;
                }
                // Checking /proc is the only way to see a SIGKILL land; 20 ms keeps the error small.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            // The shim has written everything by the time its container is gone.
            tokio::time::sleep(Duration::from_millis(100)).await;
            for file in &mut files {
                use std::io::Read;
                let _ = file.read_to_string(&mut text);
            }
            (text, exited)
        });
        Termination { task }
    }

    /// Waits until the process is gone; returns the log text and the time it vanished.
    pub async fn finish(self) -> (String, Timestamp) {
        let (text, exited) = self.task.await.expect("follow task");
        (
            text,
            exited.expect("the container process did not exit within 30 s"),
        )
    }
}

/// The time of the first `event=NAME t=…` line in a CRI log text.
pub fn event_time(log: &str, name: &str) -> Option<Timestamp> {
    let marker = format!("event={name} ");
    let line = log.lines().find(|l| l.contains(&marker))?;
    let t = line.split_whitespace().find_map(|w| w.strip_prefix("t="))?;
    t.parse().ok()
}

/// Seconds from `from` to `to`.
pub fn seconds(from: Timestamp, to: Timestamp) -> f64 {
    to.duration_since(from).as_secs_f64()
}

/// Asserts `actual` is within ±`tolerance` seconds of `expected`.
pub fn assert_near(what: &str, actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{what}: {actual:.3}s, expected {expected:.3}s ± {tolerance}s"
    );
}

/// Tests that assert timings (±300 ms) run alone; the others share the machine. A cluster per test
/// on a 2-core laptop is already a lot of processes.
static MACHINE: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Taken by tests that measure timings: no other test runs meanwhile.
pub async fn exclusive() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    MACHINE.write().await
}

/// Taken by every other test.
pub async fn shared() -> tokio::sync::RwLockReadGuard<'static, ()> {
    MACHINE.read().await
}

/// The main process of a pod running the web image: waits until exactly one `minik image web`
/// process carries `POD_NAME=name` (a process table is not watchable).
///
/// It also waits until the server answers HTTP: Running means the process started, not that
/// the app has installed its SIGTERM handler yet (a SIGTERM before that kills it with 143).
pub async fn web_process(cluster: &Cluster, name: &str) -> procs::ProcInfo {
    let pod = cluster.pods().get(name).await.expect("get pod");
    let ip = pod.status.and_then(|s| s.pod_ip).expect("podIP");
    http_answer(&format!("{ip}:8080")).await;
    eventually(
        &format!("the web process of pod {name}"),
        Duration::from_secs(5),
        || {
            let found: Vec<procs::ProcInfo> = cluster
                .pod_processes(name)
                .into_iter()
                .filter(|p| p.cmdline.contains("image web"))
                .collect();
            async move { (found.len() == 1).then(|| found.into_iter().next().unwrap()) }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}: {:#?}", cluster.pod_processes(name)))
}
