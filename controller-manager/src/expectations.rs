//! Expectations: what a controller is still waiting to see in its informers after its own writes.
//!
//! Kubernetes counterpart: `ControllerExpectations` and `UIDTrackingControllerExpectations` in
//! `pkg/controller/controller_utils.go`. A ReplicaSet controller that created 3 pods must not create
//! 3 more because its pod informer has not shown them yet: it records "expect 3 adds" before
//! creating, the pod handler counts each ADDED pod down, and replicas are only managed again once
//! the count reached zero (or after [`EXPECTATIONS_TIMEOUT`], if an event was lost). Deletions are
//! tracked by pod key, so a pod seen terminating and then gone counts once.
//!
//! minik simplifies: keys are `namespace/name` for the controller and the pods alike.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use minik_api::ObjectKey;

/// Expectations older than this are considered fulfilled (upstream `ExpectationsTimeout`, 5 min).
pub const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(5 * 60);

#[derive(Debug)]
struct Expectation {
    adds: i64,
    deletes: HashSet<ObjectKey>,
    recorded: Instant,
}

/// Per-controller-key expectations; share behind an `Arc`.
#[derive(Debug, Default)]
pub struct Expectations {
    inner: Mutex<HashMap<ObjectKey, Expectation>>,
}

impl Expectations {
    fn lock(&self) -> MutexGuard<'_, HashMap<ObjectKey, Expectation>> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether `key` may act: nothing pending, or the record is too old to trust.
    pub fn satisfied(&self, key: &ObjectKey) -> bool {
        match self.lock().get(key) {
            None => true,
            Some(expectation) => {
                (expectation.adds <= 0 && expectation.deletes.is_empty())
                    || expectation.recorded.elapsed() > EXPECTATIONS_TIMEOUT
            }
        }
    }

    /// Before creating `adds` objects for `key`.
    pub fn expect_creations(&self, key: &ObjectKey, adds: usize) {
        self.lock().insert(
            key.clone(),
            Expectation {
                adds: adds as i64,
                deletes: HashSet::new(),
                recorded: Instant::now(),
            },
        );
    }

    /// Before deleting `pods` for `key`.
    pub fn expect_deletions(&self, key: &ObjectKey, pods: impl IntoIterator<Item = ObjectKey>) {
        self.lock().insert(
            key.clone(),
            Expectation {
                adds: 0,
                deletes: pods.into_iter().collect(),
                recorded: Instant::now(),
            },
        );
    }

    /// An object created for `key` was seen (or its create failed).
    pub fn creation_observed(&self, key: &ObjectKey) {
        if let Some(expectation) = self.lock().get_mut(key) {
            expectation.adds -= 1;
        }
    }

    /// `count` expected creations will never happen (a slow-start batch was skipped).
    pub fn lower_creations(&self, key: &ObjectKey, count: usize) {
        if let Some(expectation) = self.lock().get_mut(key) {
            expectation.adds -= count as i64;
        }
    }

    /// The deletion of `pod` for `key` was seen (terminating or gone), or its delete failed.
    pub fn deletion_observed(&self, key: &ObjectKey, pod: &ObjectKey) {
        if let Some(expectation) = self.lock().get_mut(key) {
            expectation.deletes.remove(pod);
        }
    }

    /// Forgets `key` (its controller object was deleted).
    pub fn delete(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("default", name)
    }

    #[test]
    fn creations_must_all_be_observed_before_acting_again() {
        let expectations = Expectations::default();
        assert!(expectations.satisfied(&key("web")));
        expectations.expect_creations(&key("web"), 2);
        assert!(!expectations.satisfied(&key("web")));
        expectations.creation_observed(&key("web"));
        assert!(
            !expectations.satisfied(&key("web")),
            "a watch lag must not double the pods"
        );
        expectations.creation_observed(&key("web"));
        assert!(expectations.satisfied(&key("web")));
    }

    #[test]
    fn a_deletion_counts_once_per_pod() {
        let expectations = Expectations::default();
        expectations.expect_deletions(&key("web"), [key("web-a"), key("web-b")]);
        expectations.deletion_observed(&key("web"), &key("web-a"));
        expectations.deletion_observed(&key("web"), &key("web-a"));
        assert!(!expectations.satisfied(&key("web")));
        expectations.deletion_observed(&key("web"), &key("web-b"));
        assert!(expectations.satisfied(&key("web")));
    }
}
