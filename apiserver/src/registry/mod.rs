//! The registry: per-kind rules applied to every write before it reaches storage.
//!
//! Kubernetes counterpart: `pkg/registry/*` (one "strategy" per kind: `PrepareForCreate`,
//! `PrepareForUpdate`, `Validate`, `ValidateUpdate`, `CheckGracefulDelete`) driven by the generic
//! store in `k8s.io/apiserver/pkg/registry/generic/registry/store.go`. minik's generic part is
//! [`prepare_create`] / [`prepare_update`] here and [`meta`]; the kind-specific parts are
//! [`object_meta`] (every object's metadata: shape, labels, annotations, finalizers), [`pods`] (defaults, validation, immutability, binding), [`serviceaccounts`] (the pod admission
//! that mounts the account's token), [`services`] (cluster IP allocation) and [`node_ports`],
//! [`workloads`] (Deployments and ReplicaSets), [`jobs`], [`networking`] (Ingresses and their classes), [`controllers`] (ReplicationControllers,
//! DaemonSets and CronJobs), [`storage_kinds`] (StatefulSets, PVs, PVCs, StorageClasses, the
//! DefaultStorageClass admission), [`disruption`] (PodDisruptionBudgets), [`configmaps`] and [`secrets`]
//! (keys, Secret types, `stringData`, `immutable`), [`scale`] (the autoscaling/v1 Scale view),
//! [`propagation`] (garbage-collection finalizers) and [`deletion`] (graceful delete). Every
//! object is round-tripped through its typed k8s-openapi struct, so what is stored is exactly
//! Kubernetes' JSON shape (unknown fields are dropped, as upstream does without
//! `fieldValidation=Strict`).

pub mod configmaps;
pub mod controllers;
pub mod deletion;
pub mod disruption;
pub mod ephemeral;
pub mod jobs;
pub mod meta;
pub mod networking;
pub mod node_ports;
pub mod object_meta;
pub mod patch;
pub mod pods;
pub mod propagation;
pub mod scale;
pub mod secrets;
pub mod serviceaccounts;
pub mod services;
pub mod storage_kinds;
pub mod workloads;

use minik_api::apps::ControllerRevision;
use minik_api::core::{Endpoints, Event, Namespace, Node, ServiceAccount};
use minik_api::k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use minik_api::k8s_openapi::api::coordination::v1::Lease;
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use minik_api::k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use minik_api::validation::{validate_name, NameRule};
use minik_api::{status, ResourceInfo};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// Kinds whose `status` is written only through the `/status` subresource.
pub fn has_status_subresource(kind: &str) -> bool {
    matches!(
        kind,
        "Pod"
            | "Service"
            | "Node"
            | "Namespace"
            | "Deployment"
            | "ReplicaSet"
            | "Job"
            | "PodDisruptionBudget"
            // The later workload controllers (issue 20).
            | "ReplicationController"
            | "DaemonSet"
            | "CronJob"
            | "Ingress"
            // StatefulSets and the storage they claim (issue 20).
            | "StatefulSet"
            | "PersistentVolume"
            | "PersistentVolumeClaim"
            | "HorizontalPodAutoscaler"
            | "APIService"
            // CustomResourceDefinitions (issue 21).
            | "CustomResourceDefinition"
    )
}

/// Whether `DELETE` on the collection is served: upstream's namespace storage has no
/// deletecollection (one request must not be able to delete every namespace), so it is a 405.
pub fn has_delete_collection(kind: &str) -> bool {
    kind != "Namespace"
}

/// Decodes JSON into a typed object; a shape error (a string where a number belongs …) is a 400.
pub fn typed<K: DeserializeOwned>(value: Value, kind: &str) -> ApiResult<K> {
    serde_json::from_value(value).map_err(|e| {
        ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a {kind}: {e}"
        ))
    })
}

/// Encodes a typed object back to JSON.
pub fn untyped<K: Serialize>(object: &K) -> ApiResult<Value> {
    serde_json::to_value(object)
        .map_err(|e| status::internal(format!("encoding failed: {e}")).into())
}

fn round_trip<K: DeserializeOwned + Serialize>(value: Value, kind: &str) -> ApiResult<Value> {
    untyped(&typed::<K>(value, kind)?)
}

/// Normalises an object of a kind without a strategy of its own.
fn normalize(value: Value, kind: &str) -> ApiResult<Value> {
    match kind {
        "Endpoints" => round_trip::<Endpoints>(value, kind),
        "Event" => round_trip::<Event>(value, kind),
        "Node" => round_trip::<Node>(value, kind),
        "Lease" => round_trip::<Lease>(value, kind),
        "ServiceAccount" => round_trip::<ServiceAccount>(value, kind),
        "EndpointSlice" => round_trip::<EndpointSlice>(value, kind),
        "Role" => round_trip::<Role>(value, kind),
        "ClusterRole" => round_trip::<ClusterRole>(value, kind),
        "RoleBinding" => round_trip::<RoleBinding>(value, kind),
        "ClusterRoleBinding" => round_trip::<ClusterRoleBinding>(value, kind),
        "ControllerRevision" => round_trip::<ControllerRevision>(value, kind),
        "HorizontalPodAutoscaler" => round_trip::<HorizontalPodAutoscaler>(value, kind),
        "APIService" => round_trip::<APIService>(value, kind),
        "Namespace" => {
            let mut namespace: Namespace = typed(value, kind)?;
            // As upstream's namespace strategy: every namespace carries its name as a label.
            let name = namespace.metadata.name.clone().unwrap_or_default();
            namespace
                .metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert("kubernetes.io/metadata.name".into(), name);
            namespace
                .status
                .get_or_insert_with(Default::default)
                .phase
                .get_or_insert_with(|| "Active".into());
            untyped(&namespace)
        }
        _ => Ok(value),
    }
}

fn check_name(object: &Value, kind: &str) -> ApiResult<()> {
    let name = meta::meta_str(object, "name").unwrap_or("");
    let causes = validate_name(name, NameRule::for_kind(kind));
    if causes.is_empty() {
        Ok(())
    } else {
        Err(status::invalid(kind, name, causes).into())
    }
}

/// Everything a create goes through: type and system metadata, the kind's defaults and
/// validation. `allocated` are the cluster IPs and node ports taken (only read for Services).
pub fn prepare_create(
    info: &ResourceInfo,
    mut object: Value,
    namespace: Option<&str>,
    allocated: &services::Allocated,
) -> ApiResult<Value> {
    meta::set_type_meta(&mut object, info.api_version, info.kind)?;
    object_meta::check(&object, info.kind)?;
    meta::prepare_create(&mut object, namespace)?;
    check_name(&object, info.kind)?;
    let object = match info.kind {
        "Pod" => pods::prepare_create(object)?,
        "Service" => services::prepare_create(object, allocated)?,
        "Deployment" => workloads::prepare_create_deployment(object)?,
        "ReplicaSet" => workloads::prepare_create_replica_set(object)?,
        "Job" => jobs::prepare_create(object)?,
        "ConfigMap" => configmaps::prepare_create(object)?,
        "Secret" => secrets::prepare_create(object)?,
        "PodDisruptionBudget" => disruption::prepare_create(object)?,
        // The later workload controllers (issue 20).
        "ReplicationController" => controllers::prepare_create_replication_controller(object)?,
        "DaemonSet" => controllers::prepare_create_daemon_set(object)?,
        "CronJob" => controllers::prepare_create_cron_job(object)?,
        "Ingress" => networking::prepare_create_ingress(object)?,
        "IngressClass" => networking::prepare_create_class(object)?,
        // StatefulSets and the storage they claim (issue 20).
        "StatefulSet" => storage_kinds::prepare_create_stateful_set(object)?,
        "PersistentVolume" => storage_kinds::prepare_create_volume(object)?,
        "PersistentVolumeClaim" => storage_kinds::prepare_create_claim(object)?,
        "StorageClass" => storage_kinds::prepare_create_class(object)?,
        "CustomResourceDefinition" => crate::apiextensions::crd::prepare_create(object)?,
        // Admission webhooks (issue 21).
        kind @ ("ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration") => {
            crate::admission::webhook_config::prepare(object, kind)?
        }
        kind => normalize(object, kind)?,
    };
    check_size(&object)?;
    Ok(object)
}

/// etcd's `--max-request-bytes` (1.5 MiB): upstream answers a larger object with 413 (since
/// kubernetes#74600) even when the body was under the 3 MiB request limit. minik measures the
/// JSON it stores (upstream's protobuf is smaller, so minik's bound is a little stricter).
pub const MAX_OBJECT_BYTES: u64 = 3 * 1024 * 1024 / 2;

fn check_size(object: &Value) -> ApiResult<()> {
    let mut counter = ByteCounter(0);
    // Writing into a counter cannot fail; an encoding error would surface when storing.
    let _ = serde_json::to_writer(&mut counter, object);
    if counter.0 > MAX_OBJECT_BYTES {
        return Err(status::too_large("etcdserver: request is too large").into());
    }
    Ok(())
}

/// Counts the bytes written to it, to size an object without keeping its encoding.
struct ByteCounter(u64);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Everything an update (PUT or PATCH) goes through. `subresource` is `Some("status")` for a
/// status write, which may change only `status`; a main write keeps the stored `status`.
/// `allocated` are the node ports taken (only read for Services).
pub fn prepare_update(
    info: &ResourceInfo,
    mut object: Value,
    old: &Value,
    name: &str,
    subresource: Option<&str>,
    allocated: &services::Allocated,
) -> ApiResult<Value> {
    meta::set_type_meta(&mut object, info.api_version, info.kind)?;
    object_meta::check(&object, info.kind)?;
    meta::prepare_update(&mut object, old, name, info.plural)?;
    let causes = meta::new_finalizers_while_deleting(&object, old);
    if !causes.is_empty() {
        return Err(status::invalid(info.kind, name, causes).into());
    }
    if subresource == Some("status") {
        let mut merged = old.clone();
        merged["status"] = object.get("status").cloned().unwrap_or(Value::Null);
        object = merged;
    } else if has_status_subresource(info.kind) {
        match old.get("status") {
            Some(status) => object["status"] = status.clone(),
            None => {
                object.as_object_mut().map(|o| o.remove("status"));
            }
        }
    }
    let mut object = match info.kind {
        "Pod" if subresource == Some("ephemeralcontainers") => {
            ephemeral::prepare_update(object, old)?
        }
        "Pod" => pods::prepare_update(object, old)?,
        "Service" => services::prepare_update(object, old, allocated)?,
        "Deployment" => workloads::prepare_update_deployment(object, old)?,
        "ReplicaSet" => workloads::prepare_update_replica_set(object, old)?,
        "Job" => jobs::prepare_update(object, old)?,
        "ConfigMap" => configmaps::prepare_update(object, old)?,
        "Secret" => secrets::prepare_update(object, old)?,
        "PodDisruptionBudget" => disruption::prepare_update(object)?,
        // The later workload controllers (issue 20).
        "ReplicationController" => controllers::prepare_update_replication_controller(object)?,
        "DaemonSet" => controllers::prepare_update_daemon_set(object, old)?,
        "CronJob" => controllers::prepare_update_cron_job(object)?,
        "Ingress" => networking::prepare_update_ingress(object)?,
        "IngressClass" => networking::prepare_update_class(object, old)?,
        // StatefulSets and the storage they claim (issue 20).
        "StatefulSet" => storage_kinds::prepare_update_stateful_set(object, old)?,
        "PersistentVolume" => storage_kinds::prepare_update_volume(object)?,
        "PersistentVolumeClaim" => storage_kinds::prepare_update_claim(object, old)?,
        "StorageClass" => storage_kinds::prepare_update_class(object, old)?,
        "CustomResourceDefinition" => crate::apiextensions::crd::prepare_update(object, old)?,
        // Admission webhooks (issue 21).
        kind @ ("ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration") => {
            crate::admission::webhook_config::prepare(object, kind)?
        }
        kind => normalize(object, kind)?,
    };
    bump_generation(&mut object, old, info.kind);
    check_size(&object)?;
    Ok(object)
}

/// `metadata.generation` counts changes of the desired state (`spec`), not of status or metadata
/// (save a Deployment's annotations, see [`workloads::annotations_bump_generation`]).
fn bump_generation(object: &mut Value, old: &Value, kind: &str) {
    let old_generation = old
        .get("metadata")
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let annotations = |o: &Value| o.pointer("/metadata/annotations").cloned();
    let changed = object.get("spec") != old.get("spec")
        || (workloads::annotations_bump_generation(kind)
            && annotations(object) != annotations(old));
    let generation = if changed {
        old_generation + 1
    } else {
        old_generation
    };
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("generation".into(), Value::from(generation));
    }
}
