//! Strategic merge patch: JSON merge patch that knows which lists merge by which key.
//!
//! Kubernetes counterpart: `k8s.io/apimachinery/pkg/util/strategicpatch/patch.go`
//! (`StrategicMergePatch`, `mergeMap`, `mergeSlice`, `normalizeElementOrder`). It is what
//! `kubectl apply` (client-side) sends: a three-way diff of the last applied configuration, the
//! new manifest and the live object, e.g.
//! ```json
//! {"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"…"}},
//!  "spec":{"$setElementOrder/containers":[{"name":"main"}],
//!          "containers":[{"image":"busybox:1.37","name":"main"}]}}
//! ```
//! Rules, as upstream:
//! - maps merge key by key, `null` deletes a key (RFC 7396);
//! - lists tagged with a merge key ([`schema`](super::schema)) merge item by item: a patch item
//!   updates the live item with the same key, or is appended; other lists are replaced whole;
//! - lists of scalars tagged `merge` (finalizers) are merged as sets;
//! - directives: `$patch: replace | delete | merge` in a map or a list item, `$retainKeys: [...]`
//!   (clear every other key of that map), `$setElementOrder/<list>: [...]` (the order of the
//!   merged list), `$deleteFromPrimitiveList/<list>: [...]` (remove scalars from a set list).
//!
//! minik simplifies: no `$patch` on primitive lists, no validation that `$retainKeys` covers the
//! patch's own keys.

use serde_json::{Map, Value};

use super::schema::{list_strategy, ListStrategy};
use super::{Error, Result};

const SET_ORDER: &str = "$setElementOrder/";
const DELETE_PRIMITIVE: &str = "$deleteFromPrimitiveList/";

/// Applies a strategic merge `patch` to `original` (an object of `kind`) and returns the result.
pub fn merge(kind: &str, original: &Value, patch: &Value) -> Result<Value> {
    let Value::Object(patch) = patch else {
        return Err(Error::BadPatch(
            "a strategic merge patch must be a JSON object".into(),
        ));
    };
    let mut doc = original.clone();
    let mut path = Vec::new();
    merge_map(kind, &mut path, &mut doc, patch)?;
    Ok(doc)
}

/// The value of a `$patch` directive, checked.
fn patch_directive(map: &Map<String, Value>) -> Result<Option<&str>> {
    match map.get("$patch") {
        None => Ok(None),
        Some(Value::String(s)) if matches!(s.as_str(), "replace" | "delete" | "merge") => {
            Ok(Some(s.as_str()))
        }
        Some(other) => Err(Error::BadPatch(format!(
            "Unknown patch type: {other} in map: {}",
            Value::Object(map.clone())
        ))),
    }
}

/// The patch map with its directives removed, recursively (what `$patch: replace` stores).
fn without_directives(
    kind: &str,
    path: &mut Vec<String>,
    map: &Map<String, Value>,
) -> Result<Value> {
    let mut clean = Value::Object(Map::new());
    let mut stripped = map.clone();
    stripped.remove("$patch");
    merge_map(kind, path, &mut clean, &stripped)?;
    Ok(clean)
}

fn merge_map(
    kind: &str,
    path: &mut Vec<String>,
    doc: &mut Value,
    patch: &Map<String, Value>,
) -> Result<()> {
    if patch_directive(patch)? == Some("replace") {
        *doc = without_directives(kind, path, patch)?;
        return Ok(());
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let Some(target) = doc.as_object_mut() else {
        return Ok(());
    };
    if let Some(retain) = patch.get("$retainKeys") {
        let keys = retain
            .as_array()
            .filter(|keys| keys.iter().all(Value::is_string))
            .ok_or_else(|| Error::BadPatch("$retainKeys must be a list of strings".into()))?;
        target.retain(|key, _| keys.iter().any(|k| k == key.as_str()));
    }
    for (key, value) in patch {
        if key.starts_with('$') {
            continue;
        }
        path.push(key.clone());
        let merged = merge_field(kind, path, target, key, value, patch);
        path.pop();
        merged?;
    }
    apply_list_directives(kind, path, target, patch)
}

fn merge_field(
    kind: &str,
    path: &mut Vec<String>,
    target: &mut Map<String, Value>,
    key: &str,
    value: &Value,
    patch: &Map<String, Value>,
) -> Result<()> {
    match value {
        Value::Null => {
            target.remove(key);
        }
        Value::Object(child) if patch_directive(child)? == Some("delete") => {
            target.remove(key);
        }
        Value::Object(child) => {
            let slot = target.entry(key.to_string()).or_insert(Value::Null);
            merge_map(kind, path, slot, child)?;
        }
        Value::Array(items) => {
            let current = match target.remove(key) {
                Some(Value::Array(current)) => current,
                _ => Vec::new(),
            };
            let order = patch.get(&format!("{SET_ORDER}{key}"));
            let merged = merge_list(kind, path, current, items, order)?;
            target.insert(key.to_string(), Value::Array(merged));
        }
        scalar => {
            target.insert(key.to_string(), scalar.clone());
        }
    }
    Ok(())
}

/// `$deleteFromPrimitiveList/x`, and `$setElementOrder/x` for lists the patch does not carry.
fn apply_list_directives(
    kind: &str,
    path: &mut Vec<String>,
    target: &mut Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<()> {
    for (key, value) in patch {
        if let Some(list) = key.strip_prefix(DELETE_PRIMITIVE) {
            let remove = value
                .as_array()
                .ok_or_else(|| Error::BadPatch(format!("{key} must be a list")))?;
            if let Some(Value::Array(current)) = target.get_mut(list) {
                current.retain(|item| !remove.contains(item));
            }
        } else if let Some(list) = key.strip_prefix(SET_ORDER) {
            if patch.contains_key(list) {
                continue;
            }
            if let Some(Value::Array(current)) = target.get_mut(list) {
                path.push(list.to_string());
                let merge_key = merge_key_of(kind, path);
                path.pop();
                let original = current.clone();
                *current = reorder(current.clone(), &original, &[], value, merge_key);
            }
        }
    }
    Ok(())
}

fn merge_key_of(kind: &str, path: &[String]) -> Option<&'static str> {
    let fields: Vec<&str> = path.iter().map(String::as_str).collect();
    match list_strategy(kind, &fields) {
        ListStrategy::MergeByKey(key) => Some(key),
        _ => None,
    }
}

fn merge_list(
    kind: &str,
    path: &mut Vec<String>,
    current: Vec<Value>,
    items: &[Value],
    order: Option<&Value>,
) -> Result<Vec<Value>> {
    let fields: Vec<&str> = path.iter().map(String::as_str).collect();
    let strategy = list_strategy(kind, &fields);
    let replace = items
        .iter()
        .any(|item| item.get("$patch").and_then(Value::as_str) == Some("replace"));
    let merged = match strategy {
        ListStrategy::Replace => return replaced(kind, path, items),
        ListStrategy::MergeByKey(_) if replace => return replaced(kind, path, items),
        ListStrategy::Set => {
            let mut merged = current.clone();
            for item in items {
                if !merged.contains(item) {
                    merged.push(item.clone());
                }
            }
            merged
        }
        ListStrategy::MergeByKey(key) => merge_by_key(kind, path, current.clone(), items, key)?,
    };
    let merge_key = match strategy {
        ListStrategy::MergeByKey(key) => Some(key),
        _ => None,
    };
    Ok(match order {
        Some(order) => reorder(merged, &current, items, order, merge_key),
        None => merged,
    })
}

/// The patch's items, cleaned of directives: what an atomic list (or `$patch: replace`) becomes.
fn replaced(kind: &str, path: &mut Vec<String>, items: &[Value]) -> Result<Vec<Value>> {
    let mut fresh = Vec::new();
    for item in items {
        match item {
            Value::Object(map) if map.get("$patch").is_some_and(|p| p == "replace") => {}
            Value::Object(map) => fresh.push(without_directives(kind, path, map)?),
            other => fresh.push(other.clone()),
        }
    }
    Ok(fresh)
}

fn merge_by_key(
    kind: &str,
    path: &mut Vec<String>,
    mut current: Vec<Value>,
    items: &[Value],
    key: &str,
) -> Result<Vec<Value>> {
    for item in items {
        let Value::Object(map) = item else {
            return Err(Error::BadPatch(format!(
                "the list {} merges by {key}, but the patch has the item {item}",
                path.join(".")
            )));
        };
        let Some(id) = map.get(key) else {
            return Err(Error::BadPatch(format!(
                "map: {item} does not contain declared merge key: {key}"
            )));
        };
        let position = current.iter().position(|c| c.get(key) == Some(id));
        match (patch_directive(map)?, position) {
            (Some("delete"), _) => current.retain(|c| c.get(key) != Some(id)),
            (_, Some(index)) => merge_map(kind, path, &mut current[index], map)?,
            (_, None) => {
                let mut fresh = Value::Null;
                merge_map(kind, path, &mut fresh, map)?;
                current.push(fresh);
            }
        }
    }
    Ok(current)
}

/// What identifies a list item: its merge key's value, or the scalar itself.
fn identity(item: &Value, merge_key: Option<&str>) -> Value {
    match merge_key {
        Some(key) => item.get(key).cloned().unwrap_or(Value::Null),
        None => item.clone(),
    }
}

/// Orders `merged` as `$setElementOrder` says, as upstream's `normalizeElementOrder`: items named
/// in the order come in that order; items only the server had are interleaved by their position
/// in the original list; items neither names go last.
fn reorder(
    merged: Vec<Value>,
    original: &[Value],
    patch_items: &[Value],
    order: &Value,
    merge_key: Option<&str>,
) -> Vec<Value> {
    let Some(order) = order.as_array() else {
        return merged;
    };
    let order_ids: Vec<Value> = order.iter().map(|o| identity(o, merge_key)).collect();
    let server_ids: Vec<Value> = original.iter().map(|o| identity(o, merge_key)).collect();
    let patch_ids: Vec<Value> = patch_items.iter().map(|o| identity(o, merge_key)).collect();
    let (mut ordered, mut server_only, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for item in merged {
        let id = identity(&item, merge_key);
        if let Some(rank) = order_ids.iter().position(|o| *o == id) {
            ordered.push((rank, item));
        } else if !patch_ids.contains(&id) && server_ids.contains(&id) {
            server_only.push(item);
        } else {
            rest.push(item);
        }
    }
    ordered.sort_by_key(|(rank, _)| *rank);
    let server_rank = |item: &Value| {
        let id = identity(item, merge_key);
        server_ids.iter().position(|s| *s == id)
    };
    let mut result = Vec::new();
    let mut ordered = ordered.into_iter().map(|(_, item)| item).peekable();
    let mut server_only = server_only.into_iter().peekable();
    loop {
        let take_server = match (ordered.peek(), server_only.peek()) {
            (None, None) => break,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            // As upstream's `mergeSortedSlice`: the patch item first only if the server had it
            // before the server-only item; otherwise the server-only item.
            (Some(left), Some(right)) => match (server_rank(left), server_rank(right)) {
                (Some(l), Some(r)) => r < l,
                _ => true,
            },
        };
        let next = if take_server {
            server_only.next()
        } else {
            ordered.next()
        };
        result.extend(next);
    }
    result.extend(rest);
    result
}

#[cfg(test)]
#[path = "strategic_tests.rs"]
mod tests;
