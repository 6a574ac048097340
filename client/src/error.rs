//! The client's one error type: an API `Status`, or a failure before a `Status` could be read.
//!
//! Kubernetes counterpart: `k8s.io/apimachinery/pkg/api/errors` on the client side (`IsNotFound`,
//! `IsConflict`, `IsAlreadyExists`, `IsGone`), and kube-rs's `kube_client::Error::Api`. Every non-2xx
//! answer of the apiserver is a `Status`; the client hands it back untouched inside [`Error::Api`] so
//! callers can branch on its `reason` and `code` (a controller retries on Conflict, a watcher relists
//! on 410 Expired). Transport failures (connection refused, a reset stream) are [`Error::Http`].

use minik_api::meta::Status;

/// `Result` with the client's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong when talking to the apiserver.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The apiserver answered with a `Status` (or an error body the client turned into one).
    #[error("{}", api_message(.0))]
    Api(Status),
    /// The request could not be sent or the answer could not be read (connection refused, reset …).
    #[error("http request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// A body was not the JSON the client expected.
    #[error("invalid json from the apiserver: {0}")]
    Json(#[from] serde_json::Error),
    /// The base URL given to [`crate::Client::new`] is not an `http://` URL.
    #[error("invalid server url {0:?}")]
    InvalidUrl(String),
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    /// An object was expected to carry a `metadata.resourceVersion` and did not (a list or a watch
    /// event); the watcher relists when it sees this, as kube-rs's does.
    #[error("object has no resourceVersion")]
    NoResourceVersion,
}

fn api_message(status: &Status) -> String {
    let reason = status.reason.as_deref().unwrap_or("Unknown");
    let message = status.message.as_deref().unwrap_or("");
    format!("{reason}: {message}")
}

impl Error {
    /// The `Status` of an API error, if this is one.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Error::Api(status) => Some(status),
            _ => None,
        }
    }

    fn code(&self) -> Option<i32> {
        self.status().and_then(|status| status.code)
    }

    fn reason(&self) -> Option<&str> {
        self.status().and_then(|status| status.reason.as_deref())
    }

    /// 404 NotFound.
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// 409 Conflict: a stale `resourceVersion` or a failed precondition; get, merge and retry.
    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409) && self.reason() == Some("Conflict")
    }

    /// 409 AlreadyExists: a create of a name that is taken.
    pub fn is_already_exists(&self) -> bool {
        self.code() == Some(409) && self.reason() == Some("AlreadyExists")
    }

    /// 410 Gone / Expired: the resourceVersion asked for is older than the server's history; relist.
    pub fn is_gone(&self) -> bool {
        self.code() == Some(410)
    }

    /// The server could not be reached at all (nothing listens, or the connection was refused).
    pub fn is_connect(&self) -> bool {
        matches!(self, Error::Http(error) if error.is_connect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_errors_are_classified_by_code_and_reason() {
        let not_found = Error::Api(minik_api::status::not_found("pods", "web"));
        assert!(not_found.is_not_found() && !not_found.is_conflict());
        let exists = Error::Api(minik_api::status::already_exists("pods", "web"));
        assert!(exists.is_already_exists() && !exists.is_conflict());
        let conflict = Error::Api(minik_api::status::conflict("pods", "web", "changed"));
        assert!(conflict.is_conflict() && !conflict.is_already_exists());
        assert!(Error::Api(minik_api::status::expired("too old")).is_gone());
        assert_eq!(not_found.to_string(), "NotFound: pods \"web\" not found");
    }
}
