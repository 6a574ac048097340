//! The reconciler: from the slices that exist and the endpoints that should, the fewest writes.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/endpointslice/reconciler.go` (`reconcile`,
//! `reconcileByPortMapping`, `finalize`, `getSliceToFill`). A pure function: no I/O, no clock
//! (the trigger time is passed in), unit tested in `reconciler_tests.rs`. Per group of endpoints
//! sharing the same ports, as upstream (docs/workloads.md#es5, #es6, #es8):
//!
//! 1. walk the existing slices of that port set: keep each endpoint still wanted (replaced by its
//!    new version when its conditions changed), drop the others. A slice that changed is updated,
//!    one left empty is deleted, one unchanged is left alone (its labels are checked too);
//! 2. put the endpoints still to place into the slices being updated anyway, fullest first, up to
//!    the maximum per slice;
//! 3. if fewer than a slice's worth remain, try to put them all in the unchanged slice closest to
//!    full that has room for them (one update instead of a create); otherwise create new slices,
//!    each filled to the maximum;
//! 4. (`finalize`) a slice that would be created while another is deleted reuses the deleted
//!    one's name: one update instead of a create and a delete.
//!
//! A Service with no endpoint at all keeps one empty placeholder slice, as upstream does, so
//! consumers can tell "no endpoints" from "not synced yet". Slices of another address type, or
//! owned by an older Service of the same name, are deleted.
//!
//! So a pod that becomes ready or starts terminating rewrites one slice, not all of them, and
//! slices stay as full as they can.

use std::collections::{BTreeMap, VecDeque};

use minik_api::core::Service;
use minik_api::k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
use minik_api::meta::ObjectMeta;

use super::desired::{
    by_address, owner_reference, ports_key, slice_labels, slice_ports, PortsKey, ADDRESS_TYPE,
};
use crate::controller::LAST_CHANGE_TRIGGER_TIME;

/// Upstream's default `--max-endpoints-per-slice`.
pub const DEFAULT_MAX_ENDPOINTS_PER_SLICE: usize = 100;

/// The writes that bring a Service's slices in line. Created slices have no name, only
/// `generateName: <service>-`; updated ones keep the `resourceVersion` they were read with.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Plan {
    /// Slices to create.
    pub create: Vec<EndpointSlice>,
    /// Slices to replace.
    pub update: Vec<EndpointSlice>,
    /// Slices to delete.
    pub delete: Vec<EndpointSlice>,
}

impl Plan {
    /// Whether nothing needs writing.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update.is_empty() && self.delete.is_empty()
    }
}

/// How an endpoint is recognised across versions (upstream `endpointHash`): its addresses, its
/// hostname and the pod it stands for. Conditions and node are what may change.
type EndpointKey = (Vec<String>, Option<String>, Option<String>);

fn endpoint_key(endpoint: &Endpoint) -> EndpointKey {
    let pod = endpoint.target_ref.as_ref().and_then(|r| r.name.clone());
    (endpoint.addresses.clone(), endpoint.hostname.clone(), pod)
}

/// Computes the writes for `service`, given the endpoints it should have (from
/// [`super::desired::desired_endpoints`]) and the slices this controller already wrote for it.
pub fn reconcile(
    service: &Service,
    desired: BTreeMap<PortsKey, Vec<Endpoint>>,
    existing: Vec<EndpointSlice>,
    max_per_slice: usize,
    trigger_time: jiff::Timestamp,
) -> Plan {
    let max = max_per_slice.max(1);
    let labels = slice_labels(service);
    let mut plan = Plan::default();
    let mut by_ports: BTreeMap<PortsKey, Vec<EndpointSlice>> = BTreeMap::new();
    for slice in existing {
        if slice.address_type != ADDRESS_TYPE || !owned_by(&slice, service) {
            plan.delete.push(slice);
        } else {
            by_ports
                .entry(ports_key(slice.ports.as_deref()))
                .or_default()
                .push(slice);
        }
    }
    let total: usize = desired.values().map(Vec::len).sum();
    let mut keys: Vec<PortsKey> = desired.keys().cloned().collect();
    keys.extend(
        by_ports
            .keys()
            .filter(|k| !desired.contains_key(*k))
            .cloned(),
    );
    let mut desired = desired;
    for key in keys {
        let wanted = desired.remove(&key).unwrap_or_default();
        let slices = by_ports.remove(&key).unwrap_or_default();
        let group = Group {
            service,
            labels: &labels,
            ports: &key,
            max,
        };
        group.reconcile(wanted, slices, &mut plan);
    }
    if total == 0 {
        keep_placeholder(service, &labels, &mut plan);
    }
    finalize(&mut plan);
    let stamp = trigger_time.to_string();
    for slice in plan.create.iter_mut().chain(plan.update.iter_mut()) {
        let annotations = slice.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(LAST_CHANGE_TRIGGER_TIME.into(), stamp.clone());
    }
    plan
}

/// The endpoints of one port set and what they need.
struct Group<'a> {
    service: &'a Service,
    labels: &'a BTreeMap<String, String>,
    ports: &'a PortsKey,
    max: usize,
}

impl Group<'_> {
    /// Upstream `reconcileByPortMapping`: steps 1 to 3 of the module doc.
    fn reconcile(&self, wanted: Vec<Endpoint>, slices: Vec<EndpointSlice>, plan: &mut Plan) {
        // Still to place, keyed by identity.
        let mut remaining: BTreeMap<EndpointKey, Endpoint> =
            wanted.into_iter().map(|e| (endpoint_key(&e), e)).collect();
        let mut to_update = Vec::new();
        let mut unchanged = Vec::new();
        for mut slice in slices {
            let before = std::mem::take(&mut slice.endpoints);
            let mut changed = false;
            for endpoint in before {
                match remaining.remove(&endpoint_key(&endpoint)) {
                    Some(new) => {
                        changed |= new != endpoint;
                        slice.endpoints.push(new);
                    }
                    None => changed = true,
                }
            }
            let relabel = slice.metadata.labels.as_ref() != Some(self.labels);
            if slice.endpoints.is_empty() {
                plan.delete.push(slice);
            } else if changed || relabel {
                slice.metadata.labels = Some(self.labels.clone());
                to_update.push(slice);
            } else {
                unchanged.push(slice);
            }
        }
        let mut rest: Vec<Endpoint> = remaining.into_values().collect();
        rest.sort_by(by_address);
        let mut rest = VecDeque::from(rest);

        // 2. Fill the slices being written anyway, fullest first.
        to_update.sort_by_key(|s| std::cmp::Reverse(s.endpoints.len()));
        for slice in &mut to_update {
            self.fill(slice, &mut rest);
        }
        // 3. One unchanged slice with room for all the rest, else new full slices.
        while !rest.is_empty() {
            let fill = (rest.len() < self.max)
                .then(|| slice_to_fill(&unchanged, rest.len(), self.max))
                .flatten();
            let mut slice = match fill {
                Some(index) => {
                    let mut slice = unchanged.swap_remove(index);
                    slice.metadata.labels = Some(self.labels.clone());
                    slice
                }
                None => self.new_slice(),
            };
            self.fill(&mut slice, &mut rest);
            if slice.metadata.name.is_some() {
                to_update.push(slice);
            } else {
                plan.create.push(slice);
            }
        }
        plan.update.extend(to_update);
    }

    /// Moves endpoints from `rest` into `slice` until it is full.
    fn fill(&self, slice: &mut EndpointSlice, rest: &mut VecDeque<Endpoint>) {
        while slice.endpoints.len() < self.max {
            match rest.pop_front() {
                Some(endpoint) => slice.endpoints.push(endpoint),
                None => break,
            }
        }
    }

    /// Upstream `newEndpointSlice`: named by the apiserver after the Service, labelled, owned.
    fn new_slice(&self) -> EndpointSlice {
        new_slice(self.service, self.labels, slice_ports(self.ports))
    }
}

/// A new, empty slice of `service` with `ports`.
fn new_slice(
    service: &Service,
    labels: &BTreeMap<String, String>,
    ports: Vec<minik_api::k8s_openapi::api::discovery::v1::EndpointPort>,
) -> EndpointSlice {
    let name = service.metadata.name.clone().unwrap_or_default();
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            namespace: service.metadata.namespace.clone(),
            labels: Some(labels.clone()),
            owner_references: Some(vec![owner_reference(service)]),
            ..ObjectMeta::default()
        },
        address_type: ADDRESS_TYPE.into(),
        endpoints: Vec::new(),
        ports: Some(ports),
    }
}

/// Upstream `getSliceToFill`: the unchanged slice closest to full that still has room for `count`.
fn slice_to_fill(slices: &[EndpointSlice], count: usize, max: usize) -> Option<usize> {
    slices
        .iter()
        .enumerate()
        .filter(|(_, s)| s.endpoints.len() + count <= max)
        .max_by_key(|(_, s)| s.endpoints.len())
        .map(|(index, _)| index)
}

/// With no endpoint at all, one empty slice stays: an existing placeholder is kept (or relabelled),
/// else one is created.
fn keep_placeholder(service: &Service, labels: &BTreeMap<String, String>, plan: &mut Plan) {
    let is_placeholder = |s: &EndpointSlice| {
        s.endpoints.is_empty()
            && s.ports.as_deref().unwrap_or_default().is_empty()
            && s.address_type == ADDRESS_TYPE
            && owned_by(s, service)
    };
    if let Some(index) = plan.delete.iter().position(is_placeholder) {
        let mut slice = plan.delete.swap_remove(index);
        if slice.metadata.labels.as_ref() != Some(labels) {
            slice.metadata.labels = Some(labels.clone());
            plan.update.push(slice);
        }
        return;
    }
    plan.create.push(new_slice(service, labels, Vec::new()));
}

/// Upstream `finalize`: a create paired with a delete becomes an update of the deleted slice.
fn finalize(plan: &mut Plan) {
    while !plan.create.is_empty() {
        let Some(index) = plan
            .delete
            .iter()
            .position(|s| s.address_type == ADDRESS_TYPE && s.metadata.name.is_some())
        else {
            break;
        };
        let old = plan.delete.swap_remove(index);
        let mut slice = plan.create.pop().unwrap_or_default();
        slice.metadata.name = old.metadata.name;
        slice.metadata.generate_name = None;
        slice.metadata.resource_version = old.metadata.resource_version;
        plan.update.push(slice);
    }
}

/// Upstream `ownedBy`: the slice's controller owner is this Service (same uid).
fn owned_by(slice: &EndpointSlice, service: &Service) -> bool {
    slice
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "Service" && Some(&o.uid) == service.metadata.uid.as_ref())
}

#[cfg(test)]
#[path = "reconciler_tests.rs"]
mod tests;
