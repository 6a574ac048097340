//! Server-side apply: `PATCH` with `Content-Type: application/apply-patch+yaml`.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager` and
//! `sigs.k8s.io/structured-merge-diff/merge` (`Updater.Apply`). `kubectl apply --server-side`
//! sends the whole manifest, `?fieldManager=kubectl&force=false`; the server:
//!
//! 1. refuses the request without a `fieldManager` (400);
//! 2. creates the object if it does not exist (apply is an upsert);
//! 3. checks for conflicts: a field this configuration sets to a *different* value that another
//!    applier owns is a 409 `Conflict` naming the field and the owner, unless `force=true`, which
//!    takes the field over;
//! 4. merges the configuration into the live object (maps by key, keyed lists item by item, like
//!    strategic merge);
//! 5. removes the fields this manager applied last time and no longer applies (and nobody else
//!    owns) — which is how deleting a label from the manifest deletes it from the object;
//! 6. records the manager's field set in `metadata.managedFields` (`operation: Apply`,
//!    `fieldsType: FieldsV1`).
//!
//! minik simplifies: only appliers' ownership is tracked. Ordinary writes (PUT, merge and
//! strategic patches: upstream's `operation: Update` entries) record no managedFields and never
//! conflict, so an apply never conflicts with the kubelet or a controller. Kept entries of other
//! managers are preserved as they are.

use serde_json::{json, Map, Value};

use super::fieldset::{self, FieldSet};
use super::{strategic, Error, Result};

/// The query parameters of an apply request.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `fieldManager` (required).
    pub field_manager: Option<String>,
    /// `force=true`: take over conflicting fields.
    pub force: bool,
    /// The time to record in the manager's entry (RFC 3339, seconds).
    pub time: String,
    /// Applying to the `status` subresource: the configuration's `status` is kept (and, as a
    /// simplification, not tracked in the field set).
    pub status: bool,
}

/// One `metadata.managedFields` entry, with its field set parsed.
struct Entry {
    raw: Value,
    manager: String,
    is_apply: bool,
    fields: FieldSet,
}

fn entries(live: &Value) -> Vec<Entry> {
    let Some(list) = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .map(|raw| Entry {
            manager: raw["manager"].as_str().unwrap_or("").to_string(),
            is_apply: raw["operation"] == "Apply",
            fields: raw
                .get("fieldsV1")
                .map(fieldset::from_fields_v1)
                .unwrap_or_default(),
            raw: raw.clone(),
        })
        .collect()
}

/// The applied configuration as it will be merged: system metadata and directives removed.
fn clean_config(applied: &Value, keep_status: bool) -> Result<Value> {
    let Value::Object(_) = applied else {
        return Err(Error::BadPatch(
            "an apply configuration must be an object".into(),
        ));
    };
    let mut config = applied.clone();
    if let Some(Value::Object(meta)) = config.get_mut("metadata") {
        for key in [
            "managedFields",
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
        ] {
            meta.remove(key);
        }
    }
    if let Value::Object(map) = &mut config {
        if !keep_status {
            map.remove("status");
        }
    }
    Ok(config)
}

fn entry_json(manager: &str, api_version: &str, time: &str, fields: &FieldSet) -> Value {
    json!({"manager": manager, "operation": "Apply", "apiVersion": api_version, "time": time,
           "fieldsType": "FieldsV1", "fieldsV1": fieldset::to_fields_v1(fields)})
}

/// Applies `applied` (already parsed from YAML) for the manager in `options`. `live` is the stored
/// object, or `None` when apply creates it. Returns the object to store.
pub fn apply(
    kind: &str,
    live: Option<&Value>,
    applied: &Value,
    options: &Options,
) -> Result<Value> {
    let manager = options
        .field_manager
        .as_deref()
        .filter(|m| !m.is_empty())
        .ok_or(Error::MissingFieldManager)?;
    let config = clean_config(applied, options.status)?;
    let api_version = config["apiVersion"].as_str().unwrap_or("v1").to_string();
    let applied_set = fieldset::of_object(kind, &config);
    let Some(live) = live else {
        let mut object = config;
        set_managed_fields(
            &mut object,
            vec![entry_json(
                manager,
                &api_version,
                &options.time,
                &applied_set,
            )],
        );
        return Ok(object);
    };
    let mut others = entries(live);
    let mine = others
        .iter()
        .position(|e| e.is_apply && e.manager == manager)
        .map(|index| others.remove(index));
    take_over_or_conflict(live, &config, &applied_set, &mut others, options.force)?;

    let mut object = strategic::merge(kind, live, &config)?;
    let previous = mine.as_ref().map(|e| e.fields.clone()).unwrap_or_default();
    for stale in previous.difference(&applied_set) {
        let owned_elsewhere = others.iter().any(|e| e.fields.contains(stale))
            || applied_set
                .iter()
                .any(|p| p.len() > stale.len() && p.starts_with(stale));
        if !owned_elsewhere {
            fieldset::remove(&mut object, stale);
        }
    }

    // Keep the old timestamp when nothing changed, so a repeated apply is a no-op write.
    let time = match &mine {
        Some(entry) if entry.fields == applied_set => entry.raw["time"]
            .as_str()
            .unwrap_or(&options.time)
            .to_string(),
        _ => options.time.clone(),
    };
    let mut managed = vec![entry_json(manager, &api_version, &time, &applied_set)];
    for entry in others {
        let mut raw = entry.raw;
        if entry.is_apply {
            if entry.fields.is_empty() {
                continue;
            }
            raw["fieldsV1"] = fieldset::to_fields_v1(&entry.fields);
        }
        managed.push(raw);
    }
    set_managed_fields(&mut object, managed);
    Ok(object)
}

/// Step 3: fields set to a new value that another applier owns.
fn take_over_or_conflict(
    live: &Value,
    config: &Value,
    applied_set: &FieldSet,
    others: &mut [Entry],
    force: bool,
) -> Result<()> {
    let mut conflicts = Vec::new();
    for entry in others.iter_mut().filter(|e| e.is_apply) {
        let contested: Vec<_> = entry
            .fields
            .intersection(applied_set)
            .filter(|path| {
                let new = fieldset::get(config, path);
                new.is_some_and(|v| !v.is_object()) && fieldset::get(live, path) != new
            })
            .cloned()
            .collect();
        for path in contested {
            if force {
                entry.fields.remove(&path);
            } else {
                conflicts.push((fieldset::display(&path), entry.manager.clone()));
            }
        }
    }
    if conflicts.is_empty() {
        return Ok(());
    }
    let count = conflicts.len();
    let listed: Vec<String> = conflicts
        .iter()
        .map(|(field, manager)| format!("conflict with \"{manager}\" using v1: {field}"))
        .collect();
    let noun = if count == 1 { "conflict" } else { "conflicts" };
    Err(Error::Conflict {
        message: format!("Apply failed with {count} {noun}: {}", listed.join("\n")),
        conflicts,
    })
}

fn set_managed_fields(object: &mut Value, managed: Vec<Value>) {
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = Value::Object(Map::new());
    }
    object["metadata"]["managedFields"] = Value::Array(managed);
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
