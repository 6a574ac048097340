//! `sync_service`: bring one Service's Endpoints object in line with the pods it selects.
//!
//! Kubernetes counterpart: `Controller.syncService` in `pkg/controller/endpoint/endpoints_controller.go`.
//! It reads only informer stores (Services, Pods, Endpoints), computes the wanted subsets with the
//! pure [`crate::endpoints::compute`], and writes only when something differs, so a flood of pod
//! status updates that change nothing visible costs no write at all:
//!
//! - Service gone → delete its Endpoints (NotFound is fine: nothing to do);
//! - Service without selector → not ours, leave its Endpoints alone;
//! - otherwise create or replace the Endpoints when subsets or labels differ. A replace carries the
//!   `resourceVersion` read from the store: if the store was stale the apiserver answers 409
//!   Conflict and the key is retried once the store caught up, as upstream does.
//!
//! Each write stamps `endpoints.kubernetes.io/last-change-trigger-time` (upstream's annotation; minik
//! uses the time of the sync rather than of the triggering pod change) and logs the counts, and each
//! pod that enters or leaves the ready addresses gets an Event on the Service.
//!
//! An object over 1000 addresses is truncated and annotated as upstream ([`crate::capacity`]).
//!
//! minik simplifies: no trigger-time tracking per pod. EndpointSlices are `mirroring.rs`'s.

use std::collections::BTreeMap;

use minik_api::core::{EndpointSubset, Endpoints, Pod, Service};
use minik_api::meta::ObjectMeta;
use minik_api::ObjectKey;
use minik_client::Store;
use tracing::{debug, info, warn};

use crate::capacity::{truncate, MAX_CAPACITY, OVER_CAPACITY};
use crate::endpoints::{compute, counts, pod_addresses};
use crate::writes::EndpointsWrites;

/// Upstream's annotation recording when the change behind the last write happened (RFC 3339, nanoseconds).
pub const LAST_CHANGE_TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// Upstream's label on the Endpoints of a headless Service (`v1.IsHeadlessService`).
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";
/// minik's own Event reasons for the demo's timeline (upstream records no per-pod endpoint events).
pub const REASON_ADDED: &str = "EndpointAdded";
/// See [`REASON_ADDED`].
pub const REASON_REMOVED: &str = "EndpointRemoved";

/// The controller: three stores to read, one writer to write through.
pub struct EndpointsController<W> {
    /// Every Service, kept by its watcher.
    pub services: Store<Service>,
    /// Every pod.
    pub pods: Store<Pod>,
    /// Every Endpoints object, to compare with before writing.
    pub endpoints: Store<Endpoints>,
    writes: W,
}

impl<W: EndpointsWrites> EndpointsController<W> {
    /// A controller over the given stores.
    pub fn new(
        services: Store<Service>,
        pods: Store<Pod>,
        endpoints: Store<Endpoints>,
        writes: W,
    ) -> Self {
        EndpointsController {
            services,
            pods,
            endpoints,
            writes,
        }
    }

    /// The writer (tests inspect what it recorded).
    pub fn writes(&self) -> &W {
        &self.writes
    }

    /// Reconciles the Endpoints of the Service `key` (`namespace/name`).
    pub async fn sync_service(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let Some(service) = self.services.get(key) else {
            return self.delete_endpoints(key).await;
        };
        let pods = self.pods.state();
        let Some(subsets) = compute(&service, pods.iter().map(|pod| &**pod)) else {
            debug!(service = %key, "service has no selector; not managing its endpoints");
            return Ok(());
        };
        let current = self.endpoints.get(key);
        let wanted = desired_endpoints(
            &service,
            subsets,
            current.as_deref(),
            jiff::Timestamp::now(),
        );
        if current
            .as_deref()
            .is_some_and(|current| !needs_update(current, &wanted))
        {
            debug!(service = %key, "endpoints unchanged");
            return Ok(());
        }
        match &current {
            None => self.writes.create(&wanted).await?,
            Some(_) => self.writes.replace(&wanted).await?,
        };
        let subsets = wanted.subsets.as_deref().unwrap_or_default();
        let (ready, not_ready) = counts(subsets);
        info!(service = %key, ready, not_ready, "updated endpoints");
        let old_subsets = current
            .as_ref()
            .and_then(|c| c.subsets.clone())
            .unwrap_or_default();
        self.record_changes(&service, &old_subsets, subsets).await;
        Ok(())
    }

    async fn delete_endpoints(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let namespace = key.namespace.as_deref().unwrap_or("default");
        match self.writes.delete(namespace, &key.name).await {
            Ok(()) => {
                info!(service = %key, "deleted endpoints of removed service");
                Ok(())
            }
            Err(error) if error.is_not_found() => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn record_changes(
        &self,
        service: &Service,
        old: &[EndpointSubset],
        new: &[EndpointSubset],
    ) {
        for (reason, message) in endpoint_changes(old, new) {
            if let Err(error) = self.writes.event(service, reason, &message).await {
                warn!(%error, reason, "could not record event");
            }
        }
    }
}

/// The labels the Endpoints should carry: the Service's, plus the headless marker when it applies.
pub fn desired_labels(service: &Service) -> Option<BTreeMap<String, String>> {
    let mut labels = service.metadata.labels.clone().unwrap_or_default();
    if service.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None") {
        labels.insert(HEADLESS_LABEL.to_string(), String::new());
    } else {
        labels.remove(HEADLESS_LABEL);
    }
    (!labels.is_empty()).then_some(labels)
}

/// Whether the stored Endpoints differ from the wanted ones in what the controller owns: subsets,
/// labels, and the over-capacity annotation (not the trigger time, which changes every sync).
pub fn needs_update(current: &Endpoints, wanted: &Endpoints) -> bool {
    let subsets = |e: &Endpoints| {
        e.subsets
            .iter()
            .flatten()
            .map(normalized)
            .collect::<Vec<_>>()
    };
    let labels = |e: &Endpoints| e.metadata.labels.clone().filter(|l| !l.is_empty());
    let over_capacity = |e: &Endpoints| {
        e.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(OVER_CAPACITY).cloned())
    };
    subsets(current) != subsets(wanted)
        || labels(current) != labels(wanted)
        || over_capacity(current) != over_capacity(wanted)
}

/// A subset with empty lists written as absent, as they come back from the apiserver.
fn normalized(subset: &EndpointSubset) -> EndpointSubset {
    fn some<T: Clone>(list: &Option<Vec<T>>) -> Option<Vec<T>> {
        list.clone().filter(|l| !l.is_empty())
    }
    EndpointSubset {
        addresses: some(&subset.addresses),
        not_ready_addresses: some(&subset.not_ready_addresses),
        ports: some(&subset.ports),
    }
}

/// The Endpoints object to write: named after the Service, its labels, the current object's
/// annotations and `resourceVersion` (for the optimistic-concurrency check), the trigger time, and
/// at most [`MAX_CAPACITY`] addresses (annotated `over-capacity: truncated` when cut).
pub fn desired_endpoints(
    service: &Service,
    mut subsets: Vec<EndpointSubset>,
    current: Option<&Endpoints>,
    now: jiff::Timestamp,
) -> Endpoints {
    let mut annotations = current
        .and_then(|c| c.metadata.annotations.clone())
        .unwrap_or_default();
    annotations.insert(LAST_CHANGE_TRIGGER_TIME.to_string(), rfc3339_nano(now));
    if truncate(&mut subsets, MAX_CAPACITY) {
        annotations.insert(OVER_CAPACITY.to_string(), "truncated".to_string());
    } else {
        annotations.remove(OVER_CAPACITY);
    }
    Endpoints {
        metadata: ObjectMeta {
            name: service.metadata.name.clone(),
            namespace: service.metadata.namespace.clone(),
            labels: desired_labels(service),
            annotations: Some(annotations),
            resource_version: current.and_then(|c| c.metadata.resource_version.clone()),
            ..ObjectMeta::default()
        },
        subsets: (!subsets.is_empty()).then_some(subsets),
    }
}

/// Go's `time.RFC3339Nano` layout in UTC: fractional seconds without trailing zeros, then `Z`.
fn rfc3339_nano(time: jiff::Timestamp) -> String {
    time.to_string()
}

/// The Events a change of subsets deserves: one per pod entering or leaving the ready addresses,
/// removals first (they are what a client notices), each list in pod-name order.
pub fn endpoint_changes(
    old: &[EndpointSubset],
    new: &[EndpointSubset],
) -> Vec<(&'static str, String)> {
    let (before, after) = (pod_addresses(old, true), pod_addresses(new, true));
    let removed = before.difference(&after).map(|(pod, ip)| {
        (
            REASON_REMOVED,
            format!("Pod {pod} ({ip}) removed from the Endpoints"),
        )
    });
    let added = after.difference(&before).map(|(pod, ip)| {
        (
            REASON_ADDED,
            format!("Pod {pod} ({ip}) added to the Endpoints"),
        )
    });
    removed.chain(added).collect()
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
