//! The authentication and authorization filter every request passes before a handler runs.
//!
//! Kubernetes counterpart: the handler chain of `k8s.io/apiserver/pkg/server/config.go`
//! (`DefaultBuildHandlerChain`): `filters.WithAuthentication` (401 when a credential is wrong or
//! missing), then `filters.WithAuthorization` (403). The user found is stored with the request, as
//! `request.WithUser` does, for the handlers that need it (`SelfSubjectReview`).
//!
//! The filter is off unless the server was started with TLS and a client CA or a token file
//! ([`Security::enabled`]): a plain-http server behaves exactly as before, with no users at all.
//!
//! What minik simplifies: anonymous users get 401 everywhere but the health and version paths
//! (upstream answers 403 once RBAC denies them); no impersonation; no audit.
//!
//! Read next: `authn.rs` (who), `tls.rs` (the certificate).

pub mod authn;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::ApiError;
use crate::tls::PeerUser;
use crate::AppState;

/// An authenticated (or anonymous) user, as `user.Info`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UserInfo {
    /// `system:node:node-1`, `kubernetes-admin`, `system:anonymous`.
    #[serde(rename = "username")]
    pub name: String,
    /// A unique id (token file users have one; certificates do not).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Groups, including `system:authenticated` or `system:unauthenticated`.
    pub groups: Vec<String>,
}

/// What the filter enforces; [`Security::default`] enforces nothing (plain http, as before).
#[derive(Clone, Debug, Default)]
pub struct Security {
    /// The authenticator, when authentication is on.
    pub authenticator: Option<Arc<authn::Authenticator>>,
}

impl Security {
    /// Authentication on, with the tokens of a token file (possibly none).
    pub fn with_authenticator(authenticator: authn::Authenticator) -> Self {
        Security {
            authenticator: Some(Arc::new(authenticator)),
        }
    }

    /// True when requests are authenticated.
    pub fn enabled(&self) -> bool {
        self.authenticator.is_some()
    }
}

/// Paths anyone may GET (upstream's `system:public-info-viewer`, docs/security.md#n2).
pub fn is_public_path(path: &str) -> bool {
    matches!(
        path,
        "/healthz" | "/readyz" | "/livez" | "/version" | "/version/"
    )
}

/// The middleware: authenticate, drop the credential, refuse anonymous requests beyond the public
/// paths, and hand the user to the handlers.
pub async fn filter(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let Some(authenticator) = state.security.authenticator.as_deref() else {
        return next.run(request).await;
    };
    let certificate_user = request
        .extensions()
        .get::<PeerUser>()
        .and_then(|peer| peer.0.as_ref());
    let header = request
        .headers()
        .get(AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or("?"));
    let Ok(user) = authenticator.authenticate(certificate_user, header) else {
        return unauthorized();
    };
    // docs/security.md#x4: the credential is never passed on.
    request.headers_mut().remove(AUTHORIZATION);
    if user.name == authn::ANONYMOUS && !is_public_path(request.uri().path()) {
        return unauthorized();
    }
    request.extensions_mut().insert(user);
    next.run(request).await
}

/// 401 with upstream's Status (docs/security.md#n3).
pub fn unauthorized() -> Response {
    ApiError::from(minik_api::status::failure(
        401,
        "Unauthorized",
        "Unauthorized",
    ))
    .into_response()
}
