//! minik-ingress: an L7 HTTP ingress controller that reads endpoints straight from EndpointSlices.
//!
//! Kubernetes counterpart: ingress-nginx (`kubernetes/ingress-nginx`). How it works upstream:
//!
//! 1. Informers on Ingresses, IngressClasses, Services and EndpointSlices; every event enqueues a
//!    sync.
//! 2. The sync builds a model of servers (hosts), locations (paths) and upstreams; an upstream
//!    lists the **pod addresses of the Service's ready endpoints**, not the Service's virtual IP,
//!    so the controller skips kube-proxy and balances (and retries) across pods itself, and a
//!    pod leaves its traffic as soon as the controller applies the slice change (seed 002).
//! 3. Endpoint-only changes are pushed to nginx's Lua balancer without a reload; the rest reload.
//! 4. A status loop writes the controller's address into `status.loadBalancer` of its Ingresses.
//!
//! minik keeps that shape: [`watch`] (informers and the sync pace), [`routes`] (the pure route
//! table), [`backends`] (endpoints from slices, shared with the load balancer), [`server`] (the
//! HTTP data path, `/metrics`), [`status`] (the IngressClass and the Ingress addresses) and
//! [`metrics`], and [`applied`] (an `EndpointsApplied` Event per backend change, as the proxy
//! writes). What it simplifies: HTTP only (TLS sections are ignored), no annotations, no
//! regex paths, no `resource` backends; the controller creates its own IngressClass `minik`,
//! marked default, at start. `--sync-delay` applies each change only once it is that old (and no newer
//! one came meanwhile), to stand for a slower controller in the demo's race (seed 003).
//!
//! Read next: `routes.rs`, then `server.rs`.

pub mod applied;
pub mod backends;
pub mod metrics;
pub mod routes;
pub mod server;
pub mod status;
pub mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use minik_client::Client;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::info;

use crate::metrics::SyncMetrics;
use crate::server::Shared;
use crate::watch::{informer, Changes, Pacing};

/// What can stop the controller from starting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The apiserver is not usable (boxed: the client's error is large).
    #[error("client: {0}")]
    Client(#[source] Box<minik_client::Error>),
    /// An address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// Why the bind failed.
        #[source]
        source: std::io::Error,
    },
    /// minik binds only to loopback addresses.
    #[error("{address} is not a loopback address; minik listens only on 127.0.0.0/8")]
    NotLoopback {
        /// The address asked for.
        address: SocketAddr,
    },
}

impl From<minik_client::Error> for Error {
    fn from(error: minik_client::Error) -> Self {
        Error::Client(Box::new(error))
    }
}

/// The controller's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Binds a loopback address.
pub async fn bind(address: SocketAddr) -> Result<TcpListener> {
    if !address.ip().is_loopback() {
        return Err(Error::NotLoopback { address });
    }
    TcpListener::bind(address)
        .await
        .map_err(|source| Error::Bind { address, source })
}

/// The controller's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The apiserver, e.g. `http://127.0.0.1:6443`.
    pub server: String,
    /// A kubeconfig to connect with instead (its server wins).
    pub kubeconfig: Option<PathBuf>,
    /// Where HTTP traffic is served.
    pub listen: SocketAddr,
    /// Where `/metrics` and `/healthz` are served.
    pub metrics_listen: SocketAddr,
    /// How long each change is held back before it is applied.
    pub sync_delay: Duration,
    /// The IngressClass this controller serves (and creates, marked default).
    pub ingress_class: String,
}

/// Command-line flags of `minik-ingress` and `minik ingress`.
#[derive(Clone, Debug, clap::Parser)]
#[command(about = "The minik ingress controller: routes HTTP by host and path to ready pods")]
pub struct Args {
    /// The apiserver URL.
    #[arg(long, default_value = "http://127.0.0.1:6443")]
    pub server: String,
    /// A kubeconfig to connect with (https, client certificate); its server wins over --server.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Where to serve HTTP traffic (loopback only).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Where to serve /metrics and /healthz.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub metrics_listen: SocketAddr,
    /// Hold each change back this long before applying it (e.g. `2s`).
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub sync_delay: Duration,
    /// The IngressClass to serve.
    #[arg(long, default_value = "minik")]
    pub ingress_class: String,
}

impl Args {
    /// The configuration these flags describe.
    pub fn into_config(self) -> Config {
        Config {
            server: self.server,
            kubeconfig: self.kubeconfig,
            listen: self.listen,
            metrics_listen: self.metrics_listen,
            sync_delay: self.sync_delay,
            ingress_class: self.ingress_class,
        }
    }
}

/// Runs the controller until `shutdown` fires; returns after every task has finished.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let listener = bind(config.listen).await?;
    let metrics_listener = bind(config.metrics_listen).await?;
    let port = server::local_address(&listener, config.listen).port();
    let metrics_address = server::local_address(&metrics_listener, config.metrics_listen);
    let class = tokio::select! {
        _ = shutdown.cancelled() => return Ok(()),
        class = status::ensure_class(&client, &config.ingress_class) => class?,
    };

    let tasks = TaskTracker::new();
    let shared = Arc::new(Shared::default());
    let metrics = Arc::new(SyncMetrics::new("minik_ingress"));
    tasks.spawn(server::serve(
        listener,
        shared.clone(),
        shutdown.child_token(),
    ));
    tasks.spawn(server::serve_metrics(
        metrics_listener,
        metrics.clone(),
        shutdown.child_token(),
    ));
    // Which pods have requests in flight, for the controller manager's idle rule (issue 24).
    tasks.spawn(minik_client::connections::publish(
        client.clone(),
        "ingress".to_string(),
        shared.connections.clone(),
        Duration::from_secs(1),
        shutdown.child_token(),
    ));
    let changes = Arc::new(Changes::default());
    let ingresses = informer::<Ingress>(
        &client,
        &tasks,
        changes.clone(),
        watch::any_event,
        shutdown.child_token(),
    );
    let services = informer::<Service>(
        &client,
        &tasks,
        changes.clone(),
        watch::any_event,
        shutdown.child_token(),
    );
    let slices = informer::<EndpointSlice>(
        &client,
        &tasks,
        changes.clone(),
        Changes::slice_event,
        shutdown.child_token(),
    );
    info!(listen = %format!("127.0.0.1:{port}"), metrics = %metrics_address, sync_delay = ?config.sync_delay, class = %config.ingress_class, "ready");

    let synced = async {
        ingresses.wait_until_ready().await;
        services.wait_until_ready().await;
        slices.wait_until_ready().await;
    };
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = synced => {
            let pacing = Pacing::Delay(config.sync_delay);
            let mut publisher = applied::Publisher::new(client.clone(), "ingress");
            while let Some(triggers) = watch::next_sync(&changes, pacing, &shutdown).await {
                let ours: Vec<Arc<Ingress>> =
                    ingresses.state().into_iter().filter(|i| status::is_ours(i, &class)).collect();
                let table = routes::compute(&routes::Inputs {
                    ingresses: &ours,
                    services: &services.state(),
                    slices: &slices.state(),
                });
                let lines = table.describe();
                let sets = applied::of_table(&table);
                if shared.install(table) {
                    publisher.applied(sets, &tasks);
                    metrics.observe_update(&triggers, jiff::Timestamp::now());
                    info!(routes = ?lines, changes = triggers.len(), "applied backends");
                }
                status::sync_statuses(&client, &ours, port).await;
            }
        }
    }
    tasks.close();
    tasks.wait().await;
    info!("ingress controller stopped");
    Ok(())
}
