//! Custom resources on the way out: in the version the path asked for, with that version's
//! defaults.
//!
//! Kubernetes counterpart: the codec chain of the CRD handler
//! (`staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go`:
//! `crConverter`, `schemaCoercingConverter`, and the defaulting decoder of objects read from
//! etcd). Objects are stored in the CRD's storage version; a request for another served version
//! gets them converted (`conversion.rs`: `apiVersion` rewritten with the `None` strategy, the
//! conversion webhook asked with `Webhook`, a list's items in one review), and every object read
//! gets the defaults of its version's schema, so one stored before a default was added shows it.
//!
//! minik does this as a filter around the handlers, for every answer under a custom group: plain
//! objects, lists (their items) and watch streams (each `ADDED`/`MODIFIED`/`DELETED` line;
//! bookmarks get the `apiVersion` only). Scales and Statuses pass unchanged. A conversion that
//! fails is the answer instead (upstream's 500); in a watch it is an `ERROR` event that ends the
//! stream.
//!
//! Tables of custom kinds are made here too (`table.rs`), from the converted objects: the
//! handler is asked for plain JSON.

use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{json, Value};
use tokio_stream::wrappers::ReceiverStream;

use super::conversion;
use super::kinds::CustomKind;
use super::strategy::present;
use super::table::table;
use crate::error::{ApiError, ApiResult};
use crate::request::query::Params;
use crate::table::{negotiate, Include, Output};
use crate::AppState;

/// Rewrites successful answers about a custom kind; everything else passes untouched.
pub async fn filter(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let Some(kind) = kind_of_path(&state, request.uri().path()) else {
        return next.run(request).await;
    };
    let watch = request
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let table = table_asked(&request);
    if table.is_some() {
        // The handler answers plain objects; the Table is made here, from converted objects.
        let json = header::HeaderValue::from_static("application/json");
        request.headers_mut().insert(header::ACCEPT, json);
    }
    let response = next.run(request).await;
    if !response.status().is_success() {
        return response;
    }
    if watch {
        return convert_stream(state, kind, response, table);
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let converted = match serde_json::from_slice::<Value>(&bytes) {
        Ok(mut value) => {
            if let Err(error) = to_path_version(&state, &kind, &mut value).await {
                return error.into_response();
            }
            if convert_value(&kind, &mut value, true) {
                if let Some(output) = table {
                    value = as_table(&kind, &value, output, true);
                }
                serde_json::to_vec(&value).map(Bytes::from).unwrap_or(bytes)
            } else {
                bytes
            }
        }
        Err(_) => bytes,
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(converted))
}

/// The Table a GET asks for (`Accept: …;as=Table;…`), if any; a bad `includeObject` is left to
/// the handler, which refuses it.
fn table_asked(request: &Request) -> Option<(&'static str, Include)> {
    if request.method() != axum::http::Method::GET {
        return None;
    }
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(request.uri()).ok()?;
    match negotiate(request.headers(), &Params::new(pairs)).ok()? {
        Output::Table {
            api_version,
            include,
        } => Some((api_version, include)),
        Output::Object => None,
    }
}

/// An object or a list (already converted) as a Table.
fn as_table(
    kind: &CustomKind,
    value: &Value,
    (api_version, include): (&str, Include),
    headers: bool,
) -> Value {
    if let Some(items) = value["items"].as_array() {
        let objects: Vec<&Value> = items.iter().collect();
        let metadata = value.get("metadata").cloned().unwrap_or_else(|| json!({}));
        return table(kind, &objects, metadata, api_version, include, headers);
    }
    let metadata = json!({"resourceVersion": value["metadata"]["resourceVersion"].clone()});
    table(kind, &[value], metadata, api_version, include, headers)
}

/// The custom kind an `/apis/{group}/{version}/…` path names, if any.
fn kind_of_path(state: &AppState, path: &str) -> Option<std::sync::Arc<CustomKind>> {
    let rest = path.strip_prefix("/apis/")?;
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let (group, version) = (segments.first()?, segments.get(1)?);
    let plural = match segments.get(2)? {
        &"namespaces" => segments.get(4)?,
        plural => plural,
    };
    state.custom.get(group, version, plural)
}

/// Converts an object or a list's items of `kind` to the path's version (`conversion.rs`);
/// anything else (a Table, a Scale, a Status) is left as it is.
async fn to_path_version(state: &AppState, kind: &CustomKind, value: &mut Value) -> ApiResult<()> {
    let found = value["kind"].as_str().unwrap_or("");
    let version = &kind.version;
    if found == kind.info.kind {
        return conversion::convert(state, kind, std::slice::from_mut(value), version, false).await;
    }
    let list = found == kind.list_kind || found == format!("{}List", kind.info.kind);
    match value["items"].as_array_mut().filter(|_| list) {
        Some(items) => conversion::convert(state, kind, items, version, true).await,
        None => Ok(()),
    }
}

/// Presents an object or a list of `kind` (already converted) in place; false when it is neither (a Table, a Scale,
/// a Status). `defaults`: false for bookmarks, which carry only metadata.
pub fn convert_value(kind: &CustomKind, value: &mut Value, defaults: bool) -> bool {
    let found = value["kind"].as_str().unwrap_or("");
    if found == kind.info.kind {
        if defaults {
            present(kind, value);
        } else {
            value["apiVersion"] = Value::from(kind.api_version());
        }
        return true;
    }
    if found == kind.list_kind || found == format!("{}List", kind.info.kind) {
        value["kind"] = Value::from(kind.list_kind.clone());
        for item in value["items"].as_array_mut().into_iter().flatten() {
            present(kind, item);
        }
        return true;
    }
    false
}

/// Converts a watch stream line by line, as the lines arrive.
fn convert_stream(
    state: AppState,
    kind: std::sync::Arc<CustomKind>,
    response: Response,
    table: Option<(&'static str, Include)>,
) -> Response {
    let (mut parts, body) = response.into_parts();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    tokio::spawn(async move {
        let mut chunks = body.into_data_stream();
        let mut pending: Vec<u8> = Vec::new();
        let mut headers = true;
        while let Some(Ok(chunk)) = chunks.next().await {
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let (converted, failed) = match convert_event(&state, &kind, &line).await {
                    Ok(line) => (convert_line(&kind, &line, table, &mut headers), false),
                    Err(error) => (error_event(error), true),
                };
                if tx.send(Ok(converted)).await.is_err() || failed {
                    return;
                }
            }
        }
    });
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from_stream(ReceiverStream::new(rx)))
}

/// One watch line with its object converted to the path's version (`conversion.rs`).
async fn convert_event(state: &AppState, kind: &CustomKind, line: &[u8]) -> ApiResult<Vec<u8>> {
    let Ok(mut event) = serde_json::from_slice::<Value>(line) else {
        return Ok(line.to_vec());
    };
    if !matches!(
        event["type"].as_str(),
        Some("ADDED" | "MODIFIED" | "DELETED")
    ) {
        return Ok(line.to_vec());
    }
    let before = event["object"]["apiVersion"].clone();
    to_path_version(state, kind, &mut event["object"]).await?;
    if event["object"]["apiVersion"] == before {
        return Ok(line.to_vec());
    }
    let mut bytes = serde_json::to_vec(&event).unwrap_or_else(|_| line.to_vec());
    bytes.push(b'\n');
    Ok(bytes)
}

/// The `ERROR` event that ends a watch whose object could not be converted.
fn error_event(error: ApiError) -> Bytes {
    let event = json!({"type": "ERROR", "object": error.0});
    let mut bytes = serde_json::to_vec(&event).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

/// One watch line `{"type":…,"object":…}\n`, presented (to a one-row Table when asked; the
/// first carries the column definitions).
pub fn convert_line(
    kind: &CustomKind,
    line: &[u8],
    table: Option<(&'static str, Include)>,
    headers: &mut bool,
) -> Bytes {
    let Ok(mut event) = serde_json::from_slice::<Value>(line) else {
        return Bytes::copy_from_slice(line);
    };
    let object_event = matches!(
        event["type"].as_str(),
        Some("ADDED" | "MODIFIED" | "DELETED")
    );
    if event["type"] == "ERROR" || !convert_value(kind, &mut event["object"], object_event) {
        return Bytes::copy_from_slice(line);
    }
    if let Some(output) = table.filter(|_| object_event) {
        event["object"] = as_table(kind, &event["object"], output, *headers);
        *headers = false;
    }
    let mut bytes = serde_json::to_vec(&event).unwrap_or_else(|_| line.to_vec());
    bytes.push(b'\n');
    Bytes::from(bytes)
}
