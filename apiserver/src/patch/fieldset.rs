//! Field sets: which fields of an object a manager owns, and their `fieldsV1` wire form.
//!
//! Kubernetes counterpart: `sigs.k8s.io/structured-merge-diff/fieldpath` (`Set`, `Path`,
//! `PathElement`) and its `fieldsV1` serialization, stored per manager in
//! `metadata.managedFields[].fieldsV1`:
//! ```json
//! {"f:metadata":{"f:labels":{"f:app":{}}},
//!  "f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:name":{}}}}}
//! ```
//! A path is a list of steps: `f:<field>` (a map key), `k:<json>` (the item of a keyed list with
//! that merge key), `v:<json>` (a scalar of a set list). Atomic lists and scalars are leaves.
//!
//! minik simplifies: a keyed item is named by its single merge key (upstream uses every
//! `x-kubernetes-list-map-keys`, e.g. `containerPort` *and* `protocol`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::schema::{list_strategy, ListStrategy};

/// One step of a field path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// A map key: `f:name`.
    Field(String),
    /// A keyed list item: `k:{"name":"main"}` (the merge key, and its value as JSON text).
    Key(String, String),
    /// A scalar in a set list, as JSON text: `v:"finalizer"`.
    Value(String),
}

/// A path from the object's root to one owned field.
pub type FieldPath = Vec<Step>;

/// The fields a manager owns.
pub type FieldSet = BTreeSet<FieldPath>;

/// Fields nobody owns: identity and system metadata, and status (apply writes spec).
fn skipped(path: &[String], key: &str) -> bool {
    match path {
        [] => matches!(key, "apiVersion" | "kind" | "status"),
        [meta] if meta == "metadata" => matches!(
            key,
            "name"
                | "namespace"
                | "uid"
                | "resourceVersion"
                | "generation"
                | "creationTimestamp"
                | "deletionTimestamp"
                | "deletionGracePeriodSeconds"
                | "managedFields"
                | "selfLink"
        ),
        _ => false,
    }
}

/// The fields an applied configuration sets.
pub fn of_object(kind: &str, object: &Value) -> FieldSet {
    let mut set = FieldSet::new();
    let mut names = Vec::new();
    walk(kind, object, &mut Vec::new(), &mut names, &mut set);
    set
}

fn walk(
    kind: &str,
    value: &Value,
    path: &mut FieldPath,
    names: &mut Vec<String>,
    set: &mut FieldSet,
) {
    let Value::Object(map) = value else {
        set.insert(path.clone());
        return;
    };
    if map.is_empty() && !path.is_empty() {
        set.insert(path.clone());
    }
    for (key, child) in map {
        if skipped(names, key) {
            continue;
        }
        path.push(Step::Field(key.clone()));
        names.push(key.clone());
        match child {
            Value::Array(items) => walk_list(kind, items, path, names, set),
            Value::Object(_) => walk(kind, child, path, names, set),
            _ => {
                set.insert(path.clone());
            }
        }
        names.pop();
        path.pop();
    }
}

fn walk_list(
    kind: &str,
    items: &[Value],
    path: &mut FieldPath,
    names: &mut Vec<String>,
    set: &mut FieldSet,
) {
    let fields: Vec<&str> = names.iter().map(String::as_str).collect();
    match list_strategy(kind, &fields) {
        ListStrategy::MergeByKey(key) => {
            for item in items {
                let Some(id) = item.get(key) else { continue };
                path.push(Step::Key(key.to_string(), id.to_string()));
                set.insert(path.clone());
                walk(kind, item, path, names, set);
                path.pop();
            }
        }
        ListStrategy::Set => {
            for item in items {
                path.push(Step::Value(item.to_string()));
                set.insert(path.clone());
                path.pop();
            }
        }
        ListStrategy::Replace => {
            set.insert(path.clone());
        }
    }
}

fn step_text(step: &Step) -> String {
    match step {
        Step::Field(name) => format!("f:{name}"),
        Step::Key(key, value) => format!("k:{{{}:{value}}}", Value::String(key.clone())),
        Step::Value(value) => format!("v:{value}"),
    }
}

/// The `fieldsV1` JSON of a set.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for (index, step) in path.iter().enumerate() {
            let entry = node
                .entry(step_text(step))
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(child) = entry else { break };
            node = child;
            let is_last = index + 1 == path.len();
            let has_children = set
                .iter()
                .any(|other| other.len() > path.len() && other.starts_with(path));
            if is_last && has_children {
                node.insert(".".into(), Value::Object(Map::new()));
            }
        }
    }
    Value::Object(root)
}

fn parse_step(text: &str) -> Option<Step> {
    let (prefix, rest) = text.split_at_checked(2)?;
    match prefix {
        "f:" => Some(Step::Field(rest.to_string())),
        "v:" => serde_json::from_str::<Value>(rest)
            .ok()
            .map(|value| Step::Value(value.to_string())),
        "k:" => {
            let Value::Object(map) = serde_json::from_str(rest).ok()? else {
                return None;
            };
            let (key, value) = map.into_iter().next()?;
            Some(Step::Key(key, value.to_string()))
        }
        _ => None,
    }
}

/// Reads a `fieldsV1` JSON back into a set (unknown steps are skipped).
pub fn from_fields_v1(fields: &Value) -> FieldSet {
    let mut set = FieldSet::new();
    collect(fields, &mut Vec::new(), &mut set);
    set
}

fn collect(node: &Value, path: &mut FieldPath, set: &mut FieldSet) {
    let Some(map) = node.as_object() else { return };
    if !path.is_empty() && (map.is_empty() || map.contains_key(".")) {
        set.insert(path.clone());
    }
    for (text, child) in map {
        if let Some(step) = parse_step(text) {
            path.push(step);
            collect(child, path, set);
            path.pop();
        }
    }
}

/// The value at `path` in `object`, if any.
pub fn get<'a>(object: &'a Value, path: &[Step]) -> Option<&'a Value> {
    let mut node = object;
    for step in path {
        node = match step {
            Step::Field(name) => node.get(name)?,
            Step::Key(key, id) => node
                .as_array()?
                .iter()
                .find(|item| has_key(item, key, id))?,
            Step::Value(value) => node
                .as_array()?
                .iter()
                .find(|item| same_json(item, value))?,
        };
    }
    Some(node)
}

/// Whether a list item's merge key `key` has the value whose JSON text is `id`.
fn has_key(item: &Value, key: &str, id: &str) -> bool {
    item.get(key).is_some_and(|value| same_json(value, id))
}

/// Whether `value` is the value written as the JSON `text`.
fn same_json(value: &Value, text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|parsed| parsed == *value)
}

/// Removes the field at `path` from `object` (nothing happens if it is absent).
pub fn remove(object: &mut Value, path: &[Step]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = object;
    for step in parents {
        let next = match step {
            Step::Field(name) => node.get_mut(name),
            Step::Key(key, id) => node
                .as_array_mut()
                .and_then(|items| items.iter_mut().find(|item| has_key(item, key, id))),
            Step::Value(_) => None,
        };
        let Some(next) = next else { return };
        node = next;
    }
    match last {
        Step::Field(name) => {
            if let Some(map) = node.as_object_mut() {
                map.remove(name);
            }
        }
        Step::Key(key, id) => {
            if let Some(items) = node.as_array_mut() {
                items.retain(|item| !has_key(item, key, id));
            }
        }
        Step::Value(value) => {
            if let Some(items) = node.as_array_mut() {
                items.retain(|item| !same_json(item, value));
            }
        }
    }
}

/// A path as upstream prints it in conflicts: `.spec.containers[name="main"].image`.
pub fn display(path: &[Step]) -> String {
    let mut text = String::new();
    for step in path {
        match step {
            Step::Field(name) => {
                text.push('.');
                text.push_str(name);
            }
            Step::Key(key, value) => text.push_str(&format!("[{key}={value}]")),
            Step::Value(value) => text.push_str(&format!("[={value}]")),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn applied() -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["x"]},
               "spec": {"containers": [{"name": "main", "image": "nginx", "args": ["a"]}]}})
    }

    #[test]
    fn an_applied_pod_owns_its_leaves_and_keyed_items_in_fields_v1_form() {
        let set = of_object("Pod", &applied());
        assert_eq!(
            to_fields_v1(&set),
            json!({"f:metadata": {"f:finalizers": {"v:\"x\"": {}}, "f:labels": {"f:app": {}}},
                   "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {
                       ".": {}, "f:args": {}, "f:image": {}, "f:name": {}}}}})
        );
    }

    #[test]
    fn fields_v1_reads_back_into_the_same_set() {
        let set = of_object("Pod", &applied());
        assert_eq!(from_fields_v1(&to_fields_v1(&set)), set);
    }

    #[test]
    fn paths_find_and_remove_keyed_items_and_print_like_upstream() {
        let mut pod = applied();
        let path = vec![
            Step::Field("spec".into()),
            Step::Field("containers".into()),
            Step::Key("name".into(), "\"main\"".into()),
            Step::Field("image".into()),
        ];
        assert_eq!(get(&pod, &path), Some(&json!("nginx")));
        assert_eq!(display(&path), ".spec.containers[name=\"main\"].image");
        remove(&mut pod, &path);
        assert!(get(&pod, &path).is_none());
        remove(&mut pod, &path[..3]);
        assert_eq!(pod["spec"]["containers"], json!([]));
    }
}
