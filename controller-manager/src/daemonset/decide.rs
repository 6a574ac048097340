//! The DaemonSet controller's decisions, as pure functions of the DaemonSet, the nodes, its pods
//! and the clock.
//!
//! Kubernetes counterpart: `pkg/controller/daemon/daemon_controller.go` (`NodeShouldRunDaemonPod`,
//! `podsShouldBeOnNode`, `updateDaemonSetStatus`), `pkg/controller/daemon/update.go`
//! (`rollingUpdate`: the maxUnavailable and the maxSurge paths) and
//! `pkg/controller/daemon/util/daemonset_util.go` (`AddOrUpdateDaemonPodTolerations`,
//! `GetTargetNodeName`). The rules:
//!
//! - a node should run the daemon pod when the template's node selector and required node affinity
//!   match it and the pod, with the default daemon tolerations added, tolerates its `NoSchedule`
//!   and `NoExecute` taints (the same filters as the scheduler's, reused from it);
//! - a node that should run one and has none gets one; a node that should not has its pods
//!   deleted; a failed or succeeded pod is deleted (and replaced by the next sync); of several
//!   running pods of one revision the oldest stays; a pod whose node no longer exists is deleted;
//! - a pod being deleted still occupies its node: no replacement until it is gone;
//! - RollingUpdate without surge deletes old pods while fewer than `maxUnavailable` nodes lack an
//!   available pod (an old pod that is not available goes at once); with surge it starts the new
//!   pod beside the old one on up to `maxSurge` nodes and deletes the old one once the new one is
//!   available ([`super::rolling`]). OnDelete replaces nothing.
//!
//! minik simplifies: no failed-pod backoff, no hash-collision counter.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};
use minik_api::core::{Node, Pod, Toleration};
use minik_api::daemonsets::CONTROLLER_REVISION_HASH_LABEL;
use minik_scheduler::algorithm::{matches_node_selector_and_affinity, untolerated_taint};

use crate::replicaset::pods::{is_available, is_ready};

/// What to do this sync: the nodes to create a pod on, the pods to delete (by name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Node names, each to get one new pod.
    pub create_on: Vec<String>,
    /// Pod names.
    pub delete: Vec<String>,
}

/// The tolerations every daemon pod gets (`AddOrUpdateDaemonPodTolerations`): it stays on nodes
/// that are not ready, unreachable, under pressure or cordoned.
pub fn default_tolerations(host_network: bool) -> Vec<Toleration> {
    let toleration = |key: &str, effect: &str| Toleration {
        key: Some(key.to_string()),
        operator: Some("Exists".to_string()),
        effect: Some(effect.to_string()),
        ..Toleration::default()
    };
    let mut tolerations = vec![
        toleration("node.kubernetes.io/not-ready", "NoExecute"),
        toleration("node.kubernetes.io/unreachable", "NoExecute"),
        toleration("node.kubernetes.io/disk-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/memory-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/pid-pressure", "NoSchedule"),
        toleration("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if host_network {
        tolerations.push(toleration(
            "node.kubernetes.io/network-unavailable",
            "NoSchedule",
        ));
    }
    tolerations
}

/// The template's tolerations with the defaults added (those it lacks by key and effect).
pub fn daemon_tolerations(ds: &DaemonSet) -> Vec<Toleration> {
    let spec = ds.spec.as_ref().and_then(|s| s.template.spec.as_ref());
    let mut tolerations = spec.and_then(|s| s.tolerations.clone()).unwrap_or_default();
    let host_network = spec.and_then(|s| s.host_network).unwrap_or(false);
    for default in default_tolerations(host_network) {
        let present = tolerations
            .iter()
            .any(|t| t.key == default.key && t.effect == default.effect);
        if !present {
            tolerations.push(default);
        }
    }
    tolerations
}

/// `NodeShouldRunDaemonPod`: selector and affinity match, every hard taint tolerated.
pub fn should_run(ds: &DaemonSet, node: &Node) -> bool {
    let template = ds
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let pod = Pod {
        metadata: Default::default(),
        spec: template.spec,
        status: None,
    };
    matches_node_selector_and_affinity(&pod, node)
        && untolerated_taint(node, &daemon_tolerations(ds)).is_none()
}

/// The node a daemon pod is for (`GetTargetNodeName`): its `nodeName`, or before binding the
/// `metadata.name` its required node affinity names.
pub fn target_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(node) = spec.node_name.clone().filter(|n| !n.is_empty()) {
        return Some(node);
    }
    let required = spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?;
    required.node_selector_terms.iter().find_map(|term| {
        term.match_fields.iter().flatten().find_map(|field| {
            let name = field.key == "metadata.name" && field.operator == "In";
            name.then(|| field.values.as_ref()?.first().cloned())
                .flatten()
        })
    })
}

/// The pods grouped by target node, oldest first on each node.
pub fn pods_by_node<'a>(pods: &[&'a Pod]) -> BTreeMap<String, Vec<&'a Pod>> {
    let mut by_node: BTreeMap<String, Vec<&'a Pod>> = BTreeMap::new();
    for pod in pods {
        by_node
            .entry(target_node(pod).unwrap_or_default())
            .or_default()
            .push(pod);
    }
    for pods in by_node.values_mut() {
        pods.sort_by_key(|pod| {
            (
                pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
                pod.metadata.name.clone(),
            )
        });
    }
    by_node
}

pub(super) fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn is_updated(pod: &Pod, hash: &str) -> bool {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
        .is_some_and(|h| h == hash)
}

/// One node's daemon pods, once terminal and terminating ones are set aside.
pub(super) struct NodeState<'a> {
    pub(super) node: String,
    pub(super) new: Option<&'a Pod>,
    pub(super) old: Option<&'a Pod>,
}

/// `manage` and `rollingUpdate` together: what to create and delete so every eligible node runs
/// one pod of revision `hash`. `now` decides which pods are available (`minReadySeconds`).
pub fn plan(
    ds: &DaemonSet,
    nodes: &[&Node],
    pods: &[&Pod],
    hash: &str,
    now: jiff::Timestamp,
) -> Plan {
    let mut plan = Plan::default();
    let mut by_node = pods_by_node(pods);
    let mut running = Vec::new();
    for node in nodes {
        let node_name = node.metadata.name.clone().unwrap_or_default();
        let pods = by_node.remove(&node_name).unwrap_or_default();
        if !should_run(ds, node) {
            let live = pods
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none());
            plan.delete.extend(live.map(|p| name(p)));
            continue;
        }
        if pods.is_empty() {
            plan.create_on.push(node_name);
            continue;
        }
        let mut state = NodeState {
            node: node_name,
            new: None,
            old: None,
        };
        for pod in pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
        {
            let slot = if is_updated(pod, hash) {
                &mut state.new
            } else {
                &mut state.old
            };
            if matches!(phase(pod), "Failed" | "Succeeded") || slot.is_some() {
                // A finished pod is replaced; of two of one revision the oldest stays.
                plan.delete.push(name(pod));
            } else {
                *slot = Some(pod);
            }
        }
        running.push(state);
    }
    // Pods for nodes that are gone (or were never named) are deleted.
    for pods in by_node.values() {
        let live = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none());
        plan.delete.extend(live.map(|p| name(p)));
    }
    let desired = nodes.iter().filter(|n| should_run(ds, n)).count();
    super::rolling::rolling_update(ds, &running, desired, now, &mut plan);
    plan
}

/// `updateDaemonSetStatus`: per eligible node its oldest live pod counts (scheduled, ready,
/// available, updated); a pod on a node that should not run one is misscheduled.
pub fn status(
    ds: &DaemonSet,
    nodes: &[&Node],
    pods: &[&Pod],
    hash: &str,
    now: jiff::Timestamp,
) -> DaemonSetStatus {
    let live: Vec<&Pod> = pods
        .iter()
        .copied()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let by_node = pods_by_node(&live);
    let min_ready = ds
        .spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0);
    let previous = ds.status.clone().unwrap_or_default();
    let mut status = DaemonSetStatus {
        observed_generation: ds.metadata.generation,
        collision_count: previous.collision_count,
        conditions: previous.conditions,
        ..DaemonSetStatus::default()
    };
    let (mut available, mut updated) = (0, 0);
    for node in nodes {
        let node_name = node.metadata.name.as_deref().unwrap_or_default();
        let oldest = by_node.get(node_name).and_then(|pods| pods.first());
        match (should_run(ds, node), oldest) {
            (true, Some(pod)) => {
                status.desired_number_scheduled += 1;
                status.current_number_scheduled += 1;
                status.number_ready += i32::from(is_ready(pod));
                available += i32::from(is_available(pod, min_ready, now));
                updated += i32::from(is_updated(pod, hash));
            }
            (true, None) => status.desired_number_scheduled += 1,
            (false, Some(_)) => status.number_misscheduled += 1,
            (false, None) => {}
        }
    }
    status.number_available = Some(available);
    status.updated_number_scheduled = Some(updated);
    status.number_unavailable = Some(status.desired_number_scheduled - available);
    status
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
