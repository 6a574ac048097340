//! A whole minik cluster as child processes: [`Cluster::start`] and [`Cluster::stop`].
//!
//! Kubernetes counterpart: kind's `cluster.Provider.Create` / `Delete` (kind `pkg/cluster`), with
//! processes where kind has node containers. This is the library half of `minik up`, also used by
//! `minik demo` and the benchmarks:
//!
//! 1. `minik apiserver`, then wait for `GET /readyz`;
//! 2. `minik scheduler`, then its `ready` log line;
//! 3. one `minik kubelet` per node (`node-1` … `node-N`, pod CIDR `127.244.N.0/24`, root dir
//!    `DATA/nodes/node-N`), then a watch on nodes until every one is `Ready`;
//! 4. `minik endpoint-controller` and `minik proxy`, each up to its `ready` line.
//!
//! Stopping mirrors a node drain: every pod is deleted gracefully (the kubelet leaves pods running
//! when it stops, so they must go first), the components are stopped in reverse order, and any
//! process re-parented to us (we are a child subreaper) is killed and reaped.
//!
//! Read next: `supervisor.rs` (processes) and `drain.rs` (readiness, pod deletion).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::drain;
use crate::supervisor::{self, Supervised, UnexpectedExit};
use crate::{Error, Result};

/// What to start.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The `minik` binary every component is started from (`minik apiserver …`).
    pub binary: PathBuf,
    /// Where state (`apiserver/`, `nodes/node-N/`) and logs (`logs/`) go.
    pub data_dir: PathBuf,
    /// The API server's address; must be loopback.
    pub listen: SocketAddr,
    /// How many nodes.
    pub nodes: u8,
    /// The proxy's `--sync-delay` (humantime text), if any.
    pub sync_delay: Option<String>,
    /// The kubelets' `--backoff-base`, if any.
    pub backoff_base: Option<String>,
    /// The kubelets' `--heartbeat-interval`, if any.
    pub heartbeat_interval: Option<String>,
    /// More flags for the proxy (`--dial-attempts 1`, …).
    pub proxy_args: Vec<String>,
    /// More flags for every kubelet.
    pub kubelet_args: Vec<String>,
    /// Print kind-style progress lines on stdout.
    pub progress: bool,
    /// Cancelling it aborts a start in progress (what has started is stopped again).
    pub interrupt: CancellationToken,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            binary: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("minik")),
            data_dir: crate::default_data_dir(),
            listen: SocketAddr::from(([127, 0, 0, 1], 6443)),
            nodes: 1,
            sync_delay: None,
            backoff_base: None,
            heartbeat_interval: None,
            proxy_args: Vec::new(),
            kubelet_args: Vec::new(),
            progress: true,
            interrupt: CancellationToken::new(),
        }
    }
}

/// A started cluster. Call [`Cluster::stop`]; dropping it kills the components abruptly.
pub struct Cluster {
    /// `http://127.0.0.1:6443`.
    pub server_url: String,
    /// The data directory.
    pub data_dir: PathBuf,
    /// How long the start took.
    pub startup: Duration,
    components: Vec<Supervised>,
    unexpected: mpsc::UnboundedReceiver<UnexpectedExit>,
    progress: bool,
}

/// What `minik up` writes for `minik status`: one entry per component.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct ClusterState {
    /// The pid of `minik up` itself.
    pub pid: u32,
    /// The API server's URL.
    pub server: String,
    /// The components, in start order.
    pub components: Vec<ComponentState>,
}

/// One component as `minik status` shows it.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ComponentState {
    /// `apiserver`, `scheduler`, `kubelet-node-1`, …
    pub name: String,
    /// Its process id.
    pub pid: u32,
    /// The address it serves, if any.
    pub address: Option<String>,
    /// Its log file.
    pub log: PathBuf,
}

impl Cluster {
    /// Starts the cluster described by `config`: see [`start_cluster`].
    pub async fn start(config: ClusterConfig) -> Result<Cluster> {
        start_cluster(config).await
    }
}

/// Starts every component in order, each one waited for before the next. On failure (or
/// `options.interrupt`), whatever was started is stopped again before the error is returned.
async fn start_cluster(options: ClusterConfig) -> Result<Cluster> {
    if !options.listen.ip().is_loopback() {
        return Err(Error::Start(format!(
            "--listen must be a loopback address, got {}",
            options.listen
        )));
    }
    let log_dir = options.data_dir.join("logs");
    std::fs::create_dir_all(&log_dir)
        .map_err(|e| Error::io(format!("creating {}", log_dir.display()), e))?;
    std::net::TcpListener::bind(options.listen).map_err(|e| {
        let what = format!(
            "{} is already in use (another cluster? try `minik down` or --listen)",
            options.listen
        );
        Error::io(what, e)
    })?;
    supervisor::become_subreaper()?;
    let (tx, rx) = mpsc::unbounded_channel();
    let mut cluster = Cluster {
        server_url: format!("http://{}", options.listen),
        data_dir: options.data_dir.clone(),
        startup: Duration::ZERO,
        components: Vec::new(),
        unexpected: rx,
        progress: options.progress,
    };
    let started = Instant::now();
    let outcome = tokio::select! {
        result = start_components(&options, &mut cluster, tx) => result,
        _ = options.interrupt.cancelled() => Err(Error::Start("interrupted while starting".into())),
    };
    match outcome {
        Ok(()) => {
            cluster.startup = started.elapsed();
            Ok(cluster)
        }
        Err(err) => {
            cluster.stop_with(CancellationToken::new()).await;
            Err(err)
        }
    }
}

async fn start_components(
    options: &ClusterConfig,
    cluster: &mut Cluster,
    tx: mpsc::UnboundedSender<UnexpectedExit>,
) -> Result<()> {
    let log_dir = options.data_dir.join("logs");
    let server = cluster.server_url.clone();

    let step = Instant::now();
    let apiserver_args = args(&[
        "apiserver",
        "--listen",
        &options.listen.to_string(),
        "--data-dir",
    ])
    .into_iter()
    .chain([options.data_dir.join("apiserver").display().to_string()])
    .collect::<Vec<_>>();
    let address = Some(options.listen.to_string());
    cluster.push(supervisor::spawn(
        &options.binary,
        "apiserver",
        address,
        &apiserver_args,
        &log_dir,
        tx.clone(),
    )?);
    drain::wait_readyz(&server, cluster.last()).await?;
    cluster.done(&format!("Starting apiserver {}", options.listen), step);
    let client = minik_client::Client::new(&server)?;

    let step = Instant::now();
    cluster.push(supervisor::spawn(
        &options.binary,
        "scheduler",
        None,
        &args(&["scheduler", "--server", &server]),
        &log_dir,
        tx.clone(),
    )?);
    drain::wait_ready_line(cluster.last()).await?;
    cluster.done("Starting scheduler", step);

    let step = Instant::now();
    let mut node_names = Vec::new();
    for index in 1..=options.nodes {
        let node = format!("node-{index}");
        let root_dir = options
            .data_dir
            .join("nodes")
            .join(&node)
            .display()
            .to_string();
        let cidr = format!("127.244.{index}.0/24");
        let mut kubelet_args = args(&[
            "kubelet",
            "--server",
            &server,
            "--node-name",
            &node,
            "--root-dir",
            &root_dir,
            "--pod-cidr",
            &cidr,
        ]);
        push_flag(&mut kubelet_args, "--backoff-base", &options.backoff_base);
        push_flag(
            &mut kubelet_args,
            "--heartbeat-interval",
            &options.heartbeat_interval,
        );
        kubelet_args.extend(options.kubelet_args.iter().cloned());
        cluster.push(supervisor::spawn(
            &options.binary,
            &format!("kubelet-{node}"),
            None,
            &kubelet_args,
            &log_dir,
            tx.clone(),
        )?);
        node_names.push(node);
    }
    let kubelets: Vec<&Supervised> = cluster
        .components
        .iter()
        .filter(|c| c.name.starts_with("kubelet-"))
        .collect();
    drain::wait_nodes_ready(&client, &node_names, &kubelets).await?;
    cluster.done(
        &format!(
            "Starting {} kubelet(s): {} Ready",
            node_names.len(),
            node_names.join(", ")
        ),
        step,
    );

    let step = Instant::now();
    let controller_args = args(&["endpoint-controller", "--server", &server]);
    cluster.push(supervisor::spawn(
        &options.binary,
        "endpoint-controller",
        None,
        &controller_args,
        &log_dir,
        tx.clone(),
    )?);
    drain::wait_ready_line(cluster.last()).await?;
    cluster.done("Starting endpoint-controller", step);

    let step = Instant::now();
    let mut proxy_args = args(&["proxy", "--server", &server]);
    push_flag(&mut proxy_args, "--sync-delay", &options.sync_delay);
    proxy_args.extend(options.proxy_args.iter().cloned());
    cluster.push(supervisor::spawn(
        &options.binary,
        "proxy",
        None,
        &proxy_args,
        &log_dir,
        tx,
    )?);
    drain::wait_ready_line(cluster.last()).await?;
    let delay = options
        .sync_delay
        .as_deref()
        .map(|d| format!(" (sync delay {d})"))
        .unwrap_or_default();
    cluster.done(&format!("Starting proxy{delay}"), step);
    Ok(())
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// Appends `flag value` when the value was given.
fn push_flag(args: &mut Vec<String>, flag: &str, value: &Option<String>) {
    if let Some(value) = value {
        args.extend([flag.to_string(), value.clone()]);
    }
}

impl Cluster {
    /// The components' current state (name, pid, address, log), for `minik status`.
    pub fn state(&self) -> ClusterState {
        ClusterState {
            pid: std::process::id(),
            server: self.server_url.clone(),
            components: self
                .components
                .iter()
                .map(|c| ComponentState {
                    name: c.name.clone(),
                    pid: c.pid,
                    address: c.address.clone(),
                    log: c.log.clone(),
                })
                .collect(),
        }
    }

    /// Waits for the next component that exits without being asked to.
    pub async fn next_unexpected_exit(&mut self) -> Option<UnexpectedExit> {
        self.unexpected.recv().await
    }

    /// The last `lines` lines of a component's log.
    pub fn log_tail(&self, name: &str, lines: usize) -> Option<(PathBuf, String)> {
        let component = self.components.iter().find(|c| c.name == name)?;
        Some((component.log.clone(), component.log_tail(lines)))
    }

    /// Drains the pods, stops the components in reverse order and reaps every leftover process.
    pub async fn stop(self) {
        self.stop_with(CancellationToken::new()).await
    }

    /// [`Cluster::stop`], where cancelling `hurry` cuts the wait for pods short (the
    /// remaining pods are force deleted and their processes killed).
    pub async fn stop_with(mut self, hurry: CancellationToken) {
        let apiserver_up = self
            .components
            .first()
            .is_some_and(|c| c.name == "apiserver" && c.is_running());
        if apiserver_up {
            if let Ok(client) = minik_client::Client::new(&self.server_url) {
                drain::delete_all_pods(&client, &hurry, self.progress).await;
            }
        }
        while let Some(component) = self.components.pop() {
            let name = component.name.clone();
            let status = component.stop().await;
            let how = status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "gone".into());
            self.say(&format!(" ✓ Stopped {name} ({how})"));
        }
        let orphans = supervisor::reap_orphans(Duration::from_secs(5), &self.data_dir).await;
        if orphans > 0 {
            self.say(&format!(" ✓ Killed {orphans} leftover process(es)"));
        }
    }

    fn push(&mut self, component: Supervised) {
        self.components.push(component);
    }

    fn last(&self) -> &Supervised {
        // Invariant: only called right after `push`.
        self.components.last().expect("a component was just pushed")
    }

    /// Prints a kind-style finished step with its duration.
    fn done(&self, what: &str, since: Instant) {
        self.say(&format!(
            " ✓ {what} ({:.1}s)",
            since.elapsed().as_secs_f64()
        ));
    }

    fn say(&self, line: &str) {
        if self.progress {
            println!("{line}");
        }
    }
}

impl Drop for Cluster {
    /// The safety net when `stop` was not called: kill every component's process group at once.
    fn drop(&mut self) {
        for component in &self.components {
            let _ = killpg(Pid::from_raw(component.pid as i32), Signal::SIGKILL);
        }
    }
}
