//! minik-metrics-server: the resource metrics pipeline's server — kubelets' usage in, the
//! `metrics.k8s.io/v1beta1` API out, behind the apiserver.
//!
//! Kubernetes counterpart: `kubernetes-sigs/metrics-server`. How it works upstream:
//!
//! 1. informers on nodes and pods (addresses to scrape, labels to select by);
//! 2. every `--metric-resolution` (15 s), each kubelet is scraped ([`scrape`]) and the round is
//!    stored with the one before ([`points`]): CPU is the difference of cumulative counters over
//!    the window between them, memory the latest working set;
//! 3. it serves NodeMetrics and PodMetrics ([`api`]) over TLS, to the kube-apiserver only, which
//!    proxies `/apis/metrics.k8s.io/v1beta1/...` to it because an APIService registers the group
//!    ([`register`]); `kubectl top` and the HPA controller read through the apiserver.
//!
//! minik simplifies: it registers its own APIService and Endpoints at start (see [`register`]),
//! and trusts the apiserver's authorization (no second review). Without `--tls-cert-file` it
//! serves plain http (an insecure cluster).
//!
//! Read next: `points.rs`, then `api.rs`.

pub mod api;
pub mod points;
pub mod register;
pub mod scrape;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use minik_client::{reflector, store, watcher, Api, Client, ListParams, Store};
use minik_kubelet::server::auth::{acceptor, serve_tls, TlsFiles};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

/// What can stop metrics-server from starting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The apiserver or kubeconfig is not usable (boxed: the client's error is large).
    #[error("client: {0}")]
    Client(#[source] Box<minik_client::Error>),
    /// A socket or file operation failed (binding, reading certificates).
    #[error("metrics-server i/o: {0}")]
    Io(#[from] std::io::Error),
    /// minik binds only to loopback addresses.
    #[error("{0} is not a loopback address; minik listens only on 127.0.0.0/8")]
    NotLoopback(SocketAddr),
}

impl From<minik_client::Error> for Error {
    fn from(error: minik_client::Error) -> Self {
        Error::Client(Box::new(error))
    }
}

/// metrics-server's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// metrics-server's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The apiserver, e.g. `http://127.0.0.1:6443`.
    pub server: String,
    /// A kubeconfig to connect with instead (its server wins); its credentials also reach the
    /// kubelets.
    pub kubeconfig: Option<PathBuf>,
    /// Where the API is served (loopback; port 0 picks one, which the APIService then names).
    pub listen: SocketAddr,
    /// How often the kubelets are scraped.
    pub metric_resolution: Duration,
    /// Serve HTTPS with these files; the client CA is the one the front proxy's certificate
    /// chains to (and the APIService's `caBundle`).
    pub tls: Option<TlsFiles>,
    /// The front-proxy certificate names allowed to call (`--requestheader-allowed-names`).
    pub allowed_names: Vec<String>,
}

/// Command-line flags of `minik-metrics-server` and `minik metrics-server`.
#[derive(Clone, Debug, clap::Parser)]
#[command(about = "The minik metrics-server: scrapes the kubelets and serves metrics.k8s.io")]
pub struct Args {
    /// The apiserver URL.
    #[arg(long, default_value = "http://127.0.0.1:6443")]
    pub server: String,
    /// A kubeconfig to connect with (https, client certificate); its server wins over --server.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Where to serve metrics.k8s.io (loopback only; port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// How often to scrape the kubelets (upstream's default, 15s).
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub metric_resolution: Duration,
    /// Serve HTTPS with this certificate (PEM).
    #[arg(long, requires_all = ["tls_private_key_file", "requestheader_client_ca_file"])]
    pub tls_cert_file: Option<PathBuf>,
    /// Its private key (PEM).
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// The CA the front proxy's (the apiserver's) client certificate must chain to.
    #[arg(long, requires = "tls_cert_file")]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// The client certificate names allowed to call (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "kube-apiserver-kubelet-client"
    )]
    pub requestheader_allowed_names: Vec<String>,
}

impl Args {
    /// The configuration these flags describe.
    pub fn into_config(self) -> Config {
        let tls = match (
            self.tls_cert_file,
            self.tls_private_key_file,
            self.requestheader_client_ca_file,
        ) {
            (Some(cert_file), Some(key_file), Some(client_ca_file)) => Some(TlsFiles {
                cert_file,
                key_file,
                client_ca_file,
            }),
            _ => None,
        };
        Config {
            server: self.server,
            kubeconfig: self.kubeconfig,
            listen: self.listen,
            metric_resolution: self.metric_resolution.max(Duration::from_millis(100)),
            tls,
            allowed_names: self.requestheader_allowed_names,
        }
    }
}

/// A list + watch of every `K`, and the task that keeps it (ends with `shutdown`).
fn informer_of_nodes(
    client: &Client,
    shutdown: CancellationToken,
) -> (Store<Node>, impl Future<Output = ()>) {
    let (nodes, writer) = store::<Node>();
    let events = reflector(
        writer,
        watcher(Api::<Node>::all(client.clone()), ListParams::default()),
    );
    (nodes, drain(events, shutdown))
}

fn informer_of_pods(
    client: &Client,
    shutdown: CancellationToken,
) -> (Store<Pod>, impl Future<Output = ()>) {
    let (pods, writer) = store::<Pod>();
    let events = reflector(
        writer,
        watcher(Api::<Pod>::all(client.clone()), ListParams::default()),
    );
    (pods, drain(events, shutdown))
}

async fn drain<S: futures::Stream>(events: S, shutdown: CancellationToken) {
    tokio::pin!(events);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            next = events.next() => if next.is_none() { return },
        }
    }
}

/// Runs metrics-server until `shutdown`; returns after its tasks have finished.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    if !config.listen.ip().is_loopback() {
        return Err(Error::NotLoopback(config.listen));
    }
    let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let credentials = match &config.kubeconfig {
        Some(path) => Some(minik_client::kubeconfig::load(path)?),
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let port = listener.local_addr()?.port();
    let tasks = TaskTracker::new();
    let (nodes, nodes_watch) = informer_of_nodes(&client, shutdown.child_token());
    let (pods, pods_watch) = informer_of_pods(&client, shutdown.child_token());
    tasks.spawn(nodes_watch);
    tasks.spawn(pods_watch);
    let store = Arc::new(RwLock::new(points::Store::default()));
    let scraper = Arc::new(scrape::Scraper::new(
        nodes.clone(),
        credentials,
        store.clone(),
    ));
    tasks.spawn(scraper.run(config.metric_resolution, shutdown.child_token()));
    let state = Arc::new(api::ApiState {
        store,
        nodes,
        pods,
        allowed_names: config.tls.as_ref().map(|_| config.allowed_names.clone()),
    });
    let app = api::router(state);
    let ca_pem = match &config.tls {
        Some(files) => {
            let tls = acceptor(files)?;
            tasks.spawn(serve_tls(listener, app, tls, shutdown.child_token()));
            Some(std::fs::read(&files.client_ca_file)?)
        }
        None => {
            let stop = shutdown.child_token();
            tasks.spawn(async move {
                let served =
                    axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned());
                if let Err(error) = served.await {
                    warn!(%error, "serving metrics.k8s.io failed");
                }
            });
            None
        }
    };
    register_until_done(&client, port, ca_pem.as_deref(), &shutdown).await;
    info!(port, https = config.tls.is_some(), resolution = ?config.metric_resolution, "ready");
    shutdown.cancelled().await;
    tasks.close();
    tasks.wait().await;
    Ok(())
}

/// Registers the APIService, retrying every second until it works or `shutdown`.
async fn register_until_done(
    client: &Client,
    port: u16,
    ca: Option<&[u8]>,
    shutdown: &CancellationToken,
) {
    loop {
        match register::register(client, port, ca).await {
            Ok(()) => {
                info!(apiservice = register::API_SERVICE, port, "registered");
                return;
            }
            Err(error) => warn!(%error, "registering the APIService failed; retrying"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}
