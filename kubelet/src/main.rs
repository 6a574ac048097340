//! `minik-kubelet`: the kubelet as its own process, like `cmd/kubelet`. All the logic is in the
//! library; this file parses flags, sets up logging and signals, and runs it.
//!
//! The same executable also serves as its containers' supervisor and built-in images when
//! `--minik-binary` is left at its default (itself): `minik-kubelet shim …` and
//! `minik-kubelet image web` behave as `minik shim …` and `minik image web`.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let argv: Vec<String> = std::env::args().collect();
    match argv.get(1).map(String::as_str) {
        Some("shim") => std::process::exit(minik_kubelet::shim::main(argv[2..].to_vec())),
        Some("image") => std::process::exit(minik_kubelet::images::run(
            argv.get(2).map_or("", String::as_str),
        )),
        _ => run(minik_kubelet::args::Cli::parse().args),
    }
}

#[tokio::main]
async fn run(args: minik_kubelet::Args) -> anyhow::Result<()> {
    minik_client::logging::init("kubelet");
    let shutdown = minik_client::shutdown::on_signal();
    minik_kubelet::run(args.into_config(), shutdown).await?;
    Ok(())
}
