//! `minik up` as a user runs it: the real binary in the background, its transcript, `minik down`.
//!
//! Kubernetes counterpart: none in-tree; this is how kind's and k3d's own e2e suites drive their
//! CLIs (`kind create cluster`, then kubectl against the kubeconfig it wrote). Where [`Cluster`]
//! starts components one by one for a test, [`Up`] starts the whole cluster the way the README
//! tells a user to, so what it prints and the kubeconfig it merges are tested too.
//!
//! [`Cluster`]: crate::Cluster

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::cluster::minik_binary;
use crate::procs;

/// Runs `minik ARGS…` to completion; returns (exit success, stdout + stderr).
pub async fn minik(args: &[&str]) -> (bool, String) {
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
pub struct Up {
    child: tokio::process::Child,
    data: tempfile::TempDir,
    /// The API server's address, `127.0.0.1:PORT`.
    pub listen: String,
    /// What `up` printed on stdout until its "is ready" line.
    pub transcript: Vec<String>,
    /// Set once [`Up::down`] has stopped the cluster.
    downed: bool,
}

impl Up {
    /// Starts `minik up --nodes N` on a free port and waits until it is ready. `KUBECONFIG`
    /// points at a file that must stay untouched (merging is only on request).
    pub async fn start(nodes: u8) -> Up {
        Up::launch(nodes, None, &[]).await
    }

    /// Starts `minik up --nodes N` with more flags (`--dashboard`).
    pub async fn start_with_flags(nodes: u8, flags: &[&str]) -> Up {
        Up::launch(nodes, None, flags).await
    }

    /// Starts `minik up --nodes N --merge-kubeconfig` with `KUBECONFIG=kubeconfig`, so that it
    /// merges its `minik` context into that file as it would into a user's `~/.kube/config`.
    pub async fn start_with_kubeconfig(nodes: u8, kubeconfig: &Path) -> Up {
        Up::launch(nodes, Some(kubeconfig.to_path_buf()), &[]).await
    }

    async fn launch(nodes: u8, kubeconfig: Option<PathBuf>, flags: &[&str]) -> Up {
        let data = tempfile::tempdir().expect("tempdir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let listen = format!("127.0.0.1:{port}");
        let data_dir = data.path().display().to_string();
        let nodes = nodes.to_string();
        let mut command = tokio::process::Command::new(minik_binary().expect("minik binary"));
        command.args([
            "up",
            "--data-dir",
            &data_dir,
            "--listen",
            &listen,
            "--nodes",
            &nodes,
            "--backoff-base",
            "200ms",
        ]);
        command.args(flags);
        match &kubeconfig {
            Some(path) => command.env("KUBECONFIG", path).arg("--merge-kubeconfig"),
            None => command.env("KUBECONFIG", data.path().join("untouched-kubeconfig")),
        };
        let mut child = command
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
                // The banner's last line: everything `up` prints once ready is in the transcript.
                if line.contains("Stop with Ctrl-C") {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(
            ready,
            Ok(true),
            "minik up printed its ready banner:\n{}",
            transcript.join("\n")
        );
        // Keep draining stdout so `up` never blocks on a full pipe while it stops.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Up {
            child,
            data,
            listen,
            transcript,
            downed: false,
        }
    }

    /// The `--data-dir` of this cluster.
    pub fn data_dir(&self) -> String {
        self.data.path().display().to_string()
    }

    /// The admin kubeconfig `up` wrote: `DATA/kubeconfig`.
    pub fn kubeconfig(&self) -> PathBuf {
        self.data.path().join("kubeconfig")
    }

    /// minik's own client for this cluster's API server, from the written kubeconfig alone.
    pub fn client(&self) -> minik_client::Client {
        minik_client::Client::from_kubeconfig(&self.kubeconfig()).expect("admin kubeconfig")
    }

    /// The pods of the `default` namespace, through minik's own client.
    pub fn pods(&self) -> minik_client::Api<minik_api::core::Pod> {
        minik_client::Api::namespaced(self.client(), "default")
    }

    /// The pid `minik status` would show for a component, from the state file.
    pub fn pid_of(&self, component: &str) -> u32 {
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
    pub async fn down(mut self) {
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
        let settled = procs::settled(self.data.path(), Duration::from_secs(3)).await;
        // Left over processes are the drop's to kill.
        self.downed = settled.is_ok();
        assert_eq!(settled, Ok(()), "nothing of the cluster is left behind");
    }
}

impl Drop for Up {
    /// A test that failed before [`Up::down`] still leaves nothing running. Killing `minik up`
    /// alone would orphan its components, so it gets SIGTERM (its Ctrl-C: stop the pods, then
    /// the components); whatever of the cluster is still there after 10 s is killed.
    fn drop(&mut self) {
        if self.downed {
            return;
        }
        if let Some(pid) = self.child.id() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        // A drop cannot await: poll /proc, which no watch can tell about, as `eventually` does.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let running = || {
            procs::related_to(self.data.path())
                .iter()
                .any(|p| p.state != 'Z')
        };
        while running() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        procs::kill_all(&procs::related_to(self.data.path()));
    }
}
