//! ObjectMeta on the server side: the fields only the API server may set.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/registry/rest/create.go` (`BeforeCreate`:
//! `FillObjectMetaSystemFields`, generateName, namespace checks) and `rest/update.go`
//! (`BeforeUpdate`: uid, creationTimestamp and deletion fields cannot be changed by a client).
//! Objects are handled as JSON here, before the kind's typed strategy runs.

use std::collections::BTreeSet;

use minik_api::meta::StatusCause;
use minik_api::status;
use rand::Rng;
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};

/// `metadata` as a mutable map, created if absent; a non-object `metadata` is a 400.
pub fn meta_mut(object: &mut Value) -> ApiResult<&mut Map<String, Value>> {
    let map = object
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    meta.as_object_mut()
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

/// A string field of `metadata` (`name`, `namespace`, `uid`, `resourceVersion` …).
pub fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

/// The object's `metadata.resourceVersion` as a revision; `None` when unset, 400 when not a number.
pub fn resource_version(object: &Value) -> ApiResult<Option<u64>> {
    match meta_str(object, "resourceVersion").filter(|rv| !rv.is_empty()) {
        None => Ok(None),
        Some(rv) => rv.parse().map(Some).map_err(|_| {
            ApiError::bad_request(format!("invalid resourceVersion {rv:?}: not a number"))
        }),
    }
}

/// The current time as Kubernetes writes it (`2026-01-02T15:04:05Z`).
pub fn now_value() -> Value {
    serde_json::to_value(minik_api::now()).unwrap_or(Value::Null)
}

/// Checks `apiVersion`/`kind` if the client sent them, then sets them.
pub fn set_type_meta(object: &mut Value, api_version: &str, kind: &str) -> ApiResult<()> {
    let map = object
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    for (field, expected) in [("apiVersion", api_version), ("kind", kind)] {
        // Upstream decodes TypeMeta first, so `apiVersion: [v1]` fails there with a 400.
        if let Some(value) = map.get(field).filter(|v| !v.is_string() && !v.is_null()) {
            let found = json_type(value);
            return Err(ApiError::bad_request(format!(
                "couldn't get version/kind; json parse error: json: cannot unmarshal {found} into Go struct field .{field} of type string"
            )));
        }
        match map.get(field).and_then(Value::as_str) {
            Some(found) if !found.is_empty() && found != expected => {
                let message = format!("the API version in the data ({found}) does not match the expected API version ({expected})");
                let message = if field == "kind" {
                    format!("the kind in the data ({found}) does not match the expected kind ({expected})")
                } else {
                    message
                };
                return Err(ApiError::bad_request(message));
            }
            _ => {
                map.insert(field.to_string(), Value::String(expected.to_string()));
            }
        }
    }
    Ok(())
}

/// The JSON type name Go's decoder uses in its errors (`array`, `object`, `number`, `bool`).
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::String(_) => "string",
        Value::Null => "null",
    }
}

/// Whether a create will generate the name: `generateName` given and `name` empty.
pub fn generates_name(object: &Value) -> bool {
    meta_str(object, "name").unwrap_or("").is_empty()
        && meta_str(object, "generateName").is_some_and(|p| !p.is_empty())
}

/// `BeforeCreate`: name (or generateName), namespace from the URL, uid, creationTimestamp,
/// generation 1; anything a client may not choose is cleared.
pub fn prepare_create(object: &mut Value, namespace: Option<&str>) -> ApiResult<()> {
    let meta = meta_mut(object)?;
    let name = meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if name.is_empty() {
        if let Some(prefix) = meta
            .get("generateName")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        {
            let generated = format!("{prefix}{}", random_suffix());
            meta.insert("name".into(), Value::String(generated));
        }
    }
    match namespace {
        Some(namespace) => {
            if let Some(given) = meta
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
            {
                if given != namespace {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
            }
            meta.insert("namespace".into(), Value::String(namespace.to_string()));
        }
        None => {
            meta.remove("namespace");
        }
    }
    meta.insert(
        "uid".into(),
        Value::String(uuid::Uuid::new_v4().to_string()),
    );
    meta.insert("creationTimestamp".into(), now_value());
    meta.insert("generation".into(), Value::from(1));
    for field in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "managedFields",
    ] {
        meta.remove(field);
    }
    Ok(())
}

/// `ValidateNoNewFinalizers`: once `deletionTimestamp` is set, an update may remove finalizers
/// but not add any (`ValidateObjectMetaUpdate` in `k8s.io/apimachinery/.../validation/objectmeta.go`).
pub fn new_finalizers_while_deleting(object: &Value, old: &Value) -> Vec<StatusCause> {
    if old
        .pointer("/metadata/deletionTimestamp")
        .is_none_or(Value::is_null)
    {
        return Vec::new();
    }
    let finalizers = |o: &Value| -> BTreeSet<String> {
        o.pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect()
    };
    let old_set = finalizers(old);
    let extra: Vec<String> = finalizers(object)
        .into_iter()
        .filter(|f| !old_set.contains(f))
        .map(|f| format!("{f:?}"))
        .collect();
    if extra.is_empty() {
        return Vec::new();
    }
    let message = format!(
        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
        extra.join(", ")
    );
    vec![status::cause(
        "metadata.finalizers",
        "FieldValueForbidden",
        message,
    )]
}

/// `BeforeUpdate`: the name must match the URL, and the system fields come from the stored object.
pub fn prepare_update(object: &mut Value, old: &Value, name: &str, plural: &str) -> ApiResult<()> {
    let meta = meta_mut(object)?;
    match meta.get("name").and_then(Value::as_str) {
        Some(given) if !given.is_empty() && given != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({given}) does not match the name on the URL ({name})"
            )));
        }
        _ => {
            meta.insert("name".into(), Value::String(name.to_string()));
        }
    }
    let old_uid = meta_str(old, "uid").unwrap_or("");
    if let Some(uid) = meta
        .get("uid")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
    {
        if uid != old_uid {
            let why = format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {old_uid}"
            );
            return Err(status::conflict(plural, name, &why).into());
        }
    }
    let old_meta = old
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in [
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match old_meta.get(field) {
            Some(value) => meta.insert(field.to_string(), value.clone()),
            None => meta.remove(field),
        };
    }
    // As upstream's field manager: an update that does not mention managedFields keeps them
    // (an explicit empty list clears them).
    if !meta.contains_key("managedFields") {
        if let Some(managed) = old_meta.get("managedFields") {
            meta.insert("managedFields".into(), managed.clone());
        }
    }
    meta.remove("selfLink");
    Ok(())
}

/// Upstream's `names.SimpleNameGenerator`: five characters from an alphabet without vowels.
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Whether an update left a deleted object with nothing holding it: deletion requested with no
/// grace left and no finalizers (`ShouldDeleteDuringUpdate`, docs/kubernetes-rules.md#d5).
pub fn should_delete_during_update(object: &Value) -> bool {
    let Some(meta) = object.get("metadata") else {
        return false;
    };
    let terminating = meta.get("deletionTimestamp").is_some_and(|t| !t.is_null());
    let no_grace = meta
        .get("deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        == 0;
    let empty = |list: Option<&Value>| list.and_then(Value::as_array).is_none_or(|f| f.is_empty());
    // A namespace is also held by `spec.finalizers` until its contents are gone.
    let no_finalizers = empty(meta.get("finalizers"))
        && empty(object.get("spec").and_then(|s| s.get("finalizers")));
    terminating && no_grace && no_finalizers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn create_fills_system_fields_and_generates_names() {
        let mut pod = json!({"metadata": {"generateName": "web-", "resourceVersion": "7"}});
        prepare_create(&mut pod, Some("default")).unwrap();
        let name = meta_str(&pod, "name").unwrap();
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        assert_eq!(meta_str(&pod, "namespace"), Some("default"));
        assert!(meta_str(&pod, "uid").is_some());
        assert!(meta_str(&pod, "resourceVersion").is_none());
    }

    #[test]
    fn create_rejects_a_namespace_other_than_the_url() {
        let mut pod = json!({"metadata": {"name": "web", "namespace": "other"}});
        assert_eq!(
            prepare_create(&mut pod, Some("default"))
                .unwrap_err()
                .code(),
            400
        );
    }

    #[test]
    fn update_keeps_uid_and_rejects_a_renamed_object() {
        let old = json!({"metadata": {"name": "web", "uid": "u1", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        let mut new = json!({"metadata": {"name": "web"}});
        prepare_update(&mut new, &old, "web", "pods").unwrap();
        assert_eq!(meta_str(&new, "uid"), Some("u1"));
        let mut renamed = json!({"metadata": {"name": "other"}});
        assert_eq!(
            prepare_update(&mut renamed, &old, "web", "pods")
                .unwrap_err()
                .code(),
            400
        );
    }

    #[test]
    fn finalizers_hold_a_deleted_object_until_emptied() {
        let held = json!({"metadata": {"deletionTimestamp": "x", "deletionGracePeriodSeconds": 0, "finalizers": ["a"]}});
        let released = json!({"metadata": {"deletionTimestamp": "x", "deletionGracePeriodSeconds": 0, "finalizers": []}});
        let graceful =
            json!({"metadata": {"deletionTimestamp": "x", "deletionGracePeriodSeconds": 30}});
        assert!(!should_delete_during_update(&held));
        assert!(should_delete_during_update(&released));
        assert!(!should_delete_during_update(&graceful));
    }
}
