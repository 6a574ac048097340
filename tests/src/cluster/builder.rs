//! `ClusterBuilder`: the options of a test cluster and how `start()` brings it up.
//!
//! Kubernetes counterpart: `test/integration/framework.StartTestServer`'s options and kind's
//! cluster config. The order is the one `minik up` uses: the apiserver (until `/readyz`), the
//! scheduler, the endpoint controller and the proxy, then the kubelets, and finally a watch on
//! nodes until every one is Ready. Timings default to fast values (restart backoff 200 ms,
//! heartbeat 1 s) so tests stay short.

use std::path::{Path, PathBuf};
use std::time::Duration;

use minik_client::Client;
use tokio_util::sync::CancellationToken;

use crate::cluster::{strings, Cluster};
use crate::component::Component;
use crate::error::{Error, Result};

/// Options of a test cluster; see [`Cluster::builder`].
#[derive(Clone, Debug)]
pub struct ClusterBuilder {
    pub(crate) nodes: u8,
    pub(crate) processes: bool,
    pub(crate) sync_delay: Duration,
    pub(crate) backoff_base: Duration,
    pub(crate) heartbeat_interval: Duration,
    pub(crate) dial_attempts: Option<u16>,
    pub(crate) proxy: bool,
    pub(crate) endpoint_controller: bool,
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        ClusterBuilder {
            nodes: 1,
            processes: std::env::var_os("MINIK_E2E_PROCESSES").is_some_and(|v| v == "1"),
            sync_delay: Duration::ZERO,
            backoff_base: Duration::from_millis(200),
            heartbeat_interval: Duration::from_secs(1),
            dial_attempts: None,
            proxy: true,
            endpoint_controller: true,
        }
    }
}

impl ClusterBuilder {
    /// How many nodes (`node-1` … `node-N`); 0 is allowed (add some later with `add_node`).
    pub fn nodes(mut self, nodes: u8) -> Self {
        self.nodes = nodes;
        self
    }

    /// Run components as `minik <component>` child processes instead of tasks.
    pub fn processes(mut self, processes: bool) -> Self {
        self.processes = processes;
        self
    }

    /// The proxy's `--sync-delay`.
    pub fn sync_delay(mut self, delay: Duration) -> Self {
        self.sync_delay = delay;
        self
    }

    /// The kubelets' `--backoff-base` (default 200 ms).
    pub fn backoff_base(mut self, base: Duration) -> Self {
        self.backoff_base = base;
        self
    }

    /// The kubelets' `--heartbeat-interval` (default 1 s).
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_interval = interval;
        self
    }

    /// The proxy's `--dial-attempts`.
    pub fn dial_attempts(mut self, attempts: u16) -> Self {
        self.dial_attempts = Some(attempts);
        self
    }

    /// Leave the proxy and the endpoint controller out (tests of pods only start faster).
    pub fn without_services(mut self) -> Self {
        self.proxy = false;
        self.endpoint_controller = false;
        self
    }

    /// Starts the cluster and waits until it is ready.
    pub async fn start(self) -> Result<Cluster> {
        init_logging();
        let minik = minik_binary()?;
        let dir = tempfile::Builder::new().prefix("minik-test-").tempdir()?;
        let log_dir = dir.path().join("logs");
        std::fs::create_dir_all(&log_dir)?;
        let root = CancellationToken::new();

        // The API server's port: bound now and handed over in-process; for a child process it is
        // freed and passed as a flag (the short gap is the usual price of `--listen`).
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?;
        let server_url = format!("http://{address}");
        let apiserver_args =
            strings(&["apiserver", "--listen", &address.to_string(), "--data-dir"])
                .into_iter()
                .chain([dir.path().join("apiserver").display().to_string()])
                .collect();
        let mut cluster = Cluster {
            client: Client::new(&server_url)?,
            server_url,
            minik,
            log_dir,
            root,
            components: Vec::new(),
            nodes: 0,
            options: self.clone(),
            dir,
        };
        let mut apiserver = Component::new("apiserver", apiserver_args, &cluster.log_dir);
        if self.processes {
            drop(listener);
            apiserver.start_process(&cluster.minik)?;
        } else {
            listener.set_nonblocking(true)?;
            apiserver.start_task(
                &cluster.root,
                Some(tokio::net::TcpListener::from_std(listener)?),
            )?;
        }
        cluster.components.push(apiserver);
        cluster.wait_readyz().await?;

        let server = cluster.server_url.clone();
        cluster.start_component("scheduler", strings(&["scheduler", "--server", &server]))?;
        if self.endpoint_controller {
            cluster.start_component(
                "endpoint-controller",
                strings(&["endpoint-controller", "--server", &server]),
            )?;
        }
        if self.proxy {
            let mut args = strings(&[
                "proxy",
                "--server",
                &server,
                "--sync-delay",
                &humantime::format_duration(self.sync_delay).to_string(),
            ]);
            if let Some(attempts) = self.dial_attempts {
                args.extend(strings(&["--dial-attempts", &attempts.to_string()]));
            }
            cluster.start_component("proxy", args)?;
        }
        for _ in 0..self.nodes {
            cluster.start_kubelet()?;
        }
        cluster.wait_nodes_ready().await?;
        Ok(cluster)
    }
}

/// The `minik` binary: `$MINIK_BIN`, else `target/debug/minik` next to the test executable
/// (`target/debug/deps/e2e-…`).
pub fn minik_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("MINIK_BIN") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe()?;
    let candidate = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join("minik"))
        .unwrap_or_default();
    if candidate.is_file() {
        Ok(candidate)
    } else {
        Err(Error::MissingBinary(candidate))
    }
}

/// Logs of in-process components go to the test output, filtered by `RUST_LOG` (default `warn`).
fn init_logging() {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}
