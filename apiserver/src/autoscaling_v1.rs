//! autoscaling/v1 HorizontalPodAutoscalers, served by converting to and from the stored v2.
//!
//! Kubernetes counterpart: `pkg/apis/autoscaling/v1/conversion.go`: v1 has one CPU target
//! (`targetCPUUtilizationPercentage`, status `currentCPUUtilizationPercentage`); the apiserver
//! stores v2 and converts on every request, so both versions show one object. `kubectl autoscale`
//! (1.32) creates its HPA through the v1 typed client, in protobuf.
//!
//! minik simplifies: the conversion is a filter in front of the v2 handlers (the path is rewritten
//! to v2, the body and the answer converted); v2-only fields (other metrics, behavior,
//! conditions) are not kept in annotations as upstream does, so a v1 update drops them; watches
//! under v1 stream v2 objects.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use minik_api::status;
use serde_json::{json, Value};

use crate::error::{json_response, ApiError};

const V1: &str = "/apis/autoscaling/v1";

/// A v1 HPA as v2: the CPU percentage becomes a `Resource` metric.
pub fn to_v2(mut object: Value) -> Value {
    object["apiVersion"] = json!("autoscaling/v2");
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(percent) = spec.remove("targetCPUUtilizationPercentage") {
            spec.insert(
                "metrics".into(),
                json!([{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": percent}}}]),
            );
        }
    }
    object.as_object_mut().map(|o| o.remove("status"));
    object
}

fn cpu_of(list: Option<&Value>, pointer: &str) -> Option<Value> {
    list?.as_array()?.iter().find_map(|m| {
        (m.pointer("/resource/name")? == "cpu").then(|| m.pointer(pointer).cloned())?
    })
}

/// A v2 HPA as v1: the CPU metric's target and current utilisation, nothing else.
pub fn to_v1(mut object: Value) -> Value {
    if object.get("kind").and_then(Value::as_str) == Some("HorizontalPodAutoscalerList") {
        object["apiVersion"] = json!("autoscaling/v1");
        if let Some(items) = object.get_mut("items").and_then(Value::as_array_mut) {
            for item in items.iter_mut() {
                *item = to_v1(item.take());
            }
        }
        return object;
    }
    object["apiVersion"] = json!("autoscaling/v1");
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        let target = cpu_of(spec.get("metrics"), "/resource/target/averageUtilization");
        spec.remove("metrics");
        spec.remove("behavior");
        if let Some(target) = target {
            spec.insert("targetCPUUtilizationPercentage".into(), target);
        }
    }
    if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
        let current = cpu_of(
            status.get("currentMetrics"),
            "/resource/current/averageUtilization",
        );
        status.remove("currentMetrics");
        status.remove("conditions");
        if let Some(current) = current {
            status.insert("currentCPUUtilizationPercentage".into(), current);
        }
    }
    object
}

/// The legacy `APIResourceList` of this group version (`/apis/…/v1`, and aggregated discovery).
pub(crate) fn resource_list() -> Value {
    let entry = |name: &str, verbs: &[&str]| {
        json!({"name": name, "singularName": if name.contains('/') { "" } else { "horizontalpodautoscaler" },
               "namespaced": true, "kind": "HorizontalPodAutoscaler", "verbs": verbs})
    };
    let mut main = entry(
        "horizontalpodautoscalers",
        &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
    );
    main["shortNames"] = json!(["hpa"]);
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "autoscaling/v1",
           "resources": [main, entry("horizontalpodautoscalers/status", &["get", "patch", "update"])]})
}

/// Serves `/apis/autoscaling/v1/...` through the v2 handlers; everything else goes on.
pub async fn filter(request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if path == V1 {
        return json_response(axum::http::StatusCode::OK, &resource_list());
    }
    if !path.starts_with(&format!("{V1}/")) || !path.contains("/horizontalpodautoscalers") {
        return next.run(request).await;
    }
    let watch = request
        .uri()
        .query()
        .is_some_and(|q| q.contains("watch=true") || q.contains("watch=1"));
    match convert(request, next, watch).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn convert(request: Request, next: Next, watch: bool) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    let rewritten = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("")
        .replacen(V1, "/apis/autoscaling/v2", 1);
    parts.uri = rewritten
        .parse::<Uri>()
        .map_err(|e| ApiError::from(status::bad_request(e.to_string())))?;
    let bytes = axum::body::to_bytes(body, crate::MAX_BODY_BYTES)
        .await
        .map_err(|e| ApiError::from(status::too_large(e.to_string())))?;
    let body = if bytes.is_empty() {
        Body::empty()
    } else {
        let object = if bytes.starts_with(b"k8s\0") {
            crate::protobuf::decode(&bytes)
                .map_err(|e| ApiError::from(status::bad_request(e.to_string())))?
        } else {
            serde_json::from_slice(&bytes)
                .map_err(|e| ApiError::from(status::bad_request(e.to_string())))?
        };
        // A patch is applied to the stored (v2) object as sent; only whole objects convert.
        let is_object =
            object.get("kind").and_then(Value::as_str) == Some("HorizontalPodAutoscaler");
        let object = if is_object { to_v2(object) } else { object };
        let encoded = serde_json::to_vec(&object).unwrap_or_default();
        if bytes.starts_with(b"k8s\0") {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        parts
            .headers
            .insert(header::CONTENT_LENGTH, HeaderValue::from(encoded.len()));
        Body::from(encoded)
    };
    let response = next.run(Request::from_parts(parts, body)).await;
    if watch {
        return Ok(response);
    }
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|e| ApiError::from(status::internal(e.to_string())))?;
    let converted = match serde_json::from_slice::<Value>(&bytes) {
        Ok(value)
            if value
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k.starts_with("HorizontalPodAutoscaler")) =>
        {
            serde_json::to_vec(&to_v1(value)).unwrap_or_default()
        }
        _ => bytes.to_vec(),
    };
    parts
        .headers
        .insert(header::CONTENT_LENGTH, HeaderValue::from(converted.len()));
    Ok(Response::from_parts(parts, Body::from(converted)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_percentage_round_trips_through_v2() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                     "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50}});
        let v2 = to_v2(v1.clone());
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            50
        );
        assert!(v2["spec"].get("targetCPUUtilizationPercentage").is_none());
        let mut stored = v2.clone();
        stored["status"] = json!({"currentReplicas": 2, "desiredReplicas": 3,
            "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 90}}}],
            "conditions": [{"type": "AbleToScale", "status": "True"}]});
        let back = to_v1(stored);
        assert_eq!(back["spec"], v1["spec"]);
        assert_eq!(back["apiVersion"], "autoscaling/v1");
        assert_eq!(
            back["status"],
            json!({"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 90})
        );
    }
}
