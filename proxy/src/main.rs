//! `minik-proxy`: the proxy as its own process. All the logic is in the library (`lib.rs`); this
//! file parses flags, sets up logging and signals, and runs it, like `cmd/kube-proxy/proxy.go`.

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = minik_proxy::Args::parse();
    minik_client::logging::init("proxy");
    let shutdown = minik_client::shutdown::on_signal();
    minik_proxy::run(args.into_config(), shutdown).await?;
    Ok(())
}
