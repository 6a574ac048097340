//! `minik bench`: start a private cluster and measure the pipeline against Kubernetes' numbers.
//!
//! Kubernetes counterpart: perf-tests' ClusterLoader2 (pod startup latency via watch, API call
//! latency), `test/integration/scheduler_perf` (scheduling throughput onto fake nodes), kubemark /
//! kwok (hollow nodes) and etcd's `benchmark` tool (put throughput, watch fan-out). minik runs a
//! small version of each in one command, against one cluster it starts itself (a temp dir and a
//! free loopback port, through [`Cluster::start`], exactly what `minik up` runs), and prints one
//! table: measurement, result, target, anchor (`docs/benchmarks.md#anchors`).
//!
//! The measurements, one file each, in the order they run:
//!
//! 8. `startup.rs`: cold start, `Cluster::start` → node Ready → first pod Running;
//! 7. `footprint.rs`: RSS and CPU of the idle stack (first, while it is still clean), then
//!    `one_process.rs`: the same cluster as `minik up --one-process`, one process;
//! 1. `pods.rs`: apply → Running through a watch, one at a time and 16 at once;
//! 5. `endpoints.rs`: delete → gone from the Endpoints → the proxy's `EndpointsApplied`;
//! 6. `proxy.rs`: bulk throughput and added latency through the proxy vs a direct connection;
//! 3. `api.rs`: durable creates with 64 clients, write p99 under background load, GET p99;
//! 4. `fanout.rs`: 1,000 watchers under 50,000 events/s, then under as many writes as they keep up with;
//! 9. `rollout.rs`: a 1 000-replica Deployment on hollow nodes, create → Available, then a full
//!    rolling update (through the controller manager);
//! 2. `scheduling.rs`: N pods onto M hollow nodes (`crate::hollow`), durable binds;
//! 10. `compare/`: with `--compare`, etcd and HAProxy run beside minik and every goal becomes a
//!     ratio (the `compare_*` rows, last).
//!
//! `--scale` runs none of these: `scale.rs` repeats measurement 2 over a grid of node and pod
//! counts, a fresh cluster per point, and draws the curves (`scale_chart.rs`).
//!
//! Each measurement is bounded in time and failure-isolated: one that errors (a component still
//! being written, say) becomes an `error: …` row and the run goes on. `--quick` shrinks every size
//! so a debug build finishes in well under a minute (CI runs it); real figures need
//! `cargo run --release --bin minik -- bench`.
//!
//! The `minik` binary parses the flags (`cli/src/commands/bench.rs`) into a [`BenchOptions`] and
//! calls [`run`]. Read next: `startup.rs`, then `report.rs` for the rows and their formats.

mod api;
pub mod compare;
mod endpoints;
mod fanout;
mod fanout_writes;
mod footprint;
mod one_process;
mod pods;
mod proxy;
pub mod report;
mod rollout;
mod scale;
mod scale_chart;
mod scheduling;
mod startup;

use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::Context;
use minik_client::Client;
use tokio_util::sync::CancellationToken;

use minik_cluster::{Cluster, ClusterConfig};
use report::{Machine, Report, Row};

/// How the report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An aligned table for people.
    Table,
    /// JSON, for scripts.
    Json,
    /// The table of BENCHMARKS.md.
    Markdown,
}

/// How to run the benchmark (`minik bench`'s flags, parsed by the binary).
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// A smoke run: small sizes, short windows (CI runs this in a debug build).
    pub quick: bool,
    /// How the report is printed on stdout.
    pub format: Format,
    /// Run only these sections: footprint, pods, endpoints, proxy, api, watch, rollout,
    /// scheduling (all when empty). The cold start always runs, since it starts the cluster.
    pub only: Vec<String>,
    /// Keep the cluster's data here instead of a temp dir (its filesystem decides fsync cost).
    pub data_dir: Option<PathBuf>,
    /// Real nodes (kubelets) in the bench cluster, 1 to 254.
    pub nodes: u8,
    /// A plain-http cluster without authentication (`--insecure`), to measure what TLS costs.
    pub insecure: bool,
    /// The command that reproduces this run, written into the report (`minik bench --quick`).
    pub command: String,
    /// Also run the peers (etcd, HAProxy) and print every goal as a ratio (`compare.rs`).
    pub compare: bool,
    /// The scheduling measurement's size, hollow nodes and pods (its defaults when `None`): the
    /// scale study of BENCHMARKS.md runs it from 100 to 5 000 nodes.
    pub scale: Scale,
    /// With `--scale`, where to write the study's SVG chart.
    pub svg: Option<PathBuf>,
}

/// The size of the scheduling measurement (`--hollow-nodes`, `--pods`), or the scale study.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scale {
    /// Hollow nodes to register.
    pub nodes: Option<usize>,
    /// Pods to schedule onto them.
    pub pods: Option<usize>,
    /// `--scale`: run the scale study's grid (`scale.rs`), one fresh cluster per point, instead
    /// of the sections.
    pub study: bool,
    /// Leave the pods in place after the scheduling measurement (the study throws the whole
    /// cluster away instead, and measures a relist of them first).
    pub keep_pods: bool,
}

/// What every measurement gets.
pub struct Bench {
    /// A client of the bench's cluster.
    pub client: Client,
    /// `https://127.0.0.1:PORT`.
    pub server: String,
    /// The cluster's admin kubeconfig (`DATA/kubeconfig`).
    pub kubeconfig: Option<PathBuf>,
    /// `--quick`.
    pub quick: bool,
    /// The proxy's log, where its `ready` line names its metrics address (`/proxies`).
    pub proxy_log: Option<PathBuf>,
    /// Every component process: (name, pid), for CPU accounting.
    pub components: Vec<(String, u32)>,
    /// The scheduling measurement's size, when given.
    pub scale: Scale,
    /// Cancelled when the bench ends; sections hang their background tasks on child tokens
    /// (dropped with a `drop_guard`, so a section cut short by its time bound stops them too).
    pub shutdown: CancellationToken,
}

impl Bench {
    /// `quick` or `full`, depending on the run.
    pub fn size<T>(&self, quick: T, full: T) -> T {
        if self.quick {
            quick
        } else {
            full
        }
    }
}

/// Runs the whole benchmark and prints the report on stdout (progress goes to stderr).
pub async fn run(args: BenchOptions) -> crate::Result<()> {
    if args.scale.study {
        return scale::study(&args).await;
    }
    let temp = temp_dir(&args)?;
    let data_dir = args
        .data_dir
        .clone()
        .or_else(|| temp.as_ref().map(|t| t.path().to_path_buf()))
        .unwrap_or_default();
    std::fs::create_dir_all(&data_dir)?;
    let machine = Machine::detect(&data_dir);
    let options = cluster_config(&args, data_dir.clone())?;
    say(&format!(
        "minik bench: starting a cluster in {} on {}",
        data_dir.display(),
        options.listen
    ));
    let (cluster, mut rows) = startup::cold_start(options).await?;
    let ctx = context(&cluster, &args)?;
    let mut outcome = run_sections(&ctx, &cluster, &args).await;
    if args.compare {
        say("comparing with the peers");
        let ratios = compare::measure(&ctx, &outcome).await;
        outcome.extend(ratios);
    }
    ctx.shutdown.cancel();
    say("minik bench: stopping the cluster");
    cluster.stop().await;
    rows.extend(outcome);
    let report = Report {
        machine,
        command: args.command.clone(),
        quick: args.quick,
        measurements: order(rows),
    };
    print_report(&report, args.format)?;
    drop(temp);
    Ok(())
}

/// A temp dir for the cluster's data, unless `--data-dir` names one.
fn temp_dir(args: &BenchOptions) -> crate::Result<Option<tempfile::TempDir>> {
    match &args.data_dir {
        Some(_) => Ok(None),
        None => Ok(Some(
            tempfile::Builder::new()
                .prefix("minik-bench-")
                .tempdir()
                .context("creating a temp dir")?,
        )),
    }
}

/// The bench cluster: `minik up`'s defaults, a free loopback port, proxy sync delay 0.
fn cluster_config(args: &BenchOptions, data_dir: PathBuf) -> crate::Result<ClusterConfig> {
    Ok(ClusterConfig {
        data_dir,
        listen: crate::free_loopback_port()?,
        nodes: args.nodes,
        sync_delay: Some("0s".into()),
        progress: false,
        secure: !args.insecure,
        ..ClusterConfig::default()
    })
}

/// What every measurement gets, for a started cluster.
fn context(cluster: &Cluster, args: &BenchOptions) -> crate::Result<Bench> {
    let state = cluster.state();
    let proxy_log = state
        .components
        .iter()
        .find(|c| c.name == "proxy")
        .map(|c| c.log.clone());
    let components = state
        .components
        .iter()
        .map(|c| (c.name.clone(), c.pid))
        .collect();
    Ok(Bench {
        client: cluster.client()?,
        server: cluster.server_url.clone(),
        kubeconfig: cluster.kubeconfig(),
        quick: args.quick,
        proxy_log,
        components,
        scale: args.scale,
        shutdown: CancellationToken::new(),
    })
}

/// Prints the report on stdout in the asked format.
fn print_report(report: &Report, format: Format) -> crate::Result<()> {
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(report)?),
        Format::Markdown => print!("{}", report.markdown()),
        Format::Table => print!("{}", report.table()),
    }
    Ok(())
}

/// Runs the selected sections in their fixed order (see the module doc for why this order).
async fn run_sections(ctx: &Bench, cluster: &Cluster, args: &BenchOptions) -> Vec<Row> {
    let wanted = |name: &str| args.only.is_empty() || args.only.iter().any(|o| o == name);
    let limit = Duration::from_secs(if args.quick { 20 } else { 240 });
    let mut rows = Vec::new();
    if wanted("footprint") {
        say("measuring the idle footprint");
        rows.extend(
            guarded(
                footprint::templates(),
                limit,
                footprint::measure(ctx, cluster.state()),
            )
            .await,
        );
        say("measuring the idle footprint of minik up --one-process");
        // It starts a cluster of its own: a debug build needs more than `--quick`'s 20 s.
        let start = Duration::from_secs(if args.quick { 120 } else { 240 });
        let one = one_process::measure(ctx);
        rows.extend(guarded(one_process::templates(), start, one).await);
    }
    if wanted("pods") {
        say("measuring apply → Running");
        rows.extend(guarded(pods::templates(), limit, pods::measure(ctx)).await);
    }
    if wanted("endpoints") {
        say("measuring endpoint propagation");
        rows.extend(guarded(endpoints::templates(), limit, endpoints::measure(ctx)).await);
    }
    if wanted("proxy") {
        say("measuring the proxy");
        rows.extend(guarded(proxy::templates(), limit, proxy::measure(ctx)).await);
    }
    if wanted("api") {
        say("measuring the API");
        rows.extend(guarded(api::templates(), limit, api::measure(ctx)).await);
    }
    if wanted("watch") {
        say("measuring watch fan-out");
        rows.extend(guarded(fanout::templates(), limit, fanout::measure(ctx)).await);
    }
    if wanted("rollout") {
        say("measuring a Deployment rollout on hollow nodes");
        rows.extend(guarded(rollout::templates(), limit, rollout::measure(ctx)).await);
    }
    if wanted("scheduling") {
        say("measuring scheduling throughput");
        // A scale-study size (`--pods 50000`) may need up to ten minutes on two cores.
        let limit = match args.scale.pods {
            Some(_) => Duration::from_secs(600),
            None => limit,
        };
        rows.extend(guarded(scheduling::templates(), limit, scheduling::measure(ctx)).await);
    }
    rows
}

/// Runs one measurement with a time bound; on error or timeout its rows say so.
async fn guarded(
    templates: Vec<Row>,
    limit: Duration,
    measurement: impl Future<Output = crate::Result<Vec<Row>>>,
) -> Vec<Row> {
    let started = Instant::now();
    let outcome = match tokio::time::timeout(limit, measurement).await {
        Ok(outcome) => outcome,
        Err(_) => Err(crate::error::message!("did not finish within {limit:?}")),
    };
    match outcome {
        Ok(rows) => {
            say(&format!(
                "  done in {:.1}s",
                started.elapsed().as_secs_f64()
            ));
            rows
        }
        Err(err) => {
            say(&format!(
                "  failed after {:.1}s: {err}",
                started.elapsed().as_secs_f64()
            ));
            templates.into_iter().map(|row| row.failed(&err)).collect()
        }
    }
}

/// Rows in the numbered order of the issues (1 … 9), whatever order they ran in.
fn order(mut rows: Vec<Row>) -> Vec<Row> {
    const ORDER: &[&str] = &[
        "pod_startup_sequential",
        "pod_startup_concurrent",
        "scheduling_throughput",
        "api_create_throughput",
        "api_write_latency",
        "api_get_latency",
        "watch_fanout",
        "watch_latency",
        "endpoint_propagation",
        "proxy_throughput",
        "proxy_latency",
        "idle_memory",
        "idle_memory_one_process",
        "idle_cpu",
        "cold_start_node_ready",
        "cold_start_first_pod",
        "rollout_available",
        "rollout_update",
    ];
    rows.sort_by_key(|row| {
        ORDER
            .iter()
            .position(|id| *id == row.id)
            .unwrap_or(ORDER.len())
    });
    rows
}

/// Every row id a full report has.
#[cfg(test)]
fn all_ids() -> Vec<&'static str> {
    let mut ids: Vec<&'static str> = [
        startup::templates(),
        footprint::templates(),
        one_process::templates(),
        pods::templates(),
        endpoints::templates(),
        proxy::templates(),
        api::templates(),
        fanout::templates(),
        scheduling::templates(),
        rollout::templates(),
    ]
    .into_iter()
    .flatten()
    .map(|row| row.id)
    .collect();
    ids.sort();
    ids
}

/// Progress goes to stderr so that stdout holds only the report.
pub fn say(line: &str) {
    eprintln!("{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows come out in the issue's numbering whatever order the sections ran in.
    #[test]
    fn rows_are_ordered_as_the_issue_numbers_them() {
        let rows = vec![
            Row::new("cold_start_first_pod", "", "", ""),
            Row::new("pod_startup_sequential", "", "", ""),
            Row::new("watch_fanout", "", "", ""),
        ];
        let ids: Vec<_> = order(rows).into_iter().map(|r| r.id).collect();
        assert_eq!(
            ids,
            [
                "pod_startup_sequential",
                "watch_fanout",
                "cold_start_first_pod"
            ]
        );
    }

    /// Every measurement of the issue has at least one row, and ids are unique.
    #[test]
    fn every_measurement_has_a_row() {
        let ids = all_ids();
        let mut unique = ids.clone();
        unique.dedup();
        assert_eq!(ids, unique);
        assert_eq!(ids.len(), 18);
    }
}
