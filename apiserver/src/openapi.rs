//! The minimal OpenAPI v3 document that lets `kubectl apply` validate on the server.
//!
//! Kubernetes counterpart: `k8s.io/kube-openapi/pkg/handler3` serving `/openapi/v3` (an index of
//! group versions) and `/openapi/v3/{group-version path}` (the full schema). kubectl does not read
//! the schemas for `apply`: it only checks that some `patch` operation carries
//! `x-kubernetes-group-version-kind` for the kind and a `fieldValidation` parameter
//! (`cli-runtime/pkg/resource/query_param_verifier_v3.go`), then sends `fieldValidation=Strict`
//! and lets the server reject unknown fields (docs/real-clients.md#openapi). So minik serves
//! exactly that: one patch operation per kind, no schemas (`kubectl explain` is out of scope).

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use minik_api::resource::{ResourceInfo, RESOURCES};
use minik_api::status;
use serde_json::{json, Map, Value};

use crate::error::{json_response, ApiError};
use crate::AppState;

/// A constant hash: the document only changes with the binary.
const HASH: &str = "0123456789ABCDEF";

fn group_version_path(info: &ResourceInfo) -> String {
    info.group_version_path()
        .trim_start_matches('/')
        .to_string()
}

/// `GET /openapi/v3`: where each group version's document lives.
pub async fn index(State(state): State<AppState>) -> Response {
    let mut paths = Map::new();
    for info in RESOURCES {
        let path = group_version_path(info);
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={HASH}")}),
        );
    }
    // The group versions CustomResourceDefinitions add (issue 21).
    for (path, hash) in crate::apiextensions::openapi::index_entries(&state.custom) {
        let url = format!("/openapi/v3/{path}?hash={hash}");
        paths.insert(path, json!({ "serverRelativeURL": url }));
    }
    json_response(StatusCode::OK, &json!({"paths": paths}))
}

fn patch_operation(info: &ResourceInfo) -> Value {
    let (group, version) = info
        .api_version
        .split_once('/')
        .unwrap_or(("", info.api_version));
    json!({"patch": {
        "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": info.kind},
        "parameters": [
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
        ],
        "responses": {"200": {"description": "OK"}},
    }})
}

/// `GET /openapi/v3/api/v1` and `/openapi/v3/apis/{group}/{version}`.
pub async fn document(State(state): State<AppState>, Path(path): Path<String>) -> Response {
    if let Some(body) = crate::apiextensions::openapi::document(&state.custom, &path) {
        let mut response = json_response(StatusCode::OK, &body);
        let etag = format!("\"{}\"", crate::apiextensions::openapi::hash(&body));
        if let Ok(etag) = HeaderValue::from_str(&etag) {
            response.headers_mut().insert(header::ETAG, etag);
        }
        return response;
    }
    let kinds: Vec<&ResourceInfo> = RESOURCES
        .iter()
        .filter(|info| group_version_path(info) == path)
        .collect();
    if kinds.is_empty() {
        return ApiError::from(status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ))
        .into_response();
    }
    let mut paths = Map::new();
    for info in kinds {
        let base = info.group_version_path();
        let object_path = if info.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", info.plural)
        } else {
            format!("{base}/{}/{{name}}", info.plural)
        };
        paths.insert(object_path, patch_operation(info));
    }
    let body = json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": crate::discovery::GIT_VERSION},
        "paths": paths,
        "components": {"schemas": {}},
    });
    let mut response = json_response(StatusCode::OK, &body);
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, immutable"),
    );
    response.headers_mut().insert(
        header::ETAG,
        HeaderValue::from_static("\"0123456789ABCDEF\""),
    );
    response
}
