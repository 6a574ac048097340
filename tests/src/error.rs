//! The harness's error type: what can go wrong while starting, observing or stopping a cluster.
//!
//! Kubernetes counterpart: the e2e framework's `framework.Failf` messages; here each failure is a
//! variant so a test that expects one (a timeout, say) can match on it.

use std::path::PathBuf;
use std::time::Duration;

/// Everything the harness can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A condition did not hold before its deadline.
    #[error("timed out after {timeout:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        timeout: Duration,
    },
    /// A call to the API server failed (boxed: the client's error is large).
    #[error("api call failed: {0}")]
    Client(Box<minik_client::Error>),
    /// A file or process operation failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// A component could not start, or failed.
    #[error("component {name}: {message}")]
    Component {
        /// `apiserver`, `kubelet-node-1`, …
        name: String,
        /// What happened.
        message: String,
    },
    /// The `minik` binary that container processes run is missing.
    #[error(
        "the minik binary is missing at {0}: run `cargo build --workspace --bins` before the tests"
    )]
    MissingBinary(PathBuf),
    /// The launcher (`minik_cluster`) failed to start, signal or restart a component.
    #[error("cluster: {0}")]
    Cluster(#[from] minik_cluster::Error),
    /// A watch stream ended while a condition was awaited.
    #[error("the watch ended while waiting for {0}")]
    WatchEnded(String),
}

impl From<minik_client::Error> for Error {
    fn from(error: minik_client::Error) -> Self {
        Error::Client(Box::new(error))
    }
}

/// The harness's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
