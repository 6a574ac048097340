//! The lab's one error type.
//!
//! Kubernetes counterpart: none (the Go tools return wrapped `error`s, `fmt.Errorf("…: %w")`).
//! A measurement or a demo part meets many kinds of failure (an API call, a cluster that did not
//! start, a file, a timeout); each known kind converts with `?`, and [`Context::context`] adds
//! what was being done, the way `%w` wrapping does. The text of an error is the whole chain
//! (`registering hollow nodes: pods "x" already exists`), so a report row can show it as is.

/// What can go wrong in a demo part, a measurement or the hollow nodes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A failure described in words (a timeout, a watch that ended, a check that did not hold).
    #[error("{0}")]
    Message(String),
    /// Another error, with what was being done when it happened.
    #[error("{context}: {inner}")]
    Context {
        /// What was being done (`creating a temp dir`).
        context: String,
        /// What went wrong.
        inner: Box<Error>,
    },
    /// Talking to the API server failed (boxed: the client's error carries a whole Status).
    #[error(transparent)]
    Client(Box<minik_client::Error>),
    /// A private cluster could not be started.
    #[error(transparent)]
    Cluster(#[from] minik_cluster::Error),
    /// A file, socket or process operation failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// JSON could not be written or read.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// An address from the API (a clusterIP, a pod IP) did not parse.
    #[error(transparent)]
    Address(#[from] std::net::AddrParseError),
    /// A plain HTTP request (not the API client's) failed.
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    /// Something did not happen within its time bound.
    #[error(transparent)]
    Timeout(#[from] tokio::time::error::Elapsed),
    /// A background task panicked or was cancelled.
    #[error(transparent)]
    Join(#[from] tokio::task::JoinError),
    /// A background task ended without sending its answer.
    #[error(transparent)]
    Closed(#[from] tokio::sync::oneshot::error::RecvError),
}

impl From<minik_client::Error> for Error {
    fn from(error: minik_client::Error) -> Self {
        Error::Client(Box::new(error))
    }
}

/// `Result` with the lab's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds what was being done to an error, or turns a missing value into one (anyhow's
/// `Context`, for the lab's own [`Error`]).
pub(crate) trait Context<T> {
    /// Wraps the error, if any, with `context`.
    fn context(self, context: impl Into<String>) -> Result<T>;

    /// Like [`Context::context`], with the text computed only on error.
    fn with_context(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for Result<T, E> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.with_context(|| context.into())
    }

    fn with_context(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|error| Error::Context {
            context: context(),
            inner: Box::new(error.into()),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.ok_or_else(|| Error::Message(context.into()))
    }

    fn with_context(self, context: impl FnOnce() -> String) -> Result<T> {
        self.ok_or_else(|| Error::Message(context()))
    }
}

/// Returns early with an [`Error::Message`] (anyhow's `bail!`).
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::message!($($arg)*))
    };
}

/// Returns early with an [`Error::Message`] unless the condition holds (anyhow's `ensure!`).
macro_rules! ensure {
    ($condition:expr, $($arg:tt)*) => {
        if !$condition {
            $crate::error::bail!($($arg)*);
        }
    };
}

/// An [`Error::Message`] from format arguments (anyhow's `anyhow!`).
macro_rules! message {
    ($($arg:tt)*) => {
        $crate::Error::Message(format!($($arg)*))
    };
}

pub(crate) use {bail, ensure, message};

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of a wrapped error is the whole chain, outermost first.
    #[test]
    fn context_reads_as_a_chain() {
        let io: Result<()> = Err(std::io::Error::other("disk full").into());
        let error = io
            .context("writing the report")
            .context("demo")
            .unwrap_err();
        assert_eq!(error.to_string(), "demo: writing the report: disk full");
    }

    fn checked(n: u32) -> Result<u32> {
        ensure!(n > 1, "want more than {}, got {n}", 1);
        Ok(n)
    }

    /// `ensure!` passes a true condition and turns a false one into a message.
    #[test]
    fn ensure_returns_a_message() {
        assert_eq!(checked(2).unwrap(), 2);
        assert_eq!(
            checked(0).unwrap_err().to_string(),
            "want more than 1, got 0"
        );
    }
}
