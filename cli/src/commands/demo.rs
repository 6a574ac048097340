//! `minik demo`: the flags of the guided tour; the tour itself is `minik_lab::demo`.
//!
//! Kubernetes counterpart: none (see `lab/src/demo/mod.rs`). This file only parses the flags into
//! a [`minik_lab::demo::DemoOptions`] and runs it.

use std::path::PathBuf;
use std::time::Duration;

use minik_lab::demo::DemoOptions;

use super::resources::GlobalFlags;
use crate::config::resolve;

/// `minik demo [create|race|hooks|rollout|rainbow|job]`.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// Which part to run; create, race and hooks when left out (rollout, rainbow and job run only
    /// when named, about a minute each).
    #[arg(value_enum)]
    pub part: Option<Part>,
    /// Use a running cluster instead of starting a private one.
    #[arg(long)]
    pub server: Option<String>,
    /// `text` (narrated) or `json` (the results, for scripts and tests).
    #[arg(long, short = 'o', default_value = "text")]
    pub output: String,
    /// Shorter durations and a lighter load (for CI): the same experiments, scaled down.
    #[arg(long)]
    pub quick: bool,
    /// Where to write the HTML report (default: a file in the system's temp directory).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Replicas: behind the race's Service (default 3), of rollout's first run (10), of each
    /// rainbow release (4).
    #[arg(long)]
    pub replicas: Option<usize>,
    /// Replicas of rollout's second run (seed 002: 40).
    #[arg(long, default_value_t = 40)]
    pub large_replicas: usize,
    /// Long-lived connections the rainbow part holds open.
    #[arg(long, default_value_t = 20)]
    pub connections: usize,
    /// rollout: small nodes (each pod asks for 100m) and the cluster autoscaler up to this many
    /// nodes; the chart gains the node count (off by default).
    #[arg(long, value_parser = clap::value_parser!(u8).range(3..=50))]
    pub max_nodes: Option<u8>,
    /// Divide every duration of rollout, rainbow and job by this (default 4: about a minute each;
    /// 1 is the seed's real time).
    #[arg(long)]
    pub speed: Option<f64>,
    /// Requests per second during the race (through each consumer) and the rollout.
    #[arg(long, default_value_t = 100)]
    pub rate: u32,
    /// How late the proxy applies endpoint changes in the race.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub sync_delay: Duration,
    /// How late the ingress controller applies endpoint changes in the race.
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    pub ingress_delay: Duration,
    /// The external load balancer's batch period in the race (the slowest consumer).
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    pub batch_period: Duration,
    /// The hooks part's postStart duration.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub post_start: Duration,
    /// The preStop sleep of the hooks part and of the race's second variant (default: 3 s for
    /// hooks, the slowest consumer's lag + 1 s for the race).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub pre_stop: Option<Duration>,
    /// The hooks part's terminationGracePeriodSeconds (whole seconds).
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub grace: Duration,
    /// How long the hooks part's app takes to exit after SIGTERM.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub shutdown: Duration,
}

/// The demo's parts.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A pod's creation, step by step.
    Create,
    /// The deletion race, without and with preStop.
    Race,
    /// Hooks and grace periods, predicted and measured.
    Hooks,
    /// Seed 002's rolling updates: old pods Terminating beside new ones.
    Rollout,
    /// Long-lived connections: a rolling update, then a rainbow deployment.
    Rainbow,
    /// A Job's pod deleted mid-run, without and with a SIGTERM checkpoint.
    Job,
}

impl From<Part> for minik_lab::demo::Part {
    fn from(part: Part) -> Self {
        match part {
            Part::Create => minik_lab::demo::Part::Create,
            Part::Race => minik_lab::demo::Part::Race,
            Part::Hooks => minik_lab::demo::Part::Hooks,
            Part::Rollout => minik_lab::demo::Part::Rollout,
            Part::Rainbow => minik_lab::demo::Part::Rainbow,
            Part::Job => minik_lab::demo::Part::Job,
        }
    }
}

/// Runs the demo. With `--server`, the credentials come from the kubeconfig `minik get` would
/// use (`--kubeconfig`, `$KUBECONFIG`, the running cluster's `DATA/kubeconfig`).
pub async fn demo(args: DemoArgs, flags: &GlobalFlags) -> anyhow::Result<()> {
    let kubeconfig = match &args.server {
        Some(server) => {
            let context = flags.context.as_deref();
            resolve(Some(server), flags.kubeconfig.as_deref(), context)?.kubeconfig
        }
        None => None,
    };
    let options = DemoOptions {
        part: args.part.map(Into::into),
        server: args.server,
        kubeconfig,
        json: args.output == "json",
        quick: args.quick,
        report: args.report,
        replicas: args.replicas,
        large_replicas: args.large_replicas,
        connections: args.connections,
        max_nodes: args.max_nodes,
        speed: args.speed,
        rate: args.rate,
        sync_delay: args.sync_delay,
        ingress_delay: args.ingress_delay,
        batch_period: args.batch_period,
        post_start: args.post_start,
        pre_stop: args.pre_stop,
        grace: args.grace,
        shutdown: args.shutdown,
    };
    minik_lab::demo::run(options)
        .await
        .map_err(crate::output::from_lab)
}
