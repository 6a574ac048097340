//! Waiting on a watch until a condition holds: for tools and tests, never a polling loop.
//!
//! Kubernetes counterpart: client-go's `watchtools.UntilWithSync` (`tools/watch/until.go`) and
//! kube-rs's `kube::runtime::wait::await_condition`: list, then watch, and test the condition on
//! the listed state and after every event, so a state reached before the wait began is seen too.
//! Like kube-rs, these functions never time out by themselves: wrap them in
//! `tokio::time::timeout` with the patience the caller has.
//!
//! The watcher behind them resumes after a disconnect and relists after a 410, so a wait survives
//! an apiserver restart. Each returns `None` only if the watch stream ends, which happens when the
//! watcher gives up (it does not, today) — callers treat it like a timeout.

use std::collections::BTreeMap;

use futures::StreamExt;

use crate::api::{Api, Object};
use crate::params::ListParams;
use crate::watcher::{watcher, Event};

/// Waits until `condition` holds for the whole set of objects `lp` selects (e.g. "three pods are
/// Running"); returns that set, sorted by namespace and name.
pub async fn await_all<K, F>(api: &Api<K>, lp: ListParams, mut condition: F) -> Option<Vec<K>>
where
    K: Object + k8s_openapi::ListableResource,
    F: FnMut(&[K]) -> bool,
{
    let mut events = Box::pin(watcher(api.clone(), lp));
    let mut objects: BTreeMap<String, K> = BTreeMap::new();
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Restarted(list)) => {
                objects = list.into_iter().map(|o| (key(&o), o)).collect()
            }
            Ok(Event::Applied(object)) => {
                objects.insert(key(&object), object);
            }
            Ok(Event::Deleted(object)) => {
                objects.remove(&key(&object));
            }
            // The watcher retries by itself; an error is only news that it did.
            Err(_) => continue,
        }
        let current: Vec<K> = objects.values().cloned().collect();
        if condition(&current) {
            return Some(current);
        }
    }
    None
}

/// Waits until the object `name` exists and `condition` holds for it; returns that version.
pub async fn await_condition<K, F>(api: &Api<K>, name: &str, mut condition: F) -> Option<K>
where
    K: Object + k8s_openapi::ListableResource,
    F: FnMut(&K) -> bool,
{
    let lp = ListParams::default().fields(&format!("metadata.name={name}"));
    let mut found = None;
    await_all(api, lp, |objects| {
        found = objects
            .iter()
            .find(|o| named(*o, name) && condition(o))
            .cloned();
        found.is_some()
    })
    .await?;
    found
}

/// Waits until no object is named `name` (it may be gone already).
pub async fn await_deleted<K>(api: &Api<K>, name: &str) -> Option<()>
where
    K: Object + k8s_openapi::ListableResource,
{
    let lp = ListParams::default().fields(&format!("metadata.name={name}"));
    await_all(api, lp, |objects| !objects.iter().any(|o| named(o, name)))
        .await
        .map(|_| ())
}

fn named<K: Object>(object: &K, name: &str) -> bool {
    object.metadata().name.as_deref() == Some(name)
}

/// `namespace/name`, the order the set is returned in.
fn key<K: Object>(object: &K) -> String {
    minik_api::ObjectKey::of(object.metadata()).to_string()
}
