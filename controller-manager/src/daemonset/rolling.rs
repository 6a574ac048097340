//! The DaemonSet rolling update: which old pods go, and where a new pod may surge.
//!
//! Kubernetes counterpart: `rollingUpdate` in `pkg/controller/daemon/update.go`. Without surge,
//! old pods are deleted while fewer than `maxUnavailable` nodes lack an available pod; an old pod
//! that is not available goes at once without spending that budget. With surge, the new pod
//! starts beside the old one on up to `maxSurge` nodes (at once where the old one is not
//! available), and the old one is deleted once the new one is available. Percentages are of the
//! nodes that should run a pod, rounded up.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use minik_api::core::Pod;

use super::decide::{name, NodeState, Plan};
use crate::replicaset::pods::is_available;

/// The update strategy's part of the plan (`rollingUpdate`); OnDelete replaces nothing.
pub(super) fn rolling_update(
    ds: &DaemonSet,
    nodes: &[NodeState],
    desired: usize,
    now: jiff::Timestamp,
    plan: &mut Plan,
) {
    let spec = ds.spec.clone().unwrap_or_default();
    let strategy = spec.update_strategy.unwrap_or_default();
    let min_ready = spec.min_ready_seconds.unwrap_or(0);
    let available = |pod: &Pod| is_available(pod, min_ready, now);
    if strategy.type_.as_deref() == Some("OnDelete") {
        return;
    }
    let rolling = strategy.rolling_update.unwrap_or_default();
    let max_surge = scaled(rolling.max_surge.as_ref(), desired, 0);
    let max_unavailable = scaled(rolling.max_unavailable.as_ref(), desired, 1);
    if max_surge == 0 {
        let mut unavailable = 0;
        let mut candidates = Vec::new();
        for state in nodes {
            match (state.new, state.old) {
                (Some(new), Some(old)) => {
                    // Both exist (a surge that was turned off): keep the new one.
                    plan.delete.push(name(old));
                    unavailable += usize::from(!available(new));
                }
                (Some(new), None) => unavailable += usize::from(!available(new)),
                (None, Some(old)) if !available(old) => plan.delete.push(name(old)),
                (None, Some(old)) => candidates.push(name(old)),
                (None, None) => unavailable += 1,
            }
        }
        let budget = max_unavailable.saturating_sub(unavailable);
        plan.delete.extend(candidates.into_iter().take(budget));
        return;
    }
    let mut surging = 0;
    let mut candidates = Vec::new();
    for state in nodes {
        match (state.new, state.old) {
            (Some(new), Some(old)) if available(new) => plan.delete.push(name(old)),
            (Some(_), Some(_)) => surging += 1,
            (None, Some(old)) if !available(old) => plan.create_on.push(state.node.clone()),
            (None, Some(_)) => candidates.push(state.node.clone()),
            _ => {}
        }
    }
    let budget = max_surge.saturating_sub(surging);
    plan.create_on.extend(candidates.into_iter().take(budget));
}

/// An int-or-percent of `total`, percentages rounded up (`GetScaledValueFromIntOrPercent`).
fn scaled(value: Option<&IntOrString>, total: usize, default: usize) -> usize {
    match value {
        None => default,
        Some(IntOrString::Int(n)) => (*n).max(0) as usize,
        Some(IntOrString::String(text)) => {
            let percent: usize = text.trim_end_matches('%').parse().unwrap_or(0);
            (percent * total).div_ceil(100)
        }
    }
}
