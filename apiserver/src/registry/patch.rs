//! PATCH bodies: which patch type a request carries, and applying the kind-agnostic ones.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/patch.go` (one patcher per
//! content type: `jsonPatcher`, `smpPatcher`, `applyPatcher`). RFC 7396 merge patch and RFC 6902
//! JSON patch come from the `json-patch` crate. Strategic merge patch (which needs the kind's list
//! merge keys) is [`crate::patch::strategic`]; server-side apply (an upsert with field managers)
//! is [`crate::patch::apply`], called by the PATCH handler itself.

use minik_api::status;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::request::body::{decode, media_type, BodyFormat};

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

/// The most operations a JSON patch may hold (upstream's `maxJSONPatchOperations`).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Applies a decoded patch to a copy of `object` (of `kind`). A patch that cannot apply is a 422.
/// Apply patches merge like strategic ones here; the PATCH handler calls
/// [`crate::patch::apply::apply`] for them instead, to track field managers.
pub fn apply(patch_type: PatchType, kind: &str, object: &Value, patch: &Value) -> ApiResult<Value> {
    let mut doc = object.clone();
    match patch_type {
        PatchType::Merge => json_patch::merge(&mut doc, patch),
        PatchType::Json => {
            let operations: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
            // Upstream's `maxJSONPatchOperations` (patch.go): more is a 413.
            if operations.0.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(status::too_large(format!(
                    "The allowed number of operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, but received {}",
                    operations.0.len()
                ))
                .into());
            }
            json_patch::patch(&mut doc, &operations).map_err(|e| {
                ApiError::from(status::failure(
                    422,
                    "Invalid",
                    format!("the JSON patch could not be applied: {e}"),
                ))
            })?;
        }
        PatchType::Strategic | PatchType::Apply => {
            doc = crate::patch::strategic::merge(kind, object, patch)
                .map_err(|e| ApiError::from(e.to_status()))?;
        }
    }
    Ok(doc)
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
            "Pod",
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
        let patched = apply(PatchType::Json, "Pod", &pod(), &ops).unwrap();
        assert_eq!(patched["spec"]["containers"][0]["image"], "busybox:2");
        let bad = json!([{"op": "test", "path": "/metadata/name", "value": "other"}]);
        assert_eq!(
            apply(PatchType::Json, "Pod", &pod(), &bad)
                .unwrap_err()
                .code(),
            422
        );
    }

    #[test]
    fn strategic_patch_merges_containers_by_name_as_kubectl_apply_sends_it() {
        let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "main"}, {"name": "side"}],
                                    "containers": [{"name": "side", "image": "busybox:2"}]}});
        let patched = apply(PatchType::Strategic, "Pod", &pod(), &patch).unwrap();
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
        let patched = apply(PatchType::Strategic, "Pod", &pod(), &patch).unwrap();
        assert_eq!(patched["spec"]["containers"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn node_addresses_and_conditions_merge_by_type() {
        let node = json!({"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                                     "conditions": [{"type": "Ready", "status": "False"}, {"type": "MemoryPressure", "status": "False"}]}});
        let patch = json!({"status": {"addresses": [{"type": "Hostname", "address": "node-1"}],
                                      "conditions": [{"type": "Ready", "status": "True"}]}});
        let patched = apply(PatchType::Strategic, "Node", &node, &patch).unwrap();
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
