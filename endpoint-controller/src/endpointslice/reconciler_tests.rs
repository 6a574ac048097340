//! Unit tests of the pure reconciler, after upstream's `reconciler_test.go` (`TestReconcile1Pod`,
//! `TestReconcileManyPods`, `TestReconcileEndpointSlicesSomePreexisting`,
//! `TestReconcileEndpointSlicesUpdatePacking`, …): pods in, a plan out, no I/O.

use minik_api::core::Pod;

use super::*;
use crate::endpointslice::desired::{
    desired_endpoints, MANAGED_BY, MANAGED_BY_LABEL, SERVICE_NAME_LABEL,
};
use crate::testing::{pod, service};

fn now() -> jiff::Timestamp {
    "2026-11-25T10:00:00Z".parse().unwrap()
}

/// `count` ready pods of app `web`, IPs 127.244.<i/200+1>.<i%200+2>.
fn pods(count: usize) -> Vec<Pod> {
    (0..count)
        .map(|i| {
            let ip = format!("127.244.{}.{}", i / 200 + 1, i % 200 + 2);
            pod(&format!("web-{i}"), "web", &ip).build()
        })
        .collect()
}

/// The plan for `pods` given `existing` slices, 100 a slice.
fn plan(pods: &[Pod], existing: Vec<EndpointSlice>) -> Plan {
    let svc = service("web").build();
    let desired = desired_endpoints(&svc, pods).unwrap();
    reconcile(
        &svc,
        desired,
        existing,
        DEFAULT_MAX_ENDPOINTS_PER_SLICE,
        now(),
    )
}

/// What the apiserver would store for the plan's creates: named `web-<n>`, versioned.
fn stored(plan: Plan) -> Vec<EndpointSlice> {
    let mut all = plan.update;
    for (i, mut slice) in plan.create.into_iter().enumerate() {
        slice.metadata.name = Some(format!("web-{i}"));
        slice.metadata.resource_version = Some("1".into());
        all.push(slice);
    }
    all
}

fn sizes(slices: &[EndpointSlice]) -> Vec<usize> {
    slices.iter().map(|s| s.endpoints.len()).collect()
}

fn conditions(slices: &[EndpointSlice], ip: &str) -> (Option<bool>, Option<bool>, Option<bool>) {
    let endpoint = slices
        .iter()
        .flat_map(|s| &s.endpoints)
        .find(|e| e.addresses == [ip])
        .expect("endpoint present");
    let c = endpoint.conditions.clone().unwrap();
    (c.ready, c.serving, c.terminating)
}

#[test]
fn one_pod_gives_one_labelled_owned_annotated_slice() {
    let plan = plan(&pods(1), vec![]);
    assert_eq!(
        (plan.create.len(), plan.update.len(), plan.delete.len()),
        (1, 0, 0)
    );
    let slice = &plan.create[0];
    assert_eq!(slice.metadata.generate_name.as_deref(), Some("web-"));
    assert_eq!(slice.address_type, "IPv4");
    let labels = slice.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[SERVICE_NAME_LABEL], "web");
    assert_eq!(labels[MANAGED_BY_LABEL], MANAGED_BY);
    assert_eq!(
        labels["tier"], "frontend",
        "the Service's own labels are copied"
    );
    let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.uid.as_str(),
            owner.controller
        ),
        ("Service", "web", "svc-uid-web", Some(true))
    );
    let annotations = slice.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        annotations[LAST_CHANGE_TRIGGER_TIME],
        "2026-11-25T10:00:00Z"
    );
    let port = &slice.ports.as_ref().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.port),
        (Some("http"), Some(8080))
    );
    let endpoint = &slice.endpoints[0];
    assert_eq!(endpoint.node_name.as_deref(), Some("node-1"));
    assert_eq!(
        endpoint.target_ref.as_ref().and_then(|r| r.name.as_deref()),
        Some("web-0")
    );
    assert_eq!(
        conditions(&plan.create, "127.244.1.2"),
        (Some(true), Some(true), Some(false))
    );
}

#[test]
fn more_than_100_endpoints_split_into_full_slices() {
    let plan = plan(&pods(250), vec![]);
    assert_eq!(sizes(&plan.create), [100, 100, 50]);
    let mut all: Vec<&str> = plan
        .create
        .iter()
        .flat_map(|s| &s.endpoints)
        .map(|e| e.addresses[0].as_str())
        .collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 250, "every pod exactly once");

    let svc = service("web").build();
    let desired = desired_endpoints(&svc, &pods(25)).unwrap();
    let small = reconcile(&svc, desired, vec![], 10, now());
    assert_eq!(
        sizes(&small.create),
        [10, 10, 5],
        "--max-endpoints-per-slice 10"
    );
}

#[test]
fn an_unchanged_service_needs_no_write() {
    let all = pods(150);
    let slices = stored(plan(&all, vec![]));
    assert!(plan(&all, slices).is_empty());
}

#[test]
fn a_terminating_pod_stays_serving_but_not_ready_and_only_its_slice_is_rewritten() {
    let mut all = pods(150);
    let slices = stored(plan(&all, vec![]));
    let victim_ip = all[120].status.as_ref().unwrap().pod_ip.clone().unwrap();
    all[120].metadata.deletion_timestamp = Some(minik_api::now());
    let changed = plan(&all, slices.clone());
    assert_eq!(
        (
            changed.create.len(),
            changed.update.len(),
            changed.delete.len()
        ),
        (0, 1, 0)
    );
    let (ready, serving, terminating) = conditions(&changed.update, &victim_ip);
    assert_eq!(
        (ready, serving, terminating),
        (Some(false), Some(true), Some(true))
    );
    let updated = &changed.update[0];
    let before = slices
        .iter()
        .find(|s| s.metadata.name == updated.metadata.name)
        .unwrap();
    assert_eq!(
        updated
            .endpoints
            .iter()
            .map(|e| &e.addresses)
            .collect::<Vec<_>>(),
        before
            .endpoints
            .iter()
            .map(|e| &e.addresses)
            .collect::<Vec<_>>(),
        "updated in place, same order"
    );
    assert_eq!(updated.metadata.resource_version.as_deref(), Some("1"));

    // A terminating pod that is no longer ready is neither ready nor serving.
    let unready = pod("web-x", "web", "127.244.9.9")
        .deleting()
        .not_ready()
        .build();
    let plan_unready = plan(&[unready], vec![]);
    assert_eq!(
        conditions(&plan_unready.create, "127.244.9.9"),
        (Some(false), Some(false), Some(true))
    );
}

#[test]
fn publish_not_ready_addresses_forces_ready_and_serving() {
    let svc = service("web").publish_not_ready().build();
    let terminating = pod("web-1", "web", "127.244.1.2")
        .deleting()
        .not_ready()
        .build();
    let desired = desired_endpoints(&svc, &[terminating]).unwrap();
    let plan = reconcile(&svc, desired, vec![], 100, now());
    assert_eq!(
        conditions(&plan.create, "127.244.1.2"),
        (Some(true), Some(true), Some(true))
    );
}

#[test]
fn new_pods_fill_the_slice_closest_to_full_that_has_room() {
    let slices = stored(plan(&pods(150), vec![]));
    assert_eq!(sizes(&slices), [100, 50]);
    let grown = plan(&pods(160), slices);
    assert_eq!((grown.create.len(), grown.update.len()), (0, 1));
    assert_eq!(
        sizes(&grown.update),
        [60],
        "the half-full slice takes the ten new pods"
    );
}

#[test]
fn removed_pods_leave_their_slice_and_an_emptied_slice_is_deleted() {
    let slices = stored(plan(&pods(150), vec![]));
    let fewer = plan(&pods(100), slices.clone());
    assert_eq!(
        (fewer.create.len(), fewer.update.len(), fewer.delete.len()),
        (0, 0, 1)
    );
    assert_eq!(fewer.delete[0].metadata.name, slices[1].metadata.name);
}

#[test]
fn pods_with_different_ports_go_to_different_slices() {
    let svc = service("web")
        .ports(&[("http", 80, IntOrString::String("http".into()))])
        .build();
    let a = pod("a", "web", "127.244.1.2")
        .container_ports(&[("http", 8080)])
        .build();
    let b = pod("b", "web", "127.244.1.3")
        .container_ports(&[("http", 9090)])
        .build();
    let c = pod("c", "web", "127.244.1.4")
        .container_ports(&[("http", 8080)])
        .build();
    let none = pod("d", "web", "127.244.1.5")
        .container_ports(&[("admin", 1)])
        .build();
    let desired = desired_endpoints(&svc, &[a, b, c, none]).unwrap();
    let plan = reconcile(&svc, desired, vec![], 100, now());
    let mut by_port: Vec<(i32, usize)> = plan
        .create
        .iter()
        .map(|s| {
            (
                s.ports.as_ref().unwrap()[0].port.unwrap(),
                s.endpoints.len(),
            )
        })
        .collect();
    by_port.sort();
    assert_eq!(
        by_port,
        [(8080, 2), (9090, 1)],
        "a pod lacking the named port is left out"
    );
}

#[test]
fn a_service_without_pods_keeps_one_placeholder_slice() {
    let empty = plan(&[], vec![]);
    assert_eq!(sizes(&empty.create), [0]);
    assert!(empty.create[0].ports.as_ref().unwrap().is_empty());
    let placeholder = stored(empty);
    assert!(plan(&[], placeholder.clone()).is_empty(), "kept as it is");
    let filled = plan(&pods(3), placeholder.clone());
    assert_eq!(
        (
            filled.create.len(),
            filled.update.len(),
            filled.delete.len()
        ),
        (0, 1, 0)
    );
    assert_eq!(
        filled.update[0].metadata.name, placeholder[0].metadata.name,
        "the placeholder is reused for the first endpoints"
    );
    assert_eq!(sizes(&filled.update), [3]);
}

#[test]
fn slices_of_an_older_service_of_the_same_name_are_replaced() {
    let slices = stored(plan(&pods(2), vec![]));
    let mut recreated = service("web").build();
    recreated.metadata.uid = Some("svc-uid-web-2".into());
    let desired = desired_endpoints(&recreated, &pods(2)).unwrap();
    let plan = reconcile(&recreated, desired, slices, 100, now());
    assert_eq!(
        (plan.create.len(), plan.update.len(), plan.delete.len()),
        (0, 1, 0)
    );
    let owner = &plan.update[0].metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(owner.uid, "svc-uid-web-2");
}

use minik_api::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
