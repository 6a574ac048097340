//! Event handlers: which Service keys a watch event puts on the work queue.
//!
//! Kubernetes counterpart: the informer handlers of `endpoints_controller.go` (`onServiceUpdate`,
//! `onServiceDelete`, `addPod`, `updatePod`, `deletePod`, `onEndpointsDelete`), of
//! `endpointslice_controller.go` (`onEndpointSliceUpdate`, `onEndpointSliceDelete`) and
//! `GetPodServiceMemberships` in `staging/src/k8s.io/endpointslice/util/controller_utils.go`.
//! Handlers never compute Endpoints; they only say which Services might need a sync. The work
//! queue merges repeated keys, and `sync_service` reads the stores, so it does not matter how many
//! events arrived or in what order (level-triggered, not edge-triggered).
//!
//! A pod that changes labels may leave one Service and join another: both must be synced. Like
//! upstream (which compares the old and new pod), the pod handler remembers each pod's last labels
//! and enqueues the Services selecting either the old or the new ones.
//!
//! minik simplifies: every pod update enqueues its Services (upstream first checks whether a field
//! the Endpoints depend on changed); `sync_service` then finds nothing to write.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use minik_api::core::{Endpoints, Pod, Service};
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::ObjectKey;
use minik_client::{Event, Store};

use crate::endpoints::labels_match;
use crate::endpointslice::managed_for;

/// Labels as a pod carries them (`None` when it has none).
type Labels = Option<BTreeMap<String, String>>;

/// The Services (keys) in the pod's namespace whose selector selects the pod.
pub fn services_selecting(pod: &Pod, services: &Store<Service>) -> BTreeSet<ObjectKey> {
    services_selecting_labels(
        pod.metadata.namespace.as_deref(),
        pod.metadata.labels.as_ref(),
        services,
    )
}

/// The Services in `namespace` whose selector selects a pod with `labels`.
fn services_selecting_labels(
    namespace: Option<&str>,
    labels: Option<&BTreeMap<String, String>>,
    services: &Store<Service>,
) -> BTreeSet<ObjectKey> {
    services
        .state()
        .iter()
        .filter(|service| service.metadata.namespace.as_deref() == namespace)
        .filter(|service| {
            let selector = service.spec.as_ref().and_then(|s| s.selector.as_ref());
            selector.is_some_and(|selector| labels_match(selector, labels))
        })
        .map(|service| ObjectKey::of(&service.metadata))
        .collect()
}

/// Maps pod events to Service keys. It remembers each pod's last labels, so that when they change
/// the Services selecting the *old* labels are synced too (the pod must leave them), judged
/// against the Services as they are now (upstream compares the old and new pod the same way).
#[derive(Debug, Default)]
pub struct PodHandler {
    labels: HashMap<ObjectKey, Labels>,
}

impl PodHandler {
    /// The Service keys to sync after `event`.
    pub fn on_event(
        &mut self,
        event: &Event<Pod>,
        services: &Store<Service>,
    ) -> BTreeSet<ObjectKey> {
        match event {
            Event::Applied(pod) => {
                let key = ObjectKey::of(&pod.metadata);
                let old = self.labels.insert(key.clone(), pod.metadata.labels.clone());
                let mut keys = services_selecting(pod, services);
                if let Some(old) = old.filter(|old| *old != pod.metadata.labels) {
                    keys.extend(services_selecting_labels(
                        key.namespace.as_deref(),
                        old.as_ref(),
                        services,
                    ));
                }
                keys
            }
            Event::Deleted(pod) => {
                let key = ObjectKey::of(&pod.metadata);
                let old = self.labels.remove(&key).flatten();
                let mut keys = services_selecting(pod, services);
                keys.extend(services_selecting_labels(
                    key.namespace.as_deref(),
                    old.as_ref(),
                    services,
                ));
                keys
            }
            Event::Restarted(pods) => {
                self.labels = pods
                    .iter()
                    .map(|p| (ObjectKey::of(&p.metadata), p.metadata.labels.clone()))
                    .collect();
                // After a relist anything may have changed: every Service is worth a look.
                services
                    .state()
                    .iter()
                    .map(|s| ObjectKey::of(&s.metadata))
                    .collect()
            }
        }
    }
}

/// Maps Service events to keys, remembering which Services exist so that one deleted while the
/// watch was down is still synced (and its Endpoints removed) after the relist.
#[derive(Debug, Default)]
pub struct ServiceHandler {
    known: HashSet<ObjectKey>,
}

impl ServiceHandler {
    /// The Service keys to sync after `event`.
    pub fn on_event(&mut self, event: &Event<Service>) -> BTreeSet<ObjectKey> {
        match event {
            Event::Applied(service) => {
                let key = ObjectKey::of(&service.metadata);
                self.known.insert(key.clone());
                BTreeSet::from([key])
            }
            Event::Deleted(service) => {
                let key = ObjectKey::of(&service.metadata);
                self.known.remove(&key);
                BTreeSet::from([key])
            }
            Event::Restarted(services) => {
                let listed: HashSet<ObjectKey> = services
                    .iter()
                    .map(|s| ObjectKey::of(&s.metadata))
                    .collect();
                let keys = listed.union(&self.known).cloned().collect();
                self.known = listed;
                keys
            }
        }
    }
}

/// Maps Endpoints events to keys: a deleted Endpoints of a live Service is recreated, and after a
/// list every Endpoints is checked, so one whose Service is gone is cleaned up (upstream
/// `checkLeftoverEndpoints`).
pub fn endpoints_keys(event: &Event<Endpoints>) -> BTreeSet<ObjectKey> {
    match event {
        Event::Applied(_) => BTreeSet::new(),
        Event::Deleted(endpoints) => BTreeSet::from([ObjectKey::of(&endpoints.metadata)]),
        Event::Restarted(list) => list.iter().map(|e| ObjectKey::of(&e.metadata)).collect(),
    }
}

/// Maps EndpointSlice events to the keys of the Services whose slices the EndpointSlice controller
/// manages: a slice someone changed or deleted is put right, and after a list every Service with
/// slices is checked (so the slices of a Service deleted meanwhile go too). Slices of other
/// managers are ignored.
pub fn managed_slice_keys(event: &Event<EndpointSlice>) -> BTreeSet<ObjectKey> {
    let key = |slice: &EndpointSlice| {
        let service = managed_for(slice)?;
        Some(ObjectKey {
            namespace: slice.metadata.namespace.clone(),
            name: service,
        })
    };
    match event {
        Event::Applied(slice) | Event::Deleted(slice) => key(slice).into_iter().collect(),
        Event::Restarted(list) => list.iter().filter_map(key).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{pod, service};
    use minik_client::store::store;

    fn services(list: Vec<Service>) -> Store<Service> {
        let (reader, mut writer) = store();
        writer.apply_watcher_event(&Event::Restarted(list));
        reader
    }

    fn keys(names: &[&str]) -> BTreeSet<ObjectKey> {
        names
            .iter()
            .map(|n| ObjectKey::new("default", *n))
            .collect()
    }

    #[test]
    fn pod_maps_to_the_services_selecting_it_in_its_namespace() {
        let store = services(vec![
            service("web").build(),
            service("db").build(),
            service("all").selector(Some(&[])).build(),
        ]);
        assert_eq!(
            services_selecting(&pod("p", "web", "127.244.1.2").build(), &store),
            keys(&["all", "web"])
        );
        let elsewhere = pod("p", "web", "127.244.1.2").namespace("other").build();
        assert!(services_selecting(&elsewhere, &store).is_empty());
    }

    #[test]
    fn relabelled_pod_syncs_the_old_and_the_new_service() {
        let store = services(vec![service("web").build(), service("db").build()]);
        let mut handler = PodHandler::default();
        assert_eq!(
            handler.on_event(
                &Event::Applied(pod("p", "web", "127.244.1.2").build()),
                &store
            ),
            keys(&["web"])
        );
        assert_eq!(
            handler.on_event(
                &Event::Applied(pod("p", "db", "127.244.1.2").build()),
                &store
            ),
            keys(&["db", "web"])
        );
        assert_eq!(
            handler.on_event(
                &Event::Deleted(pod("p", "db", "127.244.1.2").build()),
                &store
            ),
            keys(&["db"])
        );
    }

    #[test]
    fn pod_leaving_a_service_created_after_it_syncs_that_service() {
        let mut handler = PodHandler::default();
        handler.on_event(
            &Event::Applied(pod("p", "web", "127.244.1.2").build()),
            &services(vec![]),
        );
        let later = services(vec![service("web").build()]);
        let queued = handler.on_event(
            &Event::Applied(pod("p", "db", "127.244.1.2").build()),
            &later,
        );
        assert_eq!(
            queued,
            keys(&["web"]),
            "the old labels are judged against today's Services"
        );
    }

    #[test]
    fn service_deleted_during_a_watch_gap_is_still_synced() {
        let mut handler = ServiceHandler::default();
        handler.on_event(&Event::Restarted(vec![
            service("web").build(),
            service("gone").build(),
        ]));
        assert_eq!(
            handler.on_event(&Event::Restarted(vec![service("web").build()])),
            keys(&["gone", "web"])
        );
        assert_eq!(
            handler.on_event(&Event::Restarted(vec![service("web").build()])),
            keys(&["web"])
        );
    }
}
