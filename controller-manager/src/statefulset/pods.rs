//! What a StatefulSet creates: a pod per ordinal, a claim per template and ordinal, and the
//! ControllerRevision recording each template.
//!
//! Kubernetes counterpart: `pkg/controller/statefulset/stateful_set_utils.go` (`newVersionedStatefulSetPod`,
//! `initIdentity`, `updateStorage`, `getPersistentVolumeClaims`, `newRevision`,
//! `ApplyRevision`, `getClaimOwnerRefs`). A pod `set-N` gets hostname `set-N`, subdomain
//! `serviceName`, the labels `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index`
//! and `controller-revision-hash`, and each claim template's volume as the claim
//! `TEMPLATE-set-N`. A revision is named `set-HASH` and holds the template as a replace patch.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use minik_api::daemonsets::CONTROLLER_REVISION_HASH_LABEL;
use minik_api::meta::ObjectMeta;
use minik_api::statefulsets::{claim_name, pod_name, POD_INDEX_LABEL, POD_NAME_LABEL};

use crate::ownership::controller_ref;

/// `rand.SafeEncodeString`'s alphabet: no vowels, no 0, 1 or 3.
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The hash naming a template's revision: FNV-32a over its JSON and the collision count, in the
/// safe alphabet (upstream's `controller.ComputeHash` over a Go dump; the bytes differ).
pub fn template_hash(template: &PodTemplateSpec, collisions: Option<i32>) -> String {
    let mut bytes = serde_json::to_vec(template).unwrap_or_default();
    if let Some(collisions) = collisions {
        bytes.extend_from_slice(collisions.to_string().as_bytes());
    }
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash.to_string()
        .bytes()
        .map(|digit| SAFE_ALPHABET[usize::from(digit) % SAFE_ALPHABET.len()] as char)
        .collect()
}

/// The revision's name: `SET-HASH`.
pub fn revision_name(sts: &StatefulSet, hash: &str) -> String {
    format!(
        "{}-{hash}",
        sts.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The ControllerRevision of the set's current template, number `revision`.
pub fn new_revision(sts: &StatefulSet, hash: &str, revision: i64) -> ControllerRevision {
    let template = sts.spec.as_ref().map(|s| &s.template);
    let mut template = serde_json::to_value(template).unwrap_or_default();
    template["$patch"] = serde_json::json!("replace");
    let mut labels = template_labels(sts);
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.into(), hash.into());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(sts, hash)),
            namespace: sts.metadata.namespace.clone(),
            labels: Some(labels),
            owner_references: Some(vec![controller_ref(
                "apps/v1",
                "StatefulSet",
                &sts.metadata,
            )]),
            ..ObjectMeta::default()
        },
        data: Some(RawExtension(
            serde_json::json!({"spec": {"template": template}}),
        )),
        revision,
    }
}

/// The template a revision recorded (`ApplyRevision`), if it holds one.
pub fn template_of(revision: &ControllerRevision) -> Option<PodTemplateSpec> {
    let mut template = revision.data.as_ref()?.0["spec"]["template"].clone();
    template.as_object_mut()?.remove("$patch");
    serde_json::from_value(template).ok()
}

fn template_labels(sts: &StatefulSet) -> BTreeMap<String, String> {
    sts.spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default()
}

/// The pod with `ordinal` from `template`, labelled with its revision's name as upstream does
/// (`newVersionedStatefulSetPod`).
pub fn new_pod(sts: &StatefulSet, template: &PodTemplateSpec, ordinal: i32, revision: &str) -> Pod {
    let set = sts.metadata.name.as_deref().unwrap_or_default();
    let name = pod_name(set, ordinal);
    let template_meta = template.metadata.clone().unwrap_or_default();
    let mut labels = template_meta.labels.unwrap_or_default();
    labels.insert(POD_NAME_LABEL.into(), name.clone());
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.into(), revision.into());
    let mut spec = template.spec.clone().unwrap_or_default();
    spec.hostname = Some(name.clone());
    spec.subdomain = sts.spec.as_ref().and_then(|s| s.service_name.clone());
    let claims = claim_templates(sts);
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    // `updateStorage`: a claim template replaces the pod volume of the same name.
    volumes.retain(|v| {
        !claims
            .iter()
            .any(|c| c.metadata.name == Some(v.name.clone()))
    });
    for claim in &claims {
        let template_name = claim.metadata.name.clone().unwrap_or_default();
        volumes.push(Volume {
            name: template_name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim_name(&template_name, set, ordinal),
                read_only: None,
            }),
            ..Volume::default()
        });
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: sts.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: template_meta.annotations,
            owner_references: Some(vec![controller_ref(
                "apps/v1",
                "StatefulSet",
                &sts.metadata,
            )]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// The claim templates of the set.
pub fn claim_templates(sts: &StatefulSet) -> Vec<PersistentVolumeClaim> {
    sts.spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.clone())
        .unwrap_or_default()
}

/// The claim of `template` for `ordinal` (`getPersistentVolumeClaims`): the template's spec, its
/// labels plus the set's selector labels, and the owner references the retention policy asks for.
pub fn new_claim(
    sts: &StatefulSet,
    template: &PersistentVolumeClaim,
    ordinal: i32,
) -> PersistentVolumeClaim {
    let set = sts.metadata.name.as_deref().unwrap_or_default();
    let template_name = template.metadata.name.as_deref().unwrap_or_default();
    let mut labels = template.metadata.labels.clone().unwrap_or_default();
    let selector = sts
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone());
    labels.extend(selector.unwrap_or_default());
    let owners = when_deleted_is_delete(sts).then(|| vec![set_owner(sts)]);
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(claim_name(template_name, set, ordinal)),
            namespace: sts.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: template.metadata.annotations.clone(),
            owner_references: owners,
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// Whether `whenDeleted: Delete`: each claim is owned by the set, so the garbage collector
/// deletes it with the set (ST5).
pub fn when_deleted_is_delete(sts: &StatefulSet) -> bool {
    retention(sts).0 == "Delete"
}

/// Whether `whenScaled: Delete`: a condemned pod's claims are owned by that pod before it is
/// deleted, so they go with it (ST5).
pub fn when_scaled_is_delete(sts: &StatefulSet) -> bool {
    retention(sts).1 == "Delete"
}

fn retention(sts: &StatefulSet) -> (String, String) {
    let policy = sts
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_claim_retention_policy.clone())
        .unwrap_or_default();
    (
        policy.when_deleted.unwrap_or_else(|| "Retain".into()),
        policy.when_scaled.unwrap_or_else(|| "Retain".into()),
    )
}

/// A non-controller owner reference to the set (a claim's owner under `whenDeleted: Delete`).
pub fn set_owner(sts: &StatefulSet) -> OwnerReference {
    OwnerReference {
        controller: None,
        block_owner_deletion: None,
        ..controller_ref("apps/v1", "StatefulSet", &sts.metadata)
    }
}

/// A non-controller owner reference to a pod (a condemned pod's claims under `whenScaled: Delete`).
pub fn pod_owner(pod: &Pod) -> OwnerReference {
    OwnerReference {
        controller: None,
        block_owner_deletion: None,
        ..controller_ref("v1", "Pod", &pod.metadata)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn web() -> StatefulSet {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "serviceName": "nginx",
                     "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx"}],
                                           "volumes": [{"name": "data", "emptyDir": {}}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}
        }))
        .unwrap()
    }

    #[test]
    fn a_pod_has_its_identity_and_its_claim() {
        let sts = web();
        let template = sts.spec.as_ref().unwrap().template.clone();
        let pod = serde_json::to_value(new_pod(&sts, &template, 2, "abc")).unwrap();
        assert_eq!(pod["metadata"]["name"], "web-2");
        assert_eq!(pod["metadata"]["labels"][POD_NAME_LABEL], "web-2");
        assert_eq!(pod["metadata"]["labels"][POD_INDEX_LABEL], "2");
        assert_eq!(pod["metadata"]["labels"]["controller-revision-hash"], "abc");
        assert_eq!(pod["spec"]["hostname"], "web-2");
        assert_eq!(pod["spec"]["subdomain"], "nginx");
        assert_eq!(
            pod["spec"]["volumes"],
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-2"}}])
        );
    }

    #[test]
    fn a_claim_is_owned_by_the_set_only_when_deleted_means_delete() {
        let sts = web();
        let claim = new_claim(&sts, &claim_templates(&sts)[0], 0);
        assert_eq!(claim.metadata.name.as_deref(), Some("data-web-0"));
        let owners = claim.metadata.owner_references.unwrap();
        assert_eq!(
            (owners[0].kind.as_str(), owners[0].controller),
            ("StatefulSet", None)
        );
        assert!(!when_scaled_is_delete(&sts));
    }

    #[test]
    fn a_revision_gives_back_its_template() {
        let sts = web();
        let template = sts.spec.as_ref().unwrap().template.clone();
        let hash = template_hash(&template, None);
        let revision = new_revision(&sts, &hash, 1);
        assert_eq!(revision.metadata.name, Some(format!("web-{hash}")));
        assert_eq!(template_of(&revision), Some(template));
    }
}
