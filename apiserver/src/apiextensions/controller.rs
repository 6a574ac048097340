//! The CRD controllers inside the API server: names, Established, serving, and cleanup on delete.
//!
//! Kubernetes counterpart: the controllers apiextensions-apiserver runs in-process:
//! `pkg/controller/status/naming_controller.go` (a CRD's names are accepted unless another CRD of
//! its group already uses one: `NamesAccepted`, `status.acceptedNames`),
//! `pkg/controller/establish/establishing_controller.go` (`Established` once the names are
//! accepted), the `crdHandler`'s storage map rebuilt on each change
//! (`pkg/apiserver/customresource_handler.go`) and `pkg/controller/finalizer/crd_finalizer.go`
//! (a deleted CRD's objects are deleted, then its cleanup finalizer is removed and it goes).
//!
//! The loop lists the CRDs, then follows their watch: each event re-syncs one CRD, idempotently
//! (a status write it causes comes back as an event that changes nothing). The kind is put in the
//! server's table *before* `Established` is written, so a client that waited for the condition
//! can use the kind at once; upstream has the same order.
//!
//! A deleted CRD is handed to `finalizer.rs`.
//!
//! minik simplifies: one process, so no wait for other API servers before `Established`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use minik_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;
use tracing::{info, warn};

use super::kinds::{intern, CustomKind, Names};
use super::{conversion_config, crd};
use crate::request::{parse_target, Target};
use crate::store::update::guaranteed_update;
use crate::AppState;

const PREFIX: &str = "/registry/customresourcedefinitions/";

/// Runs the controllers until the server shuts down.
pub async fn run(state: AppState) {
    let cleaning: Arc<Mutex<HashSet<String>>> = Arc::default();
    while !state.shutdown.is_cancelled() {
        let Ok((records, revision)) = state.storage.list(PREFIX) else {
            return;
        };
        let present: HashSet<String> = records.iter().map(|r| name_of(&r.value)).collect();
        for kind in state.custom.all() {
            if !present.contains(&kind.crd) {
                state.custom.remove(&kind.crd);
            }
        }
        for record in &records {
            sync(&state, &record.value, &cleaning).await;
        }
        let Ok(mut events) = state.storage.watch(PREFIX, revision) else {
            continue;
        };
        loop {
            let event = tokio::select! {
                _ = state.shutdown.cancelled() => return,
                event = events.next() => event,
            };
            match event {
                Some(Ok(event)) if event.event_type == crate::storage::EventType::Deleted => {
                    let name = name_of(&event.object);
                    state.custom.remove(&name);
                    info!(crd = %name, "stopped serving deleted custom resource definition");
                }
                Some(Ok(event)) => sync(&state, &event.object, &cleaning).await,
                // Expired or ended: list again.
                Some(Err(_)) | None => break,
            }
        }
    }
}

fn name_of(crd: &Value) -> String {
    crd["metadata"]["name"].as_str().unwrap_or("").to_string()
}

/// Brings the server's table and the CRD's status in line with the stored CRD.
async fn sync(state: &AppState, object: &Value, cleaning: &Arc<Mutex<HashSet<String>>>) {
    let name = name_of(object);
    let Ok(crd) = serde_json::from_value::<CustomResourceDefinition>(object.clone()) else {
        warn!(crd = %name, "stored custom resource definition does not decode");
        return;
    };
    if object["metadata"]["deletionTimestamp"].is_string() {
        state.custom.replace(&name, kinds_of(&crd, true));
        let started = cleaning
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.clone());
        if started {
            let (state, cleaning) = (state.clone(), cleaning.clone());
            tokio::spawn(async move {
                super::finalizer::cleanup(&state, &crd).await;
                cleaning
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&name);
            });
        }
        return;
    }
    let conflict = name_conflict(state, &crd);
    if conflict.is_none() {
        state.custom.replace(&name, kinds_of(&crd, false));
    }
    let result = write_status(state, &name, |stored| {
        accepted(stored, &crd, conflict.as_deref())
    })
    .await;
    match result {
        Ok(true) => {
            info!(crd = %name, accepted = conflict.is_none(), "custom resource definition synced")
        }
        Ok(false) => {}
        Err(e) => {
            warn!(crd = %name, error = %e.0.message.unwrap_or_default(), "status update failed")
        }
    }
}

/// The kinds a CRD serves: one per served version, plus the storage version (for cleanup).
pub fn kinds_of(crd: &CustomResourceDefinition, terminating: bool) -> Vec<CustomKind> {
    let spec = &crd.spec;
    let storage = crd::storage_version(crd).unwrap_or_default();
    let conversion = conversion_config::webhook_of(crd);
    let names = &spec.names;
    let short_names = names.short_names.clone().unwrap_or_default();
    let singular = names
        .singular
        .clone()
        .unwrap_or_else(|| names.kind.to_lowercase());
    spec.versions
        .iter()
        .filter(|v| v.served || v.storage)
        .map(|version| {
            let api_version = format!("{}/{}", spec.group, version.name);
            let info = intern(&Names {
                kind: &names.kind,
                plural: &names.plural,
                singular: &singular,
                short_names: &short_names,
                namespaced: spec.scope == "Namespaced",
                api_version: &api_version,
            });
            let subresources = version.subresources.as_ref();
            CustomKind {
                info,
                crd: crd.metadata.name.clone().unwrap_or_default(),
                group: spec.group.clone(),
                version: version.name.clone(),
                storage_version: storage.clone(),
                served: version.served,
                schema: version
                    .schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.clone()),
                status: subresources.is_some_and(|s| s.status.is_some()),
                scale: subresources.and_then(|s| s.scale.clone()),
                columns: version
                    .additional_printer_columns
                    .clone()
                    .unwrap_or_default(),
                categories: names.categories.clone().unwrap_or_default(),
                list_kind: names
                    .list_kind
                    .clone()
                    .unwrap_or_else(|| format!("{}List", names.kind)),
                terminating,
                conversion: conversion.clone(),
            }
        })
        .collect()
}

/// Why the CRD's names cannot be accepted: another CRD of its group already uses one of them.
fn name_conflict(state: &AppState, crd: &CustomResourceDefinition) -> Option<String> {
    let (records, _) = state.storage.list(PREFIX).ok()?;
    let names = &crd.spec.names;
    let mine: Vec<&str> = [Some(names.plural.as_str()), names.singular.as_deref()]
        .into_iter()
        .flatten()
        .chain(names.short_names.iter().flatten().map(String::as_str))
        .collect();
    for record in records {
        let other = &record.value;
        if name_of(other) == crd.metadata.name.clone().unwrap_or_default()
            || other["spec"]["group"] != crd.spec.group.as_str()
        {
            continue;
        }
        let accepted = &other["status"]["acceptedNames"];
        let taken = |field: &str| accepted[field].as_str().filter(|s| !s.is_empty());
        for used in [taken("plural"), taken("singular")]
            .into_iter()
            .flatten()
            .chain(
                accepted["shortNames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str),
            )
        {
            if mine.contains(&used) {
                return Some(format!("\"{used}\" is already in use"));
            }
        }
        if taken("kind") == Some(names.kind.as_str()) {
            return Some(format!("\"{}\" is already in use", names.kind));
        }
    }
    None
}

/// The stored CRD with the naming and establishing controllers' conditions.
fn accepted(stored: &Value, crd: &CustomResourceDefinition, conflict: Option<&str>) -> Value {
    let mut object = stored.clone();
    match conflict {
        None => {
            object["status"]["acceptedNames"] =
                serde_json::to_value(&crd.spec.names).unwrap_or(Value::Null);
            crd::set_condition(
                &mut object,
                "NamesAccepted",
                "True",
                "NoConflicts",
                "no conflicts found",
            );
            crd::set_condition(
                &mut object,
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            );
        }
        Some(message) => {
            crd::set_condition(
                &mut object,
                "NamesAccepted",
                "False",
                "NameConflict",
                message,
            );
            if !crd::condition_true(&object, "Established") {
                crd::set_condition(
                    &mut object,
                    "Established",
                    "False",
                    "NotAccepted",
                    "not all names are accepted",
                );
            }
        }
    }
    object
}

/// Writes the CRD `name` as `change` makes it from the stored one; whether anything was written.
pub(super) async fn write_status(
    state: &AppState,
    name: &str,
    change: impl Fn(&Value) -> Value,
) -> crate::error::ApiResult<bool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let changed = AtomicBool::new(false);
    guaranteed_update(state, &crd_target(name), None, false, |stored| {
        let next = change(stored);
        changed.store(next != *stored, Ordering::Relaxed);
        Ok(next)
    })
    .await?;
    Ok(changed.load(Ordering::Relaxed))
}

fn crd_target(name: &str) -> Target {
    parse_target(
        "apiextensions.k8s.io",
        &format!("customresourcedefinitions/{name}"),
    )
    .expect("customresourcedefinitions are served")
}
