//! `minik demo`: the seeds' story (docs/seeds.md) — a pod's creation and deletion — happening on
//! real processes, narrated and measured, with a picture.
//!
//! Kubernetes counterpart: none; it is the guided tour. Three parts, each runnable alone:
//!
//! - `create` (`create.rs`): one pod's journey from `apply` to receiving traffic;
//! - `race` (`race.rs`): deleting a pod under load, without and with a preStop sleep;
//! - `hooks` (`hooks.rs`): seed 001's postStart/preStop/grace experiment, predicted and measured.
//!
//! Unless `--server` names a running cluster, each part starts a private cluster in a temporary
//! directory (the same child processes `minik up` starts) and stops it afterwards, leaving
//! nothing behind. Every figure printed comes from the cluster (`timeline.rs` says from where).
//! Each run writes a self-contained HTML report (`report.rs`) and prints its path.
//!
//! The `minik` binary parses the flags (`cli/src/commands/demo.rs`) into a [`DemoOptions`] and
//! calls [`run`]. Read next: `create.rs`, then `observe.rs` and `timeline.rs`.

mod create;
mod hooks;
mod load;
mod manifests;
mod observe;
mod predict;
mod race;
mod report;
mod timeline;

use std::path::PathBuf;
use std::time::Duration;

use minik_client::Client;
use serde_json::json;

use minik_cluster::{Cluster, ClusterConfig};

/// How to run the demo (`minik demo`'s flags, parsed by the binary).
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Which part to run; all three when `None`.
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
    /// Replicas behind the race's Service.
    pub replicas: usize,
    /// Requests per second during the race.
    pub rate: u32,
    /// How late the proxy applies endpoint changes in the race (the slow consumer).
    pub sync_delay: Duration,
    /// The hooks part's postStart duration.
    pub post_start: Duration,
    /// The preStop sleep of the hooks part and of the race's second variant (default: 3 s for
    /// hooks, the sync delay + 1 s for the race).
    pub pre_stop: Option<Duration>,
    /// The hooks part's terminationGracePeriodSeconds (whole seconds).
    pub grace: Duration,
    /// How long the hooks part's app takes to exit after SIGTERM.
    pub shutdown: Duration,
}

impl DemoOptions {
    /// `--quick`: a 1 s slow consumer outwaited by a 1.5 s preStop, 100 requests/s, and a hooks
    /// experiment of 0.5 s postStart, 2 s preStop, 1 s grace and 0.5 s shutdown.
    fn scale_down(&mut self) {
        self.rate = 100;
        self.replicas = 2;
        self.sync_delay = Duration::from_secs(1);
        self.post_start = Duration::from_millis(500);
        self.grace = Duration::from_secs(1);
        self.shutdown = Duration::from_millis(500);
    }

    /// The race's preStop: the given one, else one second longer than the slow consumer's delay
    /// (half a second in quick mode).
    fn race_pre_stop(&self) -> Duration {
        let margin = if self.quick {
            Duration::from_millis(500)
        } else {
            Duration::from_secs(1)
        };
        self.pre_stop.unwrap_or(self.sync_delay + margin)
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
}

/// Runs the demo: each part on its own cluster, narrated on stdout (or its results as JSON), and
/// writes the HTML report.
pub async fn run(mut args: DemoOptions) -> crate::Result<()> {
    if args.quick {
        args.scale_down();
    }
    let narrate = !args.json;
    let parts = match args.part {
        Some(part) => vec![part],
        None => vec![Part::Create, Part::Race, Part::Hooks],
    };
    let mut results = serde_json::Map::new();
    let mut sections_data: Vec<(String, String, timeline::Timeline, Vec<load::Outcome>)> =
        Vec::new();
    for part in parts {
        // The race needs a slow, non-retrying proxy; the other parts a prompt one.
        let proxy_args = match part {
            Part::Race => vec![
                "--sync-delay".into(),
                humantime::format_duration(args.sync_delay).to_string(),
                "--dial-attempts".into(),
                "1".into(),
            ],
            _ => Vec::new(),
        };
        let kubeconfig = args.kubeconfig.as_deref();
        let cluster =
            DemoCluster::start(args.server.as_deref(), kubeconfig, proxy_args, narrate).await?;
        let outcome = run_part(
            part,
            &args,
            &cluster.client,
            narrate,
            &mut results,
            &mut sections_data,
        )
        .await;
        cluster.stop().await;
        outcome?;
    }
    let sections: Vec<report::Section<'_>> = sections_data
        .iter()
        .map(|(title, caption, timeline, outcomes)| report::Section {
            title: title.clone(),
            caption: caption.clone(),
            timeline,
            outcomes,
        })
        .collect();
    let path = args.report.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("minik-demo-{}.html", std::process::id()))
    });
    std::fs::write(
        &path,
        report::render(
            "minik demo: a pod's creation and deletion, measured",
            &sections,
        ),
    )?;
    results.insert("report".into(), json!(path));
    if narrate {
        println!("\nThe picture: {}", path.display());
    } else {
        println!("{}", serde_json::to_string_pretty(&results)?);
    }
    Ok(())
}

/// Runs one part, adding its JSON result and its report sections.
async fn run_part(
    part: Part,
    args: &DemoOptions,
    client: &Client,
    narrate: bool,
    results: &mut serde_json::Map<String, serde_json::Value>,
    sections: &mut Vec<(String, String, timeline::Timeline, Vec<load::Outcome>)>,
) -> crate::Result<()> {
    match part {
        Part::Create => {
            if narrate {
                println!("\n== create: apply a pod and a service, and follow the pipeline (times since the apply)");
            }
            let result = create::run(client, "default", narrate).await?;
            results.insert("create".into(), json!({"timeline": result.timeline.marks}));
            sections.push((
                "create".into(),
                "From apply to the first request routed to the new pod.".into(),
                result.timeline,
                Vec::new(),
            ));
        }
        Part::Race => {
            if narrate {
                println!("\n== race: delete a pod under load; the proxy applies endpoint changes {} late and does not retry", humantime::format_duration(args.sync_delay));
            }
            let options = race::RaceOptions {
                replicas: args.replicas,
                rate: args.rate,
                warmup: Duration::from_secs(1),
                sync_delay: args.sync_delay,
                pre_stop: args.race_pre_stop(),
            };
            let variants = race::run(client, "default", &options, narrate).await?;
            if narrate {
                race::print_table(&variants);
            }
            results.insert("race".into(), json!({"variants": variants}));
            for variant in variants {
                let caption = format!(
                    "{} requests, {} failed. Times are relative to the delete.",
                    variant.requests, variant.failed
                );
                sections.push((
                    format!("race: {}", variant.name),
                    caption,
                    variant.timeline,
                    variant.outcomes,
                ));
            }
        }
        Part::Hooks => {
            let hooks = predict::Hooks {
                post_start: args.post_start,
                pre_stop: args.hooks_pre_stop(),
                grace: args.grace,
                shutdown: Some(args.shutdown),
            };
            if narrate {
                println!(
                    "\n== hooks: postStart {}, preStop {}, grace {}, app shutdown {}",
                    fmt(hooks.post_start),
                    fmt(hooks.pre_stop),
                    fmt(hooks.grace),
                    fmt(args.shutdown)
                );
            }
            let result = hooks::run(client, "default", &hooks, narrate).await?;
            if narrate {
                hooks::print_comparison(&result.comparison);
            }
            results.insert("hooks".into(), serde_json::to_value(&result)?);
            sections.push((
                "hooks: start".into(),
                "Relative to the process start.".into(),
                result.start,
                Vec::new(),
            ));
            sections.push((
                "hooks: termination".into(),
                "Relative to the delete.".into(),
                result.termination,
                Vec::new(),
            ));
        }
    }
    Ok(())
}

fn fmt(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}

/// A client for `server`, with the credentials of `kubeconfig`'s current context if given.
fn client_for(server: &str, kubeconfig: Option<&std::path::Path>) -> crate::Result<Client> {
    let Some(path) = kubeconfig else {
        return Ok(Client::new(server)?);
    };
    let mut config = minik_client::kubeconfig::load(path)?;
    config.server = server.to_string();
    Ok(Client::from_config(&config)?)
}

/// The cluster a part runs on: a private one, or the one `--server` names.
struct DemoCluster {
    client: Client,
    private: Option<(Cluster, tempfile::TempDir)>,
}

impl DemoCluster {
    async fn start(
        server: Option<&str>,
        kubeconfig: Option<&std::path::Path>,
        proxy_args: Vec<String>,
        narrate: bool,
    ) -> crate::Result<DemoCluster> {
        if let Some(server) = server {
            return Ok(DemoCluster {
                client: client_for(server, kubeconfig)?,
                private: None,
            });
        }
        let data_dir = tempfile::Builder::new().prefix("minik-demo-").tempdir()?;
        let options = ClusterConfig {
            data_dir: data_dir.path().to_path_buf(),
            listen: crate::free_loopback_port()?,
            nodes: 2,
            proxy_args,
            progress: false,
            ..ClusterConfig::default()
        };
        let cluster = Cluster::start(options).await?;
        if narrate {
            println!(
                "  (a private cluster started in {:.0} ms in {})",
                cluster.startup.as_secs_f64() * 1000.0,
                data_dir.path().display()
            );
        }
        Ok(DemoCluster {
            client: cluster.client()?,
            private: Some((cluster, data_dir)),
        })
    }

    async fn stop(self) {
        if let Some((cluster, data_dir)) = self.private {
            cluster.stop().await;
            drop(data_dir);
        }
    }
}
