//! Shutdown: one `CancellationToken` per process, cancelled by SIGINT or SIGTERM.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/server.SetupSignalContext`, which every component's
//! `main` calls: the first signal cancels the context (graceful shutdown), a second one exits at once
//! with code 1. minik does the same with a token that components pass down as `child_token()`s.

use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// A token cancelled on the first SIGINT or SIGTERM; a second signal exits the process at once.
/// Must be called from inside a tokio runtime.
pub fn on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        let (mut interrupt, mut terminate) = match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(interrupt), Ok(terminate)) => (interrupt, terminate),
            _ => {
                warn!("could not install signal handlers; stop the process with SIGKILL");
                return;
            }
        };
        tokio::select! {
            _ = interrupt.recv() => info!(signal = "SIGINT", "shutting down"),
            _ = terminate.recv() => info!(signal = "SIGTERM", "shutting down"),
        }
        cancel.cancel();
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        warn!("second signal, exiting now");
        std::process::exit(1);
    });
    token
}
