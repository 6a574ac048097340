//! Namespace deletion: Terminating, then the contents go, then the namespace.
//!
//! Kubernetes counterpart: the namespace registry (`pkg/registry/core/namespace/storage`: a DELETE
//! sets `deletionTimestamp` and `status.phase: Terminating`, and the `kubernetes` entry of
//! `spec.finalizers` holds the object) and the namespace controller
//! (`pkg/controller/namespace/deletion/namespaced_resources_deleter.go`: delete every namespaced
//! object, wait until none is left, remove the finalizer). The NamespaceLifecycle admission plugin
//! refuses new objects in a terminating namespace.
//!
//! minik folds the controller into the apiserver: the DELETE removes the contents itself (pods
//! gracefully, so their kubelets still stop them), and whichever removal empties a terminating
//! namespace also removes the namespace.

use minik_api::resource::RESOURCES;
use minik_api::status;
use serde_json::{json, Value};
use tracing::info;

use super::delete::delete_one;
use crate::error::{ApiError, ApiResult};
use crate::registry::deletion::DeleteOptions;
use crate::request::{storage_key, Target};
use crate::storage::{self, Storage};
use crate::AppState;

/// The namespaces that exist from the start, as in every Kubernetes cluster.
pub const INITIAL_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

fn namespace_key(name: &str) -> String {
    format!("/registry/namespaces/{name}")
}

/// Whether a stored namespace is being deleted.
pub fn is_terminating(namespace: &Value) -> bool {
    namespace["metadata"]["deletionTimestamp"].is_string()
}

/// Fails unless the namespace exists and accepts new objects (404, or 403 while terminating).
pub fn require_active(state: &AppState, namespace: &str) -> ApiResult<()> {
    let record = state
        .storage
        .get(&namespace_key(namespace))
        .map_err(|e| ApiError::from_storage(e, "namespaces", namespace))?
        .ok_or_else(|| ApiError::from(status::not_found("namespaces", namespace)))?;
    if is_terminating(&record.value) {
        let message = format!(
            "unable to create new content in namespace {namespace} because it is being terminated"
        );
        return Err(status::failure(403, "Forbidden", message).into());
    }
    Ok(())
}

/// After a namespace was marked Terminating: deletes what it contains, then the namespace if empty.
/// Returns the namespace's latest state.
pub async fn delete_contents(state: &AppState, namespace: &str, marked: Value) -> ApiResult<Value> {
    let options = DeleteOptions::default();
    for info in namespaced_kinds(state) {
        let prefix = storage_key(info, Some(namespace), "");
        let (records, _) = state
            .storage
            .list(&prefix)
            .map_err(|e| ApiError::from_storage(e, &info.group_resource(), ""))?;
        for record in records {
            let name = record.value["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let target = Target {
                info,
                namespace: Some(namespace.to_string()),
                name: Some(name.clone()),
                subresource: None,
            };
            let key = storage_key(info, Some(namespace), &name);
            match delete_one(state, &target, &key, &name, &options).await {
                Ok(_) => {}
                Err(e) if e.code() == 404 => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(finish_if_empty(state, namespace).await?.unwrap_or(marked))
}

/// The namespaced kinds a namespace may hold: the built-in ones and those of established CRDs.
fn namespaced_kinds(state: &AppState) -> Vec<&'static minik_api::ResourceInfo> {
    let custom = state
        .custom
        .storage_kinds()
        .into_iter()
        .map(|kind| kind.info);
    RESOURCES
        .iter()
        .chain(custom)
        .filter(|info| info.namespaced)
        .collect()
}

/// Removes a terminating namespace once nothing is left in it; `Some(last state)` if removed.
pub async fn finish_if_empty(state: &AppState, namespace: &str) -> ApiResult<Option<Value>> {
    let storage_error = |e| ApiError::from_storage(e, "namespaces", namespace);
    let Some(record) = state
        .storage
        .get(&namespace_key(namespace))
        .map_err(storage_error)?
    else {
        return Ok(None);
    };
    if !is_terminating(&record.value) {
        return Ok(None);
    }
    for info in namespaced_kinds(state) {
        let prefix = storage_key(info, Some(namespace), "");
        if !state
            .storage
            .list(&prefix)
            .map_err(storage_error)?
            .0
            .is_empty()
        {
            return Ok(None);
        }
    }
    match state
        .storage
        .delete(&namespace_key(namespace), Some(record.revision))
        .await
    {
        Ok(removed) => {
            info!(namespace, "removed terminated namespace");
            Ok(Some((*removed.value).clone()))
        }
        Err(storage::Error::NotFound(_)) | Err(storage::Error::Conflict { .. }) => Ok(None),
        Err(e) => Err(storage_error(e)),
    }
}

/// Creates the initial namespaces if they are missing.
pub async fn bootstrap_namespaces(storage: &dyn Storage) -> Result<(), storage::Error> {
    for name in INITIAL_NAMESPACES {
        let key = format!("/registry/namespaces/{name}");
        if storage.get(&key)?.is_some() {
            continue;
        }
        let namespace = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "uid": uuid::Uuid::new_v4().to_string(),
                         "creationTimestamp": crate::registry::meta::now_value(),
                         "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {}, "status": {"phase": "Active"}
        });
        match storage.create(&key, namespace).await {
            Ok(_) | Err(storage::Error::AlreadyExists(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
