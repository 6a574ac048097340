//! `minik-testenv`: a throwaway minik per test, handed back as a [`kube::Client`].
//!
//! Kubernetes counterpart: controller-runtime's envtest (`sigs.k8s.io/controller-runtime/pkg/envtest`),
//! whose `Environment.Start()` launches a real etcd and kube-apiserver binary for a test suite and
//! returns a `rest.Config`. [`TestEnv::start`] starts an ephemeral minik control plane in this
//! process instead (`minik_cluster::ephemeral`: objects in memory, no nodes, the apiserver on a
//! free loopback port, TLS and RBAC as in `minik up`), and hands back a client authenticated as
//! the cluster admin with the client certificate from the cluster's own PKI. Nothing has to be
//! installed: no etcd or apiserver binaries to download as envtest's `setup-envtest` does.
//!
//! [`TestEnv::stop`] stops the components and removes the temp dir; a dropped `TestEnv` kills
//! them at once and still removes the dir. Several may run side by side in one test binary.
//!
//! ```no_run
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let env = minik_testenv::TestEnv::start().await?;
//! let config_maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
//! let cm: ConfigMap = serde_json::from_value(serde_json::json!({
//!     "metadata": {"name": "settings"}, "data": {"mode": "fast"}
//! }))?;
//! config_maps.create(&PostParams::default(), &cm).await?;
//! env.stop().await;
//! # Ok(())
//! # }
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use minik_cluster::{ephemeral, Cluster, ClusterConfig, Mode};

/// Why a test environment did not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cluster failed to start.
    #[error("starting minik: {0}")]
    Start(#[from] minik_cluster::Error),
    /// The admin kubeconfig could not be read or turned into a client.
    #[error("admin kubeconfig: {0}")]
    Kubeconfig(String),
}

/// How many nodes and what else to start; [`TestEnv::start`] takes the defaults.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Nodes (kubelets) to start; 0 (the default) runs the control plane only.
    pub nodes: u8,
    /// Run the components as child processes of this `minik` binary (as `minik up --ephemeral`
    /// does) instead of tasks of the test process.
    pub processes: Option<PathBuf>,
}

/// A running ephemeral minik and a client for it.
pub struct TestEnv {
    /// A client authenticated as the cluster admin (`system:masters`).
    pub client: kube::Client,
    /// `https://127.0.0.1:PORT`.
    pub server_url: String,
    /// The admin kubeconfig (for kubectl or another client), inside the temp dir.
    pub kubeconfig: PathBuf,
    /// From the call to [`TestEnv::start`] until the client was made.
    pub startup: Duration,
    cluster: Option<Cluster>,
    // Declared last: removed after the cluster has stopped (or been killed on drop).
    _dir: tempfile::TempDir,
}

impl TestEnv {
    /// Starts an ephemeral control plane with no nodes and returns once the API answers.
    pub async fn start() -> Result<TestEnv, Error> {
        Self::start_with(Options::default()).await
    }

    /// Like [`TestEnv::start`], with `options`.
    pub async fn start_with(options: Options) -> Result<TestEnv, Error> {
        let started = Instant::now();
        let dir = ephemeral::data_dir()?;
        let (mode, binary) = match options.processes {
            Some(binary) => (Mode::Processes, binary),
            None => (Mode::InProcess, ClusterConfig::default().binary),
        };
        let base = ClusterConfig {
            listen: ([127, 0, 0, 1], 0).into(),
            progress: false,
            mode,
            binary,
            // Only this cluster's own components are stopped; the test process is not a reaper.
            reap_leftovers: false,
            drain_grace: Some(0),
            ..ClusterConfig::default()
        };
        let config = ephemeral::configure(base, &dir, options.nodes);
        let cluster = Cluster::start(config).await?;
        let kubeconfig = cluster
            .kubeconfig()
            .ok_or_else(|| Error::Kubeconfig("the cluster is not secure".into()))?;
        let client = client(&kubeconfig).await?;
        let startup = started.elapsed();
        tracing::info!(server = %cluster.server_url, ?startup, "test environment ready");
        Ok(TestEnv {
            client,
            server_url: cluster.server_url.clone(),
            kubeconfig,
            startup,
            cluster: Some(cluster),
            _dir: dir,
        })
    }

    /// Stops every component and removes the temp dir.
    pub async fn stop(mut self) {
        if let Some(cluster) = self.cluster.take() {
            cluster.stop().await;
        }
    }
}

/// A kube client from the admin kubeconfig the cluster wrote.
async fn client(path: &std::path::Path) -> Result<kube::Client, Error> {
    let error = |e: &dyn std::fmt::Display| Error::Kubeconfig(format!("{}: {e}", path.display()));
    let kubeconfig = Kubeconfig::read_from(path).map_err(|e| error(&e))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| error(&e))?;
    kube::Client::try_from(config).map_err(|e| error(&e))
}
