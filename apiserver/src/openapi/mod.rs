//! The OpenAPI documents: `/openapi/v2` (Swagger 2.0, every kind) and `/openapi/v3` (an index,
//! then one OpenAPI 3.0 document per group version), with real schemas.
//!
//! Kubernetes counterpart: `k8s.io/kube-openapi/pkg/handler` (v2) and `pkg/handler3` (v3).
//! kubectl reads them for `kubectl explain` (v3 first, v2 as fallback), for client-side
//! validation, and to learn that a kind's `patch` operation takes `fieldValidation`
//! (`cli-runtime/pkg/resource/query_param_verifier_v3.go`), after which it lets the server reject
//! unknown fields (docs/openapi.md).
//!
//! The built-in documents are built once, lazily, and served as bytes with upstream's caching:
//! the index links each group version as `…?hash=H`; a request with the current hash is
//! `Cache-Control: public, immutable`, one with an old hash is redirected to the current one,
//! one without gets an `ETag` and `If-None-Match` is answered 304. Extra group versions (CRDs)
//! plug in through [`extra::register`] and are built per request.
//!
//! `/openapi/v2` is also served as protobuf (gnostic's `openapi_v2.Document`, [`proto`]), the only
//! form client-go's `OpenAPISchema()` asks for. minik simplifies: v3 is JSON only.

pub mod extra;
pub mod paths;
pub mod proto;
pub mod schemas;

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::OnceLock;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use minik_api::resource::RESOURCES;
use minik_api::status;
use serde_json::{json, Map, Value};

use crate::error::ApiError;
use crate::AppState;
use paths::PathKind;
use schemas::{Flavour, KindSchema};

/// A document as served: its bytes and their hash (the `ETag` and the `?hash=`).
pub struct Served {
    pub bytes: Vec<u8>,
    pub hash: String,
}

impl Served {
    fn of(value: &Value) -> Served {
        let bytes = serde_json::to_vec(value).unwrap_or_default();
        Served {
            hash: hash_of(&bytes),
            bytes,
        }
    }
}

/// The hash of served bytes, as an `ETag` and `?hash=` carry it (16 hex digits).
pub(crate) fn hash_of(bytes: &[u8]) -> String {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    format!("{:016X}", hasher.finish())
}

/// The built-in documents, built on first use.
struct Documents {
    v2: Served,
    /// By group-version path: `api/v1`, `apis/apps/v1`.
    v3: BTreeMap<String, Served>,
}

fn documents() -> &'static Documents {
    static DOCUMENTS: OnceLock<Documents> = OnceLock::new();
    DOCUMENTS.get_or_init(|| {
        let kinds = schemas::built_in_kinds();
        let started = std::time::Instant::now();
        let documents = Documents {
            v2: Served::of(&v2_document(&kinds)),
            v3: group_versions(&kinds)
                .into_iter()
                .map(|(path, kinds)| {
                    let document = v3_document(&kinds, &schemas::definitions(&kinds, Flavour::V3));
                    (path, Served::of(&document))
                })
                .collect(),
        };
        tracing::info!(
            group_versions = documents.v3.len(),
            v2_bytes = documents.v2.bytes.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "built the OpenAPI documents"
        );
        documents
    })
}

/// `v1` → `api/v1`, `apps/v1` → `apis/apps/v1`: the suffix after `/openapi/v3/`.
pub fn group_version_path(api_version: &str) -> String {
    match api_version {
        "v1" => "api/v1".to_string(),
        other => format!("apis/{other}"),
    }
}

fn group_versions(kinds: &[KindSchema]) -> BTreeMap<String, Vec<KindSchema>> {
    let mut by_path: BTreeMap<String, Vec<KindSchema>> = BTreeMap::new();
    for kind in kinds {
        by_path
            .entry(group_version_path(kind.api_version))
            .or_default()
            .push(*kind);
    }
    by_path
}

/// How a built-in kind is served: plural, scope, subresources (from `RESOURCES`, or the kinds
/// served by conversion).
fn path_kind(kind: &KindSchema) -> PathKind<'static> {
    let (plural, namespaced) = RESOURCES
        .iter()
        .find(|info| {
            info.kind == kind.kind
                && info.group() == kind.api_version.split_once('/').map_or("", |(g, _)| g)
        })
        .map(|info| (info.plural, info.namespaced))
        .unwrap_or(match kind.kind {
            "Event" => ("events", true),
            _ => ("horizontalpodautoscalers", true),
        });
    PathKind {
        api_version: kind.api_version,
        kind: kind.kind,
        plural,
        namespaced,
        definition: (kind.name)(),
        status: crate::registry::has_status_subresource(kind.kind),
        delete_collection: crate::registry::has_delete_collection(kind.kind),
    }
}

fn info() -> Value {
    json!({"title": "Kubernetes", "version": crate::discovery::GIT_VERSION})
}

fn v3_document(kinds: &[KindSchema], definitions: &Map<String, Value>) -> Value {
    let mut paths = Map::new();
    for kind in kinds {
        paths::kind_paths(&path_kind(kind), Flavour::V3, &mut paths);
    }
    let roots = kinds
        .iter()
        .flat_map(|k| [(k.name)(), format!("{}List", (k.name)())])
        .chain(
            ["DeleteOptions", "Status", "Patch"]
                .map(|n| format!("io.k8s.apimachinery.pkg.apis.meta.v1.{n}")),
        );
    json!({
        "openapi": "3.0.0",
        "info": info(),
        "paths": paths,
        "components": {
            "schemas": schemas::reachable(roots, definitions, Flavour::V3),
            "securitySchemes": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
        },
    })
}

fn v2_document(kinds: &[KindSchema]) -> Value {
    let mut paths = Map::new();
    for kind in kinds {
        paths::kind_paths(&path_kind(kind), Flavour::V2, &mut paths);
    }
    json!({
        "swagger": "2.0",
        "info": info(),
        "paths": paths,
        "definitions": schemas::definitions(kinds, Flavour::V2),
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    })
}

fn not_found() -> Response {
    ApiError::from(status::failure(
        404,
        "NotFound",
        "the server could not find the requested resource",
    ))
    .into_response()
}

fn json_bytes(bytes: Vec<u8>) -> Response {
    let mut response = (StatusCode::OK, bytes).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn etag_matches(headers: &HeaderMap, hash: &str) -> bool {
    headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|tag| tag.trim().trim_start_matches("W/") == format!("\"{hash}\""))
        })
}

/// Serves `served` with upstream's caching headers for a request carrying `hash` (or none).
fn cached(
    served_bytes: &[u8],
    hash: &str,
    asked: Option<&str>,
    headers: &HeaderMap,
    path: &str,
) -> Response {
    if asked.is_some_and(|asked| asked != hash) {
        // handler3: an outdated hash is redirected to the current document.
        let mut response = StatusCode::MOVED_PERMANENTLY.into_response();
        let location = format!("/openapi/v3/{path}?hash={hash}");
        if let Ok(value) = HeaderValue::from_str(&location) {
            response.headers_mut().insert(header::LOCATION, value);
        }
        return response;
    }
    let mut response = if etag_matches(headers, hash) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        json_bytes(served_bytes.to_vec())
    };
    let cache = if asked.is_some() {
        "public, immutable"
    } else {
        "no-cache, private"
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{hash}\"")) {
        headers.insert(header::ETAG, etag);
    }
    headers.insert(header::VARY, HeaderValue::from_static("Accept"));
    response
}

/// `GET /openapi/v3`: where each group version's document lives, with its current hash.
pub async fn index(State(state): State<AppState>) -> Response {
    index_of(&state.custom)
}

/// The index, with the custom group versions of `custom`.
pub(crate) fn index_of(custom: &crate::apiextensions::Kinds) -> Response {
    let mut paths = Map::new();
    let mut add = |path: &str, hash: &str| {
        paths.insert(
            path.to_string(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
        );
    };
    for (path, served) in &documents().v3 {
        add(path, &served.hash);
    }
    for (path, served) in extra::documents() {
        add(&path, &served.hash);
    }
    // The group versions CustomResourceDefinitions add (issue 21).
    for (path, hash) in crate::apiextensions::openapi::index_entries(custom) {
        add(&path, &hash);
    }
    let mut response = json_bytes(serde_json::to_vec(&json!({"paths": paths})).unwrap_or_default());
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    response
}

/// `GET /openapi/v3/api/v1` and `/openapi/v3/apis/{group}/{version}`.
pub async fn document(
    State(state): State<AppState>,
    Path(path): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    document_of(&state.custom, Path(path), Query(query), headers)
}

/// A group version's document, built-in or one of `custom`'s.
pub(crate) fn document_of(
    custom: &crate::apiextensions::Kinds,
    Path(path): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let asked = query.get("hash").map(String::as_str);
    if let Some(served) = documents().v3.get(&path) {
        return cached(&served.bytes, &served.hash, asked, &headers, &path);
    }
    if let Some(body) = crate::apiextensions::openapi::document(custom, &path) {
        let hash = crate::apiextensions::openapi::hash(&body);
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        return cached(&bytes, &hash, asked, &headers, &path);
    }
    match extra::documents().into_iter().find(|(p, _)| *p == path) {
        Some((_, served)) => cached(&served.bytes, &served.hash, asked, &headers, &path),
        None => not_found(),
    }
}

/// The protobuf media type of `/openapi/v2` (kube-openapi's `subTypeProtobuf`); the older
/// `…spec.v2@v1.0+protobuf` is accepted and answered with this one.
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Whether `Accept` asks for JSON (`Some(false)`), protobuf (`Some(true)`), or neither.
fn v2_wants_protobuf(accept: &str) -> Option<bool> {
    if accept.trim().is_empty() {
        return Some(false);
    }
    accept
        .split(',')
        .find_map(|range| match range.split(';').next().unwrap_or("").trim() {
            "application/json" | "application/*" | "*/*" => Some(false),
            V2_PROTOBUF | "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" => {
                Some(true)
            }
            _ => None,
        })
}

/// `GET /openapi/v2`: the Swagger 2.0 document of every built-in kind, as JSON or, for
/// client-go's `OpenAPISchema()`, as gnostic's protobuf `Document` ([`proto`]). Both carry the
/// JSON's `ETag`, as kube-openapi's handler does.
pub async fn v2(headers: HeaderMap) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(protobuf) = v2_wants_protobuf(accept) else {
        return ApiError::from(status::failure(
            406,
            "NotAcceptable",
            "only application/json and application/com.github.proto-openapi.spec.v2.v1.0+protobuf are served for /openapi/v2",
        ))
        .into_response();
    };
    let served = &documents().v2;
    let mut response = if protobuf {
        static PROTOBUF: OnceLock<Vec<u8>> = OnceLock::new();
        let bytes = PROTOBUF.get_or_init(|| {
            let json: Value = serde_json::from_slice(&served.bytes).unwrap_or_default();
            proto::document(&json)
        });
        let mut response = cached(bytes, &served.hash, None, &headers, "");
        if response.status() == StatusCode::OK {
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(V2_PROTOBUF));
        }
        response
    } else {
        cached(&served.bytes, &served.hash, None, &headers, "")
    };
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    response
}

/// The v3 document of extra kinds (a CRD's group version), as [`extra`] builds it.
pub(crate) fn extra_document(kinds: &[extra::ExtraKind], api_version: &str) -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for kind in kinds {
        let mut schema = kind.schema.clone();
        schema["x-kubernetes-group-version-kind"] = json!([schemas::gvk(api_version, &kind.kind)]);
        definitions.insert(kind.definition.clone(), schema);
        let list = schemas::list_definition(&kind.definition, api_version, &kind.kind, Flavour::V3);
        definitions.insert(format!("{}List", kind.definition), list);
        let path_kind = PathKind {
            api_version,
            kind: &kind.kind,
            plural: &kind.plural,
            namespaced: kind.namespaced,
            definition: kind.definition.clone(),
            status: kind.status,
            delete_collection: true,
        };
        paths::kind_paths(&path_kind, Flavour::V3, &mut paths);
    }
    let meta = schemas::definitions(&[], Flavour::V3);
    for (name, definition) in meta {
        definitions.entry(name).or_insert(definition);
    }
    json!({"openapi": "3.0.0", "info": info(), "paths": paths, "components": {"schemas": definitions}})
}

#[cfg(test)]
mod tests;
