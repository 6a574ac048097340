//! PATCH bodies: JSON merge patch, JSON patch, and the subset of strategic merge patch kubectl sends.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/patch.go` (one patcher per
//! content type) and `k8s.io/apimachinery/pkg/util/strategicpatch/patch.go`. RFC 7396 merge patch
//! and RFC 6902 JSON patch come from the `json-patch` crate. Strategic merge patch is JSON merge
//! patch plus list merging by a key (`containers` by `name`, container `ports` by `containerPort`
//! …, real-clients.md §6) and a few `$` directives; minik implements that subset. Server-side
//! apply (`application/apply-patch+yaml`) is approximated by a strategic merge of the applied
//! configuration into the live object, without field-manager conflict detection.

use minik_api::status;
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::handlers::request::{decode, media_type, BodyFormat};

/// The patch formats the server accepts, from the request's Content-Type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json` (RFC 7396).
    Merge,
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply; an upsert).
    Apply,
}

impl PatchType {
    /// The patch type named by a Content-Type; anything else is a 415.
    pub fn from_content_type(content_type: Option<&str>) -> ApiResult<Self> {
        match media_type(content_type).as_deref() {
            Some("application/merge-patch+json") => Ok(PatchType::Merge),
            Some("application/json-patch+json") => Ok(PatchType::Json),
            Some("application/strategic-merge-patch+json") => Ok(PatchType::Strategic),
            Some("application/apply-patch+yaml") | Some("application/apply-patch+json") => {
                Ok(PatchType::Apply)
            }
            other => Err(status::unsupported_media_type(other.unwrap_or("")).into()),
        }
    }

    /// Parses a body of this type (apply bodies are YAML, the rest JSON).
    pub fn decode_body(self, body: &[u8]) -> ApiResult<Value> {
        let format = if self == PatchType::Apply {
            BodyFormat::Yaml
        } else {
            BodyFormat::Json
        };
        decode(body, format)
    }
}

/// Applies a decoded patch to a copy of `object`. A patch that cannot apply is a 422.
pub fn apply(patch_type: PatchType, object: &Value, patch: &Value) -> ApiResult<Value> {
    let mut doc = object.clone();
    match patch_type {
        PatchType::Merge => json_patch::merge(&mut doc, patch),
        PatchType::Json => {
            let operations: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
            json_patch::patch(&mut doc, &operations).map_err(|e| {
                ApiError::from(status::failure(
                    422,
                    "Invalid",
                    format!("the JSON patch could not be applied: {e}"),
                ))
            })?;
        }
        PatchType::Strategic | PatchType::Apply => {
            if !patch.is_object() {
                return Err(ApiError::bad_request(
                    "a strategic merge patch must be a JSON object",
                ));
            }
            strategic_merge(&mut doc, patch);
        }
    }
    Ok(doc)
}

/// The key lists are merged by, for the lists kubectl's patches touch.
fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "imagePullSecrets"
        | "env" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "conditions" => Some("type"),
        "ports" if items.iter().any(|i| i.get("containerPort").is_some()) => Some("containerPort"),
        "ports" => Some("port"),
        "addresses" if items.iter().any(|i| i.get("type").is_some()) => Some("type"),
        "ownerReferences" => Some("uid"),
        _ => None,
    }
}

/// Strategic merge of `patch` into `doc` (objects merged, `null` deletes, keyed lists merged).
pub fn strategic_merge(doc: &mut Value, patch: &Value) {
    let Some(patch_map) = patch.as_object() else {
        *doc = patch.clone();
        return;
    };
    if patch_map.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut replacement = patch_map.clone();
        replacement.remove("$patch");
        *doc = Value::Object(replacement);
        return;
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let Some(target) = doc.as_object_mut() else {
        return;
    };
    for (key, value) in patch_map {
        if key.starts_with('$') {
            continue;
        }
        match value {
            Value::Null => {
                target.remove(key);
            }
            Value::Object(_) => {
                strategic_merge(target.entry(key.clone()).or_insert(Value::Null), value)
            }
            Value::Array(items) => merge_list(target, key, items, patch_map),
            _ => {
                target.insert(key.clone(), value.clone());
            }
        }
    }
    for (key, value) in patch_map {
        if let Some(list) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(current)), Some(remove)) =
                (target.get_mut(list), value.as_array())
            {
                current.retain(|item| !remove.contains(item));
            }
        }
    }
}

fn merge_list(
    target: &mut Map<String, Value>,
    key: &str,
    items: &[Value],
    patch_map: &Map<String, Value>,
) {
    if key == "finalizers" {
        let current = target
            .entry(key.to_string())
            .or_insert_with(|| Value::Array(vec![]));
        if let Value::Array(current) = current {
            for item in items {
                if !current.contains(item) {
                    current.push(item.clone());
                }
            }
        }
        return;
    }
    let Some(merge_key) = merge_key(key, items) else {
        target.insert(key.to_string(), Value::Array(items.to_vec()));
        return;
    };
    let mut current = match target.remove(key) {
        Some(Value::Array(current)) => current,
        _ => Vec::new(),
    };
    for item in items {
        let id = item.get(merge_key);
        let position = current
            .iter()
            .position(|c| id.is_some() && c.get(merge_key) == id);
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(index), true) => {
                current.remove(index);
            }
            (None, true) => {}
            (Some(index), false) => strategic_merge(&mut current[index], item),
            (None, false) => {
                let mut fresh = Value::Null;
                strategic_merge(&mut fresh, item);
                current.push(fresh);
            }
        }
    }
    if let Some(Value::Array(order)) = patch_map.get(&format!("$setElementOrder/{key}")) {
        let rank = |item: &Value| {
            order
                .iter()
                .position(|o| o.get(merge_key) == item.get(merge_key))
                .unwrap_or(usize::MAX)
        };
        current.sort_by_key(rank);
    }
    target.insert(key.to_string(), Value::Array(current));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"metadata": {"name": "web", "labels": {"a": "1"}},
               "spec": {"containers": [
                   {"name": "main", "image": "busybox:1", "ports": [{"containerPort": 80}]},
                   {"name": "side", "image": "busybox:1"}]}})
    }

    #[test]
    fn merge_patch_sets_and_deletes_keys() {
        let patched = apply(
            PatchType::Merge,
            &pod(),
            &json!({"metadata": {"labels": {"a": null, "b": "2"}}}),
        )
        .unwrap();
        assert_eq!(patched["metadata"]["labels"], json!({"b": "2"}));
    }

    #[test]
    fn json_patch_applies_operations_and_reports_failures() {
        let ops =
            json!([{"op": "replace", "path": "/spec/containers/0/image", "value": "busybox:2"}]);
        let patched = apply(PatchType::Json, &pod(), &ops).unwrap();
        assert_eq!(patched["spec"]["containers"][0]["image"], "busybox:2");
        let bad = json!([{"op": "test", "path": "/metadata/name", "value": "other"}]);
        assert_eq!(
            apply(PatchType::Json, &pod(), &bad).unwrap_err().code(),
            422
        );
    }

    #[test]
    fn strategic_patch_merges_containers_by_name_as_kubectl_apply_sends_it() {
        let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "main"}, {"name": "side"}],
                                    "containers": [{"name": "side", "image": "busybox:2"}]}});
        let patched = apply(PatchType::Strategic, &pod(), &patch).unwrap();
        let containers = &patched["spec"]["containers"];
        assert_eq!(
            containers[0]["ports"][0]["containerPort"], 80,
            "untouched container kept whole"
        );
        assert_eq!(containers[1]["image"], "busybox:2");
        assert_eq!(containers.as_array().unwrap().len(), 2);
    }

    #[test]
    fn strategic_patch_deletes_list_items_by_key() {
        let patch = json!({"spec": {"containers": [{"name": "side", "$patch": "delete"}]}});
        let patched = apply(PatchType::Strategic, &pod(), &patch).unwrap();
        assert_eq!(patched["spec"]["containers"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn node_addresses_and_conditions_merge_by_type() {
        let node = json!({"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                                     "conditions": [{"type": "Ready", "status": "False"}, {"type": "MemoryPressure", "status": "False"}]}});
        let patch = json!({"status": {"addresses": [{"type": "Hostname", "address": "node-1"}],
                                      "conditions": [{"type": "Ready", "status": "True"}]}});
        let patched = apply(PatchType::Strategic, &node, &patch).unwrap();
        assert_eq!(patched["status"]["addresses"].as_array().unwrap().len(), 2);
        assert_eq!(
            patched["status"]["conditions"][0],
            json!({"type": "Ready", "status": "True"})
        );
        assert_eq!(patched["status"]["conditions"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn unknown_patch_content_type_is_415() {
        assert_eq!(
            PatchType::from_content_type(Some("application/json"))
                .unwrap_err()
                .code(),
            415
        );
        assert_eq!(
            PatchType::from_content_type(Some("application/merge-patch+json")).unwrap(),
            PatchType::Merge
        );
    }
}
