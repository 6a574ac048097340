//! `minik-ingress`: the ingress controller as its own process. All the logic is in the library
//! (`lib.rs`); this file parses flags, sets up logging and signals, and runs it.

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = minik_ingress::Args::parse();
    minik_client::logging::init("ingress");
    let shutdown = minik_client::shutdown::on_signal();
    minik_ingress::run(args.into_config(), shutdown).await?;
    Ok(())
}
