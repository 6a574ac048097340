//! minik-proxy: the userspace kube-proxy of old. It makes `clusterIP:port` of every Service reach
//! one of the Service's ready pods.
//!
//! Kubernetes counterpart: `kube-proxy --proxy-mode=userspace` (`pkg/proxy/userspace/`, deprecated
//! in v1.23 and removed in v1.26). How it worked:
//!
//! 1. It watched Services and Endpoints through informers (EndpointSlices in later proxies).
//! 2. For each service port it opened a "proxy port" on the node, a real socket in kube-proxy's
//!    own process, and installed iptables rules that redirected `clusterIP:port` to it.
//! 3. Each accepted connection asked a round-robin balancer (sessionAffinity-aware) for an
//!    endpoint, dialed it with short timeouts, trying the next endpoint on failure, then copied
//!    bytes both ways until either side closed.
//! 4. Endpoints changes replaced the balancer's list (shuffled); established connections were left
//!    alone.
//!
//! Because every byte crossed user space twice, it moved about a third of a direct connection's
//! throughput (kubernetes/kubernetes#16344), and iptables mode replaced it. minik keeps it because
//! it is the one proxy you can read end to end; it moves bulk bytes with `splice(2)` (`splice.rs`)
//! so they never enter user space (see the benchmark in `tests/proxy/bench.rs`).
//!
//! minik's proxy reads EndpointSlices rather than Endpoints, as kube-proxy has since v1.19: the
//! ready endpoints get traffic, and when none is ready the serving terminating ones do.
//!
//! What minik simplifies:
//! - no iptables: every 127.0.0.0/8 address is local on Linux, so the proxy listens on
//!   `clusterIP:port` directly, and falls back to a port on 127.0.0.1 (reported on `/proxies`)
//!   when it cannot bind it;
//! - TCP only, IPv4 slices only, no external IPs, no topology hints; node ports are served on one
//!   node address (`--node-address`, 127.0.0.1) and `externalTrafficPolicy` is ignored
//!   (`node_port.rs`);
//! - `--sync-delay` holds every EndpointSlice change back on purpose, to stand for the slow consumers of
//!   seed 003 ("Making K8s shutdowns more graceful", docs/seeds.md) and make the deletion race
//!   visible.
//!
//! The pieces, in the order a change and then a connection meet them: [`sync`] (informers →
//! proxier, the sync delay in [`delay`]), [`service_port`] (Services → per-port specs),
//! [`slice_cache`] (EndpointSlices → per-port endpoints),
//! [`proxier`] (listeners per service port, bound by [`bind`], and [`node_port`] listeners), [`tcp`] (accept, dial, then [`forward`]: copy, or [`splice`] for bulk),
//! [`load_balancer`] (which endpoint); beside them [`state`], [`metrics`], [`http`] and
//! [`events`] (what the proxy reports).
//!
//! Read next: `sync.rs`, then `proxier.rs`.

pub mod bind;
pub mod delay;
pub mod events;
pub mod forward;
pub mod http;
pub mod load_balancer;
pub mod metrics;
pub mod node_port;
pub mod proxier;
pub mod service_port;
pub mod slice_cache;
pub mod splice;
pub mod state;
pub mod sync;
pub mod tcp;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use minik_api::core::Service;
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_client::{Api, Client, ListParams};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::proxier::{Proxier, ProxierConfig};
use crate::state::ProxyState;
use crate::sync::Change;

/// The most often the connection report is written (`minik_client::connections`).
const CONNECTION_REPORT_INTERVAL: Duration = Duration::from_secs(1);

/// How long `run` waits for open connections to finish after shutdown before giving up on them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// What can stop the proxy from starting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The apiserver URL is not usable (boxed: the client's error is large).
    #[error("client: {0}")]
    Client(#[source] Box<minik_client::Error>),
    /// The metrics address could not be bound.
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

/// The proxy's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The proxy's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The apiserver, e.g. `http://127.0.0.1:6443`.
    pub server: String,
    /// A kubeconfig to connect with instead of plain http to `server` (its server wins).
    pub kubeconfig: Option<PathBuf>,
    /// How long each EndpointSlice change is held back before it is applied (0: at once).
    pub sync_delay: Duration,
    /// Where `/metrics`, `/proxies` and `/applied` are served (`127.0.0.1:0`: any free port, logged).
    pub metrics_listen: SocketAddr,
    /// Timeout of the first dial to an endpoint; each retry doubles it (upstream: 250 ms).
    pub dial_timeout: Duration,
    /// The most endpoints tried per connection (upstream: 4; 1 = a consumer that never retries).
    pub dial_attempts: usize,
    /// Ports tried on 127.0.0.1 when a service's `clusterIP:port` cannot be bound.
    pub node_port_range: RangeInclusive<u16>,
    /// The node's address, where node ports are served (loopback only).
    pub node_address: IpAddr,
}

impl Default for Config {
    fn default() -> Self {
        let proxier = ProxierConfig::default();
        Config {
            server: "http://127.0.0.1:6443".to_string(),
            kubeconfig: None,
            sync_delay: Duration::ZERO,
            metrics_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            dial_timeout: proxier.dial_timeout,
            dial_attempts: proxier.dial_attempts,
            node_port_range: proxier.node_port_range,
            node_address: proxier.node_address,
        }
    }
}

/// Command-line flags of `minik-proxy` and `minik proxy`.
#[derive(Clone, Debug, clap::Parser)]
#[command(about = "The minik proxy: forwards clusterIP:port to ready endpoints")]
pub struct Args {
    /// The apiserver URL.
    #[arg(long, default_value = "http://127.0.0.1:6443")]
    pub server: String,
    /// A kubeconfig to connect with (https, client certificate); its server wins over --server.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Hold each EndpointSlice change back this long before applying it (e.g. `2s`).
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub sync_delay: Duration,
    /// Where to serve /metrics, /proxies and /applied.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub metrics_listen: SocketAddr,
    /// Timeout of the first dial to an endpoint; retries double it.
    #[arg(long, default_value = "250ms", value_parser = humantime::parse_duration)]
    pub dial_timeout: Duration,
    /// The most endpoints tried per connection (1: never retry).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub dial_attempts: u16,
    /// Fallback ports on 127.0.0.1 when clusterIP:port cannot be bound, `FIRST-LAST`.
    #[arg(long, default_value = "30000-32767", value_parser = parse_port_range)]
    pub node_port_range: RangeInclusive<u16>,
    /// The node's address: NodePort and LoadBalancer Services are served at ADDRESS:nodePort.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub node_address: IpAddr,
}

impl Args {
    /// The configuration these flags describe.
    pub fn into_config(self) -> Config {
        Config {
            server: self.server,
            kubeconfig: self.kubeconfig,
            sync_delay: self.sync_delay,
            metrics_listen: self.metrics_listen,
            dial_timeout: self.dial_timeout,
            dial_attempts: usize::from(self.dial_attempts),
            node_port_range: self.node_port_range,
            node_address: self.node_address,
        }
    }
}

/// Parses `30000-32767`.
fn parse_port_range(text: &str) -> Result<RangeInclusive<u16>, String> {
    let (first, last) = text
        .split_once('-')
        .ok_or("expected FIRST-LAST, e.g. 30000-32767")?;
    let first: u16 = first
        .trim()
        .parse()
        .map_err(|e| format!("first port: {e}"))?;
    let last: u16 = last.trim().parse().map_err(|e| format!("last port: {e}"))?;
    if first == 0 || first > last {
        return Err("expected 0 < FIRST <= LAST".to_string());
    }
    Ok(first..=last)
}

/// Runs the proxy until `shutdown` fires: binds `metrics_listen`, then [`serve`]s.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    let address = config.metrics_listen;
    if !address.ip().is_loopback() {
        return Err(Error::NotLoopback { address });
    }
    if !config.node_address.is_loopback() {
        let address = SocketAddr::new(config.node_address, 0);
        return Err(Error::NotLoopback { address });
    }
    let listener = TcpListener::bind(address)
        .await
        .map_err(|source| Error::Bind { address, source })?;
    serve(config, listener, Arc::new(ProxyState::default()), shutdown).await
}

/// Runs the proxy with an already bound metrics listener, reporting into `state` (tests and the
/// in-process cluster keep a handle on it). Returns after every task has finished.
pub async fn serve(
    config: Config,
    metrics_listener: TcpListener,
    state: Arc<ProxyState>,
    shutdown: CancellationToken,
) -> Result<()> {
    let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let tasks = TaskTracker::new();
    let metrics_address = metrics_listener.local_addr().ok();
    tasks.spawn(http::serve(
        metrics_listener,
        state.clone(),
        shutdown.child_token(),
    ));

    // Informers: Services through a store (the Events need their uid), EndpointSlices straight in.
    let (service_store, service_writer) = minik_client::store::store::<Service>();
    let service_watch =
        minik_client::watcher(Api::<Service>::all(client.clone()), ListParams::default());
    let services = changes(minik_client::reflector(service_writer, service_watch));
    let slices_watch = minik_client::watcher(
        Api::<EndpointSlice>::all(client.clone()),
        ListParams::default(),
    );
    let slices = changes(slices_watch);

    // Which pods have connections open, for the controller manager's idle rule (issue 24).
    tasks.spawn(minik_client::connections::publish(
        client.clone(),
        "kube-proxy".to_string(),
        state.connections.clone(),
        CONNECTION_REPORT_INTERVAL,
        shutdown.child_token(),
    ));

    // Its `EndpointsApplied` events are measurements the demo and bench read one by one.
    let recorder = minik_client::events::Recorder::new(client, "proxy", None).without_correlation();
    let applied = state.subscribe_applied();
    let problems = state.subscribe_problems();
    let publisher = events::publish_applied(
        recorder.clone(),
        service_store.clone(),
        applied,
        shutdown.child_token(),
    );
    tasks.spawn(publisher);
    let problems =
        events::publish_problems(recorder, service_store, problems, shutdown.child_token());
    tasks.spawn(problems);

    let proxier_config = ProxierConfig {
        dial_timeout: config.dial_timeout,
        dial_attempts: config.dial_attempts.max(1),
        node_port_range: config.node_port_range.clone(),
        node_address: config.node_address,
    };
    let mut proxier = Proxier::new(proxier_config, state, tasks.clone(), shutdown.clone());
    let metrics = metrics_address.map(|a| a.to_string()).unwrap_or_default();
    info!(%metrics, sync_delay = ?config.sync_delay, dial_attempts = config.dial_attempts, "ready");
    sync::sync_loop(&mut proxier, services, slices, config.sync_delay, shutdown).await;

    tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, tasks.wait())
        .await
        .is_err()
    {
        warn!(grace = ?SHUTDOWN_GRACE, "connections still open after the grace period; leaving them");
    }
    info!("proxy stopped");
    Ok(())
}

/// Turns a watcher's results into the [`Change`]s the sync loop takes. Errors are only logged:
/// the watcher itself retries (with backoff) and relists.
fn changes<K: Send + 'static>(
    watch: impl Stream<Item = minik_client::Result<minik_client::Event<K>>> + Send + 'static,
) -> impl Stream<Item = Change<K>> + Unpin + Send {
    Box::pin(watch.filter_map(|item| async move {
        match item {
            Ok(minik_client::Event::Applied(object)) => Some(Change::Applied(object)),
            Ok(minik_client::Event::Deleted(object)) => Some(Change::Deleted(object)),
            Ok(minik_client::Event::Restarted(all)) => Some(Change::Restarted(all)),
            Err(error) => {
                warn!(%error, "watch failed; retrying");
                None
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn args_parse_humantime_durations_and_port_ranges() {
        let args = Args::parse_from([
            "minik-proxy",
            "--sync-delay",
            "2s",
            "--dial-attempts",
            "1",
            "--node-port-range",
            "40000-40010",
        ]);
        let config = args.into_config();
        assert_eq!(config.sync_delay, Duration::from_secs(2));
        assert_eq!(config.dial_attempts, 1);
        assert_eq!(config.node_port_range, 40000..=40010);
        assert_eq!(config.dial_timeout, Duration::from_millis(250));
        assert_eq!(config.metrics_listen, "127.0.0.1:0".parse().unwrap());
    }

    #[test]
    fn port_ranges_must_be_ordered() {
        assert!(parse_port_range("32767-30000").is_err());
        assert!(parse_port_range("30000").is_err());
        assert_eq!(parse_port_range("1-2"), Ok(1..=2));
    }

    #[tokio::test]
    async fn run_refuses_a_non_loopback_metrics_address() {
        let config = Config {
            // The wildcard address, the one a metrics listener must never take.
            metrics_listen: std::net::SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, 0)),
            ..Config::default()
        };
        let result = run(config, CancellationToken::new()).await;
        assert!(matches!(result, Err(Error::NotLoopback { .. })));
    }
}
