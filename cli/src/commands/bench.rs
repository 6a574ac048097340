//! `minik bench`: the flags of the benchmark; the harness itself is `minik_lab::bench`.
//!
//! Kubernetes counterpart: none in kubectl (see `lab/src/bench/mod.rs` for perf-tests and
//! scheduler_perf). This file only parses the flags into a [`minik_lab::bench::BenchOptions`].

use std::path::PathBuf;

use minik_lab::bench::{BenchOptions, Format};

/// Flags of `minik bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// A smoke run: small sizes, short windows (CI runs this in a debug build).
    #[arg(long)]
    pub quick: bool,
    /// `table` (default), `json` (for scripts) or `markdown` (the table of BENCHMARKS.md).
    #[arg(long, short = 'o', default_value = "table", value_parser = ["table", "json", "markdown"])]
    pub output: String,
    /// Run only these sections (comma separated): footprint, pods, endpoints, proxy, api, watch,
    /// rollout, scheduling. The cold start always runs, since it starts the cluster.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Keep the cluster's data here instead of a temp dir (its filesystem decides fsync cost).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Real nodes (kubelets) in the bench cluster; pods of the measurements that run real
    /// processes spread over them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=254))]
    pub nodes: u8,
    /// Bench a plain-http cluster with no authentication (to measure what TLS and RBAC cost).
    #[arg(long)]
    pub insecure: bool,
    /// Also run the peers (etcd, HAProxy under wrk) and print every goal as a ratio; a peer
    /// that is not installed is reported as such.
    #[arg(long)]
    pub compare: bool,
    /// Hollow nodes for the scheduling measurement (default 1000, 50 with --quick).
    #[arg(long)]
    pub hollow_nodes: Option<usize>,
    /// Pods for the scheduling measurement (default 10000, 500 with --quick); with --scale, the
    /// largest point of the study.
    #[arg(long)]
    pub pods: Option<usize>,
    /// The scale study instead of the sections: the scheduling measurement on a grid of 100 to
    /// 5000 hollow nodes and 1000 to 50000 pods, a fresh cluster per point (three tiny points
    /// with --quick).
    #[arg(long)]
    pub scale: bool,
    /// With --scale, also write the study's chart (SVG) to this file.
    #[arg(long, requires = "scale")]
    pub svg: Option<PathBuf>,
}

/// Runs the whole benchmark and prints the report.
pub async fn bench(args: BenchArgs) -> anyhow::Result<()> {
    let format = match args.output.as_str() {
        "json" => Format::Json,
        "markdown" => Format::Markdown,
        _ => Format::Table,
    };
    let options = BenchOptions {
        quick: args.quick,
        format,
        only: args.only,
        data_dir: args.data_dir,
        nodes: args.nodes,
        insecure: args.insecure,
        command: command_line(),
        compare: args.compare,
        scale: minik_lab::bench::Scale {
            nodes: args.hollow_nodes,
            pods: args.pods,
            study: args.scale,
            keep_pods: false,
        },
        svg: args.svg,
    };
    minik_lab::bench::run(options)
        .await
        .map_err(crate::output::from_lab)
}

/// The command that reproduces this run, for BENCHMARKS.md.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("minik {}", args.join(" "))
}
