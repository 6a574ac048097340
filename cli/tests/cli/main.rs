//! End-to-end tests of the `minik` binary: each test starts a real apiserver in-process on
//! 127.0.0.1:0 over a temp dir, serving HTTPS with a fresh PKI as a secure cluster does, then runs
//! `minik --kubeconfig ADMIN` as a child process against it, checking stdout,
//! stderr and the exit code exactly as a user (or a script written for kubectl) would see them.
//! `workloads.rs` needs pods that really run: it starts a whole cluster (scheduler, kubelet,
//! controller manager) in-process through `minik-cluster` instead.

mod apply;
mod delete;
mod errors;
mod get;
mod global_flags;
mod secure;
mod watcher;
mod workloads;

use std::process::Output;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// A running apiserver; stopped (and its data removed) on drop.
pub struct Server {
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    /// The admin's client.
    pub client: minik_client::Client,
    /// The admin's kubeconfig (the CA, the server, a `system:masters` certificate).
    pub kubeconfig: std::path::PathBuf,
    shutdown: CancellationToken,
    _data: tempfile::TempDir,
}

impl Server {
    /// Starts an apiserver on a free loopback port.
    pub async fn start() -> Server {
        Server::start_with_window(10_000).await
    }

    /// Starts an apiserver whose watch history keeps only the last `window` events.
    pub async fn start_with_window(window: usize) -> Server {
        use minik_cluster::pki::{Identity, Pki};
        let data = tempfile::tempdir().expect("temp dir");
        let backend = minik_apiserver::StorageBackend::sled(&data.path().join("db"), window)
            .expect("open storage");
        let pki = Pki::ensure(data.path(), &[]).expect("pki");
        let (cert_file, key_file) = pki.files("apiserver");
        let options = minik_apiserver::ServeOptions {
            tls: Some(minik_apiserver::tls::TlsFiles {
                cert_file,
                key_file,
                client_ca_file: Some(pki.ca_file()),
            }),
            ..Default::default()
        };
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("https://{}", listener.local_addr().expect("addr"));
        let shutdown = CancellationToken::new();
        let serve = minik_apiserver::serve_with(listener, backend, options, shutdown.clone());
        tokio::spawn(serve);
        let kubeconfig = data.path().join("admin.kubeconfig");
        pki.write_kubeconfig(&Identity::admin(), &url, &kubeconfig)
            .expect("kubeconfig");
        let client = minik_client::Client::from_kubeconfig(&kubeconfig).expect("client");
        Server {
            url,
            client,
            kubeconfig,
            shutdown,
            _data: data,
        }
    }

    /// Runs `minik ARGS --kubeconfig ADMIN` to completion (at most 30 s).
    pub async fn minik(&self, args: &[&str]) -> Run {
        self.minik_with_stdin(args, None).await
    }

    /// Like [`Server::minik`], feeding `stdin` to the process.
    pub async fn minik_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut command = self.command(args);
        command.stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        });
        let mut child = command.spawn().expect("spawn minik");
        if let Some(text) = stdin {
            use tokio::io::AsyncWriteExt;
            let mut pipe = child.stdin.take().expect("stdin");
            pipe.write_all(text.as_bytes()).await.expect("write stdin");
        }
        let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .expect("minik finished in time")
            .expect("minik output");
        Run::from(output)
    }

    /// A `minik` command with `--kubeconfig` appended and piped output.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = minik_command(args);
        command.arg("--kubeconfig").arg(&self.kubeconfig);
        command
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// `minik ARGS` with a clean environment for server resolution.
pub fn minik_command(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_minik"));
    command
        .args(args)
        .env_remove("MINIK_SERVER")
        .env("KUBECONFIG", "/nonexistent")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

/// What a finished `minik` printed and returned.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Asserts success and returns stdout.
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "minik failed: {self:?}");
        &self.stdout
    }
}

/// Writes a manifest into a temp dir and returns (dir, path).
pub fn manifest(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, text).expect("write manifest");
    let path = path.display().to_string();
    (dir, path)
}

/// A pod manifest running `image`.
pub fn pod_yaml(name: &str, image: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels:\n    app: {name}\nspec:\n  containers:\n  - name: main\n    image: {image}\n    ports:\n    - containerPort: 8080\n")
}
