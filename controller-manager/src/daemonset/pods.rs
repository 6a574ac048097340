//! A DaemonSet's pods and revisions, as pure functions: the pod for one node, the template's
//! hash, the ControllerRevision that records it.
//!
//! Kubernetes counterpart: `pkg/controller/daemon/util/daemonset_util.go` (`CreatePodTemplate`,
//! `ReplaceDaemonSetPodNodeNameNodeAffinity`), `pkg/controller/history/controller_history.go`
//! (`NewControllerRevision`, `HashControllerRevision`) and `controller.ComputeHash`. Since 1.12 the
//! controller does not set `nodeName`: it pins each pod to its node with a required node affinity
//! `metadata.name In [node]`, and the scheduler binds it. The hash is FNV-32a of the template
//! (here of its JSON, upstream of its Go dump), printed with `rand.SafeEncodeString`'s alphabet, so
//! it never spells a word.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use minik_api::core::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
};
use minik_api::daemonsets::{CONTROLLER_REVISION_HASH_LABEL, POD_TEMPLATE_GENERATION_LABEL};
use minik_api::meta::ObjectMeta;

use super::decide::daemon_tolerations;
use crate::ownership::controller_ref;

/// `rand.SafeEncodeString`'s alphabet: no vowels, no 0, 1 or 3.
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The hash of the DaemonSet's template (and collision count), as pods and revisions carry it.
pub fn template_hash(ds: &DaemonSet) -> String {
    let template = ds.spec.as_ref().map(|s| &s.template);
    let mut bytes = serde_json::to_vec(&template).unwrap_or_default();
    if let Some(collisions) = ds.status.as_ref().and_then(|s| s.collision_count) {
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

/// The pod for `node` (`CreatePodTemplate` + the node-name affinity): `generateName: DSNAME-`,
/// the template's labels plus the revision hash and template generation, the default daemon
/// tolerations, and the controller reference.
pub fn new_pod(ds: &DaemonSet, node: &str, hash: &str) -> Pod {
    let template = ds
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let template_meta = template.metadata.unwrap_or_default();
    let mut labels = template_meta.labels.unwrap_or_default();
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.into(), hash.into());
    if let Some(generation) = ds.metadata.generation {
        labels.insert(POD_TEMPLATE_GENERATION_LABEL.into(), generation.to_string());
    }
    let mut spec = template.spec.unwrap_or_default();
    spec.tolerations = Some(daemon_tolerations(ds));
    spec.affinity = Some(node_name_affinity(spec.affinity.take(), node));
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!(
                "{}-",
                ds.metadata.name.as_deref().unwrap_or_default()
            )),
            namespace: ds.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: template_meta.annotations,
            owner_references: Some(vec![controller_ref("apps/v1", "DaemonSet", &ds.metadata)]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// `ReplaceDaemonSetPodNodeNameNodeAffinity`: the required terms become the one term
/// `metadata.name In [node]` (the controller already checked the template's own terms).
fn node_name_affinity(affinity: Option<Affinity>, node: &str) -> Affinity {
    let mut affinity = affinity.unwrap_or_default();
    let node_affinity = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    node_affinity.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: "metadata.name".into(),
                operator: "In".into(),
                values: Some(vec![node.into()]),
            }]),
            match_expressions: None,
        }],
    });
    affinity
}

/// The ControllerRevision recording the current template (`NewControllerRevision`): named
/// `DSNAME-HASH`, its data the patch that restores the template.
pub fn new_revision(ds: &DaemonSet, hash: &str, revision: i64) -> ControllerRevision {
    let name = ds.metadata.name.as_deref().unwrap_or_default();
    let template = ds.spec.as_ref().map(|s| &s.template);
    let mut template = serde_json::to_value(template).unwrap_or_default();
    template["$patch"] = serde_json::json!("replace");
    let mut labels: BTreeMap<String, String> = ds
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.into(), hash.into());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(format!("{name}-{hash}")),
            namespace: ds.metadata.namespace.clone(),
            labels: Some(labels),
            owner_references: Some(vec![controller_ref("apps/v1", "DaemonSet", &ds.metadata)]),
            ..ObjectMeta::default()
        },
        data: Some(RawExtension(
            serde_json::json!({"spec": {"template": template}}),
        )),
        revision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agent(image: &str) -> DaemonSet {
        serde_json::from_value(json!({
            "metadata": {"name": "agent", "namespace": "default", "uid": "u1", "generation": 2},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"containers": [{"name": "agent", "image": image}]}}}}))
        .unwrap()
    }

    #[test]
    fn the_hash_follows_the_template_and_uses_the_safe_alphabet() {
        let (one, two) = (
            template_hash(&agent("nginx:1")),
            template_hash(&agent("nginx:2")),
        );
        assert_ne!(one, two);
        assert_eq!(one, template_hash(&agent("nginx:1")));
        assert!(one.bytes().all(|b| SAFE_ALPHABET.contains(&b)), "{one}");
    }

    #[test]
    fn a_pod_is_pinned_to_its_node_by_affinity_and_tolerates_cordons() {
        let pod = new_pod(&agent("nginx"), "node-2", "abc");
        let value = serde_json::to_value(&pod).unwrap();
        assert_eq!(value["metadata"]["generateName"], "agent-");
        assert_eq!(
            value["metadata"]["labels"]["controller-revision-hash"],
            "abc"
        );
        assert_eq!(value["metadata"]["labels"]["pod-template-generation"], "2");
        assert!(
            value["spec"].get("nodeName").is_none(),
            "the scheduler binds"
        );
        assert_eq!(
            value["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"],
            json!({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}]})
        );
        let tolerations = value["spec"]["tolerations"].as_array().unwrap();
        assert!(
            tolerations.contains(&json!({"key": "node.kubernetes.io/unschedulable",
                                              "operator": "Exists", "effect": "NoSchedule"}))
        );
        assert_eq!(
            super::super::decide::target_node(&pod).as_deref(),
            Some("node-2")
        );
    }

    #[test]
    fn a_revision_is_named_after_its_hash_and_replaces_the_template() {
        let revision = new_revision(&agent("nginx"), "abc", 3);
        let value = serde_json::to_value(&revision).unwrap();
        assert_eq!(value["metadata"]["name"], "agent-abc");
        assert_eq!(value["revision"], 3);
        assert_eq!(value["data"]["spec"]["template"]["$patch"], "replace");
    }
}
