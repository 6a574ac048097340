//! The `minik` command line: one subcommand per verb, one file per subcommand.
//!
//! Kubernetes counterpart: kubectl's command tree (`staging/src/k8s.io/kubectl/pkg/cmd/cmd.go`) for
//! `apply`, `get`, `delete`, `describe`, `logs`, `scale`, `rollout`, `proxy`, and the component binaries (`cmd/kube-*`) for
//! `apiserver`, `scheduler`, `kubelet`, `endpoint-controller`, `kube-proxy`, `ingress`, `loadbalancer`. `up`, `down`, `status` run a
//! whole cluster on the laptop (like `kind`, through `minik-cluster`), `demo` replays the seeds'
//! experiments and `bench` measures minik (both in `minik-lab`; here only their flags).

pub mod apply;
pub mod bench;
pub mod components;
pub mod dashboard;
pub mod delete;
pub mod demo;
pub mod describe;
mod discovered;
pub mod down;
pub mod get;
mod get_watch;
pub mod logs;
pub mod proxy;
pub mod resources;
pub mod rollout;
pub mod scale;
pub mod status;
pub mod up;
mod up_flags;
pub mod version;
mod workloads;

use clap::{Parser, Subcommand};

/// minik: a small Kubernetes on your laptop, real processes and real HTTP on loopback.
#[derive(Parser, Debug)]
#[command(name = "minik", version, propagate_version = true)]
pub struct Cli {
    /// `-n`, `-s/--server`, `--kubeconfig`, `--context`, `-o`: before or after the verb.
    #[command(flatten)]
    pub flags: resources::GlobalFlags,
    #[command(subcommand)]
    pub command: Command,
}

/// Every subcommand.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create or update objects from manifests (YAML or JSON).
    Apply(apply::ApplyArgs),
    /// List objects in kubectl's columns, or watch them change.
    Get(get::GetArgs),
    /// Delete objects (pods gracefully, as Kubernetes does).
    Delete(delete::DeleteArgs),
    /// Show an object in detail, with its events.
    Describe(describe::DescribeArgs),
    /// Print a container's log.
    Logs(logs::LogsArgs),
    /// Set the replicas of a Deployment or ReplicaSet.
    Scale(scale::ScaleArgs),
    /// Manage a Deployment's rollout: status, history, undo, pause, resume, restart.
    Rollout(rollout::RolloutArgs),
    /// Print the client and server versions.
    Version(version::VersionArgs),
    /// Serve the API as plain HTTP on 127.0.0.1:8001 with your own credentials (kubectl proxy).
    Proxy(proxy::ProxyArgs),
    /// Start a whole cluster (apiserver, scheduler, kubelets, controllers, proxy, ingress, load balancer).
    Up(up::UpArgs),
    /// Stop a cluster started by `minik up`.
    Down(down::DownArgs),
    /// Show whether each component of a cluster is running.
    Status(status::StatusArgs),
    /// Replay the seeds' experiments on a running cluster.
    Demo(demo::DemoArgs),
    /// Measure minik: write latency, watch throughput, scheduling and startup (starts its own cluster).
    Bench(bench::BenchArgs),
    /// Serve a live web view of the cluster and of each pod's journey (loopback, token in the URL).
    Dashboard(minik_dashboard::Args),
    /// Run the API server.
    Apiserver(minik_apiserver::Args),
    /// Run the scheduler.
    Scheduler(minik_scheduler::Args),
    /// Run a kubelet (one per node).
    Kubelet(minik_kubelet::Args),
    /// Run the endpoint controller.
    EndpointController(minik_endpoint_controller::Args),
    /// Run the controller manager (ReplicaSets, Deployments, garbage collection).
    ControllerManager(minik_controller_manager::Args),
    /// Run the service proxy (kube-proxy).
    KubeProxy(minik_proxy::Args),
    /// Run the ingress controller (HTTP routes from Ingresses, straight to ready pods).
    Ingress(minik_ingress::Args),
    /// Run the external load balancer of LoadBalancer Services (updated in batches).
    Loadbalancer(minik_loadbalancer::Args),
    /// Run metrics-server (the kubelets' usage as metrics.k8s.io, for `kubectl top` and the HPA).
    MetricsServer(minik_metrics_server::Args),
    /// Run the cluster DNS (A and SRV records for Services, on a loopback address).
    Dns(minik_dns::Args),
    /// Run the cluster autoscaler (nodes from the node-group API that `minik up --max-nodes` serves).
    ClusterAutoscaler(minik_cluster_autoscaler::Args),
}

impl Command {
    /// The verbs whose output is meant for a reader (a terminal or a pipe such as `| head`), as
    /// against the long-running components and cluster commands.
    pub fn writes_for_a_reader(&self) -> bool {
        matches!(
            self,
            Command::Apply(_)
                | Command::Get(_)
                | Command::Delete(_)
                | Command::Describe(_)
                | Command::Logs(_)
                | Command::Scale(_)
                | Command::Rollout(_)
                | Command::Version(_)
                | Command::Status(_)
        )
    }
}

/// Runs the parsed command.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let flags = &cli.flags;
    match cli.command {
        Command::Apply(args) => apply::apply(args, flags).await,
        Command::Get(args) => get::get(args, flags).await,
        Command::Delete(args) => delete::delete(args, flags).await,
        Command::Describe(args) => describe::describe(args, flags).await,
        Command::Logs(args) => logs::logs(args, flags).await,
        Command::Scale(args) => scale::scale(args, flags).await,
        Command::Rollout(args) => rollout::rollout(args, flags).await,
        Command::Version(args) => version::version(args, flags).await,
        Command::Proxy(args) => proxy::proxy(args, flags).await,
        Command::Up(args) => up::up(args).await,
        Command::Down(args) => down::down(args).await,
        Command::Status(args) => status::status(args).await,
        Command::Demo(args) => demo::demo(args, flags).await,
        Command::Bench(args) => bench::bench(args).await,
        Command::Dashboard(args) => dashboard::dashboard(args, flags).await,
        Command::Apiserver(args) => components::apiserver(args).await,
        Command::Scheduler(args) => components::scheduler(args).await,
        Command::Kubelet(args) => components::kubelet(args).await,
        Command::EndpointController(args) => components::endpoint_controller(args).await,
        Command::ControllerManager(args) => components::controller_manager(args).await,
        Command::KubeProxy(args) => components::proxy(args).await,
        Command::Ingress(args) => components::ingress(args).await,
        Command::Loadbalancer(args) => components::loadbalancer(args).await,
        Command::MetricsServer(args) => components::metrics_server(args).await,
        Command::Dns(args) => components::dns(args).await,
        Command::ClusterAutoscaler(args) => components::cluster_autoscaler(args).await,
    }
}
