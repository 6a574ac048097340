//! `minik demo`: the seeds' story (docs/seeds.md) — a pod's creation and deletion — happening on
//! real processes, narrated and measured, with a picture.
//!
//! Kubernetes counterpart: none; it is the guided tour. Three parts run by default, each also
//! runnable alone:
//!
//! - `create` (`create.rs`): one pod's journey from `apply` to receiving traffic;
//! - `race` (`race.rs`, `consumers.rs`): deleting a pod under load through the proxy, the
//!   ingress and the external load balancer, without and with a preStop sleep;
//! - `hooks` (`hooks.rs`): seed 001's postStart/preStop/grace experiment, predicted and measured;
//!
//! and longer ones, run only when named, their durations divided by `--speed`:
//!
//! - `rollout` (`rollout.rs`): seed 002's rolling updates, old pods Terminating beside new ones;
//! - `rainbow` (`rainbow.rs`): long-lived connections through a rolling update, then through a
//!   rainbow deployment;
//! - `job` (`job.rs`): a Job's pod deleted mid-run, a worker without and with a SIGTERM
//!   checkpoint: the work lost, the completions counted, the time to completion.
//!
//! Unless `--server` names a running cluster, each part starts a private cluster in a temporary
//! directory (the same child processes `minik up` starts) and stops it afterwards, leaving
//! nothing behind. Every figure printed comes from the cluster (`timeline.rs` says from where).
//! Each run writes a self-contained HTML report (`report.rs`) and prints its path.
//!
//! The `minik` binary parses the flags (`cli/src/commands/demo.rs`) into a [`DemoOptions`] and
//! calls [`run`]; `parts.rs` runs each part and turns its result into JSON and report sections.
//! Read next: `create.rs`, then `observe.rs` and `timeline.rs`.

mod census;
mod chart;
mod cluster;
mod consumers;
mod create;
mod hooks;
mod job;
mod job_watch;
mod job_worker;
mod live;
mod load;
mod manifests;
mod nodes;
mod observe;
mod parts;
mod podwatch;
mod predict;
mod race;
mod rainbow;
mod rainbow_report;
mod report;
mod rollout;
mod streams;
mod timeline;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use cluster::DemoCluster;

/// How to run the demo (`minik demo`'s flags, parsed by the binary).
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Which part to run; create, race and hooks when `None`.
    pub part: Option<Part>,
    /// Use a running cluster instead of starting a private one.
    pub server: Option<String>,
    /// The kubeconfig whose credentials reach `server` (an https cluster).
    pub kubeconfig: Option<std::path::PathBuf>,
    /// Print the results as JSON (for scripts and tests) instead of narrating.
    pub json: bool,
    /// Shorter durations and a lighter load (for CI): the same experiments, scaled down.
    pub quick: bool,
    /// Where to write the HTML report (default: a file in the system's temp directory).
    pub report: Option<PathBuf>,
    /// Replicas: behind the race's Service (default 3), of rollout's first run (10), of each
    /// rainbow release (4).
    pub replicas: Option<usize>,
    /// Replicas of rollout's second run (seed 002: 40).
    pub large_replicas: usize,
    /// Long-lived connections held open in the rainbow part.
    pub connections: usize,
    /// rollout: small nodes and the cluster autoscaler up to this many nodes (`nodes.rs`).
    pub max_nodes: Option<u8>,
    /// Every duration of the rollout and rainbow parts is divided by this (default: 4 for
    /// rollout, 4 for rainbow, about a minute each).
    pub speed: Option<f64>,
    /// Requests per second during the race (through each consumer) and the rollout.
    pub rate: u32,
    /// How late the proxy applies endpoint changes in the race.
    pub sync_delay: Duration,
    /// How late the ingress controller applies them in the race.
    pub ingress_delay: Duration,
    /// The load balancer's batch period in the race (the slowest consumer).
    pub batch_period: Duration,
    /// The hooks part's postStart duration.
    pub post_start: Duration,
    /// The preStop sleep of the hooks part and of the race's second variant (default: 3 s for
    /// hooks, the slowest consumer's lag + 1 s for the race).
    pub pre_stop: Option<Duration>,
    /// The hooks part's terminationGracePeriodSeconds (whole seconds).
    pub grace: Duration,
    /// How long the hooks part's app takes to exit after SIGTERM.
    pub shutdown: Duration,
}

impl DemoOptions {
    /// `--quick`: a 1 s proxy, a 0.3 s ingress and a 1.5 s load balancer outwaited by a 2 s
    /// preStop, 50 requests/s each, and a hooks experiment of 0.5 s postStart, 2 s preStop, 1 s
    /// grace and 0.5 s shutdown.
    fn scale_down(&mut self) {
        self.rate = 50;
        self.replicas.get_or_insert(2);
        self.sync_delay = Duration::from_secs(1);
        self.ingress_delay = Duration::from_millis(300);
        self.batch_period = Duration::from_millis(1500);
        self.post_start = Duration::from_millis(500);
        self.grace = Duration::from_secs(1);
        self.shutdown = Duration::from_millis(500);
    }

    /// The race's preStop: the given one, else one second longer than the slowest consumer's
    /// lag (half a second in quick mode).
    fn race_pre_stop(&self) -> Duration {
        let margin = if self.quick {
            Duration::from_millis(500)
        } else {
            Duration::from_secs(1)
        };
        let slowest = self.sync_delay.max(self.batch_period);
        self.pre_stop.unwrap_or(slowest + margin)
    }

    /// The hooks part's preStop: the given one, else 3 s (2 s in quick mode).
    fn hooks_pre_stop(&self) -> Duration {
        self.pre_stop
            .unwrap_or(Duration::from_secs(if self.quick { 2 } else { 3 }))
    }
}

/// The demo's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A pod's creation, step by step.
    Create,
    /// The deletion race, without and with preStop.
    Race,
    /// Hooks and grace periods, predicted and measured.
    Hooks,
    /// Seed 002's rolling updates.
    Rollout,
    /// Long-lived connections: a rolling update, then a rainbow deployment.
    Rainbow,
    /// A Job's pod deleted mid-run, without and with a SIGTERM checkpoint.
    Job,
}

/// Runs the demo: each part on its own cluster, narrated on stdout (or its results as JSON), and
/// writes the HTML report.
pub async fn run(mut args: DemoOptions) -> crate::Result<()> {
    if args.quick {
        args.scale_down();
    }
    crate::error::ensure!(
        args.speed
            .is_none_or(|speed| speed.is_finite() && speed > 0.0),
        "--speed must be a positive number"
    );
    let narrate = !args.json;
    let parts = match args.part {
        Some(part) => vec![part],
        None => vec![Part::Create, Part::Race, Part::Hooks],
    };
    let mut results = serde_json::Map::new();
    let mut sections = Vec::new();
    for part in &parts {
        let kubeconfig = args.kubeconfig.as_deref();
        let flags = parts::cluster_flags(*part, &args);
        let cluster =
            DemoCluster::start(args.server.as_deref(), kubeconfig, flags, narrate).await?;
        let outcome =
            parts::run_part(*part, &args, &cluster, narrate, &mut results, &mut sections).await;
        cluster.stop().await;
        outcome?;
    }
    let path = args.report.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("minik-demo-{}.html", std::process::id()))
    });
    let title = match parts.as_slice() {
        [Part::Rollout] => "minik demo rollout: seed 002's rolling updates, measured",
        [Part::Rainbow] => "minik demo rainbow: long-lived connections, rolling vs rainbow",
        [Part::Job] => "minik demo job: a batch pod deleted mid-run, without and with a checkpoint",
        _ => "minik demo: a pod's creation and deletion, measured",
    };
    std::fs::write(&path, report::render(title, &sections))?;
    results.insert("report".into(), json!(path));
    if narrate {
        println!("\nThe picture: {}", path.display());
    } else {
        println!("{}", serde_json::to_string_pretty(&results)?);
    }
    Ok(())
}
