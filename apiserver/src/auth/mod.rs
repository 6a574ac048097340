//! The authentication and authorization filter every request passes before a handler runs.
//!
//! Kubernetes counterpart: the handler chain of `k8s.io/apiserver/pkg/server/config.go`
//! (`DefaultBuildHandlerChain`): `filters.WithAuthentication` (401 when a credential is wrong or
//! missing), then `filters.WithAuthorization` (403). The user found is stored with the request, as
//! `request.WithUser` does, for the handlers that need it (`SelfSubjectReview`).
//!
//! Bearer tokens are the token file's or ServiceAccount JWTs ([`tokens`]), the latter valid only
//! while their account (and bound pod) exist.
//!
//! Authorization is [`rbac::authorize`]: `system:masters`, then the Node authorizer, then RBAC over
//! a cached [`policy`] snapshot; a refusal is upstream's 403 (docs/security.md#n4, #n5).
//!
//! The filter is off unless the server was started with TLS and a client CA or a token file
//! ([`Security::enabled`]): a plain-http server behaves exactly as before, with no users at all.
//!
//! What minik simplifies: anonymous users get 401 everywhere but the health and version paths
//! (upstream answers 403 once RBAC denies them); no impersonation; no audit.
//!
//! Read next: `authn.rs` (who), `attributes.rs` (what), `rbac.rs` (may they), `bootstrap/`.

pub mod attributes;
pub mod authn;
pub mod bootstrap;
pub mod node;
pub mod policy;
pub mod rbac;
pub mod reviews;
pub mod tokens;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::json;

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
    /// The RBAC objects, cached.
    pub policy: Arc<policy::PolicyCache>,
    /// The ServiceAccount keys the TokenRequest API signs with (`None`: that API is 404).
    pub tokens: Option<Arc<tokens::Keys>>,
}

impl Security {
    /// Authentication on, with the tokens of a token file (possibly none).
    pub fn with_authenticator(authenticator: authn::Authenticator) -> Self {
        Security {
            authenticator: Some(Arc::new(authenticator)),
            policy: Arc::default(),
            tokens: None,
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
    let still_valid = |claims: &tokens::Claims| service_account_token_live(&state, claims);
    let Ok(user) = authenticator.authenticate(certificate_user, header, still_valid) else {
        return unauthorized();
    };
    // docs/security.md#x4: the credential is never passed on.
    request.headers_mut().remove(AUTHORIZATION);
    if user.name == authn::ANONYMOUS && !is_public_path(request.uri().path()) {
        return unauthorized();
    }
    let attributes = attributes::request_attributes(
        user.clone(),
        request.method().as_str(),
        request.uri().path(),
        request.uri().query().unwrap_or(""),
    );
    let policy = match state.security.policy.current(state.storage.as_ref()) {
        Ok(policy) => policy,
        Err(e) => return ApiError::from_storage(e, "clusterroles", "").into_response(),
    };
    let pod_node = pod_node(&state, &attributes);
    if let rbac::Decision::Deny(reason) = rbac::authorize(&policy, &attributes, pod_node.as_deref())
    {
        tracing::debug!(user = %user.name, verb = %attributes.verb, path = %attributes.path, "forbidden");
        return forbidden(&attributes, &reason);
    }
    request.extensions_mut().insert(user);
    let rbac_write = attributes.api_group == "rbac.authorization.k8s.io"
        && !matches!(attributes.verb.as_str(), "get" | "list" | "watch");
    let response = next.run(request).await;
    if rbac_write {
        // The writer's next request sees its own change; the watch covers everyone else's.
        state.security.policy.mark_stale();
    }
    response
}

/// A ServiceAccount token outlives neither its account nor its bound pod: both must still be
/// stored under the UIDs the token names (docs/security.md#s15).
fn service_account_token_live(state: &AppState, claims: &tokens::Claims) -> bool {
    let k = &claims.kubernetes;
    let same_uid = |key: String, uid: &str| {
        matches!(state.storage.get(&key), Ok(Some(record))
            if record.value["metadata"]["uid"].as_str() == Some(uid))
    };
    let account = format!(
        "/registry/serviceaccounts/{}/{}",
        k.namespace, k.serviceaccount.name
    );
    let live = same_uid(account, &k.serviceaccount.uid)
        && k.pod.as_ref().is_none_or(|pod| {
            same_uid(
                format!("/registry/pods/{}/{}", k.namespace, pod.name),
                &pod.uid,
            )
        });
    if !live {
        tracing::debug!(account = %k.serviceaccount.name, namespace = %k.namespace, "token of a deleted account or pod");
    }
    live
}

/// For a node naming a pod: the pod's `spec.nodeName`; for a node naming a Secret, ConfigMap or
/// PVC: the node itself when one of its pods references the object (docs/kubernetes-rules.md#c11).
fn pod_node(state: &AppState, attributes: &attributes::Attributes) -> Option<String> {
    let node = node::node_name(&attributes.user)?;
    if attributes.name.is_empty() || !attributes.api_group.is_empty() {
        return None;
    }
    let resource = attributes.resource.as_str();
    if resource == "persistentvolumes" {
        return volume_used_by_node(state, node, &attributes.name).then(|| node.to_string());
    }
    if node::POD_REFERENCED.contains(&resource) {
        // Upstream's graph edge, found by scanning the namespace's pods.
        let prefix = format!("/registry/pods/{}/", attributes.namespace);
        let (pods, _) = state.storage.list(&prefix).ok()?;
        let used = pods
            .iter()
            .any(|pod| node::pod_references(&pod.value, node, resource, &attributes.name));
        return used.then(|| node.to_string());
    }
    if resource != "pods" {
        return None;
    }
    let key = format!(
        "/registry/pods/{}/{}",
        attributes.namespace, attributes.name
    );
    let record = state.storage.get(&key).ok()??;
    record.value["spec"]["nodeName"].as_str().map(String::from)
}

/// The graph's pod → pvc → pv path: one of the node's pods mounts a claim bound to `volume`.
fn volume_used_by_node(state: &AppState, node: &str, volume: &str) -> bool {
    let Ok((pods, _)) = state.storage.list("/registry/pods/") else {
        return false;
    };
    pods.iter().any(|pod| {
        let namespace = pod.value["metadata"]["namespace"].as_str().unwrap_or("");
        node::claims_of(&pod.value, node).into_iter().any(|claim| {
            let key = format!("/registry/persistentvolumeclaims/{namespace}/{claim}");
            matches!(state.storage.get(&key), Ok(Some(record))
                if record.value["spec"]["volumeName"].as_str() == Some(volume))
        })
    })
}

/// 403 as upstream words it (docs/security.md#n4, #n5).
pub fn forbidden(attributes: &attributes::Attributes, reason: &str) -> Response {
    let mut message = forbidden_message(attributes);
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let message = message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let mut status = minik_api::status::failure(403, "Forbidden", message);
    if attributes.resource_request {
        status.details = serde_json::from_value(json!({
            "group": attributes.api_group, "kind": attributes.resource, "name": attributes.name,
        }))
        .ok();
    }
    let mut response = ApiError::from(status).into_response();
    response.headers_mut().insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    debug_assert!(response.headers().contains_key(CONTENT_TYPE));
    response
}

/// `pods "web" is forbidden: User "u" cannot get resource "pods" in API group "" in the namespace
/// "default"`, or `forbidden: User "u" cannot get path "/x"`.
pub fn forbidden_message(a: &attributes::Attributes) -> String {
    let user = &a.user.name;
    if !a.resource_request {
        return format!(
            "forbidden: User {user:?} cannot {} path {:?}",
            a.verb, a.path
        );
    }
    let mut qualified = a.resource.clone();
    if !a.api_group.is_empty() {
        qualified = format!("{qualified}.{}", a.api_group);
    }
    if !a.name.is_empty() {
        qualified = format!("{qualified} {:?}", a.name);
    }
    let mut resource = a.resource.clone();
    if !a.subresource.is_empty() {
        resource = format!("{resource}/{}", a.subresource);
    }
    let scope = if a.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace {:?}", a.namespace)
    };
    format!(
        "{qualified} is forbidden: User {user:?} cannot {} resource {resource:?} in API group {:?} {scope}",
        a.verb, a.api_group
    )
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
