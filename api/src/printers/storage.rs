//! The rows of `get statefulsets`, `get persistentvolumes`, `get persistentvolumeclaims` and
//! `get storageclasses`.
//!
//! Kubernetes counterpart: `printStatefulSet`, `printPersistentVolume`,
//! `printPersistentVolumeClaim` and `printStorageClass` in
//! `pkg/printers/internalversion/printers.go` (1.32). Access modes print in short form (`RWO`,
//! `ROX`, `RWX`, `RWOP`); a PV's CLAIM is `namespace/name`; the default StorageClass's name carries
//! ` (default)`; a StatefulSet's READY is `ready/replicas`.

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::duration::age;
use super::workloads::template_cells;
use crate::storage::is_default_class;

/// The columns of the kinds printed here (`None` for the others).
pub fn columns(kind: &str) -> Option<&'static [(&'static str, i32)]> {
    Some(match kind {
        "StatefulSet" => &[
            ("Name", 0),
            ("Ready", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
        ],
        "PersistentVolume" => &[
            ("Name", 0),
            ("Capacity", 0),
            ("Access Modes", 0),
            ("Reclaim Policy", 0),
            ("Status", 0),
            ("Claim", 0),
            ("StorageClass", 0),
            ("VolumeAttributesClass", 0),
            ("Reason", 0),
            ("Age", 0),
            ("VolumeMode", 1),
        ],
        "PersistentVolumeClaim" => &[
            ("Name", 0),
            ("Status", 0),
            ("Volume", 0),
            ("Capacity", 0),
            ("Access Modes", 0),
            ("StorageClass", 0),
            ("VolumeAttributesClass", 0),
            ("Age", 0),
            ("VolumeMode", 1),
        ],
        "StorageClass" => &[
            ("Name", 0),
            ("Provisioner", 0),
            ("ReclaimPolicy", 0),
            ("VolumeBindingMode", 0),
            ("AllowVolumeExpansion", 0),
            ("Age", 0),
        ],
        _ => return None,
    })
}

/// Every cell of an object of a kind printed here (`None` for the others).
pub fn cells(
    kind: &str,
    object: &Value,
    now: Timestamp,
) -> Option<Result<Vec<String>, serde_json::Error>> {
    fn typed<K: DeserializeOwned>(object: &Value) -> Result<K, serde_json::Error> {
        K::deserialize(object)
    }
    Some(match kind {
        "StatefulSet" => typed(object).map(|sts| stateful_set_row(&sts, now)),
        "PersistentVolume" => typed(object).map(|pv| volume_row(&pv, now)),
        "PersistentVolumeClaim" => typed(object).map(|pvc| claim_row(&pvc, now)),
        "StorageClass" => typed(object).map(|class| class_row(&class, now)),
        _ => return None,
    })
}

/// NAME READY AGE CONTAINERS IMAGES.
pub fn stateful_set_row(sts: &StatefulSet, now: Timestamp) -> Vec<String> {
    let spec = sts.spec.clone().unwrap_or_default();
    let status = sts.status.clone().unwrap_or_default();
    let ready = status.ready_replicas.unwrap_or(0);
    let [containers, images, _] = template_cells(Some(&spec.template), &spec.selector);
    vec![
        sts.metadata.name.clone().unwrap_or_default(),
        format!("{ready}/{}", spec.replicas.unwrap_or(1)),
        age(sts.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
        containers,
        images,
    ]
}

/// NAME CAPACITY ACCESS-MODES RECLAIM-POLICY STATUS CLAIM STORAGECLASS VAC REASON AGE VOLUMEMODE.
pub fn volume_row(pv: &PersistentVolume, now: Timestamp) -> Vec<String> {
    let spec = pv.spec.clone().unwrap_or_default();
    let status = pv.status.clone().unwrap_or_default();
    let claim = spec.claim_ref.as_ref().map_or_else(String::new, |r| {
        format!(
            "{}/{}",
            r.namespace.as_deref().unwrap_or(""),
            r.name.as_deref().unwrap_or("")
        )
    });
    let capacity = spec
        .capacity
        .as_ref()
        .and_then(|c| c.get("storage"))
        .map(|q| q.0.clone())
        .unwrap_or_default();
    vec![
        pv.metadata.name.clone().unwrap_or_default(),
        capacity,
        short_modes(spec.access_modes.as_deref()),
        spec.persistent_volume_reclaim_policy.unwrap_or_default(),
        status.phase.unwrap_or_default(),
        claim,
        spec.storage_class_name.unwrap_or_default(),
        spec.volume_attributes_class_name
            .unwrap_or_else(|| "<unset>".to_string()),
        status.reason.unwrap_or_default(),
        age(pv.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
        spec.volume_mode.unwrap_or_else(|| "<unset>".to_string()),
    ]
}

/// NAME STATUS VOLUME CAPACITY ACCESS-MODES STORAGECLASS VAC AGE VOLUMEMODE.
pub fn claim_row(pvc: &PersistentVolumeClaim, now: Timestamp) -> Vec<String> {
    let spec = pvc.spec.clone().unwrap_or_default();
    let status = pvc.status.clone().unwrap_or_default();
    let phase = status.phase.clone().unwrap_or_default();
    let phase = if pvc.metadata.deletion_timestamp.is_some() {
        "Terminating".to_string()
    } else {
        phase
    };
    let capacity = status
        .capacity
        .as_ref()
        .and_then(|c| c.get("storage"))
        .map(|q| q.0.clone())
        .unwrap_or_default();
    vec![
        pvc.metadata.name.clone().unwrap_or_default(),
        phase,
        spec.volume_name.unwrap_or_default(),
        capacity,
        short_modes(status.access_modes.as_deref()),
        spec.storage_class_name.unwrap_or_default(),
        spec.volume_attributes_class_name
            .unwrap_or_else(|| "<unset>".to_string()),
        age(pvc.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
        spec.volume_mode.unwrap_or_else(|| "<unset>".to_string()),
    ]
}

/// NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE.
pub fn class_row(class: &StorageClass, now: Timestamp) -> Vec<String> {
    let mut name = class.metadata.name.clone().unwrap_or_default();
    if is_default_class(class) {
        name.push_str(" (default)");
    }
    vec![
        name,
        class.provisioner.clone(),
        class
            .reclaim_policy
            .clone()
            .unwrap_or_else(|| "Delete".into()),
        class
            .volume_binding_mode
            .clone()
            .unwrap_or_else(|| "Immediate".into()),
        class.allow_volume_expansion.unwrap_or(false).to_string(),
        age(class.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
    ]
}

/// `storagehelpers.GetAccessModesAsString`: `RWO,ROX,RWX,RWOP`, in that order, no repeats.
pub fn short_modes(modes: Option<&[String]>) -> String {
    let modes = modes.unwrap_or_default();
    let order = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ];
    let short: Vec<&str> = order
        .iter()
        .filter(|(long, _)| modes.iter().any(|m| m == long))
        .map(|(_, short)| *short)
        .collect();
    short.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-11-22T02:05:00Z".parse().unwrap()
    }

    #[test]
    fn a_bound_volume_and_its_claim() {
        let pv: PersistentVolume = serde_json::from_value(json!({
            "metadata": {"name": "pvc-1", "creationTimestamp": "2026-11-22T02:00:00Z"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "standard",
                     "claimRef": {"namespace": "default", "name": "data-web-0"}, "volumeMode": "Filesystem"},
            "status": {"phase": "Bound"}})).unwrap();
        assert_eq!(
            volume_row(&pv, now()),
            [
                "pvc-1",
                "1Gi",
                "RWO,RWX",
                "Delete",
                "Bound",
                "default/data-web-0",
                "standard",
                "<unset>",
                "",
                "5m",
                "Filesystem"
            ]
        );
        let class = crate::storage::default_storage_class();
        assert_eq!(class_row(&class, now())[0], "standard (default)");
    }

    #[test]
    fn a_stateful_set_shows_ready_over_desired() {
        let sts: StatefulSet = serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "serviceName": "web",
                     "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
            "status": {"replicas": 2, "readyReplicas": 1}})).unwrap();
        let row = stateful_set_row(&sts, now());
        assert_eq!(row[1], "1/3");
        assert_eq!(row[3..], ["web", "nginx"]);
    }
}
