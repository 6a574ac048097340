//! The VolumeBinding filter: a pod goes only where its claims' volumes can be reached.
//!
//! Kubernetes counterpart: the `VolumeBinding` plugin (`pkg/scheduler/framework/plugins/volumebinding`:
//! `PreFilter`, `Filter`, `FindPodVolumes`) and its reasons: a claim bound to a volume with node
//! affinity allows only the nodes that affinity selects ("node(s) had volume node affinity
//! conflict"); an unbound claim whose class binds Immediately blocks the pod ("pod has unbound
//! immediate PersistentVolumeClaims"); an unbound WaitForFirstConsumer claim allows every node, and
//! the provisioner then follows the node this pod is bound to.
//!
//! minik simplifies: the chosen node is not written on the claim before binding (upstream's
//! `PreBind` sets `volume.kubernetes.io/selected-node` and waits for the volume); minik's binder
//! reads the node from the scheduled pod instead, and the kubelet waits for the claim to be bound.
//! No capacity or CSI limits.

use std::borrow::Cow;
use std::sync::Arc;

use futures::StreamExt;
use minik_api::core::Node;
use minik_api::k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, PersistentVolume, PersistentVolumeClaim, Pod, PodSpec,
};
use minik_api::k8s_openapi::api::storage::v1::StorageClass;
use minik_api::ObjectKey;
use minik_client::{reflector, store, watcher, Api, Client, ListParams, Store};
use tokio_util::sync::CancellationToken;

use crate::algorithm::{matches_node_selector_and_affinity, Reason};

/// `ErrReasonNodeConflict`.
pub const REASON_NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
/// `ErrReasonBindConflict` for an Immediate claim not bound yet.
pub const REASON_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// What the pod's claims allow.
#[derive(Clone, Debug)]
pub enum Constraint {
    /// Any node (no claims, or only WaitForFirstConsumer ones not bound yet).
    Any,
    /// No node: the reason applies to all.
    None(Reason),
    /// The nodes every one of these bound volumes' node affinities selects.
    Volumes(Vec<Arc<PersistentVolume>>),
}

impl Constraint {
    /// Whether `node` may take the pod; `Err` holds why not.
    pub fn allows(&self, node: &Node) -> Result<(), Reason> {
        match self {
            Constraint::Any => Ok(()),
            Constraint::None(reason) => Err(reason.clone()),
            Constraint::Volumes(volumes) => {
                if volumes.iter().all(|pv| reaches(pv, node)) {
                    Ok(())
                } else {
                    Err(REASON_NODE_CONFLICT.into())
                }
            }
        }
    }
}

/// Whether a volume's required node affinity selects `node` (the NodeAffinity rules, reused).
pub fn reaches(volume: &PersistentVolume, node: &Node) -> bool {
    let required = volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.clone());
    let Some(required) = required else {
        return true;
    };
    let as_pod = Pod {
        spec: Some(PodSpec {
            affinity: Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(required),
                    ..NodeAffinity::default()
                }),
                ..Affinity::default()
            }),
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    matches_node_selector_and_affinity(&as_pod, node)
}

/// The claims, volumes and classes the filter reads, kept by their own watches.
#[derive(Clone)]
pub struct VolumeLookup {
    claims: Store<PersistentVolumeClaim>,
    volumes: Store<PersistentVolume>,
    classes: Store<StorageClass>,
}

impl VolumeLookup {
    /// Starts the three watches; the returned task ends after `shutdown`.
    pub fn start(
        client: &Client,
        shutdown: CancellationToken,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (claims, claim_writer) = store();
        let (volumes, volume_writer) = store();
        let (classes, class_writer) = store();
        let claim_events = reflector(
            claim_writer,
            watcher(
                Api::<PersistentVolumeClaim>::all(client.clone()),
                ListParams::default(),
            ),
        );
        let volume_events = reflector(
            volume_writer,
            watcher(
                Api::<PersistentVolume>::all(client.clone()),
                ListParams::default(),
            ),
        );
        let class_events = reflector(
            class_writer,
            watcher(
                Api::<StorageClass>::all(client.clone()),
                ListParams::default(),
            ),
        );
        let task = tokio::spawn(async move {
            let drain = async {
                tokio::join!(
                    claim_events.for_each(|_| async {}),
                    volume_events.for_each(|_| async {}),
                    class_events.for_each(|_| async {}),
                )
            };
            tokio::select! {
                _ = shutdown.cancelled() => {}
                _ = drain => {}
            }
        });
        let lookup = VolumeLookup {
            claims,
            volumes,
            classes,
        };
        (lookup, task)
    }

    /// What the pod's persistentVolumeClaim volumes allow.
    pub fn constraint(&self, pod: &Pod) -> Constraint {
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let mut bound = Vec::new();
        let claims = pod
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .filter_map(|v| v.persistent_volume_claim.as_ref());
        for source in claims {
            let name = &source.claim_name;
            let Some(claim) = self
                .claims
                .get(&ObjectKey::new(namespace.clone(), name.clone()))
            else {
                return Constraint::None(Cow::Owned(format!(
                    "persistentvolumeclaim \"{name}\" not found"
                )));
            };
            if claim.metadata.deletion_timestamp.is_some() {
                return Constraint::None(Cow::Owned(format!(
                    "persistentvolumeclaim \"{name}\" is being deleted"
                )));
            }
            let spec = claim.spec.clone().unwrap_or_default();
            match spec.volume_name.filter(|n| !n.is_empty()) {
                Some(volume) => match self.volumes.get(&ObjectKey::cluster(volume.clone())) {
                    Some(pv) => bound.push(pv),
                    None => {
                        return Constraint::None(Cow::Owned(format!(
                            "persistentvolume \"{volume}\" not found"
                        )))
                    }
                },
                None if self.waits_for_consumer(spec.storage_class_name.as_deref()) => {}
                None => return Constraint::None(REASON_UNBOUND_IMMEDIATE.into()),
            }
        }
        if bound.is_empty() {
            Constraint::Any
        } else {
            Constraint::Volumes(bound)
        }
    }

    fn waits_for_consumer(&self, class: Option<&str>) -> bool {
        let class = class.filter(|c| !c.is_empty()).map(ObjectKey::cluster);
        class
            .and_then(|key| self.classes.get(&key))
            .and_then(|c| c.volume_binding_mode.clone())
            .is_some_and(|mode| mode == "WaitForFirstConsumer")
    }
}

/// Folds the nodes this filter rejected into the message of the other filters (which counted
/// only the remaining nodes), as one `FitError` would list them.
pub fn merge_message(
    message: &str,
    rejected: &std::collections::BTreeMap<Reason, usize>,
) -> String {
    let mut total: usize = rejected.values().sum();
    let mut parts: Vec<String> = rejected
        .iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    if let Some(rest) = message.strip_prefix("0/") {
        if let Some((count, reasons)) = rest.split_once(" nodes are available: ") {
            total += count.parse::<usize>().unwrap_or(0);
            parts.extend(reasons.trim_end_matches('.').split(", ").map(String::from));
        }
    }
    parts.sort();
    format!("0/{total} nodes are available: {}.", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name,
            "labels": {"kubernetes.io/hostname": name}}}))
        .unwrap()
    }

    #[test]
    fn a_volume_pinned_to_a_node_allows_only_that_node() {
        let pv: PersistentVolume = serde_json::from_value(json!({"metadata": {"name": "pv"},
            "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-2"]}]}]}}}}))
        .unwrap();
        let constraint = Constraint::Volumes(vec![Arc::new(pv)]);
        assert!(constraint.allows(&node("node-2")).is_ok());
        assert_eq!(
            constraint.allows(&node("node-1")).unwrap_err(),
            REASON_NODE_CONFLICT
        );
    }

    #[test]
    fn the_rejected_nodes_join_the_other_filters_message() {
        let rejected = [(Reason::from(REASON_NODE_CONFLICT), 2)].into();
        assert_eq!(
            merge_message("0/1 nodes are available: 1 Insufficient cpu.", &rejected),
            "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had volume node affinity conflict."
        );
        assert_eq!(
            merge_message("no nodes available to schedule pods", &rejected),
            "0/2 nodes are available: 2 node(s) had volume node affinity conflict."
        );
    }
}
