//! `minik apiserver|scheduler|kubelet|endpoint-controller|controller-manager|kube-proxy|ingress|loadbalancer|metrics-server|dns …`: each component in the one binary.
//!
//! Kubernetes counterpart: the separate `kube-apiserver`, `kube-scheduler`, `kubelet`,
//! `kube-controller-manager` and `kube-proxy` binaries (`cmd/*/`); k3s folds them into one binary
//! the same way. Each subcommand takes its component crate's own `Args` (the same flags as its
//! `minik-<component>` binary), sets up logging and the signal token, and calls the crate's `run`.
//!
//! The hidden helpers the kubelet starts are here too: `minik shim …` supervises one container
//! process (a containerd-shim stand-in), `minik image NAME` runs a built-in image such as `web`.
//! They run before any async runtime is created and return their own exit code.

use tokio_util::sync::CancellationToken;

/// Installs logging for `component` and returns the process's shutdown token.
fn start(component: &str) -> CancellationToken {
    minik_client::logging::init(component);
    minik_client::shutdown::on_signal()
}

/// `minik apiserver`.
pub async fn apiserver(args: minik_apiserver::Args) -> anyhow::Result<()> {
    let shutdown = start("apiserver");
    Ok(minik_apiserver::run(args.into_config(), shutdown).await?)
}

/// `minik scheduler`.
pub async fn scheduler(args: minik_scheduler::Args) -> anyhow::Result<()> {
    let shutdown = start("scheduler");
    Ok(minik_scheduler::run(args.into_config(), shutdown).await?)
}

/// `minik kubelet`.
pub async fn kubelet(args: minik_kubelet::Args) -> anyhow::Result<()> {
    let shutdown = start("kubelet");
    Ok(minik_kubelet::run(args.into_config(), shutdown).await?)
}

/// `minik endpoint-controller`.
pub async fn endpoint_controller(args: minik_endpoint_controller::Args) -> anyhow::Result<()> {
    let shutdown = start("endpoint-controller");
    Ok(minik_endpoint_controller::run(args.into_config(), shutdown).await?)
}

/// `minik controller-manager`.
pub async fn controller_manager(args: minik_controller_manager::Args) -> anyhow::Result<()> {
    let shutdown = start("controller-manager");
    Ok(minik_controller_manager::run(args.into_config(), shutdown).await?)
}

/// `minik kube-proxy`.
pub async fn proxy(args: minik_proxy::Args) -> anyhow::Result<()> {
    let shutdown = start("proxy");
    Ok(minik_proxy::run(args.into_config(), shutdown).await?)
}

/// `minik ingress`.
pub async fn ingress(args: minik_ingress::Args) -> anyhow::Result<()> {
    let shutdown = start("ingress");
    Ok(minik_ingress::run(args.into_config(), shutdown).await?)
}

/// `minik loadbalancer`.
pub async fn loadbalancer(args: minik_loadbalancer::Args) -> anyhow::Result<()> {
    let shutdown = start("loadbalancer");
    Ok(minik_loadbalancer::run(args.into_config(), shutdown).await?)
}

/// `minik dns`.
pub async fn dns(args: minik_dns::Args) -> anyhow::Result<()> {
    let shutdown = start("dns");
    Ok(minik_dns::run(args.into_config(), shutdown).await?)
}

/// `minik shim …` and `minik image NAME`, recognised from the raw arguments (they take argv
/// verbatim, including `--` and flags of the program they start). `None`: not a helper command.
pub fn hidden_helper(args: &[String]) -> Option<i32> {
    match args.get(1).map(String::as_str) {
        Some("shim") => Some(minik_kubelet::shim::main(args[2..].to_vec())),
        Some("image") => match args.get(2) {
            Some(name) => Some(minik_kubelet::images::run(name)),
            None => {
                eprintln!("usage: minik image NAME");
                Some(1)
            }
        },
        _ => None,
    }
}

/// `minik metrics-server`.
pub async fn metrics_server(args: minik_metrics_server::Args) -> anyhow::Result<()> {
    let shutdown = start("metrics-server");
    Ok(minik_metrics_server::run(args.into_config(), shutdown).await?)
}

/// `minik cluster-autoscaler`.
pub async fn cluster_autoscaler(args: minik_cluster_autoscaler::Args) -> anyhow::Result<()> {
    let shutdown = start("cluster-autoscaler");
    Ok(minik_cluster_autoscaler::run(args.into_config(), shutdown).await?)
}
