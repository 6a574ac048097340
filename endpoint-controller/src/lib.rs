//! minik-endpoint-controller: keeps one Endpoints object per Service listing the pods behind it.
//!
//! Kubernetes counterpart: the endpoints controller of kube-controller-manager
//! (`pkg/controller/endpoint/endpoints_controller.go`). The proxy routes a Service's traffic to the
//! addresses this controller publishes, so how fast it reacts decides how long traffic still goes
//! to a pod that is shutting down (the race of the seeds). The loop, in five steps:
//!
//! 1. watch Services, Pods and Endpoints into stores ([`workers`]);
//! 2. turn each event into the keys of the Services it may affect ([`handlers`]);
//! 3. merge those keys in a work queue (`minik_client::WorkQueue`);
//! 4. `sync_service(key)`: compute the subsets from the stores ([`endpoints::compute`], pure) and
//!    write the Endpoints only if they changed ([`controller`]);
//! 5. record the change: a log line with counts, the `last-change-trigger-time` annotation, and an
//!    Event per pod that entered or left the ready addresses ([`writes`]).
//!
//! Beside it run two more controllers, on the same loop (`workers.rs`):
//! - the EndpointSlice controller ([`endpointslice`]): each Service's EndpointSlices computed from
//!   its pods, at most `--max-endpoints-per-slice` endpoints a slice, terminating pods kept with
//!   their conditions. This is what the proxy and `kubectl describe service` read;
//! - the mirroring controller ([`mirroring`]): a slice for each Endpoints object of a Service
//!   without selector (written by someone else, so no controller computes its slices).
//!
//! minik simplifies: the three controllers run in one process (upstream: kube-controller-manager),
//! each with its own informers; no leader election.
//! Read next: [`endpoints`], the rules of who is in and who is out, then [`endpointslice`].

pub mod capacity;
pub mod controller;
pub mod endpoints;
pub mod endpointslice;
pub mod handlers;
pub mod mirroring;
pub mod workers;
pub mod writes;

#[cfg(test)]
mod testing;

use std::path::PathBuf;

use minik_api::core::{Endpoints, Pod, Service};
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_client::{watcher, Api, Client, ListParams};
use tokio_util::sync::CancellationToken;

pub use controller::EndpointsController;
pub use endpointslice::reconciler::DEFAULT_MAX_ENDPOINTS_PER_SLICE;

/// What can stop the endpoint controller.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The apiserver URL is not usable.
    #[error("client: {0}")]
    Client(#[from] minik_client::Error),
}

/// The controller's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why one sync failed (the key is retried after a backoff).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// A request to the apiserver failed (boxed: the client's error is large).
    #[error(transparent)]
    Client(Box<minik_client::Error>),
    /// The slice store has not yet seen this controller's own last writes for the Service.
    #[error("the EndpointSlice store is behind our last writes for {0}")]
    StaleSlices(String),
}

/// The controller's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The apiserver, e.g. `http://127.0.0.1:6443`.
    pub server: String,
    /// A kubeconfig to connect with instead of plain http to `server` (its server wins).
    pub kubeconfig: Option<PathBuf>,
    /// How many Services are synced concurrently (upstream `--concurrent-endpoint-syncs`, default 5).
    pub workers: usize,
    /// The most endpoints one EndpointSlice holds (upstream `--max-endpoints-per-slice`, 100).
    pub max_endpoints_per_slice: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server: "http://127.0.0.1:6443".to_string(),
            kubeconfig: None,
            workers: 5,
            max_endpoints_per_slice: DEFAULT_MAX_ENDPOINTS_PER_SLICE,
        }
    }
}

/// Command-line flags of `minik-endpoint-controller` and `minik endpoint-controller`.
#[derive(Clone, Debug, clap::Parser)]
#[command(about = "The minik endpoint controller: keeps each Service's Endpoints up to date")]
pub struct Args {
    /// The apiserver URL.
    #[arg(long, default_value = "http://127.0.0.1:6443")]
    pub server: String,
    /// A kubeconfig to connect with (https, client certificate); its server wins over --server.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// How many Services are synced concurrently.
    #[arg(long, default_value_t = 5)]
    pub workers: usize,
    /// The most endpoints one EndpointSlice holds (1 to 1000, as upstream).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub max_endpoints_per_slice: u16,
}

impl Args {
    /// The configuration these flags describe.
    pub fn into_config(self) -> Config {
        Config {
            server: self.server,
            kubeconfig: self.kubeconfig,
            workers: self.workers.max(1),
            max_endpoints_per_slice: usize::from(self.max_endpoints_per_slice),
        }
    }
}

impl From<minik_client::Error> for SyncError {
    fn from(error: minik_client::Error) -> Self {
        SyncError::Client(Box::new(error))
    }
}

/// Runs the controller until `shutdown` is cancelled; returns after its tasks have finished.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let pods = || watcher(Api::<Pod>::all(client.clone()), ListParams::default());
    let services = || watcher(Api::<Service>::all(client.clone()), ListParams::default());
    let endpoints = || watcher(Api::<Endpoints>::all(client.clone()), ListParams::default());
    let slices = || {
        watcher(
            Api::<EndpointSlice>::all(client.clone()),
            ListParams::default(),
        )
    };
    let writes = writes::ApiWrites::new(client.clone());
    let workers = config.workers;
    let endpoints_controller = workers::run_controller(
        writes.clone(),
        pods(),
        services(),
        endpoints(),
        workers,
        shutdown.clone(),
    );
    let slice_controller = workers::run_slices(
        writes.clone(),
        pods(),
        services(),
        slices(),
        workers,
        config.max_endpoints_per_slice,
        shutdown.clone(),
    );
    let mirroring =
        workers::run_mirroring(writes, endpoints(), services(), slices(), workers, shutdown);
    tokio::join!(endpoints_controller, slice_controller, mirroring);
    Ok(())
}
