//! `sync_endpoints`: one EndpointSlice for each Endpoints object that no controller computes.
//!
//! Kubernetes counterpart: the EndpointSlice mirroring controller,
//! `pkg/controller/endpointslicemirroring/endpointslicemirroring_controller.go`. Consumers read
//! EndpointSlices (kube-proxy, `kubectl describe service`). For a Service with a selector the
//! EndpointSlice controller (`endpointslice/`) computes them from pods; a Service **without** a
//! selector has Endpoints written by someone else (an operator, a user pointing a Service at an
//! outside address), and this controller mirrors those into a slice so consumers see them too.
//! A mirrored slice whose Service is gone, or has gained a selector, is deleted.
//!
//! minik simplifies: one IPv4 slice per Endpoints object, named like it (upstream: `<name>-<random>`,
//! up to 1000 endpoints a slice): every ready address as `ready: true`, every not-ready one as
//! `ready: false`, with the first subset's ports; no `skip-mirror` label.
//!
//! The loop is the endpoints controller's (`workers.rs`): informers on Endpoints, Services and
//! EndpointSlices queue Endpoints keys, a worker calls [`MirroringController::sync_endpoints`],
//! which reads the stores and writes only when the slice differs from what [`mirror`] wants.

use std::collections::BTreeSet;

use minik_api::core::{EndpointAddress, Endpoints, Service};
use minik_api::k8s_openapi::api::discovery::v1::{
    Endpoint, EndpointConditions, EndpointPort, EndpointSlice,
};
use minik_api::meta::ObjectMeta;
use minik_api::ObjectKey;
use minik_client::{Event, Store};
use tracing::{debug, info};

use crate::writes::SliceWrites;

pub use crate::endpointslice::desired::{MANAGED_BY_LABEL, SERVICE_NAME_LABEL};

/// Upstream mirroring controller's value for [`MANAGED_BY_LABEL`].
pub const MANAGED_BY: &str = "endpointslicemirroring-controller.k8s.io";

/// The controller: the Endpoints to mirror, their Services, the slices already written, a writer.
pub struct MirroringController<W> {
    /// Every Endpoints object.
    pub endpoints: Store<Endpoints>,
    /// Every Service (only the Endpoints of a Service without selector are mirrored).
    pub services: Store<Service>,
    /// Every EndpointSlice (only the mirrored ones are this controller's).
    pub slices: Store<EndpointSlice>,
    writes: W,
}

impl<W: SliceWrites> MirroringController<W> {
    /// A controller over the given stores.
    pub fn new(
        endpoints: Store<Endpoints>,
        services: Store<Service>,
        slices: Store<EndpointSlice>,
        writes: W,
    ) -> Self {
        MirroringController {
            endpoints,
            services,
            slices,
            writes,
        }
    }

    /// Brings the mirrored slice of the Endpoints `key` in line with it: created, replaced, or
    /// deleted once the Endpoints are gone or no longer need mirroring.
    pub async fn sync_endpoints(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let current = self.slices.get(key).filter(|s| is_mirrored(s));
        let endpoints = self
            .endpoints
            .get(key)
            .filter(|_| self.services.get(key).is_some_and(|s| without_selector(&s)));
        let Some(endpoints) = endpoints else {
            if current.is_none() {
                return Ok(());
            }
            let namespace = key.namespace.as_deref().unwrap_or("default");
            return match self.writes.delete_slice(namespace, &key.name).await {
                Ok(()) => {
                    info!(endpoints = %key, "deleted endpointslice");
                    Ok(())
                }
                Err(error) if error.is_not_found() => Ok(()),
                Err(error) => Err(error),
            };
        };
        let mut wanted = mirror(&endpoints);
        if current.as_deref().is_some_and(|c| same(c, &wanted)) {
            debug!(endpoints = %key, "endpointslice unchanged");
            return Ok(());
        }
        match current {
            None => self.writes.create_slice(&wanted).await?,
            Some(current) => {
                // The store's resourceVersion: a stale store gets 409 and the key is retried.
                wanted.metadata.resource_version = current.metadata.resource_version.clone();
                self.writes.replace_slice(&wanted).await?
            }
        };
        info!(endpoints = %key, endpoints_count = wanted.endpoints.len(), "mirrored endpointslice");
        Ok(())
    }
}

/// Whether this controller wrote the slice.
pub fn is_mirrored(slice: &EndpointSlice) -> bool {
    let labels = slice.metadata.labels.as_ref();
    labels
        .and_then(|l| l.get(MANAGED_BY_LABEL))
        .map(String::as_str)
        == Some(MANAGED_BY)
}

/// Upstream's rule: only the Endpoints of a Service with no selector are mirrored.
fn without_selector(service: &Service) -> bool {
    service.spec.as_ref().is_none_or(|s| s.selector.is_none())
}

/// The slice that says what `endpoints` says (see the module doc).
pub fn mirror(endpoints: &Endpoints) -> EndpointSlice {
    let name = endpoints.metadata.name.clone().unwrap_or_default();
    let mut labels = endpoints.metadata.labels.clone().unwrap_or_default();
    labels.insert(SERVICE_NAME_LABEL.into(), name.clone());
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    let subsets = endpoints.subsets.as_deref().unwrap_or_default();
    let mut slice_endpoints = Vec::new();
    for subset in subsets {
        let ready = subset.addresses.iter().flatten().map(|a| endpoint(a, true));
        let not_ready = subset.not_ready_addresses.iter().flatten();
        slice_endpoints.extend(ready.chain(not_ready.map(|a| endpoint(a, false))));
    }
    let ports = subsets.first().and_then(|s| s.ports.as_ref()).map(|ports| {
        ports
            .iter()
            .map(|port| EndpointPort {
                // Always set, "" for an unnamed port, as upstream writes it (kubectl dereferences it).
                name: Some(port.name.clone().unwrap_or_default()),
                port: Some(port.port),
                protocol: Some(port.protocol.clone().unwrap_or_else(|| "TCP".into())),
                app_protocol: port.app_protocol.clone(),
            })
            .collect()
    });
    EndpointSlice {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: endpoints.metadata.namespace.clone(),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        address_type: "IPv4".into(),
        endpoints: slice_endpoints,
        ports,
    }
}

/// One address as a slice endpoint; `serving` follows `ready`, as for a pod that is not terminating.
fn endpoint(address: &EndpointAddress, ready: bool) -> Endpoint {
    Endpoint {
        addresses: vec![address.ip.clone()],
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(ready),
            terminating: Some(false),
        }),
        hostname: address.hostname.clone(),
        node_name: address.node_name.clone(),
        target_ref: address.target_ref.clone(),
        ..Endpoint::default()
    }
}

/// Whether the stored slice already says what `wanted` says (labels, endpoints, ports).
fn same(current: &EndpointSlice, wanted: &EndpointSlice) -> bool {
    let labels = |s: &EndpointSlice| s.metadata.labels.clone().unwrap_or_default();
    let ports = |s: &EndpointSlice| s.ports.clone().filter(|p| !p.is_empty());
    labels(current) == labels(wanted)
        && current.endpoints == wanted.endpoints
        && ports(current) == ports(wanted)
        && current.address_type == wanted.address_type
}

/// Maps Endpoints events to keys: every change is mirrored, and after a list every object is.
pub fn endpoints_events_keys(event: &Event<Endpoints>) -> BTreeSet<ObjectKey> {
    match event {
        Event::Applied(e) | Event::Deleted(e) => BTreeSet::from([ObjectKey::of(&e.metadata)]),
        Event::Restarted(list) => list.iter().map(|e| ObjectKey::of(&e.metadata)).collect(),
    }
}

/// Maps mirrored slices' events to keys: a slice someone changed or deleted is put back, and after
/// a list every mirrored slice is checked, so one whose Endpoints are gone is deleted.
pub fn slice_events_keys(event: &Event<EndpointSlice>) -> BTreeSet<ObjectKey> {
    let mirrored = |s: &&EndpointSlice| is_mirrored(s);
    match event {
        Event::Applied(s) | Event::Deleted(s) => Some(s)
            .filter(mirrored)
            .map(|s| ObjectKey::of(&s.metadata))
            .into_iter()
            .collect(),
        Event::Restarted(list) => list
            .iter()
            .filter(mirrored)
            .map(|s| ObjectKey::of(&s.metadata))
            .collect(),
    }
}

#[cfg(test)]
#[path = "mirroring_tests.rs"]
mod tests;
