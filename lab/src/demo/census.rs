//! The pods of a Deployment counted by ReplicaSet and state, over time: what the rollout and
//! rainbow demos draw and what their peak figures come from.
//!
//! Kubernetes counterpart: what `kubectl get pods -w` shows during a rollout, tallied. A pod is in
//! one of four states here: `Pending` (created, not yet running), `Running` (its container runs,
//! not Ready), `Ready` (its Ready condition is True) and `Terminating` (its `deletionTimestamp`
//! is set: `kubectl` prints `Terminating` whatever the phase, seed 003). A pod counts until its
//! object is removed. Pure: pods in, counts out; the watch that feeds it is in `rollout.rs`.

use std::collections::BTreeMap;

use minik_api::core::Pod;
use serde::Serialize;

use super::observe::is_ready;

/// The state a pod is drawn in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Created, not running yet.
    Pending,
    /// Running, not Ready.
    Running,
    /// Running and Ready.
    Ready,
    /// Being deleted (the `deletionTimestamp` is set).
    Terminating,
}

impl State {
    /// Every state, bottom to top of the stacked chart.
    pub const ALL: [State; 4] = [
        State::Ready,
        State::Running,
        State::Pending,
        State::Terminating,
    ];

    /// The state's name in the picture and the live view.
    pub fn name(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Running => "running",
            State::Ready => "ready",
            State::Terminating => "terminating",
        }
    }

    /// The state of a pod object.
    pub fn of(pod: &Pod) -> State {
        if pod.metadata.deletion_timestamp.is_some() {
            return State::Terminating;
        }
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        match phase {
            Some("Running") if is_ready(pod) => State::Ready,
            Some("Running") => State::Running,
            _ => State::Pending,
        }
    }
}

/// The group a pod is counted in: its controlling ReplicaSet's name, else its `release` label,
/// else `-`.
pub fn group_of(pod: &Pod) -> String {
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|owner| owner.controller == Some(true) && owner.kind == "ReplicaSet");
    owner
        .map(|owner| owner.name.clone())
        .or_else(|| {
            pod.metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get("release").cloned())
        })
        .unwrap_or_else(|| "-".to_string())
}

/// Counts of one moment: per group (in order of first appearance), per state.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Sample {
    /// Milliseconds since the demo's reference moment.
    pub t_ms: f64,
    /// `(group, state) → pods`, zero counts left out.
    pub counts: BTreeMap<(usize, State), usize>,
}

impl Sample {
    /// Every pod counted.
    pub fn total(&self) -> usize {
        self.counts.values().sum()
    }

    /// Pods of `group` in `state`.
    pub fn count(&self, group: usize, state: State) -> usize {
        self.counts.get(&(group, state)).copied().unwrap_or(0)
    }
}

/// The live set of pods and the samples taken each time it changed.
#[derive(Clone, Debug, Default)]
pub struct Census {
    /// The groups, in order of first appearance.
    pub groups: Vec<String>,
    pods: BTreeMap<String, (usize, State)>,
    /// One sample per change.
    pub samples: Vec<Sample>,
}

impl Census {
    /// A pod was added or changed at `t_ms`; returns whether the counts changed.
    pub fn apply(&mut self, pod: &Pod, t_ms: f64) -> bool {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let group = self.group_index(&group_of(pod));
        let entry = (group, State::of(pod));
        if self.pods.insert(name, entry) == Some(entry) {
            return false;
        }
        self.sample(t_ms);
        true
    }

    /// A pod object was removed at `t_ms`.
    pub fn remove(&mut self, pod: &Pod, t_ms: f64) -> bool {
        let name = pod.metadata.name.clone().unwrap_or_default();
        if self.pods.remove(&name).is_none() {
            return false;
        }
        self.sample(t_ms);
        true
    }

    fn group_index(&mut self, group: &str) -> usize {
        match self.groups.iter().position(|g| g == group) {
            Some(index) => index,
            None => {
                self.groups.push(group.to_string());
                self.groups.len() - 1
            }
        }
    }

    fn sample(&mut self, t_ms: f64) {
        let mut counts = BTreeMap::new();
        for entry in self.pods.values() {
            *counts.entry(*entry).or_insert(0) += 1;
        }
        self.samples.push(Sample { t_ms, counts });
    }

    /// The counts now.
    pub fn current(&self) -> Sample {
        self.samples.last().cloned().unwrap_or_default()
    }

    /// The last sample with the most pods, if any: in a rollout, the moment just before the
    /// first old pod is removed, every new pod up and every old one Terminating (seed 002).
    pub fn peak(&self) -> Option<&Sample> {
        self.samples
            .iter()
            .reduce(|best, s| if s.total() >= best.total() { s } else { best })
    }

    /// Pods of `group` still counted (not yet removed).
    pub fn remaining(&self, group: &str) -> usize {
        let Some(index) = self.groups.iter().position(|g| g == group) else {
            return 0;
        };
        self.pods.values().filter(|(g, _)| *g == index).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, rs: &str, phase: &str, ready: bool, deleting: bool) -> Pod {
        let mut pod = json!({
            "metadata": {"name": name, "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": "u", "controller": true}]},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]},
        });
        if deleting {
            pod["metadata"]["deletionTimestamp"] = json!("2026-11-25T12:00:00Z");
        }
        serde_json::from_value(pod).unwrap()
    }

    #[test]
    fn a_pod_is_pending_running_ready_or_terminating() {
        assert_eq!(
            State::of(&pod("a", "rs", "Pending", false, false)),
            State::Pending
        );
        assert_eq!(
            State::of(&pod("a", "rs", "Running", false, false)),
            State::Running
        );
        assert_eq!(
            State::of(&pod("a", "rs", "Running", true, false)),
            State::Ready
        );
        assert_eq!(
            State::of(&pod("a", "rs", "Running", true, true)),
            State::Terminating
        );
    }

    #[test]
    fn the_peak_counts_old_terminating_and_new_ready_pods_together() {
        let mut census = Census::default();
        census.apply(&pod("old-1", "old", "Running", true, false), 0.0);
        census.apply(&pod("new-1", "new", "Running", false, false), 5.0);
        census.apply(&pod("new-1", "new", "Running", true, false), 10.0);
        census.apply(&pod("old-1", "old", "Running", true, true), 20.0);
        assert!(!census.apply(&pod("old-1", "old", "Running", true, true), 22.0));
        census.remove(&pod("old-1", "old", "Running", true, true), 30.0);
        let peak = census.peak().unwrap();
        assert_eq!(peak.total(), 2);
        assert_eq!(
            peak.t_ms, 20.0,
            "the last sample at the peak: the old pod Terminating"
        );
        assert_eq!(census.groups, ["old", "new"]);
        let at = &census.samples[3];
        assert_eq!(
            (at.count(0, State::Terminating), at.count(1, State::Ready)),
            (1, 1)
        );
        assert_eq!(census.remaining("old"), 0);
        assert_eq!(census.current().total(), 1);
    }
}
