//! Changing the version of custom resources: `None` rewrites `apiVersion`, `Webhook` asks the
//! CRD's conversion webhook with a ConversionReview.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/`
//! (`nopConverter`, `webhookConverter` in `webhook_converter.go`). Objects already in the desired
//! version are not sent; a list's items go in one review. The answer is checked as upstream does:
//! a `ConversionReview` of the version sent, our `uid` echoed (v1), `result.status: Success`,
//! as many `convertedObjects` as sent, each in the desired `apiVersion` with the same kind, name,
//! namespace and uid. Of its metadata only `labels` and `annotations` are kept, the rest is the
//! original's (`restoreObjectMeta`). Any failure is upstream's 500
//! `conversion webhook for example.com/v2, Kind=Foo failed: …`.
//!
//! Where it runs (`convert.rs` on the way out, `write.rs` and `store/update.rs` on the way in): a
//! read in a version other than the storage version, a write converted to the storage version
//! before it is stored, and an update's stored object converted to the request's version before
//! the patch and the strategy see it.
//!
//! minik simplifies: the labels and annotations a webhook returns are not validated as label and
//! annotation syntax; the call is bounded by 30 seconds, as upstream's client.

use std::time::{Duration, Instant};

use minik_api::{status, ResourceInfo};
use serde_json::{json, Value};
use tracing::{info, warn};

use super::conversion_config::ConversionWebhook;
use super::kinds::CustomKind;
use crate::admission::webhook_client::post_to;
use crate::error::{ApiError, ApiResult};
use crate::AppState;

/// Upstream's conversion webhook client timeout.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Converts `objects` of `kind` to `{group}/{version}` in place (those already there are left
/// as they are). `list`: they are a list's items (errors name the list kind, as upstream's).
pub async fn convert(
    state: &AppState,
    kind: &CustomKind,
    objects: &mut [Value],
    version: &str,
    list: bool,
) -> ApiResult<()> {
    let desired = format!("{}/{version}", kind.group);
    let pending: Vec<usize> = (0..objects.len())
        .filter(|&i| objects[i].is_object() && objects[i]["apiVersion"] != desired.as_str())
        .collect();
    let Some(&first) = pending.first() else {
        return Ok(());
    };
    let Some(webhook) = &kind.conversion else {
        for &i in &pending {
            objects[i]["apiVersion"] = Value::from(desired.as_str());
        }
        return Ok(());
    };
    let shown_kind = if list {
        &kind.list_kind
    } else {
        kind.info.kind
    };
    let source = format!(
        "{}, Kind={shown_kind}",
        objects[first]["apiVersion"].as_str().unwrap_or("")
    );
    let sent: Vec<Value> = pending.iter().map(|&i| objects[i].clone()).collect();
    let started = Instant::now();
    let converted = call(state, webhook, &sent, &desired)
        .await
        .map_err(|e| failure(format!("conversion webhook for {source} failed: {e}")))?;
    let elapsed_ms = started.elapsed().as_millis() as u64;
    if converted.len() != sent.len() {
        return Err(failure(format!(
            "conversion webhook for {source} returned {} objects, expected {}",
            converted.len(),
            sent.len()
        )));
    }
    for (index, (&i, answer)) in pending.iter().zip(converted).enumerate() {
        objects[i] = accept(&objects[i], answer, &desired).map_err(|e| {
            let at = if list {
                format!("invalid converted object at index {index}")
            } else {
                "invalid object".to_string()
            };
            failure(format!(
                "conversion webhook for {source} returned {at}: {e}"
            ))
        })?;
    }
    info!(crd = %webhook.crd, desired = %desired, objects = sent.len(), elapsed_ms, "converted by webhook");
    Ok(())
}

/// A stored object as the request's version has it; `None` when nothing changes (a built-in
/// kind, or an object already in that version; one stored in an earlier storage version is
/// converted too).
pub async fn for_request(
    state: &AppState,
    info: &ResourceInfo,
    stored: &Value,
) -> ApiResult<Option<Value>> {
    let Some(kind) = state.custom.kind(info) else {
        return Ok(None);
    };
    if stored["apiVersion"] == kind.api_version().as_str() {
        return Ok(None);
    }
    let mut objects = [stored.clone()];
    convert(state, &kind, &mut objects, &kind.version, false).await?;
    let [object] = objects;
    Ok(Some(object))
}

/// An object written in the request's version, in the storage version (built-in kinds pass).
pub async fn for_storage(state: &AppState, info: &ResourceInfo, object: Value) -> ApiResult<Value> {
    let Some(kind) = state.custom.kind(info) else {
        return Ok(object);
    };
    let mut objects = [object];
    convert(state, &kind, &mut objects, &kind.storage_version, false).await?;
    let [object] = objects;
    Ok(object)
}

/// Upstream's plain error: a 500 whose reason is unknown (kubectl prints `Error from server:`).
fn failure(message: String) -> ApiError {
    warn!(%message, "conversion failed");
    let mut status = status::failure(500, "", message);
    status.reason = None;
    ApiError::from(status)
}

/// One ConversionReview round trip: the converted objects, or why there are none.
async fn call(
    state: &AppState,
    webhook: &ConversionWebhook,
    objects: &[Value],
    desired: &str,
) -> Result<Vec<Value>, String> {
    let version = webhook
        .review_version
        .as_deref()
        .ok_or("no supported conversion review versions")?;
    let uid = uuid::Uuid::new_v4().to_string();
    let review = review(version, &uid, objects, desired);
    let body = post_to(state, &webhook.client_config, TIMEOUT, &review)
        .await
        .map_err(|e| {
            e.strip_prefix("failed to call webhook: ")
                .map(str::to_string)
                .unwrap_or(e)
        })?;
    let answer: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    converted_objects(&answer, version, &uid)
}

/// The `ConversionReview` sent.
pub fn review(version: &str, uid: &str, objects: &[Value], desired: &str) -> Value {
    json!({"apiVersion": format!("apiextensions.k8s.io/{version}"), "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects}})
}

/// `getConvertedObjectsFromResponse`: the answer's objects once it is known to be ours and a
/// success (v1beta1 answers were never checked for kind and uid, nor are they here).
pub fn converted_objects(answer: &Value, version: &str, uid: &str) -> Result<Vec<Value>, String> {
    if version == "v1" {
        let got = format!(
            "{}, Kind={}",
            answer["apiVersion"].as_str().unwrap_or(""),
            answer["kind"].as_str().unwrap_or("")
        );
        let wanted = "apiextensions.k8s.io/v1, Kind=ConversionReview";
        if got != wanted {
            return Err(format!("expected webhook response of {wanted}, got {got}"));
        }
    }
    let response = answer
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("no response provided")?;
    let echoed = response["uid"].as_str().unwrap_or("");
    if version == "v1" && echoed != uid {
        return Err(format!("expected response.uid={uid:?}, got {echoed:?}"));
    }
    let result = &response["result"];
    if result["status"] != "Success" {
        return Err(match result["message"].as_str().filter(|m| !m.is_empty()) {
            Some(message) => message.to_string(),
            None => format!(
                "response.result.status was '{}', not 'Success'",
                result["status"].as_str().unwrap_or("")
            ),
        });
    }
    Ok(response["convertedObjects"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// One converted object checked against its original (`validateConvertedObject`), with the
/// original's metadata but the webhook's labels and annotations (`restoreObjectMeta`).
pub fn accept(original: &Value, mut converted: Value, desired: &str) -> Result<Value, String> {
    let got = converted["apiVersion"].as_str().unwrap_or("");
    if got != desired {
        return Err(format!(
            "invalid groupVersion (expected {desired}, received {got})"
        ));
    }
    let field = |object: &Value, path: &str| object.pointer(path).cloned().unwrap_or(json!(""));
    let (expected, received) = (field(original, "/kind"), field(&converted, "/kind"));
    if expected != received {
        return Err(format!(
            "invalid kind (expected {}, received {})",
            text(&expected),
            text(&received)
        ));
    }
    for (path, what) in [
        ("/metadata/name", "name"),
        ("/metadata/namespace", "namespace"),
        ("/metadata/uid", "UID"),
    ] {
        let (a, b) = (field(original, path), field(&converted, path));
        if a != b {
            return Err(format!(
                "must have the same {what}: {} != {}",
                text(&a),
                text(&b)
            ));
        }
    }
    let given = converted
        .get("metadata")
        .filter(|m| m.is_object())
        .cloned()
        .ok_or("missing metadata in converted object")?;
    let mut metadata = original
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| json!({}));
    for key in ["labels", "annotations"] {
        match given.get(key).filter(|v| !v.is_null()) {
            None => {
                metadata.as_object_mut().map(|m| m.remove(key));
            }
            Some(Value::Object(map)) => {
                if let Some((name, value)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{key}[{name}] must be a string, but is {value} in converted object"
                    ));
                }
                metadata[key] = Value::Object(map.clone());
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{key} of type {other} in converted object"
                ))
            }
        }
    }
    converted["metadata"] = metadata;
    Ok(converted)
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| value.to_string())
}
