//! The StatefulSet, PersistentVolume, PersistentVolumeClaim and StorageClass strategies, the
//! DefaultStorageClass admission, and the default StorageClass created at start.
//!
//! Kubernetes counterpart: `pkg/registry/apps/statefulset/strategy.go`,
//! `pkg/registry/core/persistentvolume/strategy.go`,
//! `pkg/registry/core/persistentvolumeclaim/strategy.go`,
//! `pkg/registry/storage/storageclass/strategy.go`, and the admission plugin
//! `plugin/pkg/admission/storage/storageclass/setdefault/admission.go`: a claim created without
//! `storageClassName` gets the default class (the newest, if several are marked). The rules are
//! pure, in `minik_api::statefulsets` and `minik_api::storage`.
//!
//! minik simplifies: the default StorageClass `standard` is created by the apiserver at start,
//! where a real cluster's installer (kind, minikube's addon manager) creates it.

use minik_api::apps::StatefulSet;
use minik_api::core::{PersistentVolume, PersistentVolumeClaim};
use minik_api::k8s_openapi::api::storage::v1::StorageClass;
use minik_api::meta::{ObjectMeta, StatusCause};
use minik_api::statefulsets::{
    default_stateful_set, validate_stateful_set, validate_stateful_set_update,
};
use minik_api::status;
use minik_api::storage::{
    default_claim, default_class, default_storage_class, default_volume, is_default_class,
    validate_claim_spec, validate_claim_update, validate_class, validate_class_update,
    validate_volume,
};
use minik_api::workloads::validate_selector_update;
use serde_json::{json, Value};

use super::{typed, untyped};
use crate::error::{ApiError, ApiResult};
use crate::storage::{self, Storage};

/// A new StatefulSet: defaults, an empty status, validation (claim templates included).
pub fn prepare_create_stateful_set(object: Value) -> ApiResult<Value> {
    let mut sts: StatefulSet = typed(object, "StatefulSet")?;
    default_stateful_set(&mut sts);
    sts.status = Some(Default::default());
    let mut causes = validate_stateful_set(&sts);
    causes.extend(claim_template_causes(&sts));
    check("StatefulSet", &sts.metadata, causes)?;
    untyped(&sts)
}

/// An updated StatefulSet: defaults, validation, only the mutable fields changed.
pub fn prepare_update_stateful_set(object: Value, old: &Value) -> ApiResult<Value> {
    let mut sts: StatefulSet = typed(object, "StatefulSet")?;
    let old: StatefulSet = typed(old.clone(), "StatefulSet")?;
    default_stateful_set(&mut sts);
    let mut causes = validate_stateful_set(&sts);
    if let (Some(new), Some(old)) = (&sts.spec, &old.spec) {
        causes.extend(validate_selector_update(&new.selector, &old.selector));
    }
    causes.extend(validate_stateful_set_update(&sts, &old));
    check("StatefulSet", &sts.metadata, causes)?;
    untyped(&sts)
}

fn claim_template_causes(sts: &StatefulSet) -> Vec<StatusCause> {
    let templates = sts
        .spec
        .iter()
        .flat_map(|s| s.volume_claim_templates.iter().flatten());
    templates
        .enumerate()
        .flat_map(|(i, claim)| {
            validate_claim_spec(claim, &format!("spec.volumeClaimTemplates[{i}].spec"))
        })
        .collect()
}

/// A new PersistentVolume: defaults, phase Pending, validation.
pub fn prepare_create_volume(object: Value) -> ApiResult<Value> {
    let mut pv: PersistentVolume = typed(object, "PersistentVolume")?;
    pv.status = None;
    default_volume(&mut pv);
    check("PersistentVolume", &pv.metadata, validate_volume(&pv))?;
    untyped(&pv)
}

/// An updated PersistentVolume (main resource or `/status`).
pub fn prepare_update_volume(object: Value) -> ApiResult<Value> {
    let mut pv: PersistentVolume = typed(object, "PersistentVolume")?;
    default_volume(&mut pv);
    check("PersistentVolume", &pv.metadata, validate_volume(&pv))?;
    untyped(&pv)
}

/// A new PersistentVolumeClaim (after admission): defaults, phase Pending, validation.
pub fn prepare_create_claim(object: Value) -> ApiResult<Value> {
    let mut pvc: PersistentVolumeClaim = typed(object, "PersistentVolumeClaim")?;
    pvc.status = None;
    default_claim(&mut pvc);
    check(
        "PersistentVolumeClaim",
        &pvc.metadata,
        validate_claim_spec(&pvc, "spec"),
    )?;
    untyped(&pvc)
}

/// An updated PersistentVolumeClaim: the spec is fixed but for binding and growth.
pub fn prepare_update_claim(object: Value, old: &Value) -> ApiResult<Value> {
    let mut pvc: PersistentVolumeClaim = typed(object, "PersistentVolumeClaim")?;
    let old: PersistentVolumeClaim = typed(old.clone(), "PersistentVolumeClaim")?;
    default_claim(&mut pvc);
    let mut causes = validate_claim_spec(&pvc, "spec");
    causes.extend(validate_claim_update(&pvc, &old));
    check("PersistentVolumeClaim", &pvc.metadata, causes)?;
    untyped(&pvc)
}

/// A new StorageClass: defaults, validation.
pub fn prepare_create_class(object: Value) -> ApiResult<Value> {
    let mut class: StorageClass = typed(object, "StorageClass")?;
    default_class(&mut class);
    check("StorageClass", &class.metadata, validate_class(&class))?;
    untyped(&class)
}

/// An updated StorageClass: provisioner, parameters, reclaim policy and binding mode are fixed.
pub fn prepare_update_class(object: Value, old: &Value) -> ApiResult<Value> {
    let mut class: StorageClass = typed(object, "StorageClass")?;
    let old: StorageClass = typed(old.clone(), "StorageClass")?;
    default_class(&mut class);
    let mut causes = validate_class(&class);
    causes.extend(validate_class_update(&class, &old));
    check("StorageClass", &class.metadata, causes)?;
    untyped(&class)
}

/// DefaultStorageClass admission: a claim without `storageClassName` gets the default class's
/// name (the newest default if several; none if there is no default). An explicit `""` stays.
pub fn admit_claim(storage: &dyn Storage, mut body: Value) -> ApiResult<Value> {
    if !body["spec"]["storageClassName"].is_null() {
        return Ok(body);
    }
    let (records, _) = storage
        .list("/registry/storageclasses/")
        .map_err(|e| ApiError::from_storage(e, "storageclasses", ""))?;
    let default = records
        .iter()
        .filter_map(|r| serde_json::from_value::<StorageClass>(r.value.as_ref().clone()).ok())
        .filter(is_default_class)
        .max_by(|a, b| {
            let created = |c: &StorageClass| c.metadata.creation_timestamp.clone().map(|t| t.0);
            created(a).cmp(&created(b))
        });
    if let (Some(class), Some(spec)) = (default, body.get_mut("spec")) {
        spec["storageClassName"] = json!(class.metadata.name);
    }
    Ok(body)
}

/// Creates the default StorageClass `standard` (local-path) unless a class of that name exists.
pub async fn bootstrap_storage_class(storage: &dyn Storage) -> Result<(), storage::Error> {
    let class = default_storage_class();
    let name = class.metadata.name.clone().unwrap_or_default();
    let key = format!("/registry/storageclasses/{name}");
    if storage.get(&key)?.is_some() {
        return Ok(());
    }
    let mut value = serde_json::to_value(&class).unwrap_or(Value::Null);
    value["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
    value["metadata"]["creationTimestamp"] = super::meta::now_value();
    match storage.create(&key, value).await {
        Ok(_) | Err(storage::Error::AlreadyExists(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

fn check(kind: &str, metadata: &ObjectMeta, causes: Vec<StatusCause>) -> ApiResult<()> {
    if causes.is_empty() {
        return Ok(());
    }
    let name = metadata.name.as_deref().unwrap_or("");
    Err(status::invalid(kind, name, causes).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
               "spec": {"selector": {"matchLabels": {"app": "web"}}, "serviceName": "web",
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "web", "image": "nginx"}]}},
                        "volumeClaimTemplates": [{"metadata": {"name": "data"},
                            "spec": {"accessModes": ["ReadWriteOnce"]}}]}})
    }

    #[test]
    fn a_claim_template_without_a_size_is_refused_at_its_path() {
        let error = prepare_create_stateful_set(set()).unwrap_err();
        assert_eq!(error.code(), 422);
        let causes = error.0.details.unwrap().causes.unwrap();
        assert_eq!(
            causes[0].field.as_deref(),
            Some("spec.volumeClaimTemplates[0].spec.resources[storage]")
        );
    }

    #[test]
    fn a_set_may_scale_but_not_rename_its_service() {
        let mut body = set();
        body["spec"]["volumeClaimTemplates"][0]["spec"]["resources"] =
            json!({"requests": {"storage": "1Gi"}});
        let created = prepare_create_stateful_set(body).unwrap();
        let mut scaled = created.clone();
        scaled["spec"]["replicas"] = json!(3);
        assert!(prepare_update_stateful_set(scaled, &created).is_ok());
        let mut renamed = created.clone();
        renamed["spec"]["serviceName"] = json!("other");
        let error = prepare_update_stateful_set(renamed, &created).unwrap_err();
        assert_eq!(error.code(), 422);
    }
}
