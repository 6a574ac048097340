//! A real one-member etcd for the etcd backend's tests, on loopback ports in a temp dir.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/storage/etcd3/testing` and the integration
//! framework's `startEtcd`, which run the `etcd` binary for a test. Here it is Debian's
//! `etcd-server`; when the binary is absent the caller prints a SKIPPED line instead of testing.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running etcd, killed and reaped on drop (its temp dir goes with it).
pub(super) struct EtcdServer {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    child: Child,
    _dir: tempfile::TempDir,
}

/// A loopback port free right now (etcd binds it a moment later).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

/// The `etcd` binary on PATH, if installed.
fn etcd_binary() -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join("etcd"))
        .find(|path| path.is_file())
}

impl EtcdServer {
    /// Starts etcd and waits until it answers; `None` (with a SKIPPED line) if it is not installed.
    pub async fn start(test: &str) -> Option<EtcdServer> {
        let Some(binary) = etcd_binary() else {
            println!("SKIPPED {test}: no etcd binary (apt-get install etcd-server)");
            return None;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let (client, peer) = (free_port(), free_port());
        let endpoint = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.path().join("etcd.log")).expect("log file");
        let child = Command::new(binary)
            .arg("--name=t")
            .arg(format!("--data-dir={}", dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={endpoint}"))
            .arg(format!("--advertise-client-urls={endpoint}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=t={peer_url}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start etcd");
        let server = EtcdServer {
            endpoint,
            child,
            _dir: dir,
        };
        server.wait_ready().await;
        Some(server)
    }

    async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let connected = etcd_client::Client::connect([&self.endpoint], None).await;
            if let Ok(mut client) = connected {
                if client.status().await.is_ok() {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "etcd did not answer within 20 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
