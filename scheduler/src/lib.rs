//! minik-scheduler: gives every new pod a node.
//!
//! Kubernetes counterpart: kube-scheduler (`cmd/kube-scheduler`, `pkg/scheduler`). Like it, the
//! scheduler is just another API client: it learns about pods and nodes by list + watch, decides,
//! and writes a `Binding` (POST `pods/{name}/binding`), which sets `spec.nodeName`; the kubelet of
//! that node then sees the pod in its own watch and starts it. The loop, in five steps:
//!
//! 1. watch every pod and node; keep one `NodeInfo` per node with the requests of its pods
//!    ([`cache`], [`node_info`]);
//! 2. queue the pods that have no node and ask for this scheduler ([`queue`]);
//! 3. pop one and decide: filter the nodes (also by their reach of the pod's volumes:
//!    [`volume_binding`]), score the survivors, pick the best ([`algorithm`]);
//! 4. assume it onto that node at once (so the next decision counts it), bind on a separate task,
//!    record `Scheduled` ([`scheduler`], [`writes`]);
//! 5. if nothing fits, write `PodScheduled=False` with Kubernetes' message and a
//!    `FailedScheduling` event, and park the pod until a node or pod change could make room.
//!
//! minik simplifies: one profile, no plugins framework, no preemption, no priority ordering, no
//! leader election. Read next: [`algorithm`], where the decision is made.

pub mod algorithm;
pub mod cache;
pub mod node_info;
pub mod quantity;
pub mod queue;
pub mod scheduler;
pub mod volume_binding;
pub mod writes;

#[cfg(test)]
mod testing;

use std::path::PathBuf;
use std::time::Duration;

use minik_api::core::{Node, Pod};
use minik_client::{watcher, Api, Client, ListParams};
use tokio_util::sync::CancellationToken;

pub use algorithm::{schedule, Unschedulable};
pub use scheduler::Scheduler;

/// The name pods get when they do not name a scheduler.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// What can stop the scheduler.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The apiserver URL is not usable.
    #[error("client: {0}")]
    Client(#[from] minik_client::Error),
}

/// The scheduler's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The scheduler's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The apiserver, e.g. `http://127.0.0.1:6443`.
    pub server: String,
    /// A kubeconfig to connect with instead of plain http to `server` (its server wins).
    pub kubeconfig: Option<PathBuf>,
    /// Pods whose `spec.schedulerName` is this are ours (upstream's profile name).
    pub scheduler_name: String,
    /// How many binds may be in flight at once.
    pub parallel_binds: usize,
    /// First retry delay after a failed bind (doubles per failure; upstream `podInitialBackoffSeconds`).
    pub initial_backoff: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server: "http://127.0.0.1:6443".to_string(),
            kubeconfig: None,
            scheduler_name: DEFAULT_SCHEDULER_NAME.to_string(),
            parallel_binds: 64,
            initial_backoff: Duration::from_secs(1),
        }
    }
}

/// Command-line flags of `minik-scheduler` and `minik scheduler`.
#[derive(Clone, Debug, clap::Parser)]
#[command(about = "The minik scheduler: filters and scores nodes, binds pods")]
pub struct Args {
    /// The apiserver URL.
    #[arg(long, default_value = "http://127.0.0.1:6443")]
    pub server: String,
    /// A kubeconfig to connect with (https, client certificate); its server wins over --server.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Schedule the pods whose spec.schedulerName is this.
    #[arg(long, default_value = DEFAULT_SCHEDULER_NAME)]
    pub scheduler_name: String,
    /// How many binds may be in flight at once.
    #[arg(long, default_value_t = 64)]
    pub parallel_binds: usize,
}

impl Args {
    /// The configuration these flags describe.
    pub fn into_config(self) -> Config {
        Config {
            server: self.server,
            kubeconfig: self.kubeconfig,
            scheduler_name: self.scheduler_name,
            parallel_binds: self.parallel_binds.max(1),
            ..Config::default()
        }
    }
}

/// Runs the scheduler until `shutdown` is cancelled; returns after its bind tasks have finished.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let pods = watcher(Api::<Pod>::all(client.clone()), ListParams::default());
    let nodes = watcher(Api::<Node>::all(client.clone()), ListParams::default());
    let (volumes, volume_watches) = volume_binding::VolumeLookup::start(&client, shutdown.clone());
    let scheduler = Scheduler::new(config, writes::ApiWrites::new(client)).with_volumes(volumes);
    scheduler.run(pods, nodes, shutdown).await;
    let _ = volume_watches.await;
    Ok(())
}
