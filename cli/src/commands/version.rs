//! `minik version`: the client's version, and the server's from `GET /version`.
//!
//! Kubernetes counterpart: `kubectl version` (`staging/src/k8s.io/kubectl/pkg/cmd/version/version.go`),
//! which prints `Client Version:` and `Server Version:` (the apiserver's `gitVersion`).
//! `--verbose` adds what the machine allows pods here: unprivileged user + mount namespaces (volumes
//! at their mountPath) and bind rewriting (`kubelet/src/shim/bind_rewrite/`).

use reqwest::Method;
use serde_json::Value;

use super::resources::GlobalFlags;

/// Flags of `minik version`.
#[derive(clap::Args, Debug)]
pub struct VersionArgs {
    /// Print only the client version (no server round trip).
    #[arg(long)]
    pub client: bool,
    /// Also print what this machine lets minik do (mount namespaces for volumes at mountPath).
    /// Also print what this machine lets pods have (detected now, as each kubelet does at start).
    #[arg(long)]
    pub verbose: bool,
}

/// Runs `minik version`.
pub async fn version(args: VersionArgs, flags: &GlobalFlags) -> anyhow::Result<()> {
    println!("Client Version: v{}-minik", env!("CARGO_PKG_VERSION"));
    if args.verbose {
        // The kubelet's own probe, on this binary: `minik shim --probe-namespaces`.
        let exe = std::env::current_exe()?;
        let support = minik_kubelet::mountns::detect(&exe);
        match support.available {
            true => println!("Mount namespaces: yes ({})", support.detail),
            false => println!("Mount namespaces: no ({})", support.detail),
        }
        let network = minik_kubelet::shim::bind_rewrite::describe();
        println!("Pod network: {network}");
    }
    if args.client {
        return Ok(());
    }
    let info = flags
        .client()?
        .request_json(Method::GET, "/version", None)
        .await?;
    println!(
        "Server Version: {}",
        info.get("gitVersion")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
    );
    Ok(())
}
