//! The scheduling queue: the pods waiting for a node, and where each of them waits.
//!
//! Kubernetes counterpart: `pkg/scheduler/backend/queue/scheduling_queue.go` (`PriorityQueue` with
//! its `activeQ`, `podBackoffQ` and `unschedulablePods`). A pending pod is in exactly one place:
//!
//! - **active**: ready to be tried, in arrival order;
//! - **in flight**: popped; the scheduler is deciding, or its bind request is out;
//! - **unschedulable**: the last attempt found no node. It stays parked until something happens
//!   that could make it fit (a node added or changed, a pod deleted or finished): the scheduler then
//!   calls [`SchedulingQueue::move_all_to_active`]. There is no periodic retry: a pod that cannot fit
//!   costs nothing while the cluster is quiet;
//! - **backoff**: the last attempt failed for a transient reason (an API error while binding) and
//!   is retried after a delay.
//!
//! minik simplifies: FIFO instead of `PrioritySort` (priority, then creation time); no queueing
//! hints (upstream asks each plugin whether an event could help a given pod); no five-minute flush
//! of long-parked pods.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use minik_api::core::Pod;
use minik_api::ObjectKey;
use tokio::time::Instant;

/// Where a pending pod waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodQueueState {
    /// In the active FIFO.
    Active,
    /// Being scheduled or bound.
    InFlight,
    /// Parked until the cluster changes.
    Unschedulable,
    /// Waiting for its backoff to expire.
    Backoff,
}

#[derive(Debug)]
struct Entry {
    pod: Arc<Pod>,
    state: PodQueueState,
    /// Consecutive transient failures, for the backoff delay.
    attempts: u32,
}

/// The pods this scheduler must place.
#[derive(Debug, Default)]
pub struct SchedulingQueue {
    entries: HashMap<ObjectKey, Entry>,
    /// Keys in arrival order; entries that left the Active state are skipped lazily on pop.
    active: VecDeque<ObjectKey>,
    /// Keys in backoff with the instant they may be retried.
    backoff: Vec<(Instant, ObjectKey)>,
}

impl SchedulingQueue {
    /// An empty queue.
    pub fn new() -> Self {
        SchedulingQueue::default()
    }

    /// Adds a new pending pod, or records the latest version of one already queued. A parked pod
    /// whose spec changed (a toleration added, say) gets another chance at once.
    pub fn add_or_update(&mut self, pod: Arc<Pod>) {
        let key = ObjectKey::of(&pod.metadata);
        match self.entries.get_mut(&key) {
            None => {
                self.entries.insert(
                    key.clone(),
                    Entry {
                        pod,
                        state: PodQueueState::Active,
                        attempts: 0,
                    },
                );
                self.active.push_back(key);
            }
            Some(entry) => {
                let spec_changed = entry.pod.spec != pod.spec;
                entry.pod = pod;
                if spec_changed && entry.state == PodQueueState::Unschedulable {
                    entry.state = PodQueueState::Active;
                    self.active.push_back(key);
                }
            }
        }
    }

    /// Forgets a pod: deleted, bound (by us or someone else), or no longer ours.
    pub fn delete(&mut self, key: &ObjectKey) {
        self.entries.remove(key);
    }

    /// Keeps only the pods for which `keep` is true (after a relist, the pods that still exist).
    pub fn retain(&mut self, mut keep: impl FnMut(&ObjectKey) -> bool) {
        self.entries.retain(|key, _| keep(key));
    }

    /// The next pod to schedule, now in flight.
    pub fn pop(&mut self) -> Option<Arc<Pod>> {
        while let Some(key) = self.active.pop_front() {
            if let Some(entry) = self.entries.get_mut(&key) {
                if entry.state == PodQueueState::Active {
                    entry.state = PodQueueState::InFlight;
                    return Some(entry.pod.clone());
                }
            }
        }
        None
    }

    /// Whether a pop would return a pod. Drops stale keys from the front of the FIFO as it looks, so
    /// it costs O(1) amortized.
    pub fn has_active(&mut self) -> bool {
        while let Some(key) = self.active.front() {
            if self.state(key) == Some(PodQueueState::Active) {
                return true;
            }
            self.active.pop_front();
        }
        false
    }

    /// Where a pod waits, if it is queued.
    pub fn state(&self, key: &ObjectKey) -> Option<PodQueueState> {
        self.entries.get(key).map(|entry| entry.state)
    }

    /// Parks an in-flight pod that fits nowhere.
    pub fn add_unschedulable(&mut self, key: &ObjectKey) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.state = PodQueueState::Unschedulable;
        }
    }

    /// Retries an in-flight pod after a delay doubling from `base` with each failure (at most 64×).
    pub fn add_backoff(&mut self, key: &ObjectKey, base: Duration, now: Instant) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.attempts = (entry.attempts + 1).min(7);
            entry.state = PodQueueState::Backoff;
            self.backoff
                .push((now + base * (1 << (entry.attempts - 1)), key.clone()));
        }
    }

    /// The earliest instant a backed-off pod may be retried.
    pub fn next_backoff(&self) -> Option<Instant> {
        self.backoff.iter().map(|(at, _)| *at).min()
    }

    /// Moves the pods whose backoff has expired to the active queue.
    pub fn flush_backoff(&mut self, now: Instant) {
        let (due, waiting): (Vec<_>, Vec<_>) =
            self.backoff.drain(..).partition(|(at, _)| *at <= now);
        self.backoff = waiting;
        for (_, key) in due {
            self.activate(&key, PodQueueState::Backoff);
        }
    }

    /// Gives every parked pod another try: the cluster changed in a way that may make room. Returns
    /// how many pods moved.
    pub fn move_all_to_active(&mut self) -> usize {
        let parked: Vec<ObjectKey> = self
            .entries
            .iter()
            .filter(|(_, entry)| entry.state == PodQueueState::Unschedulable)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &parked {
            self.activate(key, PodQueueState::Unschedulable);
        }
        parked.len()
    }

    fn activate(&mut self, key: &ObjectKey, from: PodQueueState) {
        if let Some(entry) = self.entries.get_mut(key) {
            if entry.state == from {
                entry.state = PodQueueState::Active;
                self.active.push_back(key.clone());
            }
        }
    }

    /// Number of pods waiting (in any state).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no pod is waiting.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("default", name)
    }

    #[test]
    fn pods_pop_in_arrival_order_once() {
        let mut queue = SchedulingQueue::new();
        queue.add_or_update(Arc::new(pod("a").build()));
        queue.add_or_update(Arc::new(pod("b").build()));
        queue.add_or_update(Arc::new(pod("a").build()));
        let names: Vec<_> = std::iter::from_fn(|| queue.pop())
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(queue.state(&key("a")), Some(PodQueueState::InFlight));
    }

    #[test]
    fn unschedulable_pods_wait_for_a_cluster_change() {
        let mut queue = SchedulingQueue::new();
        queue.add_or_update(Arc::new(pod("a").build()));
        queue.pop();
        queue.add_unschedulable(&key("a"));
        assert!(
            queue.pop().is_none(),
            "a parked pod is not retried by itself"
        );
        // An update that does not touch the spec (our own status patch) does not wake it.
        queue.add_or_update(Arc::new(pod("a").phase("Pending").build()));
        assert!(queue.pop().is_none());
        assert_eq!(queue.move_all_to_active(), 1);
        assert_eq!(queue.pop().unwrap().metadata.name.as_deref(), Some("a"));
    }

    #[test]
    fn spec_change_wakes_a_parked_pod() {
        let mut queue = SchedulingQueue::new();
        queue.add_or_update(Arc::new(pod("a").build()));
        queue.pop();
        queue.add_unschedulable(&key("a"));
        queue.add_or_update(Arc::new(pod("a").toleration("k", "Exists", "", "").build()));
        assert!(queue.pop().is_some());
    }

    #[test]
    fn in_flight_pod_is_not_requeued_by_updates_and_deleted_pods_vanish() {
        let mut queue = SchedulingQueue::new();
        queue.add_or_update(Arc::new(pod("a").build()));
        queue.add_or_update(Arc::new(pod("b").build()));
        queue.pop();
        queue.add_or_update(Arc::new(pod("a").cpu("1").build()));
        queue.delete(&key("b"));
        assert!(queue.pop().is_none());
        assert_eq!(queue.len(), 1);
    }

    #[test]
    fn backoff_doubles_and_expires() {
        let mut queue = SchedulingQueue::new();
        queue.add_or_update(Arc::new(pod("a").build()));
        queue.pop();
        let start = Instant::now();
        queue.add_backoff(&key("a"), Duration::from_millis(100), start);
        assert_eq!(
            queue.next_backoff(),
            Some(start + Duration::from_millis(100))
        );
        queue.flush_backoff(start + Duration::from_millis(99));
        assert!(queue.pop().is_none());
        queue.flush_backoff(start + Duration::from_millis(100));
        assert!(queue.pop().is_some());
        queue.add_backoff(&key("a"), Duration::from_millis(100), start);
        assert_eq!(
            queue.next_backoff(),
            Some(start + Duration::from_millis(200))
        );
    }
}
