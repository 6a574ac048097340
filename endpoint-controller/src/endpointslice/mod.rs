//! The EndpointSlice controller: a Service's EndpointSlices computed from its pods.
//!
//! Kubernetes counterpart: `pkg/controller/endpointslice/endpointslice_controller.go` (`syncService`)
//! over the reconciler of `staging/src/k8s.io/endpointslice/`. Since Kubernetes 1.21 the slices are
//! what consumers read (kube-proxy, ingress controllers, `kubectl describe service`); the older
//! Endpoints object is still written beside them by the endpoints controller, from the same pods.
//! The two differ on purpose: a terminating pod leaves the Endpoints at once but stays in its slice
//! with `ready: false, serving: <its readiness>, terminating: true`, so a consumer can still use it
//! when nothing else is left (docs/kubernetes-rules.md#e4).
//!
//! `sync_service(key)` reads the stores only: the Service, every pod, and the slices labelled
//! `kubernetes.io/service-name=<service>` and managed by this controller. [`desired`] says what the
//! slices should hold (pure), [`reconciler`] which creates, updates and deletes get there with the
//! least churn (pure), and the controller writes them: creates, then updates, then deletes, as
//! upstream. A slice created with `generateName` reaches the store only when the watch brings it,
//! so a sync right after a write could see the old state and create the slice twice: like
//! upstream's `EndpointSliceTracker`, the controller remembers the `resourceVersion` of each write
//! and retries later while its store is behind ([`tracker`]).
//!
//! Each pod entering or leaving the ready endpoints gets an Event on the Service (minik's own
//! reasons `EndpointReady` and `EndpointNotReady`, component `endpointslice-controller`; upstream
//! records none): the demo's timeline shows when the slices changed.
//!
//! minik simplifies: the trigger-time annotation is the time of the sync; a deleted Service's slices
//! are deleted here at once rather than left to the garbage collector (the owner reference is
//! still set, so either way they go); no topology hints.

pub mod desired;
pub mod reconciler;
pub mod tracker;

use std::collections::BTreeSet;

use minik_api::core::{Pod, Service};
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::ObjectKey;
use minik_client::Store;
use tracing::{debug, info, warn};

use crate::writes::SliceWrites;
use crate::SyncError;
use desired::{desired_endpoints, MANAGED_BY, MANAGED_BY_LABEL, SERVICE_NAME_LABEL};
use reconciler::{reconcile, Plan};
use tracker::Tracker;

/// The component name on this controller's Events (upstream's controller name).
pub const COMPONENT: &str = "endpointslice-controller";
/// minik's own Event reason: a pod's endpoint became ready in the Service's slices.
pub const REASON_READY: &str = "EndpointReady";
/// minik's own Event reason: a pod's endpoint stopped being ready (terminating, unready, or gone).
pub const REASON_NOT_READY: &str = "EndpointNotReady";

/// The controller: stores to read, a writer, and the per-slice limit.
pub struct EndpointSliceController<W> {
    /// Every Service.
    pub services: Store<Service>,
    /// Every pod.
    pub pods: Store<Pod>,
    /// Every EndpointSlice (the ones of other managers are ignored).
    pub slices: Store<EndpointSlice>,
    writes: W,
    max_per_slice: usize,
    tracker: Tracker,
}

impl<W: SliceWrites> EndpointSliceController<W> {
    /// A controller over the given stores, writing at most `max_per_slice` endpoints a slice.
    pub fn new(
        services: Store<Service>,
        pods: Store<Pod>,
        slices: Store<EndpointSlice>,
        writes: W,
        max_per_slice: usize,
    ) -> Self {
        EndpointSliceController {
            services,
            pods,
            slices,
            writes,
            max_per_slice,
            tracker: Tracker::default(),
        }
    }

    /// The writer (tests inspect what it recorded).
    pub fn writes(&self) -> &W {
        &self.writes
    }

    /// Reconciles the slices of the Service `key` (`namespace/name`).
    pub async fn sync_service(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let existing = owned_slices(&self.slices, key);
        if self.tracker.is_stale(key, &existing) {
            return Err(SyncError::StaleSlices(key.to_string()));
        }
        let existing: Vec<EndpointSlice> = existing.iter().map(|s| (**s).clone()).collect();
        let Some(service) = self.services.get(key) else {
            let plan = Plan {
                delete: existing,
                ..Plan::default()
            };
            return self.apply(key, &plan).await;
        };
        let pods = self.pods.state();
        let Some(desired) = desired_endpoints(&service, pods.iter().map(|p| &**p)) else {
            debug!(service = %key, "service has no selector; not managing its endpointslices");
            return Ok(());
        };
        let before = ready_pods(existing.iter().flat_map(|s| &s.endpoints));
        let after = ready_pods(desired.values().flatten());
        let plan = reconcile(
            &service,
            desired,
            existing,
            self.max_per_slice,
            jiff::Timestamp::now(),
        );
        if plan.is_empty() {
            debug!(service = %key, "endpointslices unchanged");
            return Ok(());
        }
        self.apply(key, &plan).await?;
        let ready = after.len();
        info!(
            service = %key, ready, created = plan.create.len(), updated = plan.update.len(),
            deleted = plan.delete.len(), "synced endpointslices"
        );
        self.record_changes(&service, &before, &after).await;
        Ok(())
    }

    /// Writes a plan: creates, then updates, then deletes (upstream's order), tracking each.
    async fn apply(&self, key: &ObjectKey, plan: &Plan) -> Result<(), SyncError> {
        for slice in &plan.create {
            let created = self.writes.create_slice(slice).await?;
            self.tracker.written(key, &created);
        }
        for slice in &plan.update {
            let updated = self.writes.replace_slice(slice).await?;
            self.tracker.written(key, &updated);
        }
        for slice in &plan.delete {
            let namespace = slice.metadata.namespace.as_deref().unwrap_or("default");
            let name = slice.metadata.name.as_deref().unwrap_or_default();
            match self.writes.delete_slice(namespace, name).await {
                Ok(()) => {}
                Err(error) if error.is_not_found() => {}
                Err(error) => return Err(error.into()),
            }
            self.tracker.deleted(key, name);
        }
        Ok(())
    }

    async fn record_changes(
        &self,
        service: &Service,
        before: &BTreeSet<(String, String)>,
        after: &BTreeSet<(String, String)>,
    ) {
        let not_ready = before.difference(after).map(|(pod, ip)| {
            let message = format!("Pod {pod} ({ip}) no longer ready in the EndpointSlices");
            (REASON_NOT_READY, message)
        });
        let ready = after.difference(before).map(|(pod, ip)| {
            let message = format!("Pod {pod} ({ip}) ready in the EndpointSlices");
            (REASON_READY, message)
        });
        for (reason, message) in not_ready.chain(ready).collect::<Vec<_>>() {
            if let Err(error) = self.writes.slice_event(service, reason, &message).await {
                warn!(%error, reason, "could not record event");
            }
        }
    }
}

/// The slices this controller manages for the Service `key`.
pub fn owned_slices(
    slices: &Store<EndpointSlice>,
    key: &ObjectKey,
) -> Vec<std::sync::Arc<EndpointSlice>> {
    slices
        .state()
        .into_iter()
        .filter(|s| {
            s.metadata.namespace == key.namespace && managed_for(s).as_deref() == Some(&key.name)
        })
        .collect()
}

/// The Service a slice belongs to, when this controller manages it.
pub fn managed_for(slice: &EndpointSlice) -> Option<String> {
    let labels = slice.metadata.labels.as_ref()?;
    if labels.get(MANAGED_BY_LABEL).map(String::as_str) != Some(MANAGED_BY) {
        return None;
    }
    labels.get(SERVICE_NAME_LABEL).cloned()
}

/// The pods (name, IP) whose endpoint is ready among `endpoints`.
fn ready_pods<'a>(
    endpoints: impl IntoIterator<Item = &'a minik_api::k8s_openapi::api::discovery::v1::Endpoint>,
) -> BTreeSet<(String, String)> {
    endpoints
        .into_iter()
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) != Some(false))
        .map(|e| {
            let pod = e.target_ref.as_ref().and_then(|r| r.name.clone());
            (pod.unwrap_or_default(), e.addresses.join(","))
        })
        .collect()
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
