//! `minik-scheduler`: the scheduler as its own process. All the logic is in the library (`lib.rs`);
//! this file parses flags, sets up logging and signals, and runs it, like `cmd/kube-scheduler`.

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = minik_scheduler::Args::parse();
    minik_client::logging::init("scheduler");
    let shutdown = minik_client::shutdown::on_signal();
    minik_scheduler::run(args.into_config(), shutdown).await?;
    Ok(())
}
