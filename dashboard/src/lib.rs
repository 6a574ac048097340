//! minik-dashboard: a live web page showing the cluster, its workloads and each pod's journey.
//!
//! Kubernetes counterpart: the Kubernetes Dashboard (`kubernetes/dashboard`) and Headlamp, both
//! clients of the API like any controller. This one is a watcher like every minik component:
//! it lists and watches pods, nodes, Services, EndpointSlices, Deployments, ReplicaSets and
//! Events through `minik_client` ([`watch`]), folds what it sees into a [`hub::Hub`] of small
//! views ([`views`]) and per-pod timelines ([`journey`]), and sends the changes to every open
//! page as Server-Sent Events, batched every `--batch-period` (100 ms) so that a thousand pods
//! changing at once cost one message, not a thousand ([`server`]).
//!
//! Safe on a shared machine, as Jupyter is ([`security`]): 127.0.0.1 only, a random token in the
//! URL exchanged for an HttpOnly SameSite=Strict cookie, a loopback `Host` (DNS rebinding), a CSRF
//! token on every action, no CORS. The actions are three, each confirmed: delete a pod, scale a
//! Deployment, cordon a node.
//!
//! minik simplifies: one user (the kubeconfig's), no log or exec views, no editing of manifests;
//! the page is one static HTML/JS/CSS file set embedded with `include_str!` (no Node toolchain).
//! Read next: [`journey`], the timeline of a pod as the API shows it, then [`hub`].

pub mod hub;
pub mod journey;
pub mod security;
pub mod server;
pub mod views;
pub mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use minik_client::Client;
use tokio_util::sync::CancellationToken;

/// What can stop the dashboard.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The apiserver or kubeconfig is not usable (boxed: the client's error is large).
    #[error("client: {0}")]
    Client(Box<minik_client::Error>),
    /// The listen address is not loopback, or cannot be bound.
    #[error("listen on {address}: {message}")]
    Listen {
        /// The address asked for.
        address: SocketAddr,
        /// Why it failed.
        message: String,
    },
    /// The token file could not be read.
    #[error("token file {path}: {source}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl From<minik_client::Error> for Error {
    fn from(error: minik_client::Error) -> Self {
        Error::Client(Box::new(error))
    }
}

/// The dashboard's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The dashboard's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The apiserver, e.g. `http://127.0.0.1:6443`.
    pub server: String,
    /// A kubeconfig to connect with instead of plain http to `server` (its server wins).
    pub kubeconfig: Option<PathBuf>,
    /// Where the page is served; must be loopback. Port 0 picks a free port.
    pub listen: SocketAddr,
    /// A file holding the URL token (written 0600 by the launcher); `None`: a random one.
    pub token_file: Option<PathBuf>,
    /// How often changes are sent to the pages.
    pub batch_period: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server: "http://127.0.0.1:6443".to_string(),
            kubeconfig: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            token_file: None,
            batch_period: Duration::from_millis(100),
        }
    }
}

/// Command-line flags of `minik dashboard`.
#[derive(Clone, Debug, clap::Parser)]
#[command(about = "The minik dashboard: a live web view of the cluster")]
pub struct Args {
    /// The apiserver URL [default: http://127.0.0.1:6443]; `minik dashboard` without it and
    /// without --kubeconfig finds the cluster as `minik get` does.
    #[arg(long)]
    pub server: Option<String>,
    /// A kubeconfig to connect with (https, client certificate); its server wins over --server.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Where to serve the page (loopback only; port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Read the URL token from this file instead of making a random one.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// How often changes are sent to the open pages (e.g. `100ms`).
    #[arg(long, default_value = "100ms", value_parser = humantime::parse_duration)]
    pub batch_period: Duration,
}

impl Args {
    /// The configuration these flags describe.
    pub fn into_config(self) -> Config {
        Config {
            server: self.server.unwrap_or_else(|| Config::default().server),
            kubeconfig: self.kubeconfig,
            listen: self.listen,
            token_file: self.token_file,
            batch_period: self.batch_period.max(Duration::from_millis(10)),
        }
    }
}

/// Runs the dashboard until `shutdown` is cancelled, connecting as `config` says.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let started = start(client, config, shutdown).await?;
    started.finished().await;
    Ok(())
}

/// A dashboard that is serving.
pub struct Started {
    /// The address it listens on.
    pub address: SocketAddr,
    /// The URL to open: `http://ADDRESS/?token=TOKEN`.
    pub url: String,
    tasks: tokio::task::JoinSet<()>,
}

impl Started {
    /// Waits until every task has finished (after the shutdown token is cancelled).
    pub async fn finished(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }
}

/// Binds, starts the watches and the server, and returns once the page can be served.
pub async fn start(client: Client, config: Config, shutdown: CancellationToken) -> Result<Started> {
    let token = match &config.token_file {
        Some(path) => std::fs::read_to_string(path)
            .map(|text| text.trim().to_string())
            .map_err(|source| Error::TokenFile {
                path: path.clone(),
                source,
            })?,
        None => security::random_token(),
    };
    let listener = server::bind(config.listen).await?;
    let address = listener.local_addr().map_err(|e| Error::Listen {
        address: config.listen,
        message: e.to_string(),
    })?;
    let url = format!("http://{address}/?token={token}");
    let hub = hub::Shared::new();
    let mut tasks = tokio::task::JoinSet::new();
    watch::spawn_all(&mut tasks, &client, &hub, &shutdown);
    tasks.spawn(hub::flush_loop(
        hub.clone(),
        config.batch_period,
        shutdown.clone(),
    ));
    let guard = security::Guard::new(token, address.port());
    tasks.spawn(server::serve(
        listener,
        server::AppState::new(client, hub, guard, shutdown),
    ));
    // The launcher waits for this line (`cluster/src/drain.rs`); the token stays out of the log.
    tracing::info!(listen = %address, "ready");
    Ok(Started {
        address,
        url,
        tasks,
    })
}
