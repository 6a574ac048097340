//! The CustomResourceDefinition strategy: defaults, validation (422 with field paths), status and
//! the cleanup finalizer a DELETE adds.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition/`
//! (`strategy.go`: a new CRD's status is reset and `storedVersions` starts with the storage
//! version; `etcd.go`'s `Delete`: the first DELETE adds `customresourcecleanup.apiextensions.k8s.io`
//! and a `Terminating` condition, so the CRD stays until its objects are gone) and
//! `pkg/apis/apiextensions/validation/validation.go` (`ValidateCustomResourceDefinition`).
//! Defaults are `pkg/apis/apiextensions/v1/defaults.go`: `singular` is the lower-cased kind,
//! `listKind` the kind plus `List`, conversion `None`.
//!
//! A conversion webhook's service port defaults to 443; `conversion_config.rs` validates it.
//!
//! minik simplifies: `selectableFields` and deprecation warnings are accepted but not acted on.
//!
//! Read next: `controller.rs` (names, Established, cleanup), `names.rs` (the validation of names).

use jiff::Timestamp;
use minik_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition, CustomResourceDefinitionNames,
    CustomResourceDefinitionStatus,
};
use serde_json::Value;

use super::field::{invalid_status, FieldError};
use super::names;
use crate::error::{ApiError, ApiResult};
use crate::registry::deletion::Plan;
use crate::registry::{typed, untyped};

/// The finalizer that holds a deleted CRD until its custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

const KIND: &str = "CustomResourceDefinition";
const GROUP: &str = "apiextensions.k8s.io";

fn decode(object: Value) -> ApiResult<CustomResourceDefinition> {
    typed(object, KIND)
}

/// `PrepareForCreate` + defaults + `Validate`.
pub fn prepare_create(object: Value) -> ApiResult<Value> {
    let mut crd = decode(object)?;
    set_defaults(&mut crd);
    check(&crd, names::validate(&crd))?;
    let storage = storage_version(&crd).unwrap_or_default();
    crd.status = Some(CustomResourceDefinitionStatus {
        accepted_names: Some(CustomResourceDefinitionNames::default()),
        conditions: Some(Vec::new()),
        stored_versions: Some(vec![storage]),
    });
    untyped(&crd)
}

/// `PrepareForUpdate` + defaults + `ValidateUpdate`. The status was already carried over from
/// `old` (or taken from the request on `/status`); a new storage version joins `storedVersions`.
pub fn prepare_update(object: Value, old: &Value) -> ApiResult<Value> {
    let mut crd = decode(object)?;
    let old: CustomResourceDefinition = decode(old.clone())?;
    set_defaults(&mut crd);
    let mut errors = names::validate(&crd);
    errors.extend(immutable(&crd, &old));
    if let Some(storage) = storage_version(&crd) {
        let status = crd.status.get_or_insert_with(Default::default);
        let stored = status.stored_versions.get_or_insert_with(Vec::new);
        if !stored.contains(&storage) {
            stored.push(storage);
        }
    }
    errors.extend(stored_versions_served(&crd));
    check(&crd, errors)?;
    untyped(&crd)
}

fn check(crd: &CustomResourceDefinition, errors: Vec<FieldError>) -> ApiResult<()> {
    if errors.is_empty() {
        return Ok(());
    }
    let name = crd.metadata.name.as_deref().unwrap_or("");
    Err(ApiError::from(invalid_status(GROUP, KIND, name, &errors)))
}

/// `SetDefaults_CustomResourceDefinition…`.
pub fn set_defaults(crd: &mut CustomResourceDefinition) {
    let names = &mut crd.spec.names;
    if names.singular.as_deref().unwrap_or("").is_empty() {
        names.singular = Some(names.kind.to_lowercase());
    }
    if names.list_kind.as_deref().unwrap_or("").is_empty() && !names.kind.is_empty() {
        names.list_kind = Some(format!("{}List", names.kind));
    }
    let conversion = crd.spec.conversion.get_or_insert_with(Default::default);
    if conversion.strategy.is_empty() {
        conversion.strategy = "None".to_string();
    }
    let client = conversion
        .webhook
        .as_mut()
        .and_then(|w| w.client_config.as_mut());
    if let Some(service) = client.and_then(|c| c.service.as_mut()) {
        service.port.get_or_insert(443);
    }
}

/// The version marked `storage: true` (validation makes sure there is exactly one).
pub fn storage_version(crd: &CustomResourceDefinition) -> Option<String> {
    crd.spec
        .versions
        .iter()
        .find(|v| v.storage)
        .map(|v| v.name.clone())
}

fn immutable(crd: &CustomResourceDefinition, old: &CustomResourceDefinition) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if crd.spec.group != old.spec.group {
        errors.push(FieldError::invalid(
            "spec.group",
            Value::from(crd.spec.group.clone()),
            "field is immutable",
        ));
    }
    if crd.spec.scope != old.spec.scope {
        errors.push(FieldError::invalid(
            "spec.scope",
            Value::from(crd.spec.scope.clone()),
            "field is immutable",
        ));
    }
    errors
}

/// Every version in `status.storedVersions` must still be listed (objects may be stored in it).
fn stored_versions_served(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    let status = crd.status.as_ref();
    let stored = status.and_then(|s| s.stored_versions.as_ref());
    stored
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, name)| !crd.spec.versions.iter().any(|v| &v.name == *name))
        .map(|(i, name)| {
            FieldError::invalid(
                &format!("status.storedVersions[{i}]"),
                Value::from(name.clone()),
                "must appear in spec.versions",
            )
        })
        .collect()
}

/// What a DELETE does to a CRD: the first one marks it deleted with the cleanup finalizer and a
/// `Terminating` condition; later ones change nothing until the finalizer is gone.
pub fn plan_delete(object: &Value, now: Timestamp) -> Plan {
    if object["metadata"]["deletionTimestamp"].is_string() {
        return Plan::Unchanged;
    }
    let mut marked = object.clone();
    let meta = &mut marked["metadata"];
    meta["deletionTimestamp"] = Value::from(stamp(now));
    meta["deletionGracePeriodSeconds"] = Value::from(0);
    let finalizers = meta["finalizers"].as_array().cloned().unwrap_or_default();
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        let mut finalizers = finalizers;
        finalizers.push(Value::from(CLEANUP_FINALIZER));
        meta["finalizers"] = Value::Array(finalizers);
    }
    set_condition(
        &mut marked,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; instance deletion will begin soon",
    );
    Plan::Update(marked)
}

fn stamp(now: Timestamp) -> String {
    now.round(jiff::Unit::Second)
        .unwrap_or(now)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Sets one condition of a CRD's status (JSON), keeping `lastTransitionTime` when the status
/// does not change. Returns whether anything changed.
pub fn set_condition(
    crd: &mut Value,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> bool {
    if !crd["status"].is_object() {
        crd["status"] = serde_json::json!({});
    }
    if !crd["status"]["conditions"].is_array() {
        crd["status"]["conditions"] = Value::Array(Vec::new());
    }
    let conditions = crd["status"]["conditions"]
        .as_array_mut()
        .expect("made an array above");
    let now = stamp(Timestamp::now());
    let condition = CustomResourceDefinitionCondition {
        type_: kind.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message.to_string()),
        last_transition_time: None,
    };
    let mut wanted = serde_json::to_value(&condition).unwrap_or(Value::Null);
    match conditions.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) => {
            let time = if existing["status"] == status {
                existing["lastTransitionTime"].clone()
            } else {
                Value::from(now)
            };
            wanted["lastTransitionTime"] = time;
            let changed = *existing != wanted;
            *existing = wanted;
            changed
        }
        None => {
            wanted["lastTransitionTime"] = Value::from(now);
            conditions.push(wanted);
            true
        }
    }
}

/// Whether a CRD's status says `kind` is `True`.
pub fn condition_true(crd: &Value, kind: &str) -> bool {
    crd["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}
