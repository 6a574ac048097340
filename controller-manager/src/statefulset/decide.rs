//! The StatefulSet controller's decisions, as pure functions of the set's shape and its pods.
//!
//! Kubernetes counterpart: `pkg/controller/statefulset/stateful_set_control.go`
//! (`updateStatefulSet`, `processReplica`, `processCondemned`, `updateStatefulSetAfterInvariantEstablished`,
//! `computeReplicaStatus`, `completeRollingUpdate`). One pass over the ordinals
//! (docs/workloads.md, ST1–ST3):
//!
//! 1. every ordinal in `[start, start + replicas)` is a replica; any other pod is condemned;
//! 2. replicas in increasing order: a finished (Failed/Succeeded) pod is deleted to be recreated, a
//!    missing one is created (below the partition at the current revision, else at the update
//!    revision); with OrderedReady, a replica that is missing, terminating or not Running and
//!    Ready stops the pass (each pod waits for its predecessors);
//! 3. condemned pods in decreasing order are deleted; OrderedReady deletes one at a time and waits
//!    while one is terminating or an earlier replica is unhealthy;
//! 4. RollingUpdate: from the highest ordinal down to the partition, the first pod not at the
//!    update revision is deleted (it comes back at the new one), one at a time for both policies,
//!    after every replica is Running and Ready. OnDelete never deletes for an update.
//!
//! Every create is one fixed name (`set-N`), so a sync repeated by a restarted controller meets
//! 409 AlreadyExists instead of making a second pod with the same ordinal.

use std::collections::BTreeMap;

/// What the plan needs to know of one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodState {
    /// The pod's revision (its `controller-revision-hash` label).
    pub revision: String,
    /// `Pending`, `Running`, `Succeeded`, `Failed`.
    pub phase: String,
    /// The Ready condition is True.
    pub ready: bool,
    /// `deletionTimestamp` is set.
    pub terminating: bool,
}

impl PodState {
    fn healthy(&self) -> bool {
        self.phase == "Running" && self.ready && !self.terminating
    }

    fn finished(&self) -> bool {
        matches!(self.phase.as_str(), "Succeeded" | "Failed")
    }
}

/// The parts of a StatefulSet's spec and status the plan reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetShape {
    pub replicas: i32,
    /// `spec.ordinals.start`.
    pub start: i32,
    /// `podManagementPolicy: Parallel`.
    pub parallel: bool,
    /// `updateStrategy.type: OnDelete`.
    pub on_delete: bool,
    /// `updateStrategy.rollingUpdate.partition`.
    pub partition: i32,
    pub current_revision: String,
    pub update_revision: String,
}

/// One write of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Create the pod with this ordinal at this revision.
    Create { ordinal: i32, revision: String },
    /// Delete the pod with this ordinal (finished, condemned, or outdated).
    Delete { ordinal: i32, why: &'static str },
}

/// The writes of this sync, in order (`updateStatefulSet`).
pub fn plan(set: &SetShape, pods: &BTreeMap<i32, PodState>) -> Vec<Action> {
    let mut actions = Vec::new();
    let end = set.start + set.replicas.max(0);
    let monotonic = !set.parallel;
    for ordinal in set.start..end {
        let Some(pod) = pods.get(&ordinal) else {
            let revision = if ordinal < set.partition && !set.current_revision.is_empty() {
                set.current_revision.clone()
            } else {
                set.update_revision.clone()
            };
            actions.push(Action::Create { ordinal, revision });
            if monotonic {
                return actions;
            }
            continue;
        };
        if pod.finished() && !pod.terminating {
            actions.push(Action::Delete {
                ordinal,
                why: "finished",
            });
            if monotonic {
                return actions;
            }
            continue;
        }
        if monotonic && !pod.healthy() {
            return actions;
        }
    }
    let condemned: Vec<(&i32, &PodState)> = pods
        .iter()
        .rev()
        .filter(|(ordinal, _)| **ordinal < set.start || **ordinal >= end)
        .collect();
    for (ordinal, pod) in condemned {
        if pod.terminating {
            if monotonic {
                return actions;
            }
            continue;
        }
        actions.push(Action::Delete {
            ordinal: *ordinal,
            why: "condemned",
        });
        if monotonic {
            return actions;
        }
    }
    if set.on_delete || !actions.is_empty() {
        return actions;
    }
    let replicas = || {
        (set.start..end)
            .rev()
            .filter_map(|o| Some((o, pods.get(&o)?)))
    };
    if replicas().any(|(_, pod)| !pod.healthy()) {
        // An update waits for every replica to be Running and Ready (ST3).
        return actions;
    }
    let outdated = replicas()
        .filter(|(ordinal, _)| *ordinal >= set.partition)
        .find(|(_, pod)| pod.revision != set.update_revision);
    if let Some((ordinal, _)) = outdated {
        actions.push(Action::Delete {
            ordinal,
            why: "outdated",
        });
    }
    actions
}

/// The counts of `status` (`computeReplicaStatus`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Pods that exist and are not terminating.
    pub replicas: i32,
    pub ready: i32,
    pub available: i32,
    pub current: i32,
    pub updated: i32,
}

/// Counts the pods as `status` reports them: `replicas` every pod that was created and is not
/// terminating, `ready` those Ready, `current`/`updated` those at each revision.
pub fn counts(set: &SetShape, pods: &BTreeMap<i32, PodState>) -> Counts {
    let mut counts = Counts::default();
    for pod in pods.values().filter(|p| !p.terminating) {
        counts.replicas += 1;
        if pod.phase == "Running" && pod.ready {
            counts.ready += 1;
            counts.available += 1;
        }
        if pod.revision == set.current_revision {
            counts.current += 1;
        }
        if pod.revision == set.update_revision {
            counts.updated += 1;
        }
    }
    counts
}

/// The current revision after this sync (`completeRollingUpdate`): once a RollingUpdate has every
/// replica updated and ready, the update revision becomes the current one.
pub fn next_current_revision(set: &SetShape, counts: &Counts) -> String {
    let done = counts.updated == set.replicas && counts.ready == set.replicas;
    if set.current_revision.is_empty() || (!set.on_delete && done) {
        set.update_revision.clone()
    } else {
        set.current_revision.clone()
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
