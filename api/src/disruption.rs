//! Disruption budgets: the rules an eviction is checked against, shared by the apiserver's
//! `pods/eviction` and the disruption controller. No I/O.
//!
//! Kubernetes counterpart: `checkAndDecrement` and `canIgnorePDB` in
//! `pkg/registry/core/pod/storage/eviction.go`, and `UpdateDisruptionAllowedCondition` in
//! `pkg/apis/policy/helper`. An eviction of a running, ready pod covered by a budget is allowed
//! only while `status.disruptionsAllowed > 0`; it then takes one disruption and records the pod in
//! `status.disruptedPods`, so the controller does not count it as healthy before it is gone
//! (docs/reliability.md#eviction).

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Status, StatusCause, Time};

use crate::status;

/// The condition the budget's status carries (`policy.DisruptionAllowedCondition`).
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";
/// More healthy pods than needed (`policy.SufficientPodsReason`).
pub const SUFFICIENT_PODS: &str = "SufficientPods";
/// Not enough healthy pods (`policy.InsufficientPodsReason`).
pub const INSUFFICIENT_PODS: &str = "InsufficientPods";
/// The controller could not compute the budget (`policy.SyncFailedReason`).
pub const SYNC_FAILED: &str = "SyncFailed";
/// The message of the 429 an eviction gets when it would break a budget.
pub const VIOLATION: &str = "Cannot evict pod as it would violate the pod's disruption budget.";
/// Upstream's `MaxDisruptedPodSize`: evictions the controller has not confirmed yet.
pub const MAX_DISRUPTED_PODS: usize = 2000;

/// A pod that is terminal, pending or already terminating has disrupted nothing more by going:
/// it is deleted without consulting a budget (`canIgnorePDB`).
pub fn can_ignore_budget(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed" | "Pending") | None)
        || pod.metadata.deletion_timestamp.is_some()
}

/// `podutil.IsPodReady`: the Ready condition is True.
pub fn is_pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// An unready pod leaves a healthy budget untouched: it is not one of the healthy pods the budget
/// counts, so it may go without taking a disruption (the `IfHealthyBudget` policy, the default).
pub fn unready_pod_may_go(pod: &Pod, pdb: &PodDisruptionBudget) -> bool {
    let status = pdb.status.clone().unwrap_or_default();
    let always = pdb
        .spec
        .as_ref()
        .and_then(|s| s.unhealthy_pod_eviction_policy.as_deref())
        == Some("AlwaysAllow");
    !is_pod_ready(pod)
        && (always
            || (status.current_healthy >= status.desired_healthy && status.desired_healthy > 0))
}

/// `checkAndDecrement`: the budget's next status if evicting `pod_name` at `now` is allowed, or
/// the Status to answer (429 while it would break the budget or the budget is being processed).
pub fn check_and_decrement(
    pdb: &PodDisruptionBudget,
    pod_name: &str,
    now: Timestamp,
) -> Result<PodDisruptionBudgetStatus, Box<Status>> {
    let name = pdb.metadata.name.as_deref().unwrap_or("");
    let mut next = pdb.status.clone().unwrap_or_default();
    let generation = pdb.metadata.generation.unwrap_or(0);
    if next.observed_generation.unwrap_or(0) < generation {
        let why = format!("The disruption budget {name} is still being processed by the server.");
        return Err(Box::new(too_many_requests(&why)));
    }
    if next.disruptions_allowed < 0 {
        return Err(Box::new(forbidden(
            name,
            "pdb disruptions allowed is negative",
        )));
    }
    if next.disrupted_pods.as_ref().map_or(0, BTreeMap::len) > MAX_DISRUPTED_PODS {
        let why = "DisruptedPods map too big - too many evictions not confirmed by PDB controller";
        return Err(Box::new(forbidden(name, why)));
    }
    if next.disruptions_allowed == 0 {
        let why = format!(
            "The disruption budget {name} needs {} healthy pods and has {} currently",
            next.desired_healthy, next.current_healthy
        );
        return Err(Box::new(too_many_requests(&why)));
    }
    next.disruptions_allowed -= 1;
    if next.disruptions_allowed == 0 {
        set_disruption_allowed_condition(&mut next, now);
    }
    next.disrupted_pods
        .get_or_insert_with(BTreeMap::new)
        .insert(pod_name.to_string(), Time(now));
    Ok(next)
}

/// `errors.NewTooManyRequests(VIOLATION, 0)` with a `DisruptionBudget` cause.
fn too_many_requests(why: &str) -> Status {
    let mut answer = status::failure(429, "TooManyRequests", VIOLATION);
    answer.details = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusDetails {
            causes: Some(vec![StatusCause {
                reason: Some("DisruptionBudget".into()),
                message: Some(why.to_string()),
                field: None,
            }]),
            retry_after_seconds: Some(0),
            ..Default::default()
        },
    );
    answer
}

fn forbidden(name: &str, why: &str) -> Status {
    let message = format!("poddisruptionbudget.policy \"{name}\" is forbidden: {why}");
    status::failure(403, "Forbidden", message)
}

/// `UpdateDisruptionAllowedCondition`: True (SufficientPods) while a disruption is allowed,
/// else False (InsufficientPods); the transition time moves only when the status changes.
pub fn set_disruption_allowed_condition(status: &mut PodDisruptionBudgetStatus, now: Timestamp) {
    let (value, reason) = if status.disruptions_allowed > 0 {
        ("True", SUFFICIENT_PODS)
    } else {
        ("False", INSUFFICIENT_PODS)
    };
    set_condition(status, value, reason, "", now);
}

/// `meta.SetStatusCondition` for the one condition a budget has.
pub fn set_condition(
    status: &mut PodDisruptionBudgetStatus,
    value: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    let observed_generation = status.observed_generation;
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let previous = conditions
        .iter()
        .position(|c| c.type_ == DISRUPTION_ALLOWED);
    let transition = previous
        .map(|i| &conditions[i])
        .filter(|c| c.status == value)
        .map_or(Time(now), |c| c.last_transition_time.clone());
    let condition = Condition {
        type_: DISRUPTION_ALLOWED.to_string(),
        status: value.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation,
        last_transition_time: transition,
    };
    match previous {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
}

#[cfg(test)]
#[path = "disruption_tests.rs"]
mod tests;
