//! Errors: the crate's own failures, and the `Status` answers every API error becomes.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/status.go`
//! (`ErrorToAPIStatus`, `WriteRawJSON`): whatever goes wrong in a request, the client gets a
//! `kind: Status` body whose `code` is also the HTTP status and whose `reason` it can branch on.
//! Client input never produces a 500: storage failures are the only 500s.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use minik_api::meta::Status;
use minik_api::status;

use crate::storage;

/// Failures of the server itself (binding, storage), returned by [`crate::run`] and [`crate::serve`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listen address is not on loopback (minik binds 127.0.0.0/8 only).
    #[error("refusing to listen on {0}: minik binds only loopback addresses (127.0.0.0/8)")]
    NotLoopback(std::net::SocketAddr),
    /// A socket or file operation failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The storage could not be opened or written.
    #[error("storage: {0}")]
    Storage(#[from] storage::Error),
}

/// Result with the crate [`Error`] as default.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An API answer that is not a success: a `Status` object sent with its `code` as HTTP status.
#[derive(Debug, Clone)]
pub struct ApiError(pub Box<Status>);

/// Result of a request handler.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

impl From<Status> for ApiError {
    fn from(status: Status) -> Self {
        ApiError(Box::new(status))
    }
}

impl ApiError {
    /// 400 BadRequest with a message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        status::bad_request(message).into()
    }

    /// The HTTP status of this answer.
    pub fn code(&self) -> u16 {
        self.0
            .code
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(500)
    }

    /// Maps a storage failure on `plural`/`name` to its Kubernetes answer.
    pub fn from_storage(error: storage::Error, plural: &str, name: &str) -> Self {
        match error {
            storage::Error::AlreadyExists(_) => status::already_exists(plural, name).into(),
            storage::Error::NotFound(_) => status::not_found(plural, name).into(),
            storage::Error::Conflict { .. } => status::conflict(
                plural,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            )
            .into(),
            storage::Error::Expired { requested, oldest } => {
                status::expired(format!("too old resource version: {requested} ({oldest})")).into()
            }
            storage::Error::Backend(message) => {
                tracing::error!(error = %message, "storage backend failed");
                status::internal(message).into()
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        json_response(code, &*self.0)
    }
}

/// A JSON response with the given status.
pub fn json_response(code: StatusCode, body: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => {
            let mut response = (code, bytes).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
