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
//! Beside it runs the EndpointSlice mirroring controller ([`mirroring`]): one slice per Endpoints
//! object, which is what `kubectl describe service` reads.
//!
//! minik simplifies: slices are mirrored from the Endpoints rather than computed from pods by a
//! controller of their own; no leader election.
//! Read next: [`endpoints`], the rules of who is in and who is out.

pub mod capacity;
pub mod controller;
pub mod endpoints;
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

/// What can stop the endpoint controller.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The apiserver URL is not usable.
    #[error("client: {0}")]
    Client(#[from] minik_client::Error),
}

/// The controller's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The controller's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The apiserver, e.g. `http://127.0.0.1:6443`.
    pub server: String,
    /// A kubeconfig to connect with instead of plain http to `server` (its server wins).
    pub kubeconfig: Option<PathBuf>,
    /// How many Services are synced concurrently (upstream `--concurrent-endpoint-syncs`, default 5).
    pub workers: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server: "http://127.0.0.1:6443".to_string(),
            kubeconfig: None,
            workers: 5,
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
}

impl Args {
    /// The configuration these flags describe.
    pub fn into_config(self) -> Config {
        Config {
            server: self.server,
            kubeconfig: self.kubeconfig,
            workers: self.workers.max(1),
        }
    }
}

/// Runs the controller until `shutdown` is cancelled; returns after its tasks have finished.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let pods = watcher(Api::<Pod>::all(client.clone()), ListParams::default());
    let services = watcher(Api::<Service>::all(client.clone()), ListParams::default());
    let endpoints = watcher(Api::<Endpoints>::all(client.clone()), ListParams::default());
    let mirrored = watcher(Api::<Endpoints>::all(client.clone()), ListParams::default());
    let slices = watcher(
        Api::<EndpointSlice>::all(client.clone()),
        ListParams::default(),
    );
    let writes = writes::ApiWrites::new(client);
    let endpoints_controller = workers::run_controller(
        writes.clone(),
        pods,
        services,
        endpoints,
        config.workers,
        shutdown.clone(),
    );
    let mirroring = workers::run_mirroring(writes, mirrored, slices, config.workers, shutdown);
    tokio::join!(endpoints_controller, mirroring);
    Ok(())
}
