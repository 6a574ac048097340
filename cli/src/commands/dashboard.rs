//! `minik dashboard`: serve the live web view of the cluster on loopback and print its URL.
//!
//! Kubernetes counterpart: `kubectl proxy` followed by opening the Kubernetes Dashboard, or
//! `headlamp`/`k9s` started against the current kubeconfig. The cluster is found as `minik get`
//! finds it (`--kubeconfig`, `$KUBECONFIG`, the running cluster's `DATA/kubeconfig`) unless
//! `--server`/`--kubeconfig` are given; everything else is the `minik-dashboard` crate.

use tokio_util::sync::CancellationToken;

use super::resources::GlobalFlags;

/// Runs `minik dashboard` until Ctrl-C.
pub async fn dashboard(args: minik_dashboard::Args, flags: &GlobalFlags) -> anyhow::Result<()> {
    minik_client::logging::init("dashboard");
    let shutdown: CancellationToken = minik_client::shutdown::on_signal();
    let client = match (&args.server, &args.kubeconfig) {
        (None, None) => flags.client()?,
        (server, kubeconfig) => {
            let server = server.as_deref().unwrap_or("http://127.0.0.1:6443");
            minik_client::Client::connect(server, kubeconfig.as_deref())?
        }
    };
    let started = minik_dashboard::start(client, args.into_config(), shutdown).await?;
    // Like Jupyter: the URL carries the token; the first visit turns it into a session cookie.
    println!("Serving the dashboard on {}", started.url);
    println!("(loopback only; the token in the URL is the key: do not share it)");
    started.finished().await;
    Ok(())
}
