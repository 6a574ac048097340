//! `minik-apiserver`: the API server as its own process (also `minik apiserver`).
//!
//! Kubernetes counterpart: `cmd/kube-apiserver/apiserver.go`, a thin shell around the library.

use clap::Parser;
use tokio_util::sync::CancellationToken;

#[derive(Parser)]
#[command(
    name = "minik-apiserver",
    about = "The minik API server: Kubernetes REST and watch over sled"
)]
struct Cli {
    #[command(flatten)]
    args: minik_apiserver::Args,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).init();
    let cli = Cli::parse();
    let shutdown = CancellationToken::new();
    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { if let Some(term) = term.as_mut() { term.recv().await; } else { std::future::pending::<()>().await } } => {}
        }
        on_signal.cancel();
    });
    minik_apiserver::run(cli.args.into_config(), shutdown).await?;
    Ok(())
}
