//! The 1000-address cap of an Endpoints object, and how it is truncated.
//!
//! Kubernetes counterpart: `truncateEndpoints` and `maxCapacity` in
//! `pkg/controller/endpoint/endpoints_controller.go`. A Service with more than 1000 addresses gets
//! an Endpoints object holding 1000 of them and the annotation
//! `endpoints.kubernetes.io/over-capacity: truncated` (EndpointSlices have no such limit, one reason
//! they replaced Endpoints). Ready addresses are kept first: if they alone exceed the cap, every
//! not-ready address goes and the ready ones are cut; otherwise only not-ready addresses are cut.
//! The cut is spread over the subsets in proportion to their size, rounded up, so the last subsets
//! may get a little less than their share.

use minik_api::core::{EndpointAddress, EndpointSubset};

use crate::endpoints::counts;

/// The most addresses one Endpoints object holds (upstream `maxCapacity`).
pub const MAX_CAPACITY: usize = 1000;
/// Upstream's annotation on a truncated Endpoints object.
pub const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";

/// Truncates `subsets` to `max` addresses as upstream does; returns whether anything was cut.
pub fn truncate(subsets: &mut Vec<EndpointSubset>, max: usize) -> bool {
    let (ready, not_ready) = counts(subsets);
    if ready + not_ready <= max {
        return false;
    }
    // Which list is cut, how many of it may stay, and how many there are.
    let truncate_ready = ready > max;
    let (allowed, total) = if truncate_ready {
        (max, ready)
    } else {
        (max - ready, not_ready)
    };
    let mut can_be_added = allowed;
    for subset in subsets.iter_mut() {
        let list = if truncate_ready {
            &mut subset.addresses
        } else {
            &mut subset.not_ready_addresses
        };
        let in_subset = list.as_ref().map_or(0, Vec::len);
        let share = (in_subset * allowed).div_ceil(total).min(can_be_added);
        keep_first(list, share);
        can_be_added -= list.as_ref().map_or(0, Vec::len);
        if truncate_ready {
            subset.not_ready_addresses = None;
        }
    }
    subsets.retain(|s| s.addresses.is_some() || s.not_ready_addresses.is_some());
    true
}

fn keep_first(list: &mut Option<Vec<EndpointAddress>>, count: usize) {
    if let Some(addresses) = list {
        addresses.truncate(count);
        if addresses.is_empty() {
            *list = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addresses(prefix: &str, count: usize) -> Option<Vec<EndpointAddress>> {
        let list: Vec<_> = (0..count)
            .map(|i| EndpointAddress {
                ip: format!("{prefix}{i}"),
                ..Default::default()
            })
            .collect();
        (!list.is_empty()).then_some(list)
    }

    fn subset(ready: usize, not_ready: usize) -> EndpointSubset {
        EndpointSubset {
            addresses: addresses("r", ready),
            not_ready_addresses: addresses("n", not_ready),
            ports: None,
        }
    }

    #[test]
    fn under_the_cap_nothing_changes() {
        let mut subsets = vec![subset(600, 400)];
        assert!(!truncate(&mut subsets, MAX_CAPACITY));
        assert_eq!(counts(&subsets), (600, 400));
    }

    #[test]
    fn not_ready_addresses_are_cut_first() {
        let mut subsets = vec![subset(900, 200)];
        assert!(truncate(&mut subsets, MAX_CAPACITY));
        assert_eq!(counts(&subsets), (900, 100));
    }

    #[test]
    fn too_many_ready_addresses_are_cut_in_proportion_and_not_ready_ones_dropped() {
        let mut subsets = vec![subset(1500, 10), subset(500, 0)];
        assert!(truncate(&mut subsets, MAX_CAPACITY));
        assert_eq!(counts(&subsets), (1000, 0));
        assert_eq!(counts(&subsets[..1]), (750, 0));
    }
}
