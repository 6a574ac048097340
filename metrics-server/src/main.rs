//! `minik-metrics-server`: the metrics server as its own process. All the logic is in the library
//! (`lib.rs`); this file parses flags, sets up logging and signals, and runs it.

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = minik_metrics_server::Args::parse();
    minik_client::logging::init("metrics-server");
    let shutdown = minik_client::shutdown::on_signal();
    minik_metrics_server::run(args.into_config(), shutdown).await?;
    Ok(())
}
