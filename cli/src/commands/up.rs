//! `minik up`: start a whole cluster on this machine and keep it in the foreground.
//!
//! Kubernetes counterpart: `kind create cluster` (and `kubeadm init` underneath it). Where kind
//! starts a node container running systemd, the kubelet and static pods, minik starts every
//! component as a child process of its own binary (`minik_cluster`, `cluster/src/cluster.rs`), shows a kind-style line per
//! component as it becomes ready, prints where the admin kubeconfig is (`DATA/kubeconfig`, mode
//! 0600; a copy with `--kubeconfig-out`, a `minik` context merged into `$KUBECONFIG` or
//! `~/.kube/config` only with `--merge-kubeconfig`, `cluster/src/kubeconfig.rs`), writes
//! `DATA/minik.pid` and waits for Ctrl-C or SIGTERM (which is what `minik down` sends).
//!
//! The cluster is secure by default: HTTPS only, a certificate per component, RBAC.
//! `--insecure` serves plain HTTP with no authentication, for teaching, and says so.
//!
//! A component that exits on its own (a crash, `kill -9`) is restarted with a doubling backoff, as
//! systemd and the kubelet restart a control plane (`cluster/src/restart.rs`); `minik status`
//! shows its restarts and last exit.
//!
//! `--one-process` runs the components as tasks of this process instead, as `k3s server` does
//! (`cluster/src/one_process.rs`): less memory, the same files and commands.
//!
//! Stopping drains the pods gracefully (preStop hooks and grace periods run), then stops the
//! components and reaps every leftover process; a second Ctrl-C stops waiting for the pods.
//!
//! Read next: `cluster/src/cluster.rs`, then `cluster/src/supervisor.rs` and `cluster/src/drain.rs`; `down.rs` and
//! `status.rs` read the files written here.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::up_flags::{
    parse_cpu, parse_duration, parse_mask_size, parse_memory, parse_node_size, parse_storage,
};
use anyhow::Context;
use minik_cluster::{default_data_dir, is_minik_up, pid_file, state_file};
use minik_cluster::{drain, kubeconfig, Cluster, ClusterConfig, Mode, Supervision};

/// Flags of `minik up`.
#[derive(clap::Args, Debug, Clone)]
pub struct UpArgs {
    /// Where the cluster keeps its state and logs [default: $XDG_DATA_HOME/minik or ~/.local/share/minik].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The API server's address (loopback only).
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: SocketAddr,
    /// How many nodes (kubelets) to start [default: 1; 0 with --ephemeral].
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=254))]
    pub nodes: Option<u8>,
    /// A throwaway cluster for test suites: objects in memory, the data dir in a temp dir removed
    /// on stop, no nodes unless --nodes is given (then the control plane only).
    #[arg(long, conflicts_with_all = ["data_dir", "storage"])]
    pub ephemeral: bool,
    /// Where the API server stores objects: `sled` (default, in the data dir), `memory` or
    /// `etcd://HOST:PORT[/PREFIX]` (an etcd v3 cluster).
    #[arg(long, value_parser = parse_storage)]
    pub storage: Option<String>,
    /// How many apiservers (1 to 5), all on the one `--storage etcd://…`, behind a front door on
    /// --listen that passes TLS through to any live one (docs/storage.md#several-apiservers).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=5))]
    pub apiservers: u8,
    /// Passed to the proxy: hold each endpoint update back this long (e.g. `2s`).
    #[arg(long, value_parser = parse_duration)]
    pub sync_delay: Option<String>,
    /// Passed to the proxy: how many endpoints it dials before giving up on a connection.
    #[arg(long)]
    pub dial_attempts: Option<u32>,
    /// Where the ingress controller serves HTTP (loopback; port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub ingress_listen: SocketAddr,
    /// Passed to the ingress controller: hold each endpoint change back this long (e.g. `1s`).
    #[arg(long, value_parser = parse_duration)]
    pub ingress_sync_delay: Option<String>,
    /// Passed to the load balancer: apply endpoint changes in batches on this period [default: 3s].
    #[arg(long, value_parser = parse_duration)]
    pub batch_period: Option<String>,
    /// Passed to the kubelets: the first restart backoff (e.g. `1s`; Kubernetes uses 10s).
    #[arg(long, value_parser = parse_duration)]
    pub backoff_base: Option<String>,
    /// Passed to the kubelets: how often they renew their node status (e.g. `2s`).
    #[arg(long, value_parser = parse_duration)]
    pub heartbeat_interval: Option<String>,
    /// Passed to the kubelets: the most pods each node runs, its `pods` capacity (Kubernetes'
    /// default 110; at most the addresses of a node's pod CIDR: 254 for a /24, 510 for a /23).
    #[arg(long, alias = "node-pods", value_parser = clap::value_parser!(u16).range(1..))]
    pub max_pods: Option<u16>,
    /// The cluster's pod range, inside 127.0.0.0/8 [default: 127.244.0.0/16]; each node gets a
    /// block of it as its pod CIDR, as kube-controller-manager's `--cluster-cidr`.
    #[arg(long, value_name = "CIDR")]
    pub cluster_cidr: Option<String>,
    /// The size of each node's pod CIDR, a prefix length from 16 to 28 (`23` or `/23`: 510
    /// pods), as kube-controller-manager's `--node-cidr-mask-size` [default: 24].
    #[arg(long, alias = "pods-per-node-cidr", value_parser = parse_mask_size)]
    pub node_cidr_mask_size: Option<u8>,
    /// Passed to the kubelets: the most processes one pod may have (`--pod-max-pids` upstream;
    /// -1: no limit) [default: 1024].
    #[arg(long, allow_negative_numbers = true)]
    pub pod_pids_limit: Option<i64>,
    /// Also write the admin kubeconfig to this file (mode 0600).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig_out: Option<PathBuf>,
    /// Merge a `minik` context (with the admin's credentials) into $KUBECONFIG or ~/.kube/config
    /// and make it current. Never done unasked.
    #[arg(long)]
    pub merge_kubeconfig: bool,
    /// Serve plain HTTP with no authentication or authorization (for teaching only: any local
    /// user, and any program they run, can then drive the cluster). Default: HTTPS, RBAC.
    #[arg(long)]
    pub insecure: bool,
    /// Also start `minik dashboard`, the live web view, on a free port of 127.0.0.1 (its URL,
    /// with the token, is printed).
    #[arg(long)]
    pub dashboard: bool,
    /// Passed to the kubelets: each node's cpu capacity and allocatable, whatever the host has
    /// (a quantity: `2`, `1500m`) [default: the host's cores].
    #[arg(long, value_parser = parse_cpu)]
    pub node_cpu: Option<String>,
    /// Passed to the kubelets: each node's memory capacity and allocatable (`4Gi`)
    /// [default: the host's memory].
    #[arg(long, value_parser = parse_memory)]
    pub node_memory: Option<String>,
    /// Run the cluster autoscaler: add nodes (of the same size) while pods cannot be scheduled
    /// for lack of room, up to this many nodes in all; remove the ones it added once underused.
    /// Off by default.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=254))]
    pub max_nodes: Option<u8>,
    /// The cluster autoscaler: how long a node it added must be underused (requests under 50 %)
    /// before it is drained and removed (upstream's default, 10m; seconds for demos).
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub scale_down_unneeded_time: std::time::Duration,
    /// The cluster autoscaler: how often it looks at the cluster (upstream's default, 10s).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub scan_interval: std::time::Duration,
    /// One node's own size, over --node-cpu, --node-memory and --node-pods (repeatable):
    /// `node-2=cpu=4,memory=8Gi,pods=50`.
    #[arg(long, value_name = "NODE=cpu=Q,memory=Q,pods=N", value_parser = parse_node_size)]
    pub node_size: Vec<(String, Vec<String>)>,
    /// Run every component as a task of this one process, as `k3s server` does, instead of a
    /// process each: the binary's code and data are in memory once. Containers are still
    /// processes; a component cannot be killed alone; logs stay in DATA/logs/COMPONENT.log.
    #[arg(long)]
    pub one_process: bool,
}

/// The autoscaler's configuration, when `--max-nodes` asks for one.
fn autoscaler(args: &UpArgs) -> Option<minik_cluster_autoscaler::Config> {
    args.max_nodes.map(|max| minik_cluster_autoscaler::Config {
        max_nodes_total: max.into(),
        scale_down_unneeded_time: args.scale_down_unneeded_time,
        scan_interval: args.scan_interval,
        ..Default::default()
    })
}

/// The flags `up` adds to every kubelet's command line.
fn kubelet_args(args: &UpArgs) -> Vec<String> {
    let max_pods = args.max_pods.map(|n| ["--max-pods".into(), n.to_string()]);
    let pids = args
        .pod_pids_limit
        .map(|n| ["--pod-pids-limit".into(), n.to_string()]);
    let mut flags: Vec<String> = max_pods.into_iter().chain(pids).flatten().collect();
    let sizes = [("--cpu", &args.node_cpu), ("--memory", &args.node_memory)];
    for (flag, value) in sizes {
        if let Some(value) = value {
            flags.extend([flag.to_string(), value.clone()]);
        }
    }
    flags
}

/// The components `up` starts: the defaults, and the dashboard when asked.
fn components(args: &UpArgs) -> Vec<minik_cluster::Component> {
    let mut components = minik_cluster::Component::defaults();
    if args.dashboard {
        components.push(minik_cluster::Component::Dashboard);
    }
    components
}

/// Runs `minik up` until Ctrl-C / SIGTERM, then stops the cluster.
pub async fn up(args: UpArgs) -> anyhow::Result<()> {
    // Removed when `up` returns, after the cluster stopped.
    let ephemeral_dir = args
        .ephemeral
        .then(minik_cluster::ephemeral::data_dir)
        .transpose()?;
    let nodes = args.nodes.unwrap_or(if args.ephemeral { 0 } else { 1 });
    let data_dir = match &ephemeral_dir {
        Some(dir) => dir.path().to_path_buf(),
        None => args.data_dir.clone().unwrap_or_else(default_data_dir),
    };
    refuse_if_running(&data_dir)?;
    let signals = drain::Signals::install()?;
    let (mode, how) = if args.one_process {
        // In-process components log through this process's subscriber: a file each.
        minik_cluster::one_process::install_logging(&data_dir.join("logs"));
        (Mode::InProcess, " (one process)")
    } else {
        (Mode::Processes, "")
    };
    println!(
        "Creating cluster \"minik\"{how} in {} ...",
        data_dir.display()
    );
    let options = ClusterConfig {
        data_dir: data_dir.clone(),
        listen: args.listen,
        nodes,
        storage: args.storage.clone(),
        apiservers: args.apiservers,
        sync_delay: args.sync_delay.clone(),
        backoff_base: args.backoff_base.clone(),
        heartbeat_interval: args.heartbeat_interval.clone(),
        proxy_args: args
            .dial_attempts
            .map(|n| vec!["--dial-attempts".into(), n.to_string()])
            .unwrap_or_default(),
        kubelet_args: kubelet_args(&args),
        ingress_listen: args.ingress_listen,
        ingress_args: args
            .ingress_sync_delay
            .iter()
            .flat_map(|d| ["--sync-delay".to_string(), d.clone()])
            .collect(),
        loadbalancer_args: args
            .batch_period
            .iter()
            .flat_map(|d| ["--batch-period".to_string(), d.clone()])
            .collect(),
        progress: true,
        interrupt: signals.first_token(),
        secure: !args.insecure,
        components: components(&args),
        autoscaler: autoscaler(&args),
        cluster_cidr: args.cluster_cidr.clone(),
        node_cidr_mask_size: args
            .node_cidr_mask_size
            .unwrap_or(minik_cluster::nodeipam::DEFAULT_NODE_CIDR_MASK_SIZE),
        node_kubelet_args: args.node_size.iter().cloned().collect(),
        mode,
        ..ClusterConfig::default()
    };
    let options = match &ephemeral_dir {
        Some(dir) => minik_cluster::ephemeral::configure(options, dir, nodes),
        None => options,
    };
    if let Err(err) = minik_cluster::nodeipam::check(&options, args.max_pods.map(u32::from)) {
        eprintln!(" ✗ {err}");
        return Err(crate::output::Reported.into());
    }
    let mut cluster = match Cluster::start(options).await {
        Ok(cluster) => cluster,
        Err(err) => {
            eprintln!(" ✗ {err:#}");
            return Err(crate::output::Reported.into());
        }
    };
    let state_path = state_file(&data_dir);
    write_state(&state_path, &cluster)
        .with_context(|| format!("writing {}", state_path.display()))?;
    std::fs::write(pid_file(&data_dir), format!("{}\n", std::process::id()))?;
    match (&args.kubeconfig_out, cluster.kubeconfig()) {
        (Some(out), Some(admin)) => {
            let text =
                std::fs::read(&admin).with_context(|| format!("reading {}", admin.display()))?;
            minik_cluster::pki::write_private(out, &text)?;
            println!(
                " ✓ Wrote the admin kubeconfig to {} (mode 0600)",
                out.display()
            );
        }
        (Some(_), None) => {
            eprintln!(" ! --kubeconfig-out: an --insecure cluster has no kubeconfig")
        }
        (None, _) => {}
    }
    // Credentials are never merged into the user's kubeconfig unasked.
    let context_set = args.merge_kubeconfig && write_kubeconfig(&cluster);
    print_ready(&cluster, nodes, context_set);
    if ephemeral_dir.is_some() {
        println!(
            "Ephemeral: objects in memory; {} is removed on stop (minik down --data-dir {0}).",
            data_dir.display()
        );
    }

    let first = signals.first_token();
    loop {
        tokio::select! {
            _ = first.cancelled() => break,
            Some(event) = cluster.supervise() => {
                report_supervision(&event, &cluster);
                // `minik status` reads the new pid and the restart count from here.
                if let Err(err) = write_state(&state_path, &cluster) {
                    eprintln!(" ! not updating {}: {err:#}", state_path.display());
                }
            }
        }
    }
    println!("\nStopping cluster \"minik\" ...");
    cluster.stop_with(signals.second_token()).await;
    let _ = std::fs::remove_file(pid_file(&data_dir));
    let _ = std::fs::remove_file(&state_path);
    println!("Cluster \"minik\" stopped; nothing left running.");
    Ok(())
}

/// Writes the state file through a sibling and a rename, so `minik status` never reads half of it.
fn write_state(path: &Path, cluster: &Cluster) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&cluster.state())?)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// Refuses to start when another `minik up` runs from this data dir.
fn refuse_if_running(data_dir: &Path) -> anyhow::Result<()> {
    let Ok(text) = std::fs::read_to_string(pid_file(data_dir)) else {
        return Ok(());
    };
    if let Ok(pid) = text.trim().parse::<u32>() {
        if is_minik_up(pid) && pid != std::process::id() {
            anyhow::bail!(
                "a cluster is already running from {} (pid {pid}); stop it with `minik down`",
                data_dir.display()
            );
        }
    }
    Ok(())
}

/// Merges the kubeconfig context and says whether it did; a failure is only a warning since the
/// cluster itself works.
fn write_kubeconfig(cluster: &Cluster) -> bool {
    let Some(path) = kubeconfig::default_path() else {
        return false;
    };
    let entries = match cluster.kubeconfig() {
        Some(admin) => kubeconfig::Entries::from_kubeconfig(&admin),
        None => Ok(kubeconfig::Entries::plain(&cluster.server_url)),
    };
    match entries.and_then(|entries| kubeconfig::write_minik_context(&path, &entries)) {
        Ok(()) => {
            println!(" ✓ Set kubectl context to \"minik\" in {}", path.display());
            true
        }
        Err(err) => {
            eprintln!(" ! not writing the kubeconfig: {err:#}");
            false
        }
    }
}

/// The "cluster is ready" banner with next steps: kubectl as the first one, as kind prints it.
fn print_ready(cluster: &Cluster, nodes: u8, context_set: bool) {
    let seconds = cluster.startup.as_secs_f64();
    println!(
        "\nCluster \"minik\" is ready in {seconds:.1}s: {nodes} node(s), API server {}",
        cluster.server_url
    );
    match cluster.kubeconfig() {
        Some(path) => println!(
            "Admin kubeconfig (mode 0600, nothing merged into ~/.kube/config unless asked): {}",
            path.display()
        ),
        None => println!(
            " ! INSECURE: plain HTTP, no authentication: every local user can drive this cluster"
        ),
    }
    // Without the context, kubectl needs the kubeconfig (or the insecure cluster's server).
    let kubectl = match cluster.kubeconfig() {
        _ if context_set => "kubectl".to_string(),
        Some(path) => format!("kubectl --kubeconfig {}", path.display()),
        None => format!("kubectl --server {}", cluster.server_url),
    };
    println!("\nTry:\n  {kubectl} get pods\n  minik apply -f pod.yaml\n  minik get pods -o wide\n  minik proxy   # then: curl http://127.0.0.1:8001/api/v1/pods");
    if let Some(ingress) = cluster.ingress_address() {
        println!(
            "\nIngresses are served on http://{ingress} (curl -H 'Host: …' http://{ingress}/)."
        );
    }
    if let Some(url) = cluster.dashboard_url() {
        println!("\nDashboard (loopback only; the token is the key): {url}");
    }
    println!(
        "\nLogs are in {}. Stop with Ctrl-C or `minik down`.",
        cluster.data_dir.join("logs").display()
    );
}

/// Says on stderr that a component died on its own, and when it is back.
fn report_supervision(event: &Supervision, cluster: &Cluster) {
    match event {
        Supervision::Exited {
            name,
            status,
            restart_in,
        } => {
            let how = status.map_or_else(|| "unknown status".into(), |s| s.to_string());
            eprintln!(" ✗ {name} exited unexpectedly ({how}); restarting in {restart_in:?}");
            if let Some((log, tail)) = cluster.log_tail(name, 5) {
                eprintln!("   see {}:\n{tail}", log.display());
            }
        }
        Supervision::Restarted { name, restarts } => {
            eprintln!(" ✓ Restarted {name} (restarts: {restarts})");
        }
        Supervision::RestartFailed { name, error } => {
            eprintln!(" ✗ could not restart {name}: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_cluster::{ClusterState, ComponentState};

    /// Durations are validated but passed on exactly as written.
    #[test]
    fn durations_are_passed_through_verbatim() {
        assert_eq!(parse_duration("150ms").unwrap(), "150ms");
        assert!(parse_duration("soon").is_err());
    }

    /// `--max-pods` reaches every kubelet (whose `pods` capacity it is); whether it fits the
    /// node's pod CIDR is checked with the CIDR (`nodeipam::check`).
    #[test]
    fn max_pods_is_passed_to_the_kubelets() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            up: UpArgs,
        }
        let parse = |argv: &[&str]| <Cli as clap::Parser>::try_parse_from(argv).map(|c| c.up);
        let up = parse(&["up", "--max-pods", "250"]).unwrap();
        assert_eq!(kubelet_args(&up), ["--max-pods", "250"]);
        assert!(kubelet_args(&parse(&["up"]).unwrap()).is_empty());
        assert!(parse(&["up", "--max-pods", "0"]).is_err());
        let up = parse(&["up", "--max-pods", "400", "--pods-per-node-cidr", "/23"]).unwrap();
        assert_eq!(up.node_cidr_mask_size, Some(23));
        let up = parse(&[
            "up",
            "--node-cidr-mask-size",
            "28",
            "--cluster-cidr",
            "127.50.0.0/16",
        ]);
        let up = up.unwrap();
        assert_eq!(
            (up.node_cidr_mask_size, up.cluster_cidr.as_deref()),
            (Some(28), Some("127.50.0.0/16"))
        );
        assert!(parse(&["up", "--node-cidr-mask-size", "29"]).is_err());
        assert!(parse(&["up", "--pods-per-node-cidr", "big"]).is_err());
        let up = parse(&["up", "--pod-pids-limit", "-1", "--max-pods", "5"]).unwrap();
        assert_eq!(
            kubelet_args(&up),
            ["--max-pods", "5", "--pod-pids-limit", "-1"]
        );
        let up = parse(&[
            "up",
            "--node-cpu",
            "2",
            "--node-memory",
            "4Gi",
            "--node-pods",
            "110",
        ]);
        assert_eq!(
            kubelet_args(&up.unwrap()),
            ["--max-pods", "110", "--cpu", "2", "--memory", "4Gi"]
        );
        assert!(parse(&["up", "--node-cpu", "two"]).is_err());
        let up = parse(&[
            "up",
            "--max-nodes",
            "4",
            "--scale-down-unneeded-time",
            "30s",
        ])
        .unwrap();
        let config = autoscaler(&up).unwrap();
        assert_eq!(config.max_nodes_total, 4);
        assert_eq!(config.scale_down_unneeded_time.as_secs(), 30);
        assert!(
            autoscaler(&parse(&["up"]).unwrap()).is_none(),
            "off by default"
        );
    }

    /// The state file round-trips through JSON.
    #[test]
    fn node_sizes_name_a_node_and_its_flags() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            up: UpArgs,
        }
        let parse = |argv: &[&str]| <Cli as clap::Parser>::try_parse_from(argv).map(|c| c.up);
        let up = parse(&[
            "up",
            "--node-cpu",
            "2",
            "--node-size",
            "node-2=cpu=4,memory=8Gi,pods=50",
        ]);
        let up = up.unwrap();
        assert_eq!(
            up.node_size,
            [(
                "node-2".to_string(),
                ["--cpu", "4", "--memory", "8Gi", "--max-pods", "50"]
                    .map(String::from)
                    .to_vec()
            )]
        );
        assert!(parse(&["up", "--node-size", "node-2=cpu=lots"]).is_err());
        assert!(parse(&["up", "--node-size", "cpu=4"]).is_err());
        assert!(parse(&["up", "--node-size", "node-2=disk=4"]).is_err());
    }

    #[test]
    fn cluster_state_round_trips() {
        let state = ClusterState {
            pid: 7,
            server: "http://127.0.0.1:6443".into(),
            components: vec![ComponentState {
                name: "apiserver".into(),
                pid: 8,
                address: None,
                log: "a.log".into(),
                restarts: 2,
                last_exit: Some("signal: 9 (SIGKILL)".into()),
            }],
        };
        let back: ClusterState =
            serde_json::from_slice(&serde_json::to_vec(&state).unwrap()).unwrap();
        assert_eq!(back.components[0].name, "apiserver");
        assert_eq!(back.components[0].restarts, 2);
    }
}
