//! The CRD finalizer: a deleted CustomResourceDefinition's objects are deleted, then it goes.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver/pkg/controller/finalizer/crd_finalizer.go`.
//! The first DELETE of a CRD only marks it (`crd.rs` adds `customresourcecleanup.apiextensions.k8s.io`
//! and a `Terminating` condition); the kind keeps serving reads and deletes, not creates. This task
//! then deletes every object of the kind through the ordinary delete (so their own finalizers are
//! honoured), waits on the kind's watch while some remain, and last removes the finalizer, which
//! removes the CRD.
//!
//! minik simplifies: no rate limit or requeue delay; one task per terminating CRD.

use futures::StreamExt;
use minik_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;
use tracing::{info, warn};

use super::controller::{kinds_of, write_status};
use super::crd::{self, CLEANUP_FINALIZER};
use super::kinds::CustomKind;
use crate::registry::deletion::DeleteOptions;
use crate::request::{storage_key, Target};
use crate::store::delete::delete_one;
use crate::AppState;

/// Deletes every object of a deleted CRD, then releases the CRD (upstream's finalizer controller).
pub async fn cleanup(state: &AppState, crd: &CustomResourceDefinition) {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let Some(kind) = kinds_of(crd, true)
        .into_iter()
        .find(|k| k.version == k.storage_version)
    else {
        return;
    };
    let progress = |stored: &Value| {
        let mut object = stored.clone();
        crd::set_condition(
            &mut object,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        );
        object
    };
    let _ = write_status(state, &name, progress).await;
    let probe = Target {
        info: kind.info,
        namespace: None,
        name: None,
        subresource: None,
    };
    let prefix = probe.prefix();
    loop {
        let Ok((records, revision)) = state.storage.list(&prefix) else {
            return;
        };
        if records.is_empty() {
            break;
        }
        info!(crd = %name, objects = records.len(), "deleting custom resources of a deleted definition");
        for record in &records {
            delete_object(state, &kind, &record.value).await;
        }
        // Objects held by finalizers of their own: wait for the next change under the prefix.
        let Ok(mut events) = state.storage.watch(&prefix, revision) else {
            continue;
        };
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = events.next() => {}
        }
    }
    let release = |stored: &Value| {
        let mut object = stored.clone();
        if let Some(finalizers) = object["metadata"]["finalizers"].as_array_mut() {
            finalizers.retain(|f| f != CLEANUP_FINALIZER);
        }
        crd::set_condition(
            &mut object,
            "Terminating",
            "True",
            "InstanceDeletionCompleted",
            "removed all instances",
        );
        object
    };
    match write_status(state, &name, release).await {
        Ok(_) => {
            info!(crd = %name, "custom resource definition released after its objects were deleted")
        }
        Err(e) => {
            warn!(crd = %name, error = %e.0.message.unwrap_or_default(), "releasing the definition failed")
        }
    }
}

async fn delete_object(state: &AppState, kind: &CustomKind, object: &Value) {
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let namespace = object["metadata"]["namespace"].as_str().map(str::to_string);
    let target = Target {
        info: kind.info,
        namespace: namespace.clone(),
        name: Some(name.clone()),
        subresource: None,
    };
    let key = storage_key(kind.info, namespace.as_deref(), &name);
    if let Err(e) = delete_one(state, &target, &key, &name, &DeleteOptions::default()).await {
        if e.code() != 404 {
            warn!(key = %key, error = %e.0.message.clone().unwrap_or_default(), "deleting a custom resource failed");
        }
    }
}
