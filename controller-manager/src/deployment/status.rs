//! A Deployment's status and its conditions Available and Progressing.
//!
//! Kubernetes counterpart: `pkg/controller/deployment/sync.go` (`calculateStatus`,
//! `syncDeploymentStatus`, `checkPausedConditions`), `progress.go` (`syncRolloutStatus`,
//! `requeueStuckDeployment`) and `util/deployment_util.go` (`DeploymentComplete`,
//! `DeploymentProgressing`, `DeploymentTimedOut`, `SetDeploymentCondition`).
//!
//! - counts are sums over the ReplicaSets (DP17); `updatedReplicas` is the new RS's;
//! - Available is True once `available ≥ replicas − maxUnavailable` (DP23);
//! - Progressing is True `ReplicaSetUpdated` while counts move, True `NewReplicaSetAvailable` once
//!   complete, and False `ProgressDeadlineExceeded` when nothing moved for
//!   `progressDeadlineSeconds` (DP22, DP24); the controller comes back at that deadline (DP25).

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use minik_api::meta::Time;

use crate::deployment::rolling::Rollout;

/// Condition reasons, as upstream spells them.
pub mod reason {
    /// Progressing True: a new RS was created.
    pub const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
    /// Progressing True: counts moved.
    pub const RS_UPDATED: &str = "ReplicaSetUpdated";
    /// Progressing True: the rollout is complete.
    pub const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
    /// Progressing False: no progress within the deadline.
    pub const TIMED_OUT: &str = "ProgressDeadlineExceeded";
    /// Progressing Unknown: paused.
    pub const PAUSED: &str = "DeploymentPaused";
    /// Progressing Unknown: resumed.
    pub const RESUMED: &str = "DeploymentResumed";
    /// Available True.
    pub const MIN_AVAILABLE: &str = "MinimumReplicasAvailable";
    /// Available False.
    pub const MIN_UNAVAILABLE: &str = "MinimumReplicasUnavailable";
}

/// A condition stamped `now` (`NewDeploymentCondition`).
pub fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
    now: jiff::Timestamp,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message),
        last_update_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// The condition of `type_`, if present.
pub fn get_condition<'a>(
    status: &'a DeploymentStatus,
    type_: &str,
) -> Option<&'a DeploymentCondition> {
    status
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// `SetDeploymentCondition`: unchanged when status and reason are the same; otherwise replaced,
/// keeping `lastTransitionTime` when only the reason changed.
pub fn set_condition(status: &mut DeploymentStatus, mut new: DeploymentCondition) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    if let Some(current) = conditions.iter().find(|c| c.type_ == new.type_) {
        if current.status == new.status && current.reason == new.reason {
            return;
        }
        if current.status == new.status {
            new.last_transition_time = current.last_transition_time.clone();
        }
    }
    conditions.retain(|c| c.type_ != new.type_);
    conditions.push(new);
}

/// Removes the condition of `type_`.
pub fn remove_condition(status: &mut DeploymentStatus, type_: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|c| c.type_ != type_);
    }
}

/// `calculateStatus` (DP17, DP23): counts from the RSs and the Available condition.
pub fn calculate_status(
    d: &Deployment,
    all: &[&ReplicaSet],
    new: Option<&ReplicaSet>,
    rollout: &Rollout,
    now: jiff::Timestamp,
) -> DeploymentStatus {
    let status_of = |rs: &ReplicaSet| rs.status.clone().unwrap_or_default();
    let sum = |f: &dyn Fn(&ReplicaSet) -> i32| all.iter().map(|rs| f(rs)).sum::<i32>();
    let available = sum(&|rs| status_of(rs).available_replicas.unwrap_or(0));
    let total_spec = sum(&|rs| rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0));
    let previous = d.status.clone().unwrap_or_default();
    let mut status = DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas: Some(sum(&|rs| status_of(rs).replicas)),
        updated_replicas: Some(new.map_or(0, |rs| status_of(rs).replicas)),
        ready_replicas: Some(sum(&|rs| status_of(rs).ready_replicas.unwrap_or(0))),
        available_replicas: Some(available),
        unavailable_replicas: Some((total_spec - available).max(0)),
        collision_count: previous.collision_count,
        conditions: previous.conditions.clone(),
        terminating_replicas: previous.terminating_replicas,
    };
    let available_condition = if available >= rollout.replicas - rollout.max_unavailable {
        condition(
            "Available",
            "True",
            reason::MIN_AVAILABLE,
            "Deployment has minimum availability.".into(),
            now,
        )
    } else {
        condition(
            "Available",
            "False",
            reason::MIN_UNAVAILABLE,
            "Deployment does not have minimum availability.".into(),
            now,
        )
    };
    set_condition(&mut status, available_condition);
    status
}

/// The progress deadline, unless disabled (`progressDeadlineSeconds` = MaxInt32).
pub fn progress_deadline(d: &Deployment) -> Option<i32> {
    let seconds = d
        .spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .unwrap_or(600);
    (seconds != i32::MAX).then_some(seconds)
}

/// `DeploymentComplete`: every replica updated and available, and the spec observed.
pub fn is_complete(d: &Deployment, status: &DeploymentStatus) -> bool {
    let replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    status.updated_replicas == Some(replicas)
        && status.replicas == Some(replicas)
        && status.available_replicas == Some(replicas)
        && status.observed_generation >= d.metadata.generation
}

/// `DeploymentProgressing` (DP24): updated up, old down, ready up or available up.
fn is_progressing(old: &DeploymentStatus, new: &DeploymentStatus) -> bool {
    let n = |v: Option<i32>| v.unwrap_or(0);
    let old_old = n(old.replicas) - n(old.updated_replicas);
    let new_old = n(new.replicas) - n(new.updated_replicas);
    n(new.updated_replicas) > n(old.updated_replicas)
        || new_old < old_old
        || n(new.ready_replicas) > n(old.ready_replicas)
        || n(new.available_replicas) > n(old.available_replicas)
}

/// `DeploymentTimedOut`: Progressing was last updated longer than the deadline ago.
fn timed_out(d: &Deployment, status: &DeploymentStatus, now: jiff::Timestamp) -> bool {
    let (Some(deadline), Some(current)) =
        (progress_deadline(d), get_condition(status, "Progressing"))
    else {
        return false;
    };
    match current.reason.as_deref() {
        Some(reason::NEW_RS_AVAILABLE) => false,
        Some(reason::TIMED_OUT) => true,
        _ => current
            .last_update_time
            .as_ref()
            .is_some_and(|Time(from)| from.as_second() + i64::from(deadline) < now.as_second()),
    }
}

/// `syncRolloutStatus`: the Progressing condition for `new` (the calculated status).
pub fn sync_progress(
    d: &Deployment,
    new: &mut DeploymentStatus,
    new_rs: Option<&str>,
    now: jiff::Timestamp,
) {
    if progress_deadline(d).is_none() {
        remove_condition(new, "Progressing");
        return;
    }
    let old = d.status.clone().unwrap_or_default();
    let current = get_condition(&old, "Progressing").cloned();
    let complete_already = new.replicas == new.updated_replicas
        && current
            .as_ref()
            .is_some_and(|c| c.reason.as_deref() == Some(reason::NEW_RS_AVAILABLE));
    if complete_already {
        return;
    }
    let rs = new_rs.unwrap_or_default();
    if is_complete(d, new) {
        let message = format!("ReplicaSet \"{rs}\" has successfully progressed.");
        set_condition(
            new,
            condition(
                "Progressing",
                "True",
                reason::NEW_RS_AVAILABLE,
                message,
                now,
            ),
        );
    } else if is_progressing(&old, new) {
        let message = format!("ReplicaSet \"{rs}\" is progressing.");
        let mut progressing = condition("Progressing", "True", reason::RS_UPDATED, message, now);
        if let Some(current) = current.filter(|c| c.status == "True") {
            progressing.last_transition_time = current.last_transition_time;
        }
        remove_condition(new, "Progressing");
        set_condition(new, progressing);
    } else if timed_out(d, new, now) {
        let message = format!("ReplicaSet \"{rs}\" has timed out progressing.");
        set_condition(
            new,
            condition("Progressing", "False", reason::TIMED_OUT, message, now),
        );
    }
}

/// `requeueStuckDeployment` (DP25): when to look again so the deadline is noticed.
pub fn requeue_after(
    d: &Deployment,
    status: &DeploymentStatus,
    now: jiff::Timestamp,
) -> Option<Duration> {
    let deadline = progress_deadline(d)?;
    let current = get_condition(status, "Progressing")?;
    if current.reason.as_deref() == Some(reason::NEW_RS_AVAILABLE)
        || current.status != "True"
        || is_complete(d, status)
    {
        return None;
    }
    let from = current.last_update_time.as_ref()?.0.as_second();
    let after = (from + i64::from(deadline) - now.as_second()).max(0) as u64;
    Some(Duration::from_secs(after + 1))
}

/// `checkPausedConditions`: Progressing Unknown DeploymentPaused / DeploymentResumed.
pub fn paused_condition(d: &Deployment, now: jiff::Timestamp) -> Option<DeploymentCondition> {
    progress_deadline(d)?;
    let paused = d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false);
    let current = d
        .status
        .as_ref()
        .and_then(|s| get_condition(s, "Progressing"));
    let was_paused = current.is_some_and(|c| c.reason.as_deref() == Some(reason::PAUSED));
    match (paused, was_paused) {
        (true, false) => Some(condition(
            "Progressing",
            "Unknown",
            reason::PAUSED,
            "Deployment is paused".into(),
            now,
        )),
        (false, true) => Some(condition(
            "Progressing",
            "Unknown",
            reason::RESUMED,
            "Deployment is resumed".into(),
            now,
        )),
        _ => None,
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
