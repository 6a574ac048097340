//! Is a node still heard from, and which conditions and taints follow from that: pure functions.
//!
//! Kubernetes counterpart: `tryUpdateNodeHealth`, `doNoScheduleTaintingPass` and
//! `processTaintBaseEviction` in `pkg/controller/nodelifecycle/node_lifecycle_controller.go`.
//!
//! - [`observe`]: the controller times heartbeats with its own clock (docs/workloads.md#nl3): the
//!   node counts as heard whenever its Lease's `renewTime` or its Ready condition's
//!   `lastHeartbeatTime` moves;
//! - [`late_conditions`]: a node not heard for the grace period gets `Ready=Unknown` (and so do
//!   its pressure conditions), reason `NodeStatusUnknown` (NL4);
//! - [`desired_taints`]: the NoSchedule and NoExecute taints that mirror the Ready condition, and
//!   `unschedulable` for a cordoned node (NL5, NL6), removed when it is Ready again.
//!
//! minik simplifies: NoExecute taints are written at once (no 0.1 nodes/s rate limiter, no zone
//! states), but when no node at all is Ready none is written (NL7, upstream's full disruption).

use std::time::{Duration, Instant};

use jiff::Timestamp;
use minik_api::core::{Node, NodeCondition, Taint};
use minik_api::k8s_openapi::api::coordination::v1::Lease;
use minik_api::meta::Time;
use minik_api::taints::{TAINT_NOT_READY, TAINT_UNREACHABLE, TAINT_UNSCHEDULABLE};

/// Reason of a condition the controller set to Unknown.
pub const REASON_NODE_STATUS_UNKNOWN: &str = "NodeStatusUnknown";
/// Its message.
pub const MESSAGE_NODE_STATUS_UNKNOWN: &str = "Kubelet stopped posting node status.";

/// The conditions that become Unknown with Ready; `NetworkUnavailable` is left alone.
const WATCHED_CONDITIONS: [&str; 4] = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// What the controller remembers of a node (upstream `nodeHealthData`).
#[derive(Clone, Debug, PartialEq)]
pub struct Heard {
    /// The Ready condition's `lastHeartbeatTime` last seen.
    pub heartbeat: Option<Timestamp>,
    /// The Lease's `renewTime` last seen.
    pub renew: Option<Timestamp>,
    /// When (on this controller's clock) either last moved, or the node was first seen.
    pub at: Instant,
}

/// The node's `Ready` condition.
pub fn ready_condition(node: &Node) -> Option<&NodeCondition> {
    let conditions = node.status.as_ref()?.conditions.as_deref()?;
    conditions.iter().find(|c| c.type_ == "Ready")
}

/// `True`, `False` or `Unknown` (a node without the condition has not reported yet).
pub fn ready_status(node: &Node) -> &str {
    ready_condition(node).map_or("Unknown", |c| c.status.as_str())
}

/// Updates what was heard of the node with its current object and Lease (NL3).
pub fn observe(
    previous: Option<&Heard>,
    node: &Node,
    lease: Option<&Lease>,
    now: Instant,
) -> Heard {
    let heartbeat = ready_condition(node)
        .and_then(|c| c.last_heartbeat_time.as_ref())
        .map(|t| t.0);
    let renew = lease
        .and_then(|l| l.spec.as_ref())
        .and_then(|s| s.renew_time.as_ref())
        .map(|t| t.0);
    let Some(previous) = previous else {
        return Heard {
            heartbeat,
            renew,
            at: now,
        };
    };
    let moved = (heartbeat.is_some() && heartbeat != previous.heartbeat)
        || (renew.is_some() && renew > previous.renew);
    Heard {
        heartbeat,
        renew,
        at: if moved { now } else { previous.at },
    }
}

/// How long until the node is late, or `None` if it already is.
pub fn time_left(heard: &Heard, now: Instant, grace: Duration) -> Option<Duration> {
    grace
        .checked_sub(now.saturating_duration_since(heard.at))
        .filter(|left| !left.is_zero())
}

/// The conditions to write for a late node: each watched one not yet Unknown, now Unknown (a
/// missing Ready is added, reason `NodeStatusNeverUpdated`). `None` when nothing changes.
pub fn late_conditions(node: &Node, now: &Time) -> Option<Vec<NodeCondition>> {
    let current = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let mut changed: Vec<NodeCondition> = current
        .iter()
        .filter(|c| WATCHED_CONDITIONS.contains(&c.type_.as_str()) && c.status != "Unknown")
        .map(|c| NodeCondition {
            status: "Unknown".into(),
            reason: Some(REASON_NODE_STATUS_UNKNOWN.into()),
            message: Some(MESSAGE_NODE_STATUS_UNKNOWN.into()),
            last_transition_time: Some(now.clone()),
            ..c.clone()
        })
        .collect();
    if ready_condition(node).is_none() {
        changed.push(NodeCondition {
            type_: "Ready".into(),
            status: "Unknown".into(),
            reason: Some("NodeStatusNeverUpdated".into()),
            message: Some("Kubelet never posted node status.".into()),
            last_transition_time: Some(now.clone()),
            last_heartbeat_time: Some(now.clone()),
        });
    }
    (!changed.is_empty()).then_some(changed)
}

/// The node's taints as they should be: its own ones kept, the controller's ones following the
/// Ready condition and `spec.unschedulable`. NoExecute taints are left out when `evict` is false
/// (no node is Ready). An existing taint keeps its `timeAdded`; a new NoExecute one gets `now`.
/// `None` when the taints are already right.
pub fn desired_taints(node: &Node, evict: bool, now: &Time) -> Option<Vec<Taint>> {
    let spec = node.spec.as_ref();
    let current = spec.and_then(|s| s.taints.clone()).unwrap_or_default();
    let ours = |t: &Taint| {
        matches!(t.key.as_str(), TAINT_NOT_READY | TAINT_UNREACHABLE)
            || (t.key == TAINT_UNSCHEDULABLE && t.effect == "NoSchedule")
    };
    let mut wanted: Vec<(&str, &str)> = Vec::new();
    let condition_key = match ready_status(node) {
        "True" => None,
        "False" => Some(TAINT_NOT_READY),
        _ => ready_condition(node).map(|_| TAINT_UNREACHABLE),
    };
    if let Some(key) = condition_key {
        wanted.push((key, "NoSchedule"));
        if evict {
            wanted.push((key, "NoExecute"));
        }
    }
    if spec.and_then(|s| s.unschedulable).unwrap_or(false) {
        wanted.push((TAINT_UNSCHEDULABLE, "NoSchedule"));
    }
    let existing = |key: &str, effect: &str| {
        current
            .iter()
            .find(|t| t.key == key && t.effect == effect)
            .cloned()
    };
    let mut taints: Vec<Taint> = current.iter().filter(|t| !ours(t)).cloned().collect();
    for (key, effect) in &wanted {
        taints.push(existing(key, effect).unwrap_or_else(|| Taint {
            key: key.to_string(),
            effect: effect.to_string(),
            time_added: (*effect == "NoExecute").then(|| now.clone()),
            value: None,
        }));
    }
    let same = taints.len() == current.len()
        && taints.iter().all(|t| {
            current
                .iter()
                .any(|c| c.key == t.key && c.effect == t.effect)
        });
    (!same).then_some(taints)
}

/// The node's NoExecute taints (what taint eviction acts on).
pub fn no_execute_taints(node: &Node) -> Vec<&Taint> {
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    taints.iter().filter(|t| t.effect == "NoExecute").collect()
}

#[cfg(test)]
#[path = "health_tests.rs"]
mod tests;
