//! minik-loadbalancer: the external load balancer of `type: LoadBalancer` Services, programmed in
//! batches.
//!
//! Kubernetes counterpart: a cloud provider's load balancer and the service controller of
//! `k8s.io/cloud-provider` that programs it and writes `status.loadBalancer.ingress`. Seed 003's
//! point about it: such a balancer is another consumer of endpoint changes, often the slowest (an
//! F5 pushed every few seconds), and a pod's preStop wait must outlast it too.
//!
//! The pieces: [`frontends`] (which Services, which address, which pool: pure), [`balancer`]
//! (listeners and the TCP proxy), and the sync loop here: informers on Services and
//! EndpointSlices (`minik_ingress::watch`), a sync every `--batch-period` if anything changed,
//! the status written once an address is served, `/metrics` like the ingress controller's, and an
//! `EndpointsApplied` Event per changed Service port (`minik_ingress::applied`).
//!
//! What minik simplifies: TCP only, no health checks of its own, no node ports in the path (it
//! forwards to pod addresses), `loadBalancerIP` and source ranges ignored.
//!
//! Read next: `frontends.rs`, then `balancer.rs`.

pub mod balancer;
pub mod frontends;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{LoadBalancerIngress, PortStatus, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::ObjectKey;
use minik_client::{Api, Client, Patch};
use minik_ingress::applied::Publisher;
use minik_ingress::metrics::SyncMetrics;
use minik_ingress::watch::{self, informer, Changes, Pacing};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::balancer::Balancer;

pub use minik_ingress::{Error, Result};

/// The load balancer's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The apiserver, e.g. `http://127.0.0.1:6443`.
    pub server: String,
    /// A kubeconfig to connect with instead (its server wins).
    pub kubeconfig: Option<PathBuf>,
    /// How often endpoint changes are pushed to the listeners.
    pub batch_period: Duration,
    /// Where `/metrics` and `/healthz` are served.
    pub metrics_listen: SocketAddr,
}

/// Command-line flags of `minik-loadbalancer` and `minik loadbalancer`.
#[derive(Clone, Debug, clap::Parser)]
#[command(
    about = "The minik load balancer: LoadBalancer Services on 127.98.x.y, updated in batches"
)]
pub struct Args {
    /// The apiserver URL.
    #[arg(long, default_value = "http://127.0.0.1:6443")]
    pub server: String,
    /// A kubeconfig to connect with (https, client certificate); its server wins over --server.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Apply endpoint changes in batches on this period (seed 003's F5: a few seconds).
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    pub batch_period: Duration,
    /// Where to serve /metrics and /healthz.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub metrics_listen: SocketAddr,
}

impl Args {
    /// The configuration these flags describe.
    pub fn into_config(self) -> Config {
        Config {
            server: self.server,
            kubeconfig: self.kubeconfig,
            batch_period: self.batch_period,
            metrics_listen: self.metrics_listen,
        }
    }
}

/// Runs the load balancer until `shutdown` fires; returns after every task has finished.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let metrics_listener = minik_ingress::bind(config.metrics_listen).await?;
    let metrics_address = metrics_listener
        .local_addr()
        .unwrap_or(config.metrics_listen);
    let tasks = TaskTracker::new();
    let metrics = Arc::new(SyncMetrics::new("minik_loadbalancer"));
    tasks.spawn(minik_ingress::server::serve_metrics(
        metrics_listener,
        metrics.clone(),
        shutdown.child_token(),
    ));
    let changes = Arc::new(Changes::default());
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
    info!(metrics = %metrics_address, batch_period = ?config.batch_period, "ready");

    let mut balancer = Balancer::new(tasks.clone(), shutdown.child_token());
    let synced = async {
        services.wait_until_ready().await;
        slices.wait_until_ready().await;
    };
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = synced => {
            let pacing = Pacing::Batch(config.batch_period);
            let mut publisher = Publisher::new(client.clone(), "loadbalancer");
            while let Some(triggers) = watch::next_sync(&changes, pacing, &shutdown).await {
                let all = services.state();
                let desired = frontends::desired(&all, &slices.state());
                let sets = frontends::endpoint_sets(&desired);
                if balancer.apply(desired).await {
                    publisher.applied(sets, &tasks);
                    metrics.observe_update(&triggers, jiff::Timestamp::now());
                    info!(changes = triggers.len(), "applied a batch");
                }
                sync_statuses(&client, &all, &balancer).await;
            }
        }
    }
    tasks.close();
    tasks.wait().await;
    info!("load balancer stopped");
    Ok(())
}

/// Writes each served Service's address into `status.loadBalancer.ingress` (and clears it from
/// a Service that is no longer a LoadBalancer).
async fn sync_statuses(client: &Client, services: &[Arc<Service>], balancer: &Balancer) {
    for service in services {
        let key = ObjectKey::of(&service.metadata);
        let addresses = balancer.addresses_of(&key);
        let wanted: Vec<LoadBalancerIngress> = match addresses.first() {
            Some(first) if frontends::is_load_balanced(service) => vec![LoadBalancerIngress {
                ip: Some(first.ip().to_string()),
                ports: Some(
                    addresses
                        .iter()
                        .map(|a| PortStatus {
                            port: i32::from(a.port()),
                            protocol: "TCP".into(),
                            error: None,
                        })
                        .collect(),
                ),
                ..Default::default()
            }],
            _ => Vec::new(),
        };
        let current = service
            .status
            .as_ref()
            .and_then(|s| s.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.clone())
            .unwrap_or_default();
        if current == wanted {
            continue;
        }
        let (Some(namespace), Some(name)) = (&key.namespace, service.metadata.name.as_deref())
        else {
            continue;
        };
        let api = Api::<Service>::namespaced(client.clone(), namespace);
        let patch = Patch::Merge(json!({"status": {"loadBalancer": {"ingress": wanted}}}));
        match api.patch_status(name, &patch).await {
            Ok(_) => {
                info!(service = %key, addresses = ?addresses, "reported the load balancer address")
            }
            Err(error) => warn!(service = %key, %error, "could not write the service status"),
        }
    }
}
