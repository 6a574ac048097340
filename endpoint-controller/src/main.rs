//! `minik-endpoint-controller`: the endpoints controller as its own process. All the logic is in the
//! library (`lib.rs`); this file parses flags, sets up logging and signals, and runs it, like
//! `cmd/kube-controller-manager` does for its controllers.

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = minik_endpoint_controller::Args::parse();
    minik_client::logging::init("endpoint-controller");
    let shutdown = minik_client::shutdown::on_signal();
    minik_endpoint_controller::run(args.into_config(), shutdown).await?;
    Ok(())
}
