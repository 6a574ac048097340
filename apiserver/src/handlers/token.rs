//! `POST …/serviceaccounts/NAME/token`: the TokenRequest API.
//!
//! Kubernetes counterpart: `pkg/registry/core/serviceaccount/storage/token.go` (`TokenREST.Create`)
//! with the defaults and validation of `pkg/apis/authentication/v1/defaults.go` and
//! `validation.go`, and the NodeRestriction admission rule for tokens
//! (`plugin/pkg/admission/noderestriction/admission.go`, `admitServiceAccount`). A TokenRequest
//! names audiences (default: the API server's), a lifetime (default an hour, at least ten minutes)
//! and optionally the Pod or Node the token is bound to; the answer is the same object with
//! `status.token` and `status.expirationTimestamp` (docs/security.md#s1, #s2, #s3).
//!
//! Served only when the server was given ServiceAccount keys; elsewhere the path is 404, as
//! upstream's is without `--service-account-signing-key-file`.

use axum::http::StatusCode;
use axum::response::Response;
use minik_api::k8s_openapi::api::authentication::v1::{
    BoundObjectReference, TokenRequest, TokenRequestStatus,
};
use minik_api::meta::Time;
use minik_api::status;
use serde_json::Value;
use tracing::info;

use crate::auth::tokens::{self, Claims, KubernetesClaims, Ref};
use crate::auth::{node, UserInfo};
use crate::error::{json_response, ApiError, ApiResult};
use crate::registry::{serviceaccounts, typed, untyped};
use crate::request::body::{body_format, decode_object};
use crate::request::ApiRequest;
use crate::AppState;

/// The lifetime of a token whose request names none.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a request may ask for.
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest (2^32 s).
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// Issues a token for the ServiceAccount the path names.
pub async fn create(state: &AppState, request: &ApiRequest) -> ApiResult<Response> {
    let Some(keys) = state.security.tokens.as_deref() else {
        return Err(status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .into());
    };
    let namespace = request.target.namespace.as_deref().unwrap_or("default");
    let name = request.target.name();
    let body = decode_object(&request.body, body_format(request.content_type())?)?;
    let mut token_request: TokenRequest = typed(body, "TokenRequest")?;
    let (account, _) = serviceaccounts::get(state.storage.as_ref(), namespace, name)?
        .ok_or_else(|| ApiError::from(status::not_found("serviceaccounts", name)))?;
    let spec = &mut token_request.spec;
    let expiration = *spec
        .expiration_seconds
        .get_or_insert(DEFAULT_EXPIRATION_SECONDS);
    validate_expiration(expiration)?;
    if spec.audiences.is_empty() {
        spec.audiences = keys.api_audiences().to_vec();
    }
    let bound = bind(state, namespace, name, spec.bound_object_ref.as_ref())?;
    restrict_nodes(
        request.user.as_ref(),
        spec.bound_object_ref.as_ref(),
        &bound,
    )?;
    let now = tokens::now();
    let claims = Claims {
        iss: keys.issuer().to_string(),
        sub: minik_api::serviceaccounts::user_name(namespace, name),
        aud: spec.audiences.clone(),
        exp: now + expiration,
        iat: now,
        nbf: now,
        jti: uuid::Uuid::new_v4().to_string(),
        kubernetes: KubernetesClaims {
            namespace: namespace.to_string(),
            serviceaccount: Ref {
                name: name.to_string(),
                uid: account.metadata.uid.clone().unwrap_or_default(),
            },
            pod: bound.pod,
            node: bound.node,
        },
    };
    let token = keys
        .issue(&claims)
        .map_err(|e| ApiError::from(status::internal(e.to_string())))?;
    let expires = jiff::Timestamp::from_second(claims.exp)
        .map_err(|e| ApiError::from(status::internal(e.to_string())))?;
    token_request.metadata.name = Some(name.to_string());
    token_request.metadata.namespace = Some(namespace.to_string());
    token_request.metadata.creation_timestamp = Some(minik_api::now());
    token_request.status = Some(TokenRequestStatus {
        token,
        expiration_timestamp: Time(expires),
    });
    info!(account = %format!("{namespace}/{name}"), expiration, "issued a service account token");
    let mut answer: Value = untyped(&token_request)?;
    answer["apiVersion"] = "authentication.k8s.io/v1".into();
    answer["kind"] = "TokenRequest".into();
    Ok(json_response(StatusCode::CREATED, &answer))
}

/// `spec.expirationSeconds` within [10 min, 2^32 s] (`ValidateTokenRequest`).
fn validate_expiration(seconds: i64) -> ApiResult<()> {
    let why = if seconds < MIN_EXPIRATION_SECONDS {
        "may not specify a duration less than 10 minutes"
    } else if seconds > MAX_EXPIRATION_SECONDS {
        "may not specify a duration larger than 2^32 seconds"
    } else {
        return Ok(());
    };
    let cause = status::cause(
        "spec.expirationSeconds",
        "FieldValueInvalid",
        format!("Invalid value: {seconds}: {why}"),
    );
    Err(status::invalid("TokenRequest", "", vec![cause]).into())
}

/// The objects a token is bound to, as claims.
#[derive(Default)]
struct Bound {
    pod: Option<Ref>,
    node: Option<Ref>,
}

/// Reads the bound object: it must exist, have the UID the request names (409 otherwise) and,
/// for a pod, run as this account (400 otherwise).
fn bind(
    state: &AppState,
    namespace: &str,
    account: &str,
    reference: Option<&BoundObjectReference>,
) -> ApiResult<Bound> {
    let Some(reference) = reference else {
        return Ok(Bound::default());
    };
    let kind = reference.kind.as_deref().unwrap_or("");
    let name = reference.name.as_deref().unwrap_or("");
    let core = matches!(reference.api_version.as_deref(), None | Some("" | "v1"));
    let (plural, key) = match kind {
        "Pod" if core => ("pods", format!("/registry/pods/{namespace}/{name}")),
        "Node" if core => ("nodes", format!("/registry/nodes/{name}")),
        _ => {
            let version = reference.api_version.as_deref().unwrap_or("");
            return Err(ApiError::bad_request(format!(
                "cannot bind token for serviceaccount {account:?} to object of type {version}, Kind={kind}"
            )));
        }
    };
    let object = stored(state, plural, &key, name)?;
    let uid = object["metadata"]["uid"].as_str().unwrap_or("").to_string();
    if let Some(wanted) = reference.uid.as_deref().filter(|u| !u.is_empty()) {
        if wanted != uid {
            let why = format!("the UID in the bound object reference ({wanted}) does not match the UID in record. The object might have been deleted and then recreated");
            return Err(status::conflict(kind, name, &why).into());
        }
    }
    let this = Ref {
        name: name.to_string(),
        uid,
    };
    if kind == "Node" {
        return Ok(Bound {
            pod: None,
            node: Some(this),
        });
    }
    if object["spec"]["serviceAccountName"].as_str() != Some(account) {
        return Err(ApiError::bad_request(format!(
            "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
        )));
    }
    // A pod's token also names its node, as upstream's does.
    let node = match object["spec"]["nodeName"]
        .as_str()
        .filter(|n| !n.is_empty())
    {
        Some(node) => {
            let key = format!("/registry/nodes/{node}");
            let uid = stored(state, "nodes", &key, node)
                .map(|n| n["metadata"]["uid"].as_str().unwrap_or("").to_string())
                .unwrap_or_default();
            Some(Ref {
                name: node.to_string(),
                uid,
            })
        }
        None => None,
    };
    Ok(Bound {
        pod: Some(this),
        node,
    })
}

fn stored(state: &AppState, plural: &str, key: &str, name: &str) -> ApiResult<Value> {
    state
        .storage
        .get(key)
        .map_err(|e| ApiError::from_storage(e, plural, name))?
        .map(|record| record.value.as_ref().clone())
        .ok_or_else(|| status::not_found(plural, name).into())
}

/// NodeRestriction: a kubelet may ask only for tokens bound to a pod scheduled on its node.
fn restrict_nodes(
    user: Option<&UserInfo>,
    reference: Option<&BoundObjectReference>,
    bound: &Bound,
) -> ApiResult<()> {
    let Some(node) = user.and_then(node::node_name) else {
        return Ok(());
    };
    let why = match (reference.and_then(|r| r.kind.as_deref()), &bound.node) {
        (Some("Pod"), Some(pod_node)) if pod_node.name == node => return Ok(()),
        (Some("Pod"), _) => "node requested token bound to a pod scheduled on a different node",
        _ => "node requested token not bound to a pod",
    };
    Err(status::failure(403, "Forbidden", format!("node {node:?} {why}")).into())
}
