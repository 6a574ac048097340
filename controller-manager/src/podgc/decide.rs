//! Which pods the pod garbage collector deletes: a pure function of the pods, the nodes and time.
//!
//! Kubernetes counterpart: `gcTerminated`, `gcOrphaned` and `gcUnscheduledTerminating` in
//! `pkg/controller/podgc/gc_controller.go` (docs/workloads.md#nl13, NL14, NL15):
//!
//! - terminated pods (phase neither Pending, Running nor Unknown) beyond the threshold, evicted
//!   ones first, then the oldest, by name on a tie; a threshold of 0 or less turns this off;
//! - pods bound to a node that has been missing for the quarantine (the caller confirms with a GET
//!   that the node is really gone before it deletes);
//! - terminating pods that were never scheduled: no kubelet will ever finish them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use minik_api::core::Pod;
use minik_api::ObjectKey;

/// What one pass deletes, and what it waits for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Terminated pods over the threshold.
    pub terminated: Vec<ObjectKey>,
    /// Pods of nodes missing for longer than the quarantine, by node (to confirm first).
    pub orphaned: BTreeMap<String, Vec<ObjectKey>>,
    /// Terminating pods with no node.
    pub unscheduled_terminating: Vec<ObjectKey>,
    /// When to look again for a node still in quarantine.
    pub recheck_in: Option<Duration>,
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// Whether the pod has terminated (upstream `isPodTerminated`).
pub fn is_terminated(pod: &Pod) -> bool {
    !matches!(phase(pod), "Pending" | "Running" | "Unknown")
}

/// Decides one pass. `missing_since` holds, for each node name pods are bound to but that is not
/// in `nodes`, when it was first found missing; the caller keeps it and this updates it.
pub fn plan(
    pods: &[Arc<Pod>],
    nodes: &BTreeSet<String>,
    threshold: i64,
    quarantine: Duration,
    missing_since: &mut BTreeMap<String, Instant>,
    now: Instant,
) -> Plan {
    let mut plan = Plan::default();
    let mut terminated: Vec<&Pod> = pods
        .iter()
        .map(|p| &**p)
        .filter(|p| is_terminated(p))
        .collect();
    let excess = terminated.len() as i64 - threshold;
    if threshold > 0 && excess > 0 {
        // Evicted pods first, then by creation time, then by name (`byEvictionAndCreationTimestamp`).
        terminated.sort_by_key(|pod| {
            let evicted = pod.status.as_ref().and_then(|s| s.reason.as_deref()) == Some("Evicted");
            let created = pod.metadata.creation_timestamp.as_ref().map(|t| t.0);
            (!evicted, created, pod.metadata.name.clone())
        });
        plan.terminated = terminated
            .iter()
            .take(excess as usize)
            .map(|p| ObjectKey::of(&p.metadata))
            .collect();
    }
    let missing: BTreeSet<&str> = pods
        .iter()
        .filter_map(|p| node_of(p))
        .filter(|node| !nodes.contains(*node))
        .collect();
    missing_since.retain(|node, _| missing.contains(node.as_str()));
    for node in &missing {
        let since = *missing_since.entry(node.to_string()).or_insert(now);
        match quarantine.checked_sub(now.saturating_duration_since(since)) {
            Some(left) if !left.is_zero() => {
                plan.recheck_in = Some(plan.recheck_in.map_or(left, |r| r.min(left)));
            }
            _ => {
                let on_node = pods.iter().filter(|p| node_of(p) == Some(*node));
                let keys = on_node.map(|p| ObjectKey::of(&p.metadata)).collect();
                plan.orphaned.insert(node.to_string(), keys);
            }
        }
    }
    plan.unscheduled_terminating = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some() && node_of(p).is_none())
        .map(|p| ObjectKey::of(&p.metadata))
        .collect();
    plan
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
