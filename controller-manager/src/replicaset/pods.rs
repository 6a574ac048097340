//! The ReplicaSet controller's decisions about pods, as pure functions of the pods and the clock.
//!
//! Kubernetes counterpart: `pkg/controller/controller_utils.go` (`FilterActivePods`,
//! `ActivePodsWithRanks.Less`, `slowStartBatch`), `pkg/controller/replicaset/replica_set_utils.go`
//! (`calculateStatus`) and `pkg/api/v1/pod/util.go` (`IsPodReady`, `IsPodAvailable`).
//!
//! Which pods go first on scale-down (`rank`), the first rule that differs decides:
//! unscheduled < scheduled; Pending < Unknown < Running; not ready < ready; lower
//! `controller.kubernetes.io/pod-deletion-cost`; both ready: ready more recently; more container
//! restarts; created more recently. Times compare by ⌊log2(age)⌋ buckets (LogarithmicScaleDown,
//! GA since v1.31), the last ties broken by uid.
//!
//! minik simplifies: no co-location rank (rule 5, pods of related ReplicaSets on the same node).

use std::cmp::{Ordering, Reverse};
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use minik_api::core::{Pod, PodCondition};
use minik_api::meta::{ObjectMeta, Time};

use crate::ownership::controller_ref;

/// Upstream's annotation to steer which pods are deleted first (lower first).
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
/// At most this many creates or deletes per sync (upstream `BurstReplicas`).
pub const BURST_REPLICAS: usize = 500;

/// Not terminal and not being deleted (`FilterActivePods`, RS4).
pub fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed")) && pod.metadata.deletion_timestamp.is_none()
}

fn ready_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|condition| condition.type_ == "Ready")
}

/// The Ready condition is True.
pub fn is_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some_and(|condition| condition.status == "True")
}

/// Ready for at least `min_ready_seconds` (`IsPodAvailable`, RS9).
pub fn is_available(pod: &Pod, min_ready_seconds: i32, now: jiff::Timestamp) -> bool {
    let Some(condition) = ready_condition(pod).filter(|c| c.status == "True") else {
        return false;
    };
    if min_ready_seconds <= 0 {
        return true;
    }
    condition
        .last_transition_time
        .as_ref()
        .is_some_and(|Time(since)| {
            since.as_second() + i64::from(min_ready_seconds) < now.as_second()
        })
}

/// The pods to delete when there are `count` too many: the lowest ranked first (RS6–RS8).
pub fn pods_to_delete<'a>(pods: &[&'a Pod], count: usize, now: jiff::Timestamp) -> Vec<&'a Pod> {
    let mut ranked = pods.to_vec();
    if count < ranked.len() {
        ranked.sort_by(|a, b| rank(a, b, now));
    }
    ranked.truncate(count);
    ranked
}

/// `ActivePodsWithRanks.Less` as an ordering: `Less` means `a` is deleted before `b`.
pub fn rank(a: &Pod, b: &Pod, now: jiff::Timestamp) -> Ordering {
    rank_key(a, now).cmp(&rank_key(b, now))
}

/// The rules as one sort key, so the order is total. Upstream's comparator breaks a tie inside a
/// log2 bucket by uid at once, which is not transitive (Go's sort tolerates it, Rust's panics);
/// here pods in the same buckets are ordered by restarts, then creation bucket, then uid.
fn rank_key(
    pod: &Pod,
    now: jiff::Timestamp,
) -> (bool, u8, bool, i32, i64, Reverse<i32>, i64, Option<String>) {
    let scheduled = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let phase = match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 0,
    };
    let cost = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(POD_DELETION_COST))
        .and_then(|value| value.parse::<i32>().ok())
        .unwrap_or(0);
    let ready = is_ready(pod);
    // Only compared between two ready pods: readiness itself came first.
    let ready_bucket = if ready {
        age_bucket(ready_time(pod), now)
    } else {
        0
    };
    let created = pod.metadata.creation_timestamp.as_ref().map(|t| t.0);
    (
        scheduled,
        phase,
        ready,
        cost,
        ready_bucket,
        Reverse(max_restarts(pod)),
        age_bucket(created, now),
        pod.metadata.uid.clone(),
    )
}

/// ⌊log2(age in ns)⌋ (LogarithmicScaleDown): younger pods have smaller buckets and go first; a
/// missing time counts as the newest.
fn age_bucket(time: Option<jiff::Timestamp>, now: jiff::Timestamp) -> i64 {
    let Some(time) = time else {
        return -1;
    };
    let age = now.as_nanosecond() - time.as_nanosecond();
    if age <= 0 {
        -1
    } else {
        i64::from(age.ilog2())
    }
}

fn ready_time(pod: &Pod) -> Option<jiff::Timestamp> {
    ready_condition(pod)?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}

fn max_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|statuses| statuses.iter().map(|s| s.restart_count).max())
        .unwrap_or(0)
}

/// The sizes of slow-start batches for `count` creates: 1, 2, 4, … (RS5).
pub fn slow_start_batches(count: usize) -> Vec<usize> {
    let mut batches = Vec::new();
    let (mut remaining, mut size) = (count, 1);
    while remaining > 0 {
        let batch = size.min(remaining);
        batches.push(batch);
        remaining -= batch;
        size *= 2;
    }
    batches
}

/// A pod for `rs` from its template: `generateName: RSNAME-`, the template's labels and
/// annotations, and the controller reference to `owner` (`apiVersion`, `kind`)
/// (`GetPodFromTemplate`).
pub fn pod_from_template(rs: &ReplicaSet, owner: (&str, &str)) -> Pod {
    let template = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default();
    let template_meta = template.metadata.unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!(
                "{}-",
                rs.metadata.name.as_deref().unwrap_or_default()
            )),
            namespace: rs.metadata.namespace.clone(),
            labels: template_meta.labels,
            annotations: template_meta.annotations,
            finalizers: template_meta.finalizers,
            owner_references: Some(vec![controller_ref(owner.0, owner.1, &rs.metadata)]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    }
}

/// The status the ReplicaSet should carry (`calculateStatus`, RS9–RS10); `failure` is the reason
/// and message of a failed create or delete this sync.
pub fn calculate_status(
    rs: &ReplicaSet,
    pods: &[&Pod],
    failure: Option<(&str, String)>,
    now: jiff::Timestamp,
) -> ReplicaSetStatus {
    let spec = rs.spec.as_ref();
    let min_ready = spec.and_then(|s| s.min_ready_seconds).unwrap_or(0);
    let template_labels: BTreeMap<String, String> = spec
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let fully_labeled = |pod: &&&Pod| {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        template_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
    };
    let count = |n: usize| n as i32;
    let previous = rs.status.clone().unwrap_or_default();
    ReplicaSetStatus {
        replicas: count(pods.len()),
        fully_labeled_replicas: Some(count(pods.iter().filter(fully_labeled).count())),
        ready_replicas: Some(count(pods.iter().filter(|p| is_ready(p)).count())),
        available_replicas: Some(count(
            pods.iter()
                .filter(|p| is_available(p, min_ready, now))
                .count(),
        )),
        observed_generation: rs.metadata.generation,
        conditions: failure_conditions(previous.conditions.unwrap_or_default(), failure, now),
        ..previous
    }
}

/// Sets or clears the `ReplicaFailure` condition; `None` when no condition remains.
fn failure_conditions(
    mut conditions: Vec<ReplicaSetCondition>,
    failure: Option<(&str, String)>,
    now: jiff::Timestamp,
) -> Option<Vec<ReplicaSetCondition>> {
    let existing = conditions.iter().position(|c| c.type_ == "ReplicaFailure");
    match (failure, existing) {
        (None, Some(index)) => {
            conditions.remove(index);
        }
        (Some((reason, message)), existing) => {
            if existing.is_some_and(|i| conditions[i].reason.as_deref() == Some(reason)) {
                return Some(conditions);
            }
            conditions.retain(|c| c.type_ != "ReplicaFailure");
            conditions.push(ReplicaSetCondition {
                type_: "ReplicaFailure".into(),
                status: "True".into(),
                reason: Some(reason.to_string()),
                message: Some(message),
                last_transition_time: Some(Time(now)),
            });
        }
        (None, None) => {}
    }
    (!conditions.is_empty()).then_some(conditions)
}

#[cfg(test)]
#[path = "pods_tests.rs"]
mod tests;
