//! Has the slice store caught up with this controller's own writes?
//!
//! Kubernetes counterpart: `staging/src/k8s.io/endpointslice/endpointslice_tracker.go` and the
//! `StaleSlices` check at the top of `syncService`. The controller writes slices, then learns them
//! back from its watch a moment later. A sync in between would reconcile from the old state: it
//! could create a second slice for endpoints it has just placed. So each write is remembered (the
//! `resourceVersion` the apiserver answered, or "deleted"), and while the store shows an older
//! version of a written slice, or still shows a deleted one, the sync fails with a retry (the work
//! queue's backoff: 5 ms, 10 ms …). An expectation the store has met is forgotten, so a slice that
//! someone else deletes later is not waited for.
//!
//! minik simplifies: upstream compares `metadata.generation`; minik compares resourceVersions,
//! which its apiserver issues from one increasing revision.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::ObjectKey;

/// What the store should show for one slice.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Expected {
    /// At least this resourceVersion.
    Version(String),
    /// Nothing: the slice was deleted.
    Deleted,
}

/// The expectations, per Service, per slice name.
#[derive(Debug, Default)]
pub struct Tracker {
    expected: Mutex<HashMap<ObjectKey, HashMap<String, Expected>>>,
}

impl Tracker {
    /// Remembers a slice the apiserver answered a create or update with.
    pub fn written(&self, service: &ObjectKey, slice: &EndpointSlice) {
        let (Some(name), Some(version)) = (
            slice.metadata.name.clone(),
            slice.metadata.resource_version.clone(),
        ) else {
            return;
        };
        self.expect(service, name, Expected::Version(version));
    }

    /// Remembers a slice this controller deleted.
    pub fn deleted(&self, service: &ObjectKey, name: &str) {
        self.expect(service, name.to_string(), Expected::Deleted);
    }

    fn expect(&self, service: &ObjectKey, name: String, expected: Expected) {
        let mut all = self.expected.lock().unwrap_or_else(|p| p.into_inner());
        all.entry(service.clone())
            .or_default()
            .insert(name, expected);
    }

    /// Whether `slices` (the store's view of the Service's slices) is older than a write of ours;
    /// expectations it meets are dropped.
    pub fn is_stale(&self, service: &ObjectKey, slices: &[Arc<EndpointSlice>]) -> bool {
        let mut all = self.expected.lock().unwrap_or_else(|p| p.into_inner());
        let Some(expected) = all.get_mut(service) else {
            return false;
        };
        let seen = |name: &str| {
            slices
                .iter()
                .find(|s| s.metadata.name.as_deref() == Some(name))
                .and_then(|s| s.metadata.resource_version.clone())
        };
        expected.retain(|name, expected| match (expected, seen(name)) {
            (Expected::Deleted, found) => found.is_some(),
            (Expected::Version(_), None) => true,
            (Expected::Version(wanted), Some(found)) => older(&found, wanted),
        });
        let stale = !expected.is_empty();
        if !stale {
            all.remove(service);
        }
        stale
    }
}

/// Whether resourceVersion `found` is older than `wanted` (numeric when both are numbers).
fn older(found: &str, wanted: &str) -> bool {
    match (found.parse::<u64>(), wanted.parse::<u64>()) {
        (Ok(found), Ok(wanted)) => found < wanted,
        _ => found != wanted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_api::meta::ObjectMeta;

    fn slice(name: &str, version: &str) -> Arc<EndpointSlice> {
        Arc::new(EndpointSlice {
            metadata: ObjectMeta {
                name: Some(name.into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            ..EndpointSlice::default()
        })
    }

    #[test]
    fn a_store_behind_a_write_is_stale_until_it_catches_up() {
        let tracker = Tracker::default();
        let web = ObjectKey::new("default", "web");
        assert!(!tracker.is_stale(&web, &[]));
        tracker.written(&web, &slice("web-abc", "12"));
        assert!(tracker.is_stale(&web, &[]), "created, not seen yet");
        assert!(
            tracker.is_stale(&web, &[slice("web-abc", "9")]),
            "older version"
        );
        assert!(!tracker.is_stale(&web, &[slice("web-abc", "12")]));
        assert!(
            !tracker.is_stale(&web, &[]),
            "met expectations are forgotten"
        );

        tracker.deleted(&web, "web-abc");
        assert!(tracker.is_stale(&web, &[slice("web-abc", "12")]));
        assert!(!tracker.is_stale(&web, &[]));
        let other = ObjectKey::new("default", "other");
        tracker.deleted(&web, "web-x");
        assert!(
            !tracker.is_stale(&other, &[slice("web-x", "1")]),
            "per Service"
        );
    }
}
