//! `ClusterBuilder`: the options of a test cluster and how `start()` brings it up.
//!
//! Kubernetes counterpart: `test/integration/framework.StartTestServer`'s options and kind's
//! cluster config. The options become a `minik_cluster::ClusterConfig`, so the order and the
//! readiness waits are `minik up`'s: the apiserver (until `/readyz`), the scheduler, the controller
//! manager, the kubelets
//! (until a watch sees every node Ready), the endpoint controller and the proxy. Timings default
//! to fast values (restart backoff 200 ms, heartbeat 1 s) so tests stay short. Clusters are
//! secure, as `minik up`'s: HTTPS, a certificate per component, RBAC; the test's client is the
//! admin's, built from the written `DATA/kubeconfig` alone. `.insecure()` is plain http.

use std::path::{Path, PathBuf};
use std::time::Duration;

use minik_cluster::{ClusterConfig, Component, Mode};

use crate::cluster::Cluster;
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
    pub(crate) secure: bool,
    pub(crate) controller_manager_args: Vec<String>,
    pub(crate) pod_pids_limit: Option<i64>,
    pub(crate) ingress: Option<Vec<String>>,
    pub(crate) loadbalancer: Option<Vec<String>>,
    pub(crate) dashboard: bool,
    pub(crate) metrics_server: Option<Vec<String>>,
    pub(crate) kubelet_args: Vec<String>,
    pub(crate) autoscaler: Option<minik_cluster_autoscaler::Config>,
    pub(crate) node_cidr_mask_size: Option<u8>,
    pub(crate) storage: Option<String>,
    pub(crate) apiservers: u8,
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
            secure: true,
            controller_manager_args: Vec::new(),
            pod_pids_limit: None,
            ingress: None,
            loadbalancer: None,
            dashboard: false,
            metrics_server: None,
            kubelet_args: Vec::new(),
            autoscaler: None,
            node_cidr_mask_size: None,
            storage: None,
            apiservers: 1,
        }
    }
}

impl ClusterBuilder {
    /// How many nodes (`node-1` … `node-N`); 0 is allowed (add some later with `add_node`).
    pub fn nodes(mut self, nodes: u8) -> Self {
        self.nodes = nodes;
        self
    }

    /// Also start the dashboard (`minik up --dashboard`); [`crate::Cluster::dashboard_url`] has its URL.
    pub fn dashboard(mut self) -> Self {
        self.dashboard = true;
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

    /// More flags for the controller manager (`--node-monitor-grace-period 4s` …).
    pub fn controller_manager_args(mut self, args: &[&str]) -> Self {
        self.controller_manager_args
            .extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// The kubelets' `--pod-pids-limit`.
    pub fn pod_pids_limit(mut self, limit: i64) -> Self {
        self.pod_pids_limit = Some(limit);
        self
    }

    /// More flags for every kubelet (`--max-pods 400`, …).
    pub fn kubelet_args(mut self, args: &[&str]) -> Self {
        self.kubelet_args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Each node's pod CIDR prefix length (`minik up --node-cidr-mask-size`; default 24).
    pub fn node_cidr_mask_size(mut self, size: u8) -> Self {
        self.node_cidr_mask_size = Some(size);
        self
    }

    /// Leave the proxy and the endpoint controller out (tests of pods only start faster).
    pub fn without_services(mut self) -> Self {
        self.proxy = false;
        self.endpoint_controller = false;
        self
    }

    /// Plain http with no authentication (`minik up --insecure`).
    pub fn insecure(mut self) -> Self {
        self.secure = false;
        self
    }

    /// Leave the proxy out (consumers that read EndpointSlices themselves need no Service IP).
    pub fn without_proxy(mut self) -> Self {
        self.proxy = false;
        self
    }

    /// Start the ingress controller too, with these extra flags (`--sync-delay 1s`). Off by
    /// default in tests, which mostly need no Ingress; `minik up` always starts it.
    pub fn ingress(mut self, args: &[&str]) -> Self {
        self.ingress = Some(args.iter().map(|a| a.to_string()).collect());
        self
    }

    /// Start the load balancer too, with these extra flags (`--batch-period 2s`).
    pub fn loadbalancer(mut self, args: &[&str]) -> Self {
        self.loadbalancer = Some(args.iter().map(|a| a.to_string()).collect());
        self
    }

    /// Start metrics-server too, with these extra flags (`--metric-resolution 1s`). Off by
    /// default in tests; `minik up` always starts it.
    pub fn metrics_server(mut self, args: &[&str]) -> Self {
        self.metrics_server = Some(args.iter().map(|a| a.to_string()).collect());
        self
    }

    /// Run the cluster autoscaler with its node group (off by default).
    pub fn autoscaler(mut self, config: minik_cluster_autoscaler::Config) -> Self {
        self.autoscaler = Some(config);
        self
    }

    /// The apiserver's `--storage` (`etcd://127.0.0.1:PORT`); default: sled in the data directory.
    pub fn storage(mut self, storage: &str) -> Self {
        self.storage = Some(storage.to_string());
        self
    }

    /// How many apiservers, behind the launcher's front door (more than one needs etcd).
    pub fn apiservers(mut self, count: u8) -> Self {
        self.apiservers = count;
        self
    }

    /// Starts the cluster and waits until it is ready.
    pub async fn start(self) -> Result<Cluster> {
        init_logging();
        let minik = minik_binary()?;
        let dir = tempfile::Builder::new().prefix("minik-test-").tempdir()?;
        let inner = minik_cluster::Cluster::start(self.config(&minik, dir.path())).await?;
        Ok(Cluster {
            client: inner.client()?,
            inner: Some(inner),
            minik,
            dir,
        })
    }

    /// The launcher's configuration for these options.
    fn config(&self, minik: &Path, dir: &Path) -> ClusterConfig {
        let text = |d: Duration| Some(humantime::format_duration(d).to_string());
        let mut components = Component::ALL.to_vec();
        components.retain(|c| match c {
            Component::Proxy => self.proxy,
            Component::EndpointController => self.endpoint_controller,
            Component::Ingress => self.ingress.is_some(),
            Component::LoadBalancer => self.loadbalancer.is_some(),
            Component::Dashboard => self.dashboard,
            Component::MetricsServer => self.metrics_server.is_some(),
            _ => true,
        });
        ClusterConfig {
            binary: minik.to_path_buf(),
            data_dir: dir.to_path_buf(),
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            nodes: self.nodes,
            sync_delay: text(self.sync_delay),
            backoff_base: text(self.backoff_base),
            heartbeat_interval: text(self.heartbeat_interval),
            proxy_args: self
                .dial_attempts
                .map(|n| vec!["--dial-attempts".into(), n.to_string()])
                .unwrap_or_default(),
            // A controller manager killed with -9 leaves its Lease behind: a short lease lets its
            // successor take over within seconds instead of upstream's 15.
            controller_manager_args: ["--leader-elect-lease-duration", "3s"]
                .into_iter()
                .chain(["--leader-elect-renew-deadline", "2s"])
                .chain(["--leader-elect-retry-period", "500ms"])
                .map(String::from)
                .chain(self.controller_manager_args.iter().cloned())
                .collect(),
            kubelet_args: self
                .pod_pids_limit
                .map(|n| vec!["--pod-pids-limit".into(), n.to_string()])
                .unwrap_or_default()
                .into_iter()
                .chain(self.kubelet_args.iter().cloned())
                .collect(),
            autoscaler: self.autoscaler.clone(),
            ingress_args: self.ingress.clone().unwrap_or_default(),
            loadbalancer_args: self.loadbalancer.clone().unwrap_or_default(),
            metrics_server_args: self.metrics_server.clone().unwrap_or_default(),
            progress: false,
            mode: if self.processes {
                Mode::Processes
            } else {
                Mode::InProcess
            },
            components,
            drain_grace: Some(1),
            reap_leftovers: false,
            secure: self.secure,
            // Clusters of tests running side by side share the machine's loopback: each takes
            // its own pod network, 127.P.N.0/24 with P at random among 116 values (128–243 lie
            // clear of the service, load balancer and DNS ranges).
            pod_network: rand::random_range(128..=243),
            node_cidr_mask_size: self
                .node_cidr_mask_size
                .unwrap_or(minik_cluster::nodeipam::DEFAULT_NODE_CIDR_MASK_SIZE),
            storage: self.storage.clone(),
            apiservers: self.apiservers,
            ..ClusterConfig::default()
        }
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
