//! Indexed Jobs: which completion index each pod holds, which are done, which to start next.
//!
//! Kubernetes counterpart: `pkg/controller/job/indexed_job_utils.go` (`getCompletionIndex`,
//! `calculateSucceededIndexes`, `firstPendingIndexes`, `orderedIntervals.String`). An index is
//! done once one of its pods succeeded; `status.completedIndexes` keeps them as `"1,3-5,7"`, so
//! they survive the pods (JB7). Pure.

use std::collections::BTreeSet;

use minik_api::core::Pod;
use minik_api::jobs::COMPLETION_INDEX_ANNOTATION;

use super::decide::{pod_state, PodState};

/// The pod's index from its annotation, if it is a valid one below `completions`.
pub fn pod_index(pod: &Pod, completions: i32) -> Option<i32> {
    let annotations = pod.metadata.annotations.as_ref()?;
    let index: i32 = annotations.get(COMPLETION_INDEX_ANNOTATION)?.parse().ok()?;
    (0..completions).contains(&index).then_some(index)
}

/// `"1,3-5,7"` as a set (invalid or out-of-range parts are dropped).
pub fn parse_indexes(text: &str, completions: i32) -> BTreeSet<i32> {
    let mut set = BTreeSet::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let (first, last) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(first), Ok(last)) = (first.parse::<i32>(), last.parse::<i32>()) {
            set.extend((first.max(0)..=last.min(completions - 1)).filter(|i| *i >= 0));
        }
    }
    set
}

/// A set as `"1,3-5,7"`: runs of consecutive indexes as intervals.
pub fn format_indexes(set: &BTreeSet<i32>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(i32, i32)> = None;
    for &index in set {
        run = match run {
            Some((first, last)) if index == last + 1 => Some((first, index)),
            Some(done) => {
                parts.push(interval(done));
                Some((index, index))
            }
            None => Some((index, index)),
        };
    }
    parts.extend(run.map(interval));
    parts.join(",")
}

fn interval((first, last): (i32, i32)) -> String {
    if first == last {
        first.to_string()
    } else {
        format!("{first}-{last}")
    }
}

/// The completed indexes: those recorded in status, and those of succeeded pods.
pub fn succeeded_indexes(pods: &[&Pod], recorded: &str, completions: i32) -> BTreeSet<i32> {
    let mut set = parse_indexes(recorded, completions);
    let done = pods
        .iter()
        .filter(|pod| pod_state(pod) == PodState::Succeeded)
        .filter_map(|pod| pod_index(pod, completions));
    set.extend(done);
    set
}

/// The indexes held by active pods.
pub fn active_indexes(pods: &[&Pod], completions: i32) -> BTreeSet<i32> {
    pods.iter()
        .filter(|pod| pod_state(pod) == PodState::Active)
        .filter_map(|pod| pod_index(pod, completions))
        .collect()
}

/// The lowest `count` indexes neither done nor running (`firstPendingIndexes`).
pub fn indexes_to_start(
    completions: i32,
    succeeded: &BTreeSet<i32>,
    active: &BTreeSet<i32>,
    count: usize,
) -> Vec<i32> {
    (0..completions)
        .filter(|i| !succeeded.contains(i) && !active.contains(i))
        .take(count)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(index: &str, phase: &str) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": index,
            "annotations": {COMPLETION_INDEX_ANNOTATION: index}}, "status": {"phase": phase}}))
        .unwrap()
    }

    #[test]
    fn intervals_round_trip() {
        let set = BTreeSet::from([1, 3, 4, 5, 7]);
        assert_eq!(format_indexes(&set), "1,3-5,7");
        assert_eq!(parse_indexes("1,3-5,7", 10), set);
        assert_eq!(parse_indexes("1,3-5,7", 4), BTreeSet::from([1, 3]));
        assert_eq!(format_indexes(&BTreeSet::new()), "");
        assert_eq!(parse_indexes("x,2", 3), BTreeSet::from([2]));
    }

    #[test]
    fn pending_indexes_skip_done_and_running_ones() {
        let pods = [
            pod("0", "Succeeded"),
            pod("2", "Running"),
            pod("9", "Succeeded"),
        ];
        let refs: Vec<&Pod> = pods.iter().collect();
        let done = succeeded_indexes(&refs, "4", 5);
        assert_eq!(done, BTreeSet::from([0, 4]));
        let running = active_indexes(&refs, 5);
        assert_eq!(running, BTreeSet::from([2]));
        assert_eq!(indexes_to_start(5, &done, &running, 5), [1, 3]);
        assert_eq!(indexes_to_start(5, &done, &running, 1), [1]);
    }
}
