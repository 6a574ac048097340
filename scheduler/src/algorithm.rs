//! The scheduling decision: filter the nodes a pod can run on, score them, pick the best.
//!
//! Kubernetes counterpart: `pkg/scheduler/schedule_one.go` (`schedulePod`, `findNodesThatFitPod`,
//! `prioritizeNodes`, `selectHost`) and the default plugins under `pkg/scheduler/framework/plugins/`.
//! The filters run in the order of upstream's default profile, and a node is rejected by the first
//! plugin that fails, which is what the reasons of the `FailedScheduling` message count:
//!
//! 1. `NodeUnschedulable`: `spec.unschedulable` (a cordoned node) → `node(s) were unschedulable`;
//! 2. `TaintToleration`: the first `NoSchedule`/`NoExecute` taint the pod does not tolerate →
//!    `node(s) had untolerated taint {key: value}` (v1.32's wording; v1.33 hides the taint,
//!    `node(s) had untolerated taint(s)`). A node whose `Ready` condition is not True counts as
//!    carrying the `node.kubernetes.io/not-ready` (or `unreachable`) `NoSchedule` taint even before
//!    the node lifecycle controller has written it (`TaintNodesByCondition`);
//! 3. `NodeAffinity`: `nodeSelector` and required node affinity →
//!    `node(s) didn't match Pod's node affinity/selector`;
//! 4. `NodeResourcesFit`: requests against allocatable → `Too many pods`, `Insufficient cpu`,
//!    `Insufficient memory` (one node can give several).
//!
//! Scoring is `NodeResourcesFit`'s default `LeastAllocated` strategy over cpu and memory (weight 1)
//! plus `TaintToleration`'s (weight 3): fewer untolerated `PreferNoSchedule` taints score higher,
//! normalized over the feasible nodes as upstream's `DefaultNormalizeScore(reverse)`. Ties go to
//! the node with fewer pods, then to the smaller name, so equal nodes fill round robin (upstream
//! picks at random among the best). Everything here is pure: no I/O, no clock.
//!
//! On big clusters the filters stop once enough nodes fit, as upstream's adaptive
//! `percentageOfNodesToScore` does ([`num_feasible_nodes_to_find`]): with 5,000 nodes a pod is
//! placed among the first 500 that fit, the search starting where the previous pod's stopped.
//!
//! minik simplifies: no preemption, no inter-pod affinity, no topology spread, no host ports, no
//! volume plugins, no `PreferNoSchedule` scoring.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use minik_api::core::{Node, NodeSelectorRequirement, Pod, Taint, Toleration};

use minik_api::taints::{tolerates, TAINT_NOT_READY, TAINT_UNREACHABLE, TAINT_UNSCHEDULABLE};

use crate::node_info::{is_terminated, NodeInfo, PodRequests};

/// Reason of `NodeUnschedulable` (upstream `ErrReasonUnschedulable`).
pub const REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
/// Reason of `TaintToleration`: `node(s) had untolerated taint {key: value}`.
pub fn reason_taint(taint: &Taint) -> String {
    let value = taint.value.as_deref().unwrap_or("");
    format!("node(s) had untolerated taint {{{}: {value}}}", taint.key)
}
/// Reason of `NodeAffinity` (upstream `ErrReasonPod`).
pub const REASON_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
/// Reasons of `NodeResourcesFit`.
pub const REASON_TOO_MANY_PODS: &str = "Too many pods";
/// See [`REASON_TOO_MANY_PODS`].
pub const REASON_CPU: &str = "Insufficient cpu";
/// See [`REASON_TOO_MANY_PODS`].
pub const REASON_MEMORY: &str = "Insufficient memory";

/// The highest score a node can get (upstream `framework.MaxNodeScore`).
pub const MAX_NODE_SCORE: i64 = 100;
/// `TaintToleration`'s weight in the default profile (`NodeResourcesFit` weighs 1).
pub const TAINT_TOLERATION_WEIGHT: i64 = 3;

/// Why a filter rejected a node: a fixed reason or one naming a taint.
pub type Reason = Cow<'static, str>;

/// No node can take the pod. Displays as Kubernetes' message, e.g.
/// `0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient cpu.`
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Unschedulable {
    /// The full message, written into the PodScheduled condition and the FailedScheduling event.
    pub message: String,
}

impl Unschedulable {
    /// Builds the message from the number of nodes and the reasons each node was rejected for, as
    /// upstream's `FitError.Error()` does: a histogram rendered as `"<count> <reason>"` strings,
    /// sorted as strings, joined with `", "`.
    pub fn new(node_count: usize, reasons: &BTreeMap<Reason, usize>) -> Unschedulable {
        if node_count == 0 {
            // Upstream `ErrNoNodesAvailable`.
            return Unschedulable {
                message: "no nodes available to schedule pods".to_string(),
            };
        }
        let mut histogram: Vec<String> = reasons
            .iter()
            .map(|(reason, count)| format!("{count} {reason}"))
            .collect();
        histogram.sort();
        Unschedulable {
            message: format!(
                "0/{node_count} nodes are available: {}.",
                histogram.join(", ")
            ),
        }
    }
}

/// Picks a node for `pod` given plain lists of nodes and pods: builds each node's [`NodeInfo`] from
/// the pods bound to it (ignoring finished ones) and calls [`schedule_on`]. Handy for tests and
/// one-off decisions; the running scheduler keeps its `NodeInfo`s up to date instead.
pub fn schedule(pod: &Pod, nodes: &[Node], pods: &[Pod]) -> Result<String, Unschedulable> {
    let mut infos: BTreeMap<&str, NodeInfo> = nodes
        .iter()
        .map(|node| {
            (
                node.metadata.name.as_deref().unwrap_or_default(),
                NodeInfo::new(Arc::new(node.clone())),
            )
        })
        .collect();
    for bound in pods.iter().filter(|p| !is_terminated(p)) {
        let node_name = bound.spec.as_ref().and_then(|s| s.node_name.as_deref());
        if let Some(info) = node_name.and_then(|name| infos.get_mut(name)) {
            info.add_pod(&PodRequests::of(bound));
        }
    }
    schedule_on(pod, &PodRequests::of(pod), infos.values())
}

/// Upstream's floor: below this many nodes every node is filtered and scored.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Upstream's floor for the adaptive percentage.
const MIN_FEASIBLE_NODES_PERCENTAGE: usize = 5;

/// How many feasible nodes are enough to pick from, out of `all`: upstream's
/// `numFeasibleNodesToFind` with the adaptive default (`percentageOfNodesToScore` unset): every
/// node below 100, else `50 - all/125` percent (at least 5 %), and never fewer than 100.
pub fn num_feasible_nodes_to_find(all: usize) -> usize {
    if all < MIN_FEASIBLE_NODES_TO_FIND {
        return all;
    }
    let percentage = 50usize
        .saturating_sub(all / 125)
        .max(MIN_FEASIBLE_NODES_PERCENTAGE);
    (all * percentage / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// Filters and scores `nodes` for a pod whose requests are `requests`, returning the chosen node's
/// name or why none fits.
pub fn schedule_on<'a>(
    pod: &Pod,
    requests: &PodRequests,
    nodes: impl IntoIterator<Item = &'a NodeInfo>,
) -> Result<String, Unschedulable> {
    find_and_score(pod, requests, nodes, usize::MAX).0
}

/// [`schedule_on`], stopping the filters once `enough` nodes fit (upstream's
/// `findNodesThatPassFilters`); also answers how many nodes were examined, where the next pod's
/// search starts. An unschedulable pod examines every node, so its reasons count them all.
pub fn find_and_score<'a>(
    pod: &Pod,
    requests: &PodRequests,
    nodes: impl IntoIterator<Item = &'a NodeInfo>,
    enough: usize,
) -> (Result<String, Unschedulable>, usize) {
    let mut node_count = 0;
    let mut reasons: BTreeMap<Reason, usize> = BTreeMap::new();
    // Feasible nodes with their LeastAllocated score and untolerated PreferNoSchedule taints.
    let mut feasible: Vec<(&NodeInfo, i64, i64)> = Vec::new();
    for info in nodes {
        if feasible.len() >= enough {
            break;
        }
        node_count += 1;
        if let Err(failures) = filter(pod, requests, info) {
            for reason in failures {
                *reasons.entry(reason).or_default() += 1;
            }
            continue;
        }
        feasible.push((
            info,
            score(requests, info),
            prefer_no_schedule_count(pod, &info.node),
        ));
    }
    let max_count = feasible
        .iter()
        .map(|(_, _, count)| *count)
        .max()
        .unwrap_or(0);
    let best = feasible
        .into_iter()
        .map(|(info, fit, count)| {
            let taint = normalize_reverse(count, max_count);
            (fit + TAINT_TOLERATION_WEIGHT * taint, info)
        })
        .max_by(|(a, a_info), (b, b_info)| rank(*a, a_info).cmp(&rank(*b, b_info)));
    let decision = match best {
        Some((_, info)) => Ok(info.name().to_string()),
        None => Err(Unschedulable::new(node_count, &reasons)),
    };
    (decision, node_count)
}

/// How feasible nodes compare: the higher score wins, then the node with fewer pods, then the
/// smaller name (so equal nodes fill round robin, deterministically).
fn rank(score: i64, info: &NodeInfo) -> (i64, i64, Reverse<&str>) {
    (score, -info.requested.pods, Reverse(info.name()))
}

/// `TaintToleration`'s raw score: how many `PreferNoSchedule` taints of the node the pod does not
/// tolerate (only tolerations with that effect, or none, count).
pub fn prefer_no_schedule_count(pod: &Pod, node: &Node) -> i64 {
    let tolerations: Vec<Toleration> = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default()
        .iter()
        .filter(|t| {
            t.effect
                .as_deref()
                .is_none_or(|e| e.is_empty() || e == "PreferNoSchedule")
        })
        .cloned()
        .collect();
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    let untolerated = taints.iter().filter(|taint| {
        taint.effect == "PreferNoSchedule"
            && !tolerates(
                &tolerations,
                &taint.key,
                taint.value.as_deref().unwrap_or(""),
                &taint.effect,
            )
    });
    untolerated.count() as i64
}

/// Upstream `DefaultNormalizeScore(MaxNodeScore, reverse = true, …)`: the node with the most gets
/// 0, none gets 100, and everyone gets 100 when nobody has any.
fn normalize_reverse(count: i64, max_count: i64) -> i64 {
    if max_count == 0 {
        return MAX_NODE_SCORE;
    }
    MAX_NODE_SCORE - count * MAX_NODE_SCORE / max_count
}

/// Runs the filter plugins on one node. `Err` holds the reasons of the first plugin that failed.
pub fn filter(pod: &Pod, requests: &PodRequests, info: &NodeInfo) -> Result<(), Vec<Reason>> {
    let node = &*info.node;
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    if is_cordoned(node) && !tolerates(tolerations, TAINT_UNSCHEDULABLE, "", "NoSchedule") {
        return Err(vec![REASON_UNSCHEDULABLE.into()]);
    }
    if let Some(taint) = untolerated_taint(node, tolerations) {
        return Err(vec![reason_taint(&taint).into()]);
    }
    if !matches_node_selector_and_affinity(pod, node) {
        return Err(vec![REASON_AFFINITY.into()]);
    }
    fits_resources(requests, info)
}

/// Whether the node is cordoned (`spec.unschedulable`, what `kubectl cordon` sets).
fn is_cordoned(node: &Node) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

/// `NodeResourcesFit`'s filter: every reason that applies, in upstream's order.
pub fn fits_resources(requests: &PodRequests, info: &NodeInfo) -> Result<(), Vec<Reason>> {
    let (want, used, allocatable) = (&requests.requests, &info.requested, &info.allocatable);
    let mut failures = Vec::new();
    if used.pods + 1 > allocatable.pods {
        failures.push(REASON_TOO_MANY_PODS.into());
    }
    if want.milli_cpu > 0 && used.milli_cpu + want.milli_cpu > allocatable.milli_cpu {
        failures.push(REASON_CPU.into());
    }
    if want.memory > 0 && used.memory + want.memory > allocatable.memory {
        failures.push(REASON_MEMORY.into());
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}

/// The first `NoSchedule`/`NoExecute` taint of the node (including the one its readiness implies)
/// that the pod does not tolerate.
pub fn untolerated_taint(node: &Node, tolerations: &[Toleration]) -> Option<Taint> {
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    let hard = |taint: &&Taint| taint.effect == "NoSchedule" || taint.effect == "NoExecute";
    let untolerated = |taint: &Taint| {
        !tolerates(
            tolerations,
            &taint.key,
            taint.value.as_deref().unwrap_or(""),
            &taint.effect,
        )
    };
    if let Some(taint) = taints.iter().filter(hard).find(|t| untolerated(t)) {
        return Some(taint.clone());
    }
    readiness_taint(node).filter(|taint| untolerated(taint))
}

/// The taint upstream's node lifecycle controller puts on a node that is not Ready: `not-ready` when
/// the condition is False (or missing: the kubelet registers its node with that taint), `unreachable`
/// when it is Unknown.
pub fn readiness_taint(node: &Node) -> Option<Taint> {
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let ready = conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.as_str());
    let key = match ready {
        Some("True") => return None,
        Some("Unknown") => TAINT_UNREACHABLE,
        _ => TAINT_NOT_READY,
    };
    Some(Taint {
        key: key.to_string(),
        effect: "NoSchedule".to_string(),
        ..Taint::default()
    })
}

/// `NodeAffinity`'s filter: every `nodeSelector` label must be on the node, and if the pod has a
/// required node affinity, one of its terms must match.
pub fn matches_node_selector_and_affinity(pod: &Pod, node: &Node) -> bool {
    let Some(spec) = &pod.spec else { return true };
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    if let Some(selector) = &spec.node_selector {
        if !selector
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value))
        {
            return false;
        }
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    let Some(required) = required else {
        return true;
    };
    let node_name = node.metadata.name.as_deref().unwrap_or_default();
    // Terms are ORed; within a term, every expression and field must hold.
    required.node_selector_terms.iter().any(|term| {
        let expressions = term.match_expressions.as_deref().unwrap_or_default();
        let fields = term.match_fields.as_deref().unwrap_or_default();
        (!expressions.is_empty() || !fields.is_empty())
            && expressions
                .iter()
                .all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
            && fields
                .iter()
                .all(|r| r.key == "metadata.name" && requirement_matches(r, Some(node_name)))
    })
}

fn requirement_matches(requirement: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = requirement.values.as_deref().unwrap_or_default();
    let as_int = |text: &str| text.parse::<i64>().ok();
    match (requirement.operator.as_str(), value) {
        ("In", Some(v)) => values.iter().any(|x| x == v),
        ("NotIn", v) => v.is_none_or(|v| !values.iter().any(|x| x == v)),
        ("Exists", v) => v.is_some(),
        ("DoesNotExist", v) => v.is_none(),
        ("Gt", Some(v)) => {
            matches!((as_int(v), values.first().and_then(|b| as_int(b))), (Some(v), Some(b)) if v > b)
        }
        ("Lt", Some(v)) => {
            matches!((as_int(v), values.first().and_then(|b| as_int(b))), (Some(v), Some(b)) if v < b)
        }
        _ => false,
    }
}

/// `LeastAllocated` score of a node for this pod: per resource
/// `(allocatable − requested) × 100 / allocatable` counting the pod itself (0 when over capacity),
/// averaged over cpu and memory with equal weights. Uses the non-zero requests, as upstream does.
pub fn score(requests: &PodRequests, info: &NodeInfo) -> i64 {
    let used = &info.non_zero_requested;
    let want = &requests.non_zero;
    let cpu = least_requested_score(used.milli_cpu + want.milli_cpu, info.allocatable.milli_cpu);
    let memory = least_requested_score(used.memory + want.memory, info.allocatable.memory);
    (cpu + memory) / 2
}

/// Upstream `leastRequestedScore`.
fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

#[cfg(test)]
#[path = "algorithm_tests.rs"]
mod tests;
