//! Request routing: from a URL and a verb to the handler of one API operation.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/installer.go` (which registers, per
//! resource, the routes `GET /api/v1/namespaces/{ns}/pods`, `…/pods/{name}`, `…/pods/{name}/status`
//! …). The path is parsed into a [`Target`] by [`crate::request`], then this module dispatches on
//! the method, so every unknown path or verb still gets a proper `Status`.
//!
//! Imports point down: the handlers here ([`read`], [`write`](mod@write), [`delete`], [`scale`],
//! [`token`], [`eviction`]), the watch server and
//! the log proxy use [`crate::request`], [`crate::store`], [`crate::registry`] and
//! `crate::storage`, and none of them imports another handler.

pub mod delete;
pub mod eviction;
pub mod read;
pub mod scale;
pub mod token;
pub mod write;

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use minik_api::status;

use crate::auth::UserInfo;
use crate::error::{ApiError, ApiResult};
use crate::request::query::{ListOptions, Params};
use crate::request::{parse_target, ApiRequest, Target};
use crate::table;
use crate::AppState;

/// `/api/v1/{*rest}`: the core group.
pub async fn core_resource(
    State(state): State<AppState>,
    Path(rest): Path<String>,
    method: Method,
    headers: HeaderMap,
    user: Option<Extension<UserInfo>>,
    Query(pairs): Query<Vec<(String, String)>>,
    body: Bytes,
) -> Response {
    let request = Incoming {
        method,
        headers,
        pairs,
        body,
        user: user.map(|Extension(user)| user),
    };
    handle(state, ("", "v1"), &rest, request).await
}

/// `/apis/{group}/{version}/{*rest}`: named groups (coordination.k8s.io for Leases).
pub async fn group_resource(
    State(state): State<AppState>,
    Path(path): Path<HashMap<String, String>>,
    method: Method,
    headers: HeaderMap,
    user: Option<Extension<UserInfo>>,
    Query(pairs): Query<Vec<(String, String)>>,
    body: Bytes,
) -> Response {
    let group = path.get("group").cloned().unwrap_or_default();
    let version = path.get("version").cloned().unwrap_or_default();
    let rest = path.get("rest").cloned().unwrap_or_default();
    if minik_api::resource::RESOURCES
        .iter()
        .all(|r| r.api_version != format!("{group}/{version}"))
        && !state.custom.serves(&group, &version)
    {
        return not_found_path().into_response();
    }
    let request = Incoming {
        method,
        headers,
        pairs,
        body,
        user: user.map(|Extension(user)| user),
    };
    handle(state, (&group, &version), &rest, request).await
}

/// What a route hands to [`handle`].
struct Incoming {
    method: Method,
    headers: HeaderMap,
    pairs: Vec<(String, String)>,
    body: Bytes,
    user: Option<UserInfo>,
}

/// `DELETE …/pods/`: a client that meant `…/pods/{name}` with an empty name. Upstream serves it
/// as deletecollection (kubernetes/kubernetes#127746, kubernetes-client/python#2291); minik
/// refuses it, so a missing name never deletes a whole namespace. `DELETE …/pods` still does.
fn empty_name_delete() -> ApiError {
    status::method_not_allowed(
        "the server does not allow this method on the requested resource: a DELETE path ending in '/' names no object (send the collection path without the trailing '/' to delete a collection)",
    )
    .into()
}

fn not_found_path() -> ApiError {
    status::failure(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
    .into()
}

async fn handle(
    state: AppState,
    (group, version): (&str, &str),
    rest: &str,
    incoming: Incoming,
) -> Response {
    let Incoming {
        method,
        headers,
        pairs,
        body,
        user,
    } = incoming;
    // Built-in kinds first, then the custom kinds of established CRDs.
    let target = parse_target(group, rest)
        .or_else(|| crate::apiextensions::parse_target(&state.custom, group, version, rest));
    let Some(target) = target else {
        return not_found_path().into_response();
    };
    if method == Method::DELETE && target.name.is_none() && rest.ends_with('/') {
        return empty_name_delete().into_response();
    }
    let request = ApiRequest {
        target,
        params: Params::new(pairs),
        headers,
        body,
        user,
    };
    let started = std::time::Instant::now();
    let verb = method.clone();
    let path = format!("{}/{}", request.target.info.plural, request.target.name());
    let response = match dispatch(&state, method, request).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    };
    tracing::debug!(%verb, %path, code = response.status().as_u16(), elapsed_ms = started.elapsed().as_millis() as u64, "request");
    response
}

async fn dispatch(state: &AppState, method: Method, request: ApiRequest) -> ApiResult<Response> {
    let target = &request.target;
    let sub = target.subresource.as_deref();
    let kind = target.info.kind;
    let known = |sub| {
        crate::apiextensions::has_subresource(state, target.info, sub)
            .unwrap_or_else(|| known_subresource(kind, sub))
    };
    if sub.is_some_and(|sub| !known(sub)) {
        return Err(not_found_path());
    }
    if let Some(custom) = state
        .custom
        .kind(target.info)
        .filter(|_| sub == Some("scale"))
    {
        return crate::apiextensions::scale::serve(state, &custom, &method, &request).await;
    }
    // `pods/ephemeralcontainers` reads and writes the pod as `status` does (registry/ephemeral.rs).
    let status_ok = sub == Some("status") || sub == Some("ephemeralcontainers");
    if method != Method::GET {
        request.params.check_dry_run()?;
    }
    let output = if method == Method::GET {
        table::negotiate(&request.headers, &request.params)?
    } else {
        table::Output::Object
    };
    match (&method, target.name.is_some(), sub) {
        (&Method::GET, false, None) => {
            let options = ListOptions::parse(&request.params)?;
            if options.watch {
                crate::watch::serve_watch(state, target, options, output)
            } else {
                read::list(state, target, &options, output)
            }
        }
        (&Method::GET, true, None) if request.params.flag("watch") => {
            let mut options = ListOptions::parse(&request.params)?;
            let by_name = format!("metadata.name={}", target.name());
            let fields = [
                by_name,
                request
                    .params
                    .get("fieldSelector")
                    .unwrap_or("")
                    .to_string(),
            ]
            .join(",");
            options.fields = minik_api::selector::FieldSelector::parse(&fields)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            let list_target = Target {
                name: None,
                ..target.clone()
            };
            crate::watch::serve_watch(state, &list_target, options, output)
        }
        (&Method::GET, true, None) => {
            request.params.resource_version()?;
            read::get(state, target, output)
        }
        (&Method::GET, true, Some(_)) if status_ok => read::get(state, target, output),
        (&Method::GET, true, Some("log")) if kind == "Pod" => {
            crate::logs::pod_logs(state, &request).await
        }
        (&Method::GET, true, Some("scale")) => scale::get(state, target),
        (&Method::PUT, true, Some("scale")) => scale::update(state, &request).await,
        (&Method::PATCH, true, Some("scale")) => scale::patch(state, &request).await,
        (&Method::POST, false, None) => write::create(state, &request).await,
        (&Method::POST, true, Some("binding")) if kind == "Pod" => {
            write::bind(state, &request).await
        }
        (&Method::POST, true, Some("token")) if kind == "ServiceAccount" => {
            token::create(state, &request).await
        }
        (&Method::POST, true, Some("eviction")) if kind == "Pod" => {
            eviction::evict(state, &request).await
        }
        (&Method::PUT, true, None) => write::update(state, &request).await,
        (&Method::PUT, true, Some(_)) if status_ok => write::update(state, &request).await,
        (&Method::PATCH, true, None) => write::patch(state, &request).await,
        (&Method::PATCH, true, Some(_)) if status_ok => write::patch(state, &request).await,
        (&Method::DELETE, true, None) => delete::delete(state, &request).await,
        (&Method::DELETE, false, None) if crate::registry::has_delete_collection(kind) => {
            delete::delete_collection(state, &request).await
        }
        _ => Err(status::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method})"
        ))
        .into()),
    }
}

/// The subresources a kind has: `status` for kinds with a status, `binding`, `log` and `eviction` for pods,
/// `scale` for Deployments and ReplicaSets, `token` (the TokenRequest) for ServiceAccounts.
fn known_subresource(kind: &str, sub: &str) -> bool {
    match sub {
        "status" => crate::registry::has_status_subresource(kind),
        "binding" | "log" | "eviction" | "ephemeralcontainers" => kind == "Pod",
        "token" => kind == "ServiceAccount",
        "scale" => crate::registry::scale::has_scale_subresource(kind),
        _ => false,
    }
}
