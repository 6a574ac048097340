//! The local-path provisioner's volume: what a claim of the `minik.dev/local-path` class gets.
//!
//! Kubernetes counterpart: rancher's local-path-provisioner (`provisioner.go`, `Provision`): a
//! `PersistentVolume` named `pvc-<claim uid>`, a directory `pvc-<uid>_<namespace>_<name>`, node
//! affinity `kubernetes.io/hostname In [node]`, the claim's size and access modes, the class's
//! reclaim policy, pre-bound to the claim through `claimRef`
//! (`sigs.k8s.io/sig-storage-lib-external-provisioner`). minik runs without root, so the `local`
//! path is relative to the node's data directory: the kubelet mounts `{node data dir}{path}`,
//! creating the directory on first mount.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    LocalVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use minik_api::meta::ObjectMeta;
use minik_api::storage::{HOSTNAME_LABEL, LOCAL_PATH_PROVISIONER, PROVISIONED_BY_ANNOTATION};

/// Where local-path volumes live, under each node's data directory.
pub const LOCAL_PATH_ROOT: &str = "/local-path";

/// The `claimRef` binding a volume to `claim`.
pub fn claim_reference(claim: &PersistentVolumeClaim) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("PersistentVolumeClaim".into()),
        namespace: claim.metadata.namespace.clone(),
        name: claim.metadata.name.clone(),
        uid: claim.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

/// The volume provisioned for `claim` of `class` on `node`.
pub fn local_path_volume(
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    node: &str,
) -> PersistentVolume {
    let uid = claim.metadata.uid.clone().unwrap_or_default();
    let namespace = claim.metadata.namespace.clone().unwrap_or_default();
    let claim_name = claim.metadata.name.clone().unwrap_or_default();
    let spec = claim.spec.clone().unwrap_or_default();
    let size = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage").cloned());
    let term = NodeSelectorTerm {
        match_expressions: Some(vec![NodeSelectorRequirement {
            key: HOSTNAME_LABEL.into(),
            operator: "In".into(),
            values: Some(vec![node.to_string()]),
        }]),
        match_fields: None,
    };
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(format!("pvc-{uid}")),
            annotations: Some(BTreeMap::from([(
                PROVISIONED_BY_ANNOTATION.to_string(),
                LOCAL_PATH_PROVISIONER.to_string(),
            )])),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: size.map(|q| BTreeMap::from([("storage".to_string(), q)])),
            access_modes: spec.access_modes.clone(),
            persistent_volume_reclaim_policy: Some(
                class
                    .reclaim_policy
                    .clone()
                    .unwrap_or_else(|| "Delete".into()),
            ),
            storage_class_name: class.metadata.name.clone(),
            volume_mode: spec.volume_mode.clone(),
            claim_ref: Some(claim_reference(claim)),
            local: Some(LocalVolumeSource {
                path: format!("{LOCAL_PATH_ROOT}/pvc-{uid}_{namespace}_{claim_name}"),
                fs_type: None,
            }),
            node_affinity: Some(VolumeNodeAffinity {
                required: Some(NodeSelector {
                    node_selector_terms: vec![term],
                }),
            }),
            ..PersistentVolumeSpec::default()
        }),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_api::storage::default_storage_class;
    use serde_json::json;

    #[test]
    fn a_provisioned_volume_is_pre_bound_and_pinned_to_its_node() {
        let claim: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": "data-web-0", "namespace": "default", "uid": "u1"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": "standard", "volumeMode": "Filesystem"}})).unwrap();
        let pv = serde_json::to_value(local_path_volume(
            &claim,
            &default_storage_class(),
            "node-2",
        ))
        .unwrap();
        assert_eq!(pv["metadata"]["name"], "pvc-u1");
        assert_eq!(
            pv["spec"]["local"]["path"],
            "/local-path/pvc-u1_default_data-web-0"
        );
        assert_eq!(pv["spec"]["claimRef"]["uid"], "u1");
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
        assert_eq!(pv["spec"]["capacity"]["storage"], "1Gi");
        assert_eq!(
            pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
                ["values"],
            json!(["node-2"])
        );
    }
}
