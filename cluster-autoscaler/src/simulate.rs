//! The cluster snapshot and the simulations the autoscaler decides with: pure functions, no I/O.
//!
//! Kubernetes counterpart: `cluster-autoscaler/simulator` (the `ClusterSnapshot` and the
//! scheduler-framework `PredicateChecker`), `core/scaleup` (`filterOutSchedulable`), the
//! `estimator.BinpackingNodeEstimator` and `simulator.FindNodesToRemove`'s "do its pods fit
//! elsewhere". Upstream runs the real scheduler's filter plugins in the simulation; minik does the
//! same by calling the scheduler crate's `schedule_on` over `NodeInfo`s.
//!
//! minik simplifies: one node group whose nodes all have the template's size; no expanders (one
//! group, nothing to choose), no pod priorities or expendable pods.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use minik_scheduler::algorithm::schedule_on;
use minik_scheduler::node_info::{is_terminated, NodeInfo, PodRequests};

/// The taint upstream puts on a node it is about to delete (`ToBeDeletedByClusterAutoscaler`).
pub const TO_BE_DELETED_TAINT: &str = "ToBeDeletedByClusterAutoscaler";

/// The nodes the scheduler could use, with the requests of the pods already on them.
pub fn snapshot(nodes: &[Node], pods: &[Pod]) -> BTreeMap<String, NodeInfo> {
    let mut infos: BTreeMap<String, NodeInfo> = nodes
        .iter()
        .map(|n| (name(n).to_string(), NodeInfo::new(Arc::new(n.clone()))))
        .collect();
    for pod in pods.iter().filter(|p| !is_terminated(p)) {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        if let Some(info) = node.and_then(|n| infos.get_mut(n)) {
            info.add_pod(&PodRequests::of(pod));
        }
    }
    infos
}

/// The name of a node (or pod): `metadata.name`, empty if unset.
pub fn name<
    K: k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
>(
    object: &K,
) -> &str {
    object.metadata().name.as_deref().unwrap_or_default()
}

/// A new node like `template` (upstream sanitizes a real node of the group the same way): its own
/// name and hostname label, no taints, not cordoned, and the group's labels.
pub fn template_node(template: &Node, name: &str, labels: &BTreeMap<String, String>) -> Node {
    let mut node = template.clone();
    node.metadata = Default::default();
    node.metadata.name = Some(name.to_string());
    let mut all = template.metadata.labels.clone().unwrap_or_default();
    all.insert("kubernetes.io/hostname".into(), name.to_string());
    all.extend(labels.clone());
    node.metadata.labels = Some(all);
    if let Some(spec) = node.spec.as_mut() {
        spec.taints = None;
        spec.unschedulable = None;
    }
    node
}

/// Places `pod` on one of `infos` as the scheduler would and accounts for it there; `false` if
/// no node fits it.
fn place(pod: &Pod, infos: &mut [NodeInfo]) -> bool {
    let requests = PodRequests::of(pod);
    let Ok(chosen) = schedule_on(pod, &requests, infos.iter()) else {
        return false;
    };
    if let Some(info) = infos.iter_mut().find(|i| i.name() == chosen) {
        info.add_pod(&requests);
    }
    true
}

/// The pending pods that fit on the nodes there are (upcoming ones included), placed one after
/// the other; returns the ones that do not (upstream `filterOutSchedulable`: the scheduler will
/// place the others soon, they must not trigger a scale-up).
pub fn filter_out_schedulable<'p>(pending: &[&'p Pod], infos: &mut [NodeInfo]) -> Vec<&'p Pod> {
    pending
        .iter()
        .copied()
        .filter(|p| !place(p, infos))
        .collect()
}

/// How many template nodes the pods need (upstream's binpacking estimator): pods largest first,
/// each onto the new nodes already opened, else onto a new one while under `limit`. Returns the
/// node count and the pods that would then run (a pod too big for an empty node helps nothing).
pub fn estimate<'p>(
    pods: &[&'p Pod],
    template: &Node,
    labels: &BTreeMap<String, String>,
    limit: usize,
) -> (usize, Vec<&'p Pod>) {
    let mut sorted = pods.to_vec();
    sorted.sort_by_key(|p| std::cmp::Reverse(size_score(p)));
    let mut opened: Vec<NodeInfo> = Vec::new();
    let mut helped = Vec::new();
    for pod in sorted {
        if place(pod, &mut opened) {
            helped.push(pod);
            continue;
        }
        if opened.len() >= limit {
            continue;
        }
        let node = template_node(template, &format!("template-{}", opened.len()), labels);
        let mut fresh = vec![NodeInfo::new(Arc::new(node))];
        if place(pod, &mut fresh) {
            opened.extend(fresh);
            helped.push(pod);
        }
    }
    (opened.len(), helped)
}

/// Upstream sorts by a score of cpu and memory relative to the node; millicores plus MiB is
/// close enough for the order.
fn size_score(pod: &Pod) -> i64 {
    let r = PodRequests::of(pod).requests;
    r.milli_cpu + r.memory / (1024 * 1024)
}

/// A node's utilization as upstream computes it for scale-down: the larger of requested cpu over
/// allocatable cpu and requested memory over allocatable memory.
pub fn utilization(info: &NodeInfo) -> f64 {
    let ratio = |used: i64, total: i64| {
        if total <= 0 {
            0.0
        } else {
            used as f64 / total as f64
        }
    };
    ratio(info.requested.milli_cpu, info.allocatable.milli_cpu)
        .max(ratio(info.requested.memory, info.allocatable.memory))
}

/// Whether every pod of a node being removed would fit on `others` (upstream
/// `FindNodesToRemove`); the pods are placed one after the other, as the scheduler would.
pub fn pods_fit_elsewhere(pods: &[&Pod], others: &mut [NodeInfo]) -> bool {
    pods.iter().all(|pod| {
        let mut moved = (*pod).clone();
        if let Some(spec) = moved.spec.as_mut() {
            spec.node_name = None;
        }
        place(&moved, others)
    })
}

/// A pod that waits for a node because none fits: no node yet, not being deleted, and
/// `PodScheduled=False` with reason `Unschedulable` (what the scheduler writes).
pub fn is_unschedulable(pod: &Pod) -> bool {
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some();
    let deleting = pod.metadata.deletion_timestamp.is_some();
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref());
    let unschedulable = conditions.unwrap_or_default().iter().any(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
    });
    !bound && !deleting && unschedulable
}

/// A pod a DaemonSet owns: it goes with its node, nobody moves it elsewhere.
pub fn is_daemonset_pod(pod: &Pod) -> bool {
    let owners = pod.metadata.owner_references.as_deref().unwrap_or_default();
    owners.iter().any(|o| o.kind == "DaemonSet")
}

/// Whether the node's `Ready` condition is `True`.
pub fn is_ready(node: &Node) -> bool {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_deref());
    conditions
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Whether the node carries [`TO_BE_DELETED_TAINT`].
pub fn is_to_be_deleted(node: &Node) -> bool {
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref());
    taints
        .unwrap_or_default()
        .iter()
        .any(|t| t.key == TO_BE_DELETED_TAINT)
}

#[cfg(test)]
#[path = "simulate_tests.rs"]
mod tests;
