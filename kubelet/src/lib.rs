//! minik-kubelet: the node agent that runs pods as real processes and reports them back.
//!
//! Kubernetes counterpart: the kubelet (`cmd/kubelet`, `pkg/kubelet/`). Like the real one it
//! learns about its pods only by watching the apiserver (`spec.nodeName=<node>`), runs one worker
//! per pod, drives a container runtime through a narrow CRI-like trait (`cri/`), and writes pod
//! status, Events, its Node and a Lease back. The loop, in five bullets:
//!
//! 1. register the Node (`node.rs`) and keep its Lease fresh;
//! 2. watch this node's pods and keep one worker per pod (`sync_loop.rs`, `pod_worker/`), and
//!    the ConfigMaps, Secrets and Services they reference (`sources.rs`);
//! 3. each worker asks the pure planner what to do (`plan.rs`) and applies it
//!    (`pod_worker/sync_pod.rs`):
//!    sandbox (IP + volumes, `sandbox.rs`), configMap/secret/downwardAPI/projected volume files
//!    (`projection.rs`, `atomic_writer.rs`), init containers in order, app containers with
//!    their environment (`env.rs`, `envvars.rs`, `downward.rs`), hooks (`hooks.rs`), probes
//!    (`probes.rs`), restarts with CrashLoopBackOff; a finished pod gives back its IP and volumes;
//! 4. it reports the status computed by `status.rs` only when it changed;
//! 5. a pod with a `deletionTimestamp` is stopped per the grace rules (`minik_api::grace`,
//!    `terminate.rs`, `pod_worker/sync_terminating_pod.rs`) and then removed from the API.
//!
//! Container logs are served on `listen` (`server.rs`) for the apiserver's `pods/log` proxy, and
//! so is each container's CPU and memory, measured from `/proc` (`stats.rs`, `GET /stats/summary`)
//! for metrics-server; a container over its memory limit is killed as `OOMKilled` (`memory.rs`).
//!
//! **Shutdown policy (a documented choice, as the real kubelet):** when the kubelet stops, it
//! leaves the pods' processes running (each is supervised by its own `minik shim`). When it starts
//! again it adopts them from the runtime — matching pod uid, container name and attempt — so
//! nothing is killed or started twice; containers of pods that were deleted or moved meanwhile
//! are stopped and cleaned up. Stopping the pods themselves is `minik down`'s job (it deletes
//! them through the API first).
//!
//! minik simplifies: no pause containers, images or CPU limits (the pids cap, `cgroups.rs`, and
//! memory limits, `memory_cgroup.rs`, use cgroups where they can, else watchdogs), static pods,
//! eviction or node pressure; the node always reports itself Ready (the controller manager marks a
//! silent one Unknown).
//!
//! Modules with children use the `name/mod.rs` layout (`cri/`, `images/`, `pod_worker/`,
//! `shim/`), as the rest of the workspace does; unit-test fixtures are in `testing.rs`.
//!
//! Read next: `plan.rs` (the plan), then `pod_worker/mod.rs`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

pub mod atomic_writer;
pub mod cgroups;
pub mod cidr;
pub mod claims;
pub mod container;
pub mod cri;
pub mod downward;
pub mod env;
pub mod envvars;
pub mod ephemeral;
pub mod hooks;
pub mod images;
pub mod memory;
pub mod memory_cgroup;
pub mod mountns;
pub mod network;
pub mod node;
pub mod phase;
pub mod pids;
pub mod plan;
pub mod pod_worker;
pub mod probes;
pub mod projection;
pub mod reporter;
pub mod sandbox;
pub mod server;
pub mod shim;
pub mod sources;
pub mod stats;
pub mod status;
pub mod streaming;
pub mod sync_loop;
pub mod terminate;
pub mod volumes;

pub mod args;
pub use args::Args;

#[cfg(test)]
mod testing;

/// Errors that stop the kubelet.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag or setting cannot work (a non-loopback listen address, a bad server URL …).
    #[error("invalid kubelet configuration: {0}")]
    Config(String),
    /// The container runtime could not be opened.
    #[error(transparent)]
    Runtime(#[from] cri::Error),
    /// The pod network state could not be opened.
    #[error(transparent)]
    Network(#[from] network::Error),
    /// A file or socket operation failed.
    #[error("kubelet i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The apiserver client failed in a way that cannot be retried (boxed: it is large).
    #[error(transparent)]
    Client(Box<minik_client::Error>),
}

impl From<minik_client::Error> for Error {
    fn from(error: minik_client::Error) -> Self {
        Error::Client(Box::new(error))
    }
}

/// Result with the kubelet's [`Error`] as default.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Node capacity (also reported as allocatable).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// CPU cores, as a quantity (`4`, `3500m`).
    pub cpu: String,
    /// Memory, as a quantity (`8Gi`, `16303212Ki`).
    pub memory: String,
    /// The most pods this node takes.
    pub pods: String,
}

impl Default for Capacity {
    /// The host's cores and memory, and upstream's 110 pods.
    fn default() -> Self {
        let (cpu, memory) = node::host_capacity();
        Capacity {
            cpu,
            memory,
            pods: "110".into(),
        }
    }
}

/// How one kubelet runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// The apiserver URL, e.g. `http://127.0.0.1:6443`.
    pub server: String,
    /// A kubeconfig to connect with instead of plain http to `server` (its server wins).
    pub kubeconfig: Option<PathBuf>,
    /// This node's name (`node-1`).
    pub node_name: String,
    /// Where containers, logs, volumes and IP allocations are kept.
    pub root_dir: PathBuf,
    /// This node's pod CIDR (`127.244.1.0/24`).
    pub pod_cidr: String,
    /// The logs server's address (loopback only; port 0 picks one).
    pub listen: SocketAddr,
    /// Serve it over HTTPS, authorizing every request through the apiserver.
    pub tls: Option<server::TlsFiles>,
    /// The `minik` binary: runs `shim` and the built-in images.
    pub minik_binary: PathBuf,
    /// Capacity and allocatable.
    pub capacity: Capacity,
    /// Lease renewal period (10 s upstream).
    pub heartbeat_interval: Duration,
    /// First CrashLoopBackOff delay (10 s upstream; small in tests).
    pub backoff_base: Duration,
    /// Longest CrashLoopBackOff delay (300 s upstream).
    pub backoff_max: Duration,
    /// The most processes a pod may have (`--pod-pids-limit`; negative: no limit).
    pub pod_pids_limit: i64,
    /// `--cluster-dns`: nameservers for ClusterFirst pods (empty: the host's resolver).
    pub cluster_dns: Vec<String>,
    /// `--cluster-domain`.
    pub cluster_domain: String,
    /// `--node-labels`: added to the Node's labels when it registers.
    pub node_labels: std::collections::BTreeMap<String, String>,
}

/// Runs the kubelet until `shutdown`; returns after its tasks have finished (pods keep running).
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    if !config.listen.ip().is_loopback() {
        return Err(Error::Config(format!(
            "--listen {} is not a loopback address",
            config.listen
        )));
    }
    let client = minik_client::Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let (api_host, api_port) = api_address(client.base_url())?;
    std::fs::create_dir_all(&config.root_dir)?;
    let bind_rewrite = shim::bind_rewrite::describe();
    info!(node = %config.node_name, bind_rewrite, "pod network");
    let process_runtime =
        cri::process::ProcessRuntime::new(config.root_dir.clone(), config.minik_binary.clone())?;
    let pod_cgroups = cgroups::PodCgroups::detect(
        &cgroups::base_name(&config.node_name, &config.root_dir),
        config.pod_pids_limit,
    );
    if let Some(cgroups) = &pod_cgroups {
        process_runtime.set_pod_cgroups(cgroups.clone());
        // Reconcile after a kill -9: the cgroups of pods none of whose containers is left go
        // now, as upstream's `cleanupOrphanedPodCgroups` (HandlePodCleanups) does at each pass.
        let live: Vec<String> = cri::Runtime::list_containers(&process_runtime)
            .into_iter()
            .map(|c| c.config.pod_uid)
            .collect();
        cgroups.remove_others(&live);
    }
    let runtime: Arc<dyn cri::Runtime> = Arc::new(process_runtime);
    let mut node_sandbox =
        sandbox::NodeSandbox::open(&config.root_dir, &config.pod_cidr)?.with_client(client.clone());
    node_sandbox.namespaces = mountns::pod::PodNamespaces {
        support: mountns::detect(&config.minik_binary),
        cluster_dns: config.cluster_dns.clone(),
        cluster_domain: config.cluster_domain.clone(),
    };
    let support = node_sandbox.namespaces.support.clone();
    info!(available = support.available, detail = %support.detail, "mount namespaces");
    let sandbox = Arc::new(node_sandbox);
    let tracker = TaskTracker::new();

    let stats_cache = stats::StatsCache::default();
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let port = listener.local_addr()?.port();
    let state = server::ServerState {
        runtime: runtime.clone(),
        shutdown: shutdown.clone(),
        authorization: config.tls.is_some().then(|| server::Webhook {
            client: client.clone(),
            node_name: config.node_name.clone(),
        }),
        stats: stats_cache.clone(),
    };
    let tls = config.tls.clone();
    let https = tls.is_some();
    tracker.spawn(async move {
        if let Err(error) = server::serve(listener, state, tls).await {
            warn!(%error, "logs server failed");
        }
    });
    info!(node = %config.node_name, port, https, "serving container logs");

    let (reporter, event_writer) =
        reporter::ApiReporter::new(client.clone(), &config.node_name, shutdown.clone());
    tracker.spawn(event_writer);
    let node_info = node::NodeInfo {
        name: config.node_name.clone(),
        pod_cidr: config.pod_cidr.clone(),
        capacity: [
            ("cpu", &config.capacity.cpu),
            ("memory", &config.capacity.memory),
            ("pods", &config.capacity.pods),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect(),
        kubelet_port: port,
        labels: config.node_labels.clone(),
    };
    if register_until_done(&client, &node_info, &shutdown).await {
        mountns::annotate_node(&client, &config.node_name, &support).await;
        tracker.spawn(node::heartbeat(
            client.clone(),
            node_info,
            config.heartbeat_interval,
            shutdown.clone(),
        ));
        let sources = sources::WatchedSources::start(&client, &tracker, &shutdown);
        tracker.spawn(pids::watchdog(
            runtime.clone(),
            reporter.clone(),
            config.pod_pids_limit,
            pod_cgroups,
            shutdown.clone(),
        ));
        // Usage for `/stats/summary`, and the memory-limit watchdog fed by each sample.
        let (limits, limits_watch) =
            memory::Limits::watch(client.clone(), &config.node_name, shutdown.clone());
        tracker.spawn(limits_watch);
        let idle = limits.clone();
        let stopping = shutdown.clone();
        tracker.spawn(async move {
            stopping.cancelled().await;
            idle.release_idle();
        });
        let oom_reporter: Arc<dyn reporter::PodReporter> = reporter.clone();
        tracker.spawn(stats::run(
            runtime.clone(),
            config.node_name.clone(),
            stats_cache,
            move |sampled: &[stats::Sampled]| limits.enforce(sampled, &oom_reporter),
            shutdown.clone(),
        ));
        let ctx = Arc::new(pod_worker::WorkerContext {
            runtime,
            reporter,
            sandbox,
            node_name: config.node_name.clone(),
            host_ip: "127.0.0.1".into(),
            root_dir: config.root_dir.clone(),
            minik_binary: config.minik_binary.clone(),
            api_host,
            api_port,
            backoff: plan::BackoffPolicy {
                base: config.backoff_base,
                max: config.backoff_max,
            },
            tracker: tracker.clone(),
            source_changes: sources.changes(),
            sources: Arc::new(sources),
            allocatable: [
                ("cpu", &config.capacity.cpu),
                ("memory", &config.capacity.memory),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        });
        sync_loop::sync_loop(ctx, client, shutdown.clone()).await;
    }
    shutdown.cancel();
    tracker.close();
    if tokio::time::timeout(Duration::from_secs(10), tracker.wait())
        .await
        .is_err()
    {
        warn!("kubelet tasks did not finish within 10s");
    }
    info!(node = %config.node_name, "kubelet stopped; pods left running");
    Ok(())
}

/// Registers the node, retrying every second until it works; false if shutdown came first.
async fn register_until_done(
    client: &minik_client::Client,
    info: &node::NodeInfo,
    shutdown: &CancellationToken,
) -> bool {
    loop {
        match node::register_node(client, info).await {
            Ok(()) => return true,
            Err(error) => warn!(node = %info.name, %error, "could not register node, retrying"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return false,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// `KUBERNETES_SERVICE_HOST` and `_PORT` from the server URL.
fn api_address(server: &str) -> Result<(String, String)> {
    let url = reqwest::Url::parse(server)
        .map_err(|e| Error::Config(format!("--server {server}: {e}")))?;
    let host = url
        .host_str()
        .ok_or_else(|| Error::Config(format!("--server {server} has no host")))?;
    let port = url.port_or_known_default().unwrap_or(80);
    Ok((host.trim_matches(['[', ']']).to_string(), port.to_string()))
}
