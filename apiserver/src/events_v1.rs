//! events.k8s.io/v1 Events, served by converting to and from the stored core/v1 Events.
//!
//! Kubernetes counterpart: `pkg/apis/events/v1/conversion.go`. Both versions are one stored
//! object; events.k8s.io/v1 renames `message` to `note`, `involvedObject` to `regarding`,
//! `reportingComponent` to `reportingController`, and keeps the legacy `source`,
//! `firstTimestamp`, `lastTimestamp` and `count` as `deprecatedSource`, `deprecated…Timestamp` and
//! `deprecatedCount`. Field selectors are converted the same way (`regarding.name`).
//!
//! minik simplifies: as `autoscaling_v1`, a filter in front of the core handlers rewrites the path,
//! the body and the answer (watch lines included); JSON bodies only (no protobuf).

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use minik_api::status;
use serde_json::{json, Map, Value};

use crate::error::{json_response, ApiError};

const V1: &str = "/apis/events.k8s.io/v1";

/// (events.k8s.io/v1 name, core/v1 name) of every renamed top-level field.
const RENAMES: &[(&str, &str)] = &[
    ("note", "message"),
    ("regarding", "involvedObject"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(object: &mut Map<String, Value>, to_core: bool) {
    for (new, old) in RENAMES {
        let (from, to) = if to_core { (new, old) } else { (old, new) };
        if let Some(value) = object.remove(*from) {
            object.insert(to.to_string(), value);
        }
    }
}

/// An events.k8s.io/v1 Event (or a patch of one) as core/v1.
pub fn to_core(mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        rename(map, true);
        if map.get("kind").and_then(Value::as_str) == Some("Event") {
            map.insert("apiVersion".into(), json!("v1"));
        }
    }
    object
}

/// A core/v1 Event or EventList as events.k8s.io/v1.
pub fn to_v1(mut object: Value) -> Value {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if kind == "EventList" {
        if let Some(items) = object.get_mut("items").and_then(Value::as_array_mut) {
            for item in items.iter_mut() {
                *item = to_v1(item.take());
            }
        }
    }
    if kind == "Event" || kind == "EventList" {
        object["apiVersion"] = json!("events.k8s.io/v1");
        if kind == "Event" {
            if let Some(map) = object.as_object_mut() {
                rename(map, false);
            }
        }
    }
    object
}

/// `regarding.name=web,reportingController=kubelet` → `involvedObject.name=web,reportingComponent=kubelet`.
pub fn field_selector_to_core(selector: &str) -> String {
    selector
        .split(',')
        .map(|term| {
            RENAMES
                .iter()
                .find_map(|(new, old)| {
                    term.strip_prefix(new)
                        .filter(|rest| rest.starts_with(['.', '=', '!']))
                        .map(|rest| format!("{old}{rest}"))
                })
                .unwrap_or_else(|| term.to_string())
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// JSON patch paths name fields too: `/note` → `/message`.
fn json_patch_to_core(mut operations: Value) -> Value {
    for operation in operations.as_array_mut().into_iter().flatten() {
        for field in ["path", "from"] {
            let Some(path) = operation.get(field).and_then(Value::as_str) else {
                continue;
            };
            let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
            if let Some((_, old)) = RENAMES.iter().find(|(new, _)| *new == first) {
                operation[field] = json!(path.replacen(first, old, 1));
            }
        }
    }
    operations
}

/// The legacy `APIResourceList` of this group version (`/apis/…/v1`, and aggregated discovery).
pub(crate) fn resource_list() -> Value {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "events.k8s.io/v1",
           "resources": [{"name": "events", "singularName": "event", "namespaced": true, "kind": "Event",
                          "shortNames": ["ev"],
                          "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]}]})
}

/// Serves `/apis/events.k8s.io/v1/...` through the core/v1 Event handlers.
pub async fn filter(request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if path == V1 {
        return json_response(StatusCode::OK, &resource_list());
    }
    if !path.starts_with(&format!("{V1}/")) || !path.contains("/events") {
        return next.run(request).await;
    }
    match convert(request, next).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

fn rewrite_uri(uri: &Uri) -> Result<Uri, ApiError> {
    let path = uri.path().replacen(V1, "/api/v1", 1);
    let query = uri.query().map(|query| {
        query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some(("fieldSelector", value)) => {
                    let decoded = percent_decode(value);
                    format!(
                        "fieldSelector={}",
                        percent_encode(&field_selector_to_core(&decoded))
                    )
                }
                _ => pair.to_string(),
            })
            .collect::<Vec<_>>()
            .join("&")
    });
    let rewritten = match query {
        Some(query) => format!("{path}?{query}"),
        None => path,
    };
    rewritten
        .parse::<Uri>()
        .map_err(|e| ApiError::from(status::bad_request(e.to_string())))
}

fn percent_decode(value: &str) -> String {
    let bytes = value.replace('+', " ").into_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn convert(request: Request, next: Next) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    let watch = parts
        .uri
        .query()
        .is_some_and(|q| q.contains("watch=true") || q.contains("watch=1"));
    parts.uri = rewrite_uri(&parts.uri)?;
    let bytes = axum::body::to_bytes(body, crate::MAX_BODY_BYTES)
        .await
        .map_err(|e| ApiError::from(status::too_large(e.to_string())))?;
    let body = if bytes.is_empty() {
        Body::empty()
    } else {
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::from(status::bad_request(e.to_string())))?;
        let value = if value.is_array() {
            json_patch_to_core(value)
        } else {
            to_core(value)
        };
        let encoded = serde_json::to_vec(&value).unwrap_or_default();
        parts
            .headers
            .insert(header::CONTENT_LENGTH, HeaderValue::from(encoded.len()));
        Body::from(encoded)
    };
    let response = next.run(Request::from_parts(parts, body)).await;
    let (mut parts, body) = response.into_parts();
    if watch {
        parts.headers.remove(header::CONTENT_LENGTH);
        return Ok(Response::from_parts(parts, watch_body(body)));
    }
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|e| ApiError::from(status::internal(e.to_string())))?;
    let converted = convert_bytes(&bytes);
    parts
        .headers
        .insert(header::CONTENT_LENGTH, HeaderValue::from(converted.len()));
    Ok(Response::from_parts(parts, Body::from(converted)))
}

fn convert_bytes(bytes: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => serde_json::to_vec(&to_v1(value)).unwrap_or_default(),
        Err(_) => bytes.to_vec(),
    }
}

/// Converts each `{"type","object"}` line of a watch stream as it passes.
fn watch_body(body: Body) -> Body {
    let stream = body.into_data_stream();
    let lines = futures::stream::unfold(
        (stream, Vec::<u8>::new()),
        |(mut stream, mut pending)| async move {
            loop {
                if let Some(end) = pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    let converted = match serde_json::from_slice::<Value>(&line) {
                        Ok(mut event) => {
                            event["object"] = to_v1(event["object"].take());
                            let mut bytes = serde_json::to_vec(&event).unwrap_or_default();
                            bytes.push(b'\n');
                            bytes
                        }
                        Err(_) => line,
                    };
                    return Some((
                        Ok::<Bytes, axum::Error>(Bytes::from(converted)),
                        (stream, pending),
                    ));
                }
                match stream.next().await {
                    Some(Ok(chunk)) => pending.extend_from_slice(&chunk),
                    Some(Err(error)) => return Some((Err(error), (stream, pending))),
                    None if pending.is_empty() => return None,
                    None => {
                        let rest = std::mem::take(&mut pending);
                        return Some((Ok(Bytes::from(rest)), (stream, pending)));
                    }
                }
            }
        },
    );
    Body::from_stream(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_event_reads_as_events_v1_and_back() {
        let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web"}, "message": "Back-off restarting", "reason": "BackOff",
            "reportingComponent": "kubelet", "reportingInstance": "node-1", "source": {"component": "kubelet"},
            "count": 3, "firstTimestamp": "2026-11-26T01:00:00Z", "lastTimestamp": "2026-11-26T01:01:00Z",
            "eventTime": "2026-11-26T01:00:00.000000Z", "type": "Warning", "action": "BackOff"});
        let v1 = to_v1(core.clone());
        assert_eq!(v1["apiVersion"], "events.k8s.io/v1");
        assert_eq!(v1["note"], "Back-off restarting");
        assert_eq!(v1["regarding"]["name"], "web");
        assert_eq!(v1["reportingController"], "kubelet");
        assert_eq!(v1["deprecatedCount"], 3);
        assert_eq!(v1["deprecatedLastTimestamp"], "2026-11-26T01:01:00Z");
        assert!(v1.get("message").is_none() && v1.get("involvedObject").is_none());
        assert_eq!(to_core(v1), core);
        let list = to_v1(json!({"apiVersion": "v1", "kind": "EventList", "items": [core]}));
        assert_eq!(list["apiVersion"], "events.k8s.io/v1");
        assert_eq!(list["items"][0]["note"], "Back-off restarting");
    }

    #[test]
    fn field_selectors_and_patches_are_converted() {
        assert_eq!(
            field_selector_to_core("regarding.name=web,reportingController!=kubelet,type=Warning"),
            "involvedObject.name=web,reportingComponent!=kubelet,type=Warning"
        );
        let uri: Uri = "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dweb&limit=5"
            .parse()
            .unwrap();
        assert_eq!(
            rewrite_uri(&uri).unwrap().to_string(),
            "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dweb&limit=5"
        );
        let patch = json_patch_to_core(json!([{"op": "replace", "path": "/note", "value": "x"}]));
        assert_eq!(patch[0]["path"], "/message");
        assert_eq!(
            to_core(json!({"series": {"count": 2}, "note": "x"})),
            json!({"series": {"count": 2}, "message": "x"})
        );
    }
}
