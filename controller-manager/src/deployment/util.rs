//! A Deployment's ReplicaSets: the pod-template-hash, which RS is new, revisions and annotations.
//!
//! Kubernetes counterpart: `pkg/controller/controller_utils.go` (`ComputeHash`) and
//! `pkg/controller/deployment/util/deployment_util.go` (`FindNewReplicaSet`, `EqualIgnoreHash`,
//! `SetNewReplicaSetAnnotations`, `SetReplicasAnnotations`, `MaxRevision`), and `sync.go`
//! (`getNewReplicaSet`, `cleanupDeployment`).
//!
//! - The hash is FNV-32a over the template (plus `collisionCount`), its decimal digits mapped
//!   through the alphabet `bcdfghjklmnpqrstvwxz2456789` (DP18). minik hashes the template's JSON,
//!   not Go's object dump, so its hashes differ from a real cluster's (DP19 allows that).
//! - The new RS is the oldest owned RS whose template equals the Deployment's, ignoring the
//!   `pod-template-hash` label: `kubectl rollout undo` (which copies an old RS's template back)
//!   therefore revives that RS instead of creating another.
//! - Its `deployment.kubernetes.io/revision` is one above every other RS's, only ever raised.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, ReplicaSetSpec};
use minik_api::core::PodTemplateSpec;
use minik_api::meta::{LabelSelector, ObjectMeta};

use crate::deployment::rolling::{Rollout, Rs};
use crate::ownership::controller_ref;

/// The label (on RS selector, RS and template) that ties a ReplicaSet to one pod template.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// The revision of a ReplicaSet, copied to its Deployment.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// Earlier revisions a reused ReplicaSet carried.
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
/// `spec.replicas` of the Deployment when the RS was last scaled by the controller.
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
/// `replicas + maxSurge` at that time (proportional scaling divides by it).
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";

/// Deployment annotations not copied to its ReplicaSets (`skipCopyAnnotation`).
const NOT_COPIED: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

/// `ComputeHash`: FNV-32a over the template's JSON and the collision count, safely encoded.
pub fn pod_template_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    const OFFSET: u32 = 0x811c_9dc5;
    const PRIME: u32 = 0x0100_0193;
    let mut bytes = serde_json::to_vec(template).unwrap_or_default();
    if let Some(count) = collision_count {
        bytes.extend_from_slice(&u64::from(count as u32).to_le_bytes());
    }
    let hash = bytes.iter().fold(OFFSET, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(PRIME)
    });
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    hash.to_string()
        .bytes()
        .map(|digit| char::from(ALPHABET[usize::from(digit) % ALPHABET.len()]))
        .collect()
}

/// Two templates are equal once `pod-template-hash` is dropped from their labels.
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    let strip = |template: &PodTemplateSpec| {
        let mut template = template.clone();
        if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.remove(POD_TEMPLATE_HASH);
        }
        let mut value = serde_json::to_value(template).unwrap_or_default();
        if value
            .pointer("/metadata/labels")
            .is_some_and(|l| l.as_object().is_some_and(|o| o.is_empty()))
        {
            value["metadata"]
                .as_object_mut()
                .map(|m| m.remove("labels"));
        }
        value
    };
    strip(a) == strip(b)
}

/// The new ReplicaSet: the oldest whose template equals the Deployment's (`FindNewReplicaSet`).
pub fn find_new<'a>(d: &Deployment, sets: &[&'a ReplicaSet]) -> Option<&'a ReplicaSet> {
    let template = d
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let mut sorted = sets.to_vec();
    sorted.sort_by_key(|rs| (created(&rs.metadata), rs.metadata.name.clone()));
    sorted.into_iter().find(|rs| {
        rs.spec
            .as_ref()
            .and_then(|s| s.template.as_ref())
            .is_some_and(|t| equal_ignore_hash(t, &template))
    })
}

fn created(meta: &ObjectMeta) -> i64 {
    meta.creation_timestamp
        .as_ref()
        .map_or(0, |t| t.0.as_second())
}

fn annotation(meta: &ObjectMeta, key: &str) -> Option<String> {
    meta.annotations.as_ref()?.get(key).cloned()
}

/// An RS's revision (0 when unset).
pub fn revision(meta: &ObjectMeta) -> i64 {
    annotation(meta, REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// What the arithmetic of `rolling.rs` needs of a ReplicaSet.
pub fn counts(rs: &ReplicaSet) -> Rs {
    let int = |key| annotation(&rs.metadata, key).and_then(|v| v.parse().ok());
    Rs {
        name: rs.metadata.name.clone().unwrap_or_default(),
        spec: rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
        available: rs
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0),
        created: created(&rs.metadata),
        desired: int(DESIRED_REPLICAS),
        max: int(MAX_REPLICAS),
    }
}

/// The desired/max-replicas annotations for a Deployment's RS (`SetReplicasAnnotations`).
pub fn replicas_annotations(d: &Rollout) -> BTreeMap<String, String> {
    BTreeMap::from([
        (DESIRED_REPLICAS.to_string(), d.replicas.to_string()),
        (
            MAX_REPLICAS.to_string(),
            (d.replicas + d.max_surge).to_string(),
        ),
    ])
}

/// The annotations the new RS should carry (`SetNewReplicaSetAnnotations`): the Deployment's
/// (minus `NOT_COPIED`), the revision raised to `new_revision` (the old one into the history),
/// and the replicas annotations. Returns the annotations and whether they changed.
pub fn new_rs_annotations(
    d: &Deployment,
    current: &ObjectMeta,
    new_revision: i64,
    rollout: &Rollout,
) -> (BTreeMap<String, String>, bool) {
    let mut annotations = current.annotations.clone().unwrap_or_default();
    for (key, value) in d.metadata.annotations.iter().flatten() {
        if !NOT_COPIED.contains(&key.as_str()) {
            annotations.insert(key.clone(), value.clone());
        }
    }
    let old_revision = revision(current);
    if old_revision < new_revision {
        if old_revision > 0 {
            let mut history: Vec<String> = annotation(current, REVISION_HISTORY)
                .map(|h| h.split(',').map(String::from).collect())
                .unwrap_or_default();
            history.push(old_revision.to_string());
            annotations.insert(REVISION_HISTORY.to_string(), history.join(","));
        }
        annotations.insert(REVISION.to_string(), new_revision.to_string());
    }
    annotations.extend(replicas_annotations(rollout));
    let changed = current.annotations.as_ref() != Some(&annotations);
    (annotations, changed)
}

/// A new ReplicaSet for the Deployment's template (`getNewReplicaSet`): named `DEPLOY-HASH`, the
/// hash label on its selector, labels and template, owned by the Deployment, at `replicas`.
pub fn new_replica_set(
    d: &Deployment,
    replicas: i32,
    revision: i64,
    rollout: &Rollout,
) -> ReplicaSet {
    let spec = d.spec.clone().unwrap_or_default();
    let collision_count = d.status.as_ref().and_then(|s| s.collision_count);
    let hash = pod_template_hash(&spec.template, collision_count);
    let mut template = spec.template.clone();
    let template_meta = template.metadata.get_or_insert_with(ObjectMeta::default);
    template_meta
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH.into(), hash.clone());
    let labels = template_meta.labels.clone();
    let mut selector: LabelSelector = spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH.into(), hash.clone());
    let name = format!("{}-{hash}", d.metadata.name.as_deref().unwrap_or_default());
    let mut rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: d.metadata.namespace.clone(),
            labels,
            owner_references: Some(vec![controller_ref("apps/v1", "Deployment", &d.metadata)]),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            min_ready_seconds: spec.min_ready_seconds,
            selector,
            template: Some(template),
        }),
        status: None,
    };
    let (annotations, _) = new_rs_annotations(d, &rs.metadata, revision, rollout);
    rs.metadata.annotations = Some(annotations);
    rs
}

/// Old RSs to delete beyond `revisionHistoryLimit` (`cleanupDeployment`, DP29): lowest revisions
/// first, skipping any that still has pods or a spec not yet observed.
pub fn history_to_delete<'a>(old: &[&'a ReplicaSet], limit: i32) -> Vec<&'a ReplicaSet> {
    let mut cleanable: Vec<&ReplicaSet> = old
        .iter()
        .copied()
        .filter(|rs| rs.metadata.deletion_timestamp.is_none())
        .collect();
    let surplus = cleanable.len() as i64 - i64::from(limit.max(0));
    if surplus <= 0 {
        return Vec::new();
    }
    cleanable.sort_by_key(|rs| (revision(&rs.metadata), created(&rs.metadata)));
    cleanable
        .into_iter()
        .take(surplus as usize)
        .filter(|rs| {
            let spec = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
            let status = rs.status.as_ref();
            let replicas = status.map_or(0, |s| s.replicas);
            let observed = status.and_then(|s| s.observed_generation).unwrap_or(0);
            spec == 0 && replicas == 0 && rs.metadata.generation.unwrap_or(0) <= observed
        })
        .collect()
}

#[cfg(test)]
#[path = "util_tests.rs"]
mod tests;
