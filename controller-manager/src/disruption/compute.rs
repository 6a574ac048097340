//! The arithmetic of a disruption budget: expected, desired and current healthy pods, and how many
//! disruptions that allows. Pure: a budget, its pods, the scale of their controllers and a clock in;
//! the next status out.
//!
//! Kubernetes counterpart: `getExpectedPodCount`, `countHealthyPods`, `buildDisruptedPodMap` and
//! `updatePdbStatus` in `pkg/controller/disruption/disruption.go`:
//!
//! - `maxUnavailable` (number or percentage): expected = the controllers' scale, desired =
//!   expected − maxUnavailable (a percentage of expected, rounded up);
//! - `minAvailable` as a number: desired = that number, expected = the pods found;
//! - `minAvailable` as a percentage: expected = the controllers' scale, desired = the percentage of
//!   it, rounded up;
//! - healthy = the pods that are Ready, not being deleted, and not evicted in the last
//!   [`DELETION_TIMEOUT`] (`disruptedPods`: the apiserver records a pod there when it lets an
//!   eviction through, before the pod is even marked);
//! - disruptionsAllowed = healthy − desired, never below 0 (and 0 when nothing is expected).

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use minik_api::disruption::{
    is_pod_ready, set_condition, set_disruption_allowed_condition, SYNC_FAILED,
};

/// How long an evicted pod may take to be marked for deletion before the controller stops
/// waiting for it (upstream `DeletionTimeout`, 2 minutes).
pub const DELETION_TIMEOUT: Duration = Duration::from_secs(120);

/// The budget's counts: `(expected, desired)` for its spec, asking `scale` for the controllers'
/// replicas only when the spec needs it. `Err` when that scale cannot be known.
pub fn expected_and_desired(
    pdb: &PodDisruptionBudget,
    pods_found: i32,
    scale: impl FnOnce() -> Result<i32, String>,
) -> Result<(i32, i32), String> {
    let spec = pdb.spec.clone().unwrap_or_default();
    if let Some(max_unavailable) = &spec.max_unavailable {
        let expected = scale()?;
        let unavailable = scaled_value(max_unavailable, expected)?;
        return Ok((expected, (expected - unavailable).max(0)));
    }
    match &spec.min_available {
        Some(IntOrString::Int(n)) => Ok((pods_found, *n)),
        Some(percent @ IntOrString::String(_)) => {
            let expected = scale()?;
            Ok((expected, scaled_value(percent, expected)?))
        }
        // Neither is set: nothing may be disrupted beyond what the pods allow (minAvailable 0).
        None => Ok((pods_found, 0)),
    }
}

/// `intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)`.
pub fn scaled_value(value: &IntOrString, total: i32) -> Result<i32, String> {
    match value {
        IntOrString::Int(n) => Ok(*n),
        IntOrString::String(text) => {
            let percent: i64 = text
                .strip_suffix('%')
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("invalid value for IntOrString: invalid value {text:?}"))?;
            let scaled = percent * i64::from(total);
            Ok(((scaled + 99) / 100) as i32)
        }
    }
}

/// `buildDisruptedPodMap`: the evictions still expected to show, and when the first of them
/// expires (the next time to look again). A pod already marked for deletion or gone is dropped.
pub fn disrupted_pods(
    recorded: Option<&BTreeMap<String, Time>>,
    pods: &[&Pod],
    now: Timestamp,
) -> (BTreeMap<String, Time>, Option<Timestamp>) {
    let mut kept = BTreeMap::new();
    let mut recheck: Option<Timestamp> = None;
    let Some(recorded) = recorded else {
        return (kept, recheck);
    };
    let timeout = SignedDuration::try_from(DELETION_TIMEOUT).unwrap_or_default();
    for pod in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let Some(evicted) = recorded.get(&name) else {
            continue;
        };
        let expected_deletion = evicted.0.saturating_add(timeout).unwrap_or(evicted.0);
        if expected_deletion > now {
            recheck = Some(recheck.map_or(expected_deletion, |r| r.min(expected_deletion)));
            kept.insert(name, evicted.clone());
        }
    }
    (kept, recheck)
}

/// `countHealthyPods`: Ready, not being deleted, not just evicted.
pub fn count_healthy(pods: &[&Pod], disrupted: &BTreeMap<String, Time>) -> i32 {
    pods.iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| !disrupted.contains_key(pod.metadata.name.as_deref().unwrap_or("")))
        .filter(|pod| is_pod_ready(pod))
        .count() as i32
}

/// The budget's next status and when to look again (an eviction that may expire).
pub fn next_status(
    pdb: &PodDisruptionBudget,
    pods: &[&Pod],
    scale: impl FnOnce() -> Result<i32, String>,
    now: Timestamp,
) -> (PodDisruptionBudgetStatus, Option<Timestamp>) {
    let old = pdb.status.clone().unwrap_or_default();
    let (expected, desired) = match expected_and_desired(pdb, pods.len() as i32, scale) {
        Ok(counts) => counts,
        Err(error) => return (failed_status(old, &error, now), None),
    };
    let recorded = old.disrupted_pods.as_ref();
    let (disrupted, recheck) = disrupted_pods(recorded, pods, now);
    let healthy = count_healthy(pods, &disrupted);
    let allowed = if expected <= 0 {
        0
    } else {
        (healthy - desired).max(0)
    };
    let mut next = PodDisruptionBudgetStatus {
        current_healthy: healthy,
        desired_healthy: desired,
        expected_pods: expected,
        disruptions_allowed: allowed,
        disrupted_pods: Some(disrupted).filter(|d| !d.is_empty()),
        observed_generation: pdb.metadata.generation,
        conditions: old.conditions,
    };
    set_disruption_allowed_condition(&mut next, now);
    (next, recheck)
}

/// `failSafe`: a budget the controller cannot compute allows no disruption, and says why.
fn failed_status(
    mut status: PodDisruptionBudgetStatus,
    error: &str,
    now: Timestamp,
) -> PodDisruptionBudgetStatus {
    status.disruptions_allowed = 0;
    set_condition(&mut status, "False", SYNC_FAILED, error, now);
    status
}

#[cfg(test)]
#[path = "compute_tests.rs"]
mod tests;
