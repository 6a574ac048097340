//! A whole minik cluster: [`Cluster::start`] and [`Cluster::stop`].
//!
//! Kubernetes counterpart: kind's `cluster.Provider.Create` / `Delete` (kind `pkg/cluster`), with
//! processes where kind has node containers, and `test/integration/framework`'s in-process control
//! plane. This is the one launcher: `minik up`, `minik demo`, the benchmarks and the test harness
//! all start clusters here, as child processes ([`Mode::Processes`]) or as tokio tasks in this
//! process ([`Mode::InProcess`]). The components start in the order of [`Component::ALL`], each
//! waited for before the next:
//!
//! 1. the apiserver, then `GET /readyz`;
//! 2. the scheduler, then its `ready` log line;
//! 3. the cluster DNS (`dns.rs`: its address, the kubelets' `--cluster-dns`, the `kube-dns`
//!    Service), started before the kubelets so pods can resolve names from their first line;
//! 4. one kubelet per node (`node-1` … `node-N`, pod CIDR `127.244.N.0/24` by default, carved
//!    from the cluster's pod range by `nodeipam.rs`, root dir `DATA/nodes/node-N`), then a watch on nodes until every one is `Ready`;
//! 5. the endpoint-controller, the proxy, the ingress controller (on a free port of 127.0.0.1,
//!    recorded for `minik status`) and the load balancer, each up to its `ready` line;
//! 6. with `autoscaler` set: the node group and its API (`node_group.rs`, `node_group_server.rs`),
//!    then `minik cluster-autoscaler`, up to its `ready` line.
//!
//! Stopping (`control.rs`) mirrors a node drain: every pod is deleted gracefully (the kubelet
//! leaves pods running when it stops, so they must go first), the components are stopped in
//! reverse order, and any process re-parented to us (we are a child subreaper) is killed and reaped.
//!
//! Read next: `component.rs` (flags, in-process `run`), `control.rs` (kill, restart, stop),
//! `supervisor.rs` (processes and tasks) and `drain.rs` (readiness, pod deletion).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::component::{Component, Readiness};
use crate::drain;
use crate::supervisor::{self, Supervised, UnexpectedExit};
use crate::{Error, Result};

/// How the components run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// `minik <component>` child processes, each in its own process group, logging to
    /// `DATA/logs/NAME.log` (what `minik up` does; a component can be killed and restarted).
    #[default]
    Processes,
    /// Each component's `run(config, token)` on a tokio task of this process (fast; the test
    /// harness's default). Containers are still processes of the `minik` binary.
    InProcess,
}

/// What to start.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The `minik` binary every component is started from (`minik apiserver …`) and the kubelets
    /// run containers with (`minik shim`).
    pub binary: PathBuf,
    /// Where state (`apiserver/`, `nodes/node-N/`) and logs (`logs/`) go.
    pub data_dir: PathBuf,
    /// The API server's address; must be loopback. Port 0 picks a free port.
    pub listen: SocketAddr,
    /// How many nodes (0 is allowed: add some with [`Cluster::add_node`]).
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
    /// More flags for the controller manager (the tests' faster leader election, …).
    pub controller_manager_args: Vec<String>,
    /// Where the ingress controller serves HTTP (port 0: a free port, chosen at start).
    pub ingress_listen: SocketAddr,
    /// Where the ingress controller serves `/metrics` (port 0: a free port, chosen at start).
    pub ingress_metrics_listen: SocketAddr,
    /// More flags for the ingress controller (`--sync-delay 1s`, …).
    pub ingress_args: Vec<String>,
    /// Where the load balancer serves `/metrics` (port 0: a free port, chosen at start).
    pub loadbalancer_metrics_listen: SocketAddr,
    /// More flags for the load balancer (`--batch-period 1s`, …).
    pub loadbalancer_args: Vec<String>,
    /// Where the dashboard serves its page (port 0: a free port, chosen at start), when
    /// [`Component::Dashboard`] is in `components`.
    pub dashboard_listen: SocketAddr,
    /// More flags for metrics-server (`--metric-resolution 1s`, …).
    pub metrics_server_args: Vec<String>,
    /// Where the cluster DNS answers (UDP and TCP); `None`: chosen at start (`dns.rs`).
    pub dns_listen: Option<SocketAddr>,
    /// Print kind-style progress lines on stdout.
    pub progress: bool,
    /// Cancelling it aborts a start in progress (what has started is stopped again).
    pub interrupt: CancellationToken,
    /// Processes or tasks.
    pub mode: Mode,
    /// Which components to start (default: [`Component::defaults`], all but the dashboard); they start in that order
    /// whatever the order here.
    pub components: Vec<Component>,
    /// The grace period every pod is deleted with when the cluster stops, instead of its own.
    pub drain_grace: Option<i64>,
    /// Become a child subreaper and kill what this cluster leaves behind when it stops (off in
    /// the test harness, which looks for leftovers itself to prove there are none).
    pub reap_leftovers: bool,
    /// Serve the API over TLS with authentication and RBAC: a PKI under `DATA/pki`, each
    /// component with its own client certificate, and `DATA/kubeconfig` for the admin
    /// ([`crate::secure`]). On by default; off (`minik up --insecure`) is plain http with no
    /// users, for teaching on a machine nobody else uses.
    pub secure: bool,
    /// The second octet of the pod network: node N owns `127.P.N.0/24` (default 244, as in
    /// `127.244.1.0/24`). Clusters started side by side (the test harness) each take their own,
    /// so two pods of two clusters never hold the same address and port.
    pub pod_network: u8,
    /// Run `minik cluster-autoscaler` as a component, with a node group of kubelets this process
    /// starts and stops (`node_group.rs`) served to it by `node_group_server.rs`; needs a secure
    /// cluster. `None` (the default): no autoscaling.
    pub autoscaler: Option<minik_cluster_autoscaler::Config>,
    /// The cluster's pod range (`--cluster-cidr`), inside 127.0.0.0/8; `None`: `127.P.0.0/16`
    /// with P = `pod_network`. Each node gets a block of it (`nodeipam.rs`).
    pub cluster_cidr: Option<String>,
    /// The prefix length of each node's block (`--node-cidr-mask-size`, 16 to 28; default 24).
    pub node_cidr_mask_size: u8,
    /// The apiserver's `--storage`: `memory` (`minik up --ephemeral`), `etcd://HOST:PORT[/PREFIX]`;
    /// `None`: sled in the data directory.
    pub storage: Option<String>,
    /// How many apiservers (default 1). More than one needs a shared store (`storage` =
    /// `etcd://…`): they listen on free loopback ports and `listen` becomes the front door
    /// (`front_door.rs`) every kubeconfig names.
    pub apiservers: u8,
    /// Where each apiserver listens when there are several (chosen at start; leave empty).
    pub apiserver_listens: Vec<SocketAddr>,
    /// Flags for one node's kubelet, by node name (`node-2`), replacing the same flags of
    /// `kubelet_args` (`minik up --node-size node-2=cpu=4`).
    pub node_kubelet_args: std::collections::BTreeMap<String, Vec<String>>,
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
            controller_manager_args: Vec::new(),
            ingress_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ingress_metrics_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ingress_args: Vec::new(),
            loadbalancer_metrics_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            loadbalancer_args: Vec::new(),
            dashboard_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics_server_args: Vec::new(),
            dns_listen: None,
            progress: true,
            interrupt: CancellationToken::new(),
            mode: Mode::Processes,
            components: Component::defaults(),
            drain_grace: None,
            reap_leftovers: true,
            secure: true,
            pod_network: 244,
            autoscaler: None,
            cluster_cidr: None,
            node_cidr_mask_size: crate::nodeipam::DEFAULT_NODE_CIDR_MASK_SIZE,
            storage: None,
            apiservers: 1,
            apiserver_listens: Vec::new(),
            node_kubelet_args: Default::default(),
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
    /// The configuration, with `listen` resolved to the port actually used.
    pub(crate) config: ClusterConfig,
    /// The components in start order.
    pub(crate) members: Vec<Member>,
    /// How many kubelets were started (`node-1` … `node-N`).
    pub(crate) nodes: u8,
    pub(crate) unexpected_tx: mpsc::UnboundedSender<UnexpectedExit>,
    pub(crate) unexpected: mpsc::UnboundedReceiver<UnexpectedExit>,
    /// The autoscaler's node group and its API, when `config.autoscaler` asks for them.
    pub(crate) autoscaling: Option<crate::node_group::Autoscaling>,
    /// The front door of several apiservers (`config.apiservers` > 1), stopped last.
    pub(crate) front_door: Option<crate::front_door::FrontDoor>,
}

/// One started component: what it is, its command line (to restart it) and its supervisor.
pub(crate) struct Member {
    pub component: Component,
    pub args: Vec<String>,
    pub running: Supervised,
    /// Restarts after unexpected exits (`minik up` only, `restart.rs`).
    pub restart: crate::restart::RestartState,
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
    /// How many times `minik up` restarted it after it exited on its own.
    #[serde(default)]
    pub restarts: u32,
    /// How its last unexpected exit ended.
    #[serde(default)]
    pub last_exit: Option<String>,
}

impl Cluster {
    /// Starts every component in order, each one waited for before the next. On failure (or
    /// `config.interrupt`), whatever was started is stopped again before the error is returned.
    pub async fn start(mut config: ClusterConfig) -> Result<Cluster> {
        config.listen = check_listen(config.listen)?;
        crate::nodeipam::check(&config, None)?;
        config.apiserver_listens = crate::ha::choose_listens(&config)?;
        if config.components.contains(&Component::Ingress) {
            config.ingress_listen = check_listen(config.ingress_listen)?;
            config.ingress_metrics_listen = check_listen(config.ingress_metrics_listen)?;
        }
        if config.components.contains(&Component::LoadBalancer) {
            config.loadbalancer_metrics_listen = check_listen(config.loadbalancer_metrics_listen)?;
        }
        if config.components.contains(&Component::Dashboard) {
            config.dashboard_listen = check_listen(config.dashboard_listen)?;
        }
        if config.components.contains(&Component::Dns) {
            config.dns_listen = Some(crate::dns::choose_listen(config.dns_listen)?);
        }
        // Private to its owner, secure or not: refused if another user can write it, then 0700,
        // and everything created from now on is 0600/0700 (docs/security.md#local-control-plane).
        crate::files::prepare_data_dir(&config.data_dir)?;
        let log_dir = config.data_dir.join("logs");
        std::fs::create_dir_all(&log_dir)
            .map_err(|e| Error::io(format!("creating {}", log_dir.display()), e))?;
        if config.reap_leftovers {
            supervisor::become_subreaper()?;
        }
        let (unexpected_tx, unexpected) = mpsc::unbounded_channel();
        let interrupt = config.interrupt.clone();
        let mut cluster = Cluster {
            server_url: crate::secure::server_url(&config),
            data_dir: config.data_dir.clone(),
            startup: Duration::ZERO,
            config,
            members: Vec::new(),
            nodes: 0,
            unexpected_tx,
            unexpected,
            autoscaling: None,
            front_door: None,
        };
        let started = Instant::now();
        let outcome = tokio::select! {
            result = cluster.start_components() => result,
            _ = interrupt.cancelled() => Err(Error::Start("interrupted while starting".into())),
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

    async fn start_components(&mut self) -> Result<()> {
        for component in Component::ALL {
            let autoscaling = component == Component::ClusterAutoscaler;
            if !self.config.components.contains(&component)
                || (autoscaling && self.config.autoscaler.is_none())
            {
                continue;
            }
            let step = Instant::now();
            if autoscaling {
                self.start_node_group().await?;
            }
            if component == Component::Apiserver && self.config.apiservers > 1 {
                self.start_apiservers().await?;
            } else if component.readiness() == Readiness::NodesReady {
                for _ in 0..self.config.nodes {
                    self.launch_kubelet()?;
                }
                self.wait_nodes_ready().await?;
            } else {
                self.launch(component, 0)?;
                self.wait_ready(self.members.len() - 1).await?;
            }
            if let (Component::Dns, Some(listen)) = (component, self.config.dns_listen) {
                crate::dns::publish(&self.client()?, listen).await?;
            }
            self.done(&self.progress_line(component), step);
        }
        Ok(())
    }

    /// Starts one component (`node` is the kubelet's node index) and adds it to the members.
    pub(crate) fn launch(&mut self, component: Component, node: u8) -> Result<()> {
        crate::secure::prepare(&self.config, component, node, &self.server_url)?;
        if component == Component::Dashboard {
            crate::dashboard::prepare(&self.config.data_dir)?;
        }
        let args = component.args(&self.config, node);
        let name = match component {
            Component::Kubelet => component.instance(Some(&format!("node-{node}"))),
            Component::Apiserver if self.config.apiservers > 1 => crate::ha::instance(node),
            _ => component.instance(None),
        };
        let running = self.spawn(component, &name, &args)?;
        tracing::info!(component = %name, mode = ?self.config.mode, pid = ?running.pid, "started");
        self.members.push(Member {
            component,
            args,
            running,
            restart: Default::default(),
        });
        Ok(())
    }

    /// Starts the next kubelet (`node-N+1`); returns its node's name.
    pub(crate) fn launch_kubelet(&mut self) -> Result<String> {
        crate::nodeipam::node_cidr(&self.config, self.nodes + 1)?;
        self.launch(Component::Kubelet, self.nodes + 1)?;
        self.nodes += 1;
        Ok(format!("node-{}", self.nodes))
    }

    /// Runs `args` as a child process or as a task, as the configuration says.
    pub(crate) fn spawn(
        &self,
        component: Component,
        name: &str,
        args: &[String],
    ) -> Result<Supervised> {
        spawn_component(&self.config, &self.unexpected_tx, component, name, args)
    }

    /// Starts the node group and serves it on the node-group API, for the autoscaler process.
    async fn start_node_group(&mut self) -> Result<()> {
        if !self.config.secure {
            return Err(Error::Start(
                "the cluster autoscaler's node-group API needs the cluster's certificates: \
                 drop --insecure"
                    .into(),
            ));
        }
        let max_nodes = self
            .config
            .autoscaler
            .as_ref()
            .map_or(0, |a| a.max_nodes_total);
        let group = std::sync::Arc::new(crate::node_group::ClusterNodeGroup::new(
            self.config.clone(),
            self.server_url.clone(),
            self.unexpected_tx.clone(),
        ));
        // The group's maximum leaves room for the `--nodes` ones (upstream's maxSize).
        let max_size = max_nodes.saturating_sub(self.config.nodes.into());
        let server =
            crate::node_group_server::start(&self.config.data_dir, group.clone(), max_size).await?;
        self.autoscaling = Some(crate::node_group::Autoscaling {
            group,
            _server: server,
        });
        Ok(())
    }

    /// Waits until the member at `index` is ready, as its component is (see [`Readiness`]).
    pub(crate) async fn wait_ready(&self, index: usize) -> Result<()> {
        let member = &self.members[index];
        match member.component.readiness() {
            Readiness::Readyz => {
                let ca = crate::secure::ca_pem(&self.config)?;
                // Each apiserver on its own address (with several, `server_url` is the door).
                let url = crate::ha::own_url(&self.config, &member.args);
                drain::wait_readyz(&url, ca.as_deref(), &member.running).await
            }
            Readiness::ReadyLine => drain::wait_ready_line(&member.running).await,
            Readiness::NodesReady => self.wait_nodes_ready().await,
        }
    }

    /// Waits, through a watch, until every started node is Ready (failing if a kubelet exits).
    pub(crate) async fn wait_nodes_ready(&self) -> Result<()> {
        let client = self.client()?;
        let names: Vec<String> = (1..=self.nodes).map(|i| format!("node-{i}")).collect();
        let kubelets: Vec<&Supervised> = self
            .members
            .iter()
            .filter(|m| m.component == Component::Kubelet)
            .map(|m| &m.running)
            .collect();
        drain::wait_nodes_ready(&client, &names, &kubelets).await
    }

    /// The kind-style line printed once `component` is ready.
    fn progress_line(&self, component: Component) -> String {
        match component {
            Component::Apiserver if self.config.apiservers > 1 => format!(
                "Starting {} apiservers behind {}",
                self.config.apiservers, self.config.listen
            ),
            Component::Apiserver => format!("Starting apiserver {}", self.config.listen),
            Component::Kubelet => {
                let names: Vec<String> = (1..=self.nodes).map(|i| format!("node-{i}")).collect();
                format!(
                    "Starting {} kubelet(s): {} Ready",
                    names.len(),
                    names.join(", ")
                )
            }
            Component::Proxy => match &self.config.sync_delay {
                Some(delay) => format!("Starting proxy (sync delay {delay})"),
                None => "Starting proxy".into(),
            },
            Component::Ingress => format!(
                "Starting ingress on http://{} (IngressClass minik, default)",
                self.config.ingress_listen
            ),
            Component::Dashboard => {
                format!(
                    "Starting dashboard on http://{}",
                    self.config.dashboard_listen
                )
            }
            Component::ClusterAutoscaler => {
                let max = self
                    .config
                    .autoscaler
                    .as_ref()
                    .map_or(0, |a| a.max_nodes_total);
                format!("Starting cluster-autoscaler (node group node-101…, at most {max} nodes)")
            }
            other => format!("Starting {}", other.subcommand()),
        }
    }

    /// Where the ingress controller serves HTTP, if the cluster runs it.
    pub fn ingress_address(&self) -> Option<SocketAddr> {
        self.started(Component::Ingress)
            .then_some(self.config.ingress_listen)
    }

    /// Where the ingress controller serves `/metrics`, if the cluster runs it.
    pub fn ingress_metrics_address(&self) -> Option<SocketAddr> {
        self.started(Component::Ingress)
            .then_some(self.config.ingress_metrics_listen)
    }

    /// Where the load balancer serves `/metrics`, if the cluster runs it.
    pub fn loadbalancer_metrics_address(&self) -> Option<SocketAddr> {
        self.started(Component::LoadBalancer)
            .then_some(self.config.loadbalancer_metrics_listen)
    }

    /// The dashboard's URL with its token, if the cluster runs it.
    pub fn dashboard_url(&self) -> Option<String> {
        if !self.started(Component::Dashboard) {
            return None;
        }
        let token = std::fs::read_to_string(crate::dashboard::token_file(&self.data_dir)).ok()?;
        Some(format!(
            "http://{}/?token={}",
            self.config.dashboard_listen,
            token.trim()
        ))
    }

    /// Where the cluster DNS answers, if the cluster runs it.
    pub fn dns_address(&self) -> Option<SocketAddr> {
        self.started(Component::Dns)
            .then_some(self.config.dns_listen)
            .flatten()
    }

    fn started(&self, component: Component) -> bool {
        self.members.iter().any(|m| m.component == component)
    }

    /// Prints a kind-style finished step with its duration.
    fn done(&self, what: &str, since: Instant) {
        self.say(&format!(
            " ✓ {what} ({:.1}s)",
            since.elapsed().as_secs_f64()
        ));
    }

    pub(crate) fn say(&self, line: &str) {
        if self.config.progress {
            println!("{line}");
        }
    }
}

/// Runs `args` as a child process or as a task, as `config` says (shared with the node group).
pub(crate) fn spawn_component(
    config: &ClusterConfig,
    unexpected: &mpsc::UnboundedSender<UnexpectedExit>,
    component: Component,
    name: &str,
    args: &[String],
) -> Result<Supervised> {
    let address = match component {
        Component::Apiserver => crate::ha::listen_arg(args).map(|a| a.to_string()),
        _ => component.address(config),
    };
    let log_dir = config.data_dir.join("logs");
    let tx = unexpected.clone();
    match config.mode {
        Mode::Processes => supervisor::spawn(&config.binary, name, address, args, &log_dir, tx),
        Mode::InProcess => {
            let stop = CancellationToken::new();
            let run = component.run(args, stop.clone())?;
            let mut task = supervisor::spawn_task(name, address, &log_dir, stop, run, tx);
            // Where `one_process.rs` routes its lines: by crate, so every kubelet shares one.
            task.log = log_dir.join(format!("{}.log", component.subcommand()));
            Ok(task)
        }
    }
}

/// Refuses a non-loopback address and one already in use; resolves port 0 to a free port.
fn check_listen(listen: SocketAddr) -> Result<SocketAddr> {
    if !listen.ip().is_loopback() {
        return Err(Error::Start(format!(
            "--listen must be a loopback address, got {listen}"
        )));
    }
    // Bound and freed again: the apiserver binds it (the short gap is the usual price of a flag).
    let probe = std::net::TcpListener::bind(listen).map_err(|e| {
        let what =
            format!("{listen} is already in use (another cluster? try `minik down` or --listen)");
        Error::io(what, e)
    })?;
    probe
        .local_addr()
        .map_err(|e| Error::io("reading the listener's address", e))
}
