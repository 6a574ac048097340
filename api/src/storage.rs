//! PersistentVolumes, PersistentVolumeClaims and StorageClasses: defaults, validation, and the
//! annotations the binder, the provisioner and the scheduler talk through.
//!
//! Kubernetes counterpart: `pkg/apis/core/v1/defaults.go` (`SetDefaults_PersistentVolume`,
//! `SetDefaults_PersistentVolumeClaim`), `pkg/apis/storage/v1/defaults.go`
//! (`SetDefaults_StorageClass`), `pkg/apis/core/validation/validation.go`
//! (`ValidatePersistentVolume`, `ValidatePersistentVolumeClaim`, `ValidatePersistentVolumeClaimUpdate`)
//! and `pkg/apis/storage/validation/validation.go` (`ValidateStorageClass`), and the constants of
//! `pkg/controller/volume/persistentvolume/util` and `storage/v1/util`.
//!
//! minik simplifies: a claim's `selector`, `dataSource` and volume expansion are stored but not
//! acted on; of the volume sources only `hostPath` and `local` are mounted by the kubelet.

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;

use crate::meta::StatusCause;
use crate::status::cause;
use crate::validation::pod_spec::{parse_quantity, Sign};

/// Marks the StorageClass a claim without `storageClassName` gets (DefaultStorageClass admission).
pub const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
/// The node the scheduler picked for a WaitForFirstConsumer claim (`AnnSelectedNode`).
pub const SELECTED_NODE_ANNOTATION: &str = "volume.kubernetes.io/selected-node";
/// The provisioner asked to provision a claim (`AnnStorageProvisioner`).
pub const STORAGE_PROVISIONER_ANNOTATION: &str = "volume.kubernetes.io/storage-provisioner";
/// Which provisioner made a volume (`AnnDynamicallyProvisioned`).
pub const PROVISIONED_BY_ANNOTATION: &str = "pv.kubernetes.io/provisioned-by";
/// Set on a claim once the binder bound it (`AnnBindCompleted`).
pub const BIND_COMPLETED_ANNOTATION: &str = "pv.kubernetes.io/bind-completed";
/// minik's local-path provisioner (rancher's local-path-provisioner's role).
pub const LOCAL_PATH_PROVISIONER: &str = "minik.dev/local-path";
/// The StorageClass minik creates at start, marked default.
pub const DEFAULT_CLASS_NAME: &str = "standard";
/// The node label a local volume's node affinity names.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

const ACCESS_MODES: &[&str] = &[
    "ReadWriteOnce",
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOncePod",
];

/// The StorageClass minik bootstraps: local-path, WaitForFirstConsumer, Delete, the default.
pub fn default_storage_class() -> StorageClass {
    let value = serde_json::json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": DEFAULT_CLASS_NAME, "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
        "provisioner": LOCAL_PATH_PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    });
    serde_json::from_value(value).unwrap_or_default()
}

/// Whether a class is marked default (`storageutil.IsDefaultAnnotation`).
pub fn is_default_class(class: &StorageClass) -> bool {
    class
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// `SetDefaults_StorageClass`: reclaim Delete, binding Immediate.
pub fn default_class(class: &mut StorageClass) {
    class
        .reclaim_policy
        .get_or_insert_with(|| "Delete".to_string());
    class
        .volume_binding_mode
        .get_or_insert_with(|| "Immediate".to_string());
}

/// `ValidateStorageClass`.
pub fn validate_class(class: &StorageClass) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if class.provisioner.is_empty() {
        causes.push(required("provisioner"));
    }
    let reclaim = class.reclaim_policy.as_deref().unwrap_or("Delete");
    if !matches!(reclaim, "Delete" | "Retain") {
        causes.push(not_supported(
            "reclaimPolicy",
            reclaim,
            &["Delete", "Retain"],
        ));
    }
    let mode = class.volume_binding_mode.as_deref().unwrap_or("Immediate");
    if !matches!(mode, "Immediate" | "WaitForFirstConsumer") {
        let supported = ["Immediate", "WaitForFirstConsumer"];
        causes.push(not_supported("volumeBindingMode", mode, &supported));
    }
    causes
}

/// `ValidateStorageClassUpdate`: parameters, provisioner, reclaimPolicy and binding mode are fixed.
pub fn validate_class_update(new: &StorageClass, old: &StorageClass) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let fixed = [
        ("provisioner", new.provisioner != old.provisioner),
        ("parameters", new.parameters != old.parameters),
        ("reclaimPolicy", new.reclaim_policy != old.reclaim_policy),
        (
            "volumeBindingMode",
            new.volume_binding_mode != old.volume_binding_mode,
        ),
    ];
    for (field, changed) in fixed {
        if changed {
            causes.push(cause(
                field,
                "FieldValueForbidden",
                "Forbidden: updates to this field are forbidden",
            ));
        }
    }
    causes
}

/// `SetDefaults_PersistentVolume`: Retain, Filesystem, and phase Pending for a new volume.
pub fn default_volume(pv: &mut PersistentVolume) {
    let spec = pv.spec.get_or_insert_with(Default::default);
    spec.persistent_volume_reclaim_policy
        .get_or_insert_with(|| "Retain".to_string());
    spec.volume_mode
        .get_or_insert_with(|| "Filesystem".to_string());
    let status = pv.status.get_or_insert_with(Default::default);
    status.phase.get_or_insert_with(|| "Pending".to_string());
}

/// `ValidatePersistentVolumeSpec`: capacity, access modes, one source, a local volume's affinity.
pub fn validate_volume(pv: &PersistentVolume) -> Vec<StatusCause> {
    let Some(spec) = &pv.spec else {
        return vec![required("spec")];
    };
    let mut causes = access_modes("spec.accessModes", spec.access_modes.as_deref());
    match spec.capacity.as_ref().and_then(|c| c.get("storage")) {
        None => causes.push(required("spec.capacity")),
        Some(q) if parse_quantity(&q.0).is_none() => causes.push(cause(
            "spec.capacity[storage]",
            "FieldValueInvalid",
            format!(
                "Invalid value: \"{}\": quantities must match the regular expression",
                q.0
            ),
        )),
        Some(_) => {}
    }
    let reclaim = spec
        .persistent_volume_reclaim_policy
        .as_deref()
        .unwrap_or("");
    if !matches!(reclaim, "Retain" | "Delete" | "Recycle") {
        let supported = ["Delete", "Recycle", "Retain"];
        causes.push(not_supported(
            "spec.persistentVolumeReclaimPolicy",
            reclaim,
            &supported,
        ));
    }
    let value = serde_json::to_value(spec).unwrap_or_default();
    let sources = VOLUME_SOURCES
        .iter()
        .filter(|s| !value[**s].is_null())
        .count();
    if sources != 1 {
        let message = if sources == 0 {
            "must specify a volume type"
        } else {
            "may not specify more than 1 volume type"
        };
        causes.push(cause("spec", "FieldValueRequired", message));
    }
    if let Some(local) = &spec.local {
        if !local.path.starts_with('/') {
            causes.push(cause(
                "spec.local.path",
                "FieldValueInvalid",
                "must be an absolute path",
            ));
        }
        if spec.node_affinity.is_none() {
            causes.push(required("spec.nodeAffinity"));
        }
    }
    causes
}

/// The volume sources a PersistentVolume may name (`spec.<source>`).
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "local",
    "nfs",
    "csi",
    "iscsi",
    "fc",
    "rbd",
    "cephfs",
    "cinder",
    "glusterfs",
    "flexVolume",
    "awsElasticBlockStore",
    "gcePersistentDisk",
    "azureDisk",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "flocker",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

/// `SetDefaults_PersistentVolumeClaim`: Filesystem, and phase Pending for a new claim.
pub fn default_claim(pvc: &mut PersistentVolumeClaim) {
    let spec = pvc.spec.get_or_insert_with(Default::default);
    spec.volume_mode
        .get_or_insert_with(|| "Filesystem".to_string());
    let status = pvc.status.get_or_insert_with(Default::default);
    status.phase.get_or_insert_with(|| "Pending".to_string());
}

/// `ValidatePersistentVolumeClaimSpec` (also for a StatefulSet's claim templates, under `path`).
pub fn validate_claim_spec(pvc: &PersistentVolumeClaim, path: &str) -> Vec<StatusCause> {
    let Some(spec) = &pvc.spec else {
        return vec![required(path)];
    };
    let mut causes = access_modes(&format!("{path}.accessModes"), spec.access_modes.as_deref());
    let storage = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"));
    let field = format!("{path}.resources[storage]");
    match storage.map(|q| q.0.as_str()) {
        None => causes.push(required(&field)),
        Some(text) if parse_quantity(text).is_none() => causes.push(cause(
            &field,
            "FieldValueInvalid",
            format!("Invalid value: \"{text}\": quantities must match the regular expression"),
        )),
        Some(text) if !is_positive(text) => causes.push(cause(
            &field,
            "FieldValueInvalid",
            "must be greater than zero",
        )),
        Some(_) => {}
    }
    causes
}

/// `ValidatePersistentVolumeClaimUpdate`: the spec is fixed once created, except that the binder
/// may set `volumeName` once, a class may be set once (retroactive default), and storage may grow.
pub fn validate_claim_update(
    new: &PersistentVolumeClaim,
    old: &PersistentVolumeClaim,
) -> Vec<StatusCause> {
    let (mut new_spec, mut old_spec) = (
        new.spec.clone().unwrap_or_default(),
        old.spec.clone().unwrap_or_default(),
    );
    if old_spec.volume_name.as_deref().unwrap_or("").is_empty() {
        old_spec.volume_name = new_spec.volume_name.clone();
    }
    if old_spec.storage_class_name.is_none() {
        old_spec.storage_class_name = new_spec.storage_class_name.clone();
    }
    new_spec.resources = None;
    old_spec.resources = None;
    if new_spec == old_spec {
        return Vec::new();
    }
    vec![cause(
        "spec",
        "FieldValueForbidden",
        "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
    )]
}

/// A well-formed quantity above zero: not negative, and some non-zero digit before its suffix.
fn is_positive(text: &str) -> bool {
    let number = text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'));
    parse_quantity(text) == Some(Sign::NonNegative)
        && number
            .take(1)
            .any(|n| n.bytes().any(|b| (b'1'..=b'9').contains(&b)))
}

fn access_modes(path: &str, modes: Option<&[String]>) -> Vec<StatusCause> {
    let modes = modes.unwrap_or_default();
    if modes.is_empty() {
        return vec![required(path)];
    }
    modes
        .iter()
        .filter(|mode| !ACCESS_MODES.contains(&mode.as_str()))
        .map(|mode| not_supported(path, mode, ACCESS_MODES))
        .collect()
}

fn required(path: &str) -> StatusCause {
    cause(path, "FieldValueRequired", "Required value")
}

fn not_supported(path: &str, value: &str, supported: &[&str]) -> StatusCause {
    let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
    let message = format!(
        "Unsupported value: \"{value}\": supported values: {}",
        list.join(", ")
    );
    cause(path, "FieldValueNotSupported", message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_bootstrap_class_is_default_local_path_and_waits_for_a_consumer() {
        let class = default_storage_class();
        assert!(is_default_class(&class));
        assert_eq!(class.provisioner, LOCAL_PATH_PROVISIONER);
        assert_eq!(
            class.volume_binding_mode.as_deref(),
            Some("WaitForFirstConsumer")
        );
        assert!(validate_class(&class).is_empty());
    }

    #[test]
    fn a_claim_needs_modes_and_a_positive_size() {
        let mut pvc: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteSometimes"], "resources": {"requests": {"storage": "0"}}}
        })).unwrap();
        default_claim(&mut pvc);
        let causes = validate_claim_spec(&pvc, "spec");
        let fields: Vec<_> = causes.iter().filter_map(|c| c.field.as_deref()).collect();
        assert_eq!(fields, ["spec.accessModes", "spec.resources[storage]"]);
        assert_eq!(pvc.status.unwrap().phase.as_deref(), Some("Pending"));
    }

    #[test]
    fn a_claim_may_be_bound_once_and_grow_but_not_change_otherwise() {
        let old: PersistentVolumeClaim = serde_json::from_value(json!({
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
        })).unwrap();
        let mut bound = old.clone();
        bound.spec.as_mut().unwrap().volume_name = Some("pv-1".into());
        assert!(validate_claim_update(&bound, &old).is_empty());
        let mut rebound = bound.clone();
        rebound.spec.as_mut().unwrap().volume_name = Some("pv-2".into());
        assert_eq!(validate_claim_update(&rebound, &bound).len(), 1);
    }

    #[test]
    fn a_volume_needs_one_source_and_a_local_one_an_affinity() {
        let mut pv: PersistentVolume = serde_json::from_value(json!({
            "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                     "local": {"path": "/data"}}
        }))
        .unwrap();
        default_volume(&mut pv);
        let causes = validate_volume(&pv);
        assert_eq!(causes[0].field.as_deref(), Some("spec.nodeAffinity"));
        pv.spec.as_mut().unwrap().local = None;
        assert_eq!(
            validate_volume(&pv)[0].message.as_deref(),
            Some("must specify a volume type")
        );
    }
}
