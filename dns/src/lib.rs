//! minik-dns: the cluster DNS, answering `svc.ns.svc.cluster.local` from Services and
//! EndpointSlices.
//!
//! Kubernetes counterpart: CoreDNS with its `kubernetes` plugin, deployed by kubeadm as the
//! `kube-dns` Service in `kube-system`, and the kubelet's `--cluster-dns`/`--cluster-domain`
//! that point each pod's `/etc/resolv.conf` at it. Like CoreDNS it list+watches Services and
//! EndpointSlices (never polling) and answers from that cache ([`records`]: the records, pure;
//! [`server`]: UDP and TCP).
//!
//! minik simplifies: the server answers only its zone (REFUSED for every other name: it is
//! authoritative, never recursive, so nothing leaves the machine), runs as a process of its own
//! rather than as pods behind the Service, and listens on a loopback address given by
//! `--listen`. resolv.conf cannot name a port, so pods can use it only when that port is 53;
//! the `kube-dns` Service (the launcher writes it, as kubeadm's addon phase does) points at that
//! address through its Endpoints, but its cluster IP carries TCP only (minik's proxy has no UDP),
//! so the kubelet writes the server's own address into resolv.conf.
//!
//! Read next: `records.rs`, then `server.rs`.

pub mod records;
pub mod server;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use futures::StreamExt;
use hickory_proto::rr::Name;
use k8s_openapi::ListableResource;
use minik_client::{Api, Client, Event, ListParams, Object, Store};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::server::Zone;

/// Errors that stop the DNS server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("connecting to the apiserver: {0}")]
    Client(Box<minik_client::Error>),
    #[error("binding {listen}: {source}")]
    Bind {
        listen: SocketAddr,
        source: std::io::Error,
    },
    #[error("--listen must be a loopback address, got {0}")]
    NotLoopback(SocketAddr),
    #[error("bad --cluster-domain {0:?}")]
    Domain(String),
}

impl From<minik_client::Error> for Error {
    fn from(error: minik_client::Error) -> Self {
        Error::Client(Box::new(error))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The DNS server's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub server: String,
    pub kubeconfig: Option<PathBuf>,
    /// UDP and TCP on this address.
    pub listen: SocketAddr,
    /// The zone, `cluster.local`.
    pub cluster_domain: String,
}

/// Command-line flags of `minik dns`.
#[derive(Clone, Debug, clap::Parser)]
#[command(about = "The cluster DNS: A and SRV records for Services and their endpoints")]
pub struct Args {
    /// The apiserver URL.
    #[arg(long, default_value = "http://127.0.0.1:6443")]
    pub server: String,
    /// A kubeconfig to connect with (https, client certificate); its server wins over --server.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Where to answer, UDP and TCP (loopback only; resolv.conf needs port 53).
    #[arg(long, default_value = "127.0.0.10:53")]
    pub listen: SocketAddr,
    /// The cluster's DNS domain (the kubelet's --cluster-domain).
    #[arg(long, default_value = "cluster.local")]
    pub cluster_domain: String,
}

impl Args {
    /// The configuration these flags describe.
    pub fn into_config(self) -> Config {
        Config {
            server: self.server,
            kubeconfig: self.kubeconfig,
            listen: self.listen,
            cluster_domain: self.cluster_domain,
        }
    }
}

/// Runs the DNS server until `shutdown` fires; returns after every task has finished.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    if !config.listen.ip().is_loopback() {
        return Err(Error::NotLoopback(config.listen));
    }
    let domain = format!("{}.", config.cluster_domain.trim_end_matches('.'));
    let domain =
        Name::from_str(&domain).map_err(|_| Error::Domain(config.cluster_domain.clone()))?;
    let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let (udp, tcp) = server::bind(config.listen)
        .await
        .map_err(|source| Error::Bind {
            listen: config.listen,
            source,
        })?;
    let listen = tcp.local_addr().unwrap_or(config.listen);
    let tasks = TaskTracker::new();
    let zone = Zone {
        domain,
        services: informer(&client, &tasks, shutdown.child_token()),
        slices: informer(&client, &tasks, shutdown.child_token()),
    };
    let synced = async {
        zone.services.wait_until_ready().await;
        zone.slices.wait_until_ready().await;
    };
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = synced => {
            info!(%listen, zone = %zone.domain, "ready");
            tasks.spawn(server::serve_udp(udp, zone.clone(), shutdown.child_token()));
            tasks.spawn(server::serve_tcp(tcp, zone, tasks.clone(), shutdown.child_token()));
            shutdown.cancelled().await;
        }
    }
    tasks.close();
    tasks.wait().await;
    info!("dns stopped");
    Ok(())
}

/// A reflector on every object of kind `K`, filling the store it returns.
fn informer<K>(client: &Client, tasks: &TaskTracker, shutdown: CancellationToken) -> Store<K>
where
    K: Object + ListableResource,
{
    let (store, writer) = minik_client::store::<K>();
    let watch = minik_client::watcher(Api::<K>::all(client.clone()), ListParams::default());
    let mut events = Box::pin(minik_client::reflector(writer, watch));
    tasks.spawn(async move {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                item = events.next() => match item {
                    Some(Ok(Event::Restarted(objects))) => info!(kind = K::KIND, count = objects.len(), "listed"),
                    Some(Ok(_)) => {}
                    Some(Err(error)) => warn!(kind = K::KIND, %error, "watch failed; retrying"),
                    None => return,
                },
            }
        }
    });
    store
}
