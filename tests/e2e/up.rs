//! `minik up`, `minik status` and `minik down` as a user runs them, from a real terminal's view.

use std::process::Stdio;
use std::time::Duration;

use minik_tests::cluster::minik_binary;
use minik_tests::fixtures::pod;
use minik_tests::procs;
use minik_tests::wait::eventually;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::http_answer;

/// Runs `minik ARGS…` to completion; returns (exit success, stdout + stderr).
async fn minik(args: &[&str]) -> (bool, String) {
    let output = tokio::process::Command::new(minik_binary().expect("minik binary"))
        .args(args)
        .output()
        .await
        .expect("run minik");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// A `minik up` running in the background, with its data directory.
struct Up {
    child: tokio::process::Child,
    data: tempfile::TempDir,
    listen: String,
    transcript: Vec<String>,
}

impl Up {
    /// Starts `minik up --nodes N` on a free port and waits for its "is ready" line.
    async fn start(nodes: u8) -> Up {
        let data = tempfile::tempdir().expect("tempdir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let listen = format!("127.0.0.1:{port}");
        let data_dir = data.path().display().to_string();
        let nodes = nodes.to_string();
        let mut child = tokio::process::Command::new(minik_binary().expect("minik binary"))
            .args([
                "up",
                "--data-dir",
                &data_dir,
                "--listen",
                &listen,
                "--nodes",
                &nodes,
                "--backoff-base",
                "200ms",
                "--no-kubeconfig",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start minik up");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut transcript = Vec::new();
        let ready = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.expect("read up's stdout") {
                transcript.push(line.clone());
                if line.contains("is ready in") {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(
            ready,
            Ok(true),
            "minik up printed its ready line:\n{}",
            transcript.join("\n")
        );
        // Keep draining stdout so `up` never blocks on a full pipe while it stops.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Up {
            child,
            data,
            listen,
            transcript,
        }
    }

    fn data_dir(&self) -> String {
        self.data.path().display().to_string()
    }

    fn pods(&self) -> minik_client::Api<minik_api::core::Pod> {
        let client = minik_client::Client::new(&format!("http://{}", self.listen)).unwrap();
        minik_client::Api::namespaced(client, "default")
    }

    /// The pid `minik status` would show for a component, from the state file.
    fn pid_of(&self, component: &str) -> u32 {
        let state: serde_json::Value = serde_json::from_slice(
            &std::fs::read(self.data.path().join("minik.state.json")).unwrap(),
        )
        .unwrap();
        let components = state["components"].as_array().unwrap();
        components
            .iter()
            .find(|c| c["name"] == component)
            .and_then(|c| c["pid"].as_u64())
            .unwrap() as u32
    }

    /// Runs `minik down`, waits for `up` to exit 0, and asserts nothing of the cluster is left.
    async fn down(mut self) {
        let (ok, down) = minik(&["down", "--data-dir", &self.data_dir()]).await;
        assert!(ok, "down succeeds:\n{down}");
        let exit = tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .expect("up exited")
            .expect("wait");
        assert!(exit.success(), "minik up exits 0 after down");
        let (ok, status) = minik(&["status", "--data-dir", &self.data_dir()]).await;
        assert!(
            !ok,
            "status exits non-zero once the cluster is down:\n{status}"
        );
        let dir = self.data.path().to_path_buf();
        let left = eventually(
            "the cluster's processes to be gone",
            Duration::from_secs(3),
            || {
                let left: Vec<_> = procs::related_to(&dir)
                    .into_iter()
                    .filter(|p| p.state != 'Z')
                    .collect();
                async move { left.is_empty().then_some(()) }
            },
        )
        .await;
        assert!(left.is_ok(), "left behind: {:#?}", procs::related_to(&dir));
    }
}

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
    ] {
        assert!(
            status
                .lines()
                .any(|l| l.starts_with(component) && l.contains("running")),
            "{component} running:\n{status}"
        );
    }
    // The cluster works: a pod runs and answers.
    let running = run_pod_via(&up.pods(), &pod("hello").port(8080).build()).await;
    http_answer(&format!("{}:8080", running.status.unwrap().pod_ip.unwrap())).await;
    up.down().await;
}

/// Even when a kubelet was killed (so its pods cannot be stopped through it), `down` leaves no
/// process behind: `minik up` is the subreaper of the orphaned shims and kills them.
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
    let (ok, status) = minik(&["status", "--data-dir", &up.data_dir()]).await;
    assert!(
        !ok && status
            .lines()
            .any(|l| l.starts_with("kubelet-node-1") && l.contains("stopped")),
        "{status}"
    );
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
