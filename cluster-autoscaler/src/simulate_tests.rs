//! Unit tests of the simulations: estimates, placement on existing nodes, utilization.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodCondition, PodSpec, PodStatus,
    ResourceRequirements, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::*;

fn node(name: &str, cpu: &str) -> Node {
    let quantities = BTreeMap::from([
        ("cpu".to_string(), Quantity(cpu.into())),
        ("memory".to_string(), Quantity("4Gi".into())),
        ("pods".to_string(), Quantity("110".into())),
    ]);
    Node {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(quantities),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

fn pod(name: &str, cpu: &str, node: Option<&str>) -> Pod {
    let requests = BTreeMap::from([("cpu".to_string(), Quantity(cpu.into()))]);
    Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: node.map(str::to_string),
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(requests),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "PodScheduled".into(),
                status: "False".into(),
                reason: Some("Unschedulable".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

fn pods(count: usize, cpu: &str) -> Vec<Pod> {
    (0..count)
        .map(|i| pod(&format!("p{i}"), cpu, None))
        .collect()
}

/// Six 1-CPU pods on 2-CPU nodes need three nodes, not six: the estimate packs them.
#[test]
fn six_one_cpu_pods_need_three_two_cpu_nodes() {
    let pending = pods(6, "1");
    let refs: Vec<&Pod> = pending.iter().collect();
    let (count, helped) = estimate(&refs, &node("t", "2"), &BTreeMap::new(), 10);
    assert_eq!(count, 3);
    assert_eq!(helped.len(), 6);
}

/// The limit (max nodes minus the nodes there are) caps the estimate; the pods left over are
/// not counted as helped.
#[test]
fn the_estimate_stops_at_the_limit() {
    let pending = pods(6, "1");
    let refs: Vec<&Pod> = pending.iter().collect();
    let (count, helped) = estimate(&refs, &node("t", "2"), &BTreeMap::new(), 2);
    assert_eq!(count, 2);
    assert_eq!(helped.len(), 4);
}

/// A pod bigger than an empty template node opens no node at all.
#[test]
fn a_pod_too_big_for_any_node_adds_nothing() {
    let pending = [pod("huge", "3", None)];
    let refs: Vec<&Pod> = pending.iter().collect();
    let (count, helped) = estimate(&refs, &node("t", "2"), &BTreeMap::new(), 10);
    assert_eq!((count, helped.len()), (0, 0));
}

/// Largest first: 1.5 + 0.5 share a node, 1.5 + 0.5 the next (first fit in arrival order would
/// open three).
#[test]
fn larger_pods_are_packed_first() {
    let pending = [
        pod("a", "500m", None),
        pod("b", "500m", None),
        pod("c", "1500m", None),
        pod("d", "1500m", None),
    ];
    let refs: Vec<&Pod> = pending.iter().collect();
    let (count, _) = estimate(&refs, &node("t", "2"), &BTreeMap::new(), 10);
    assert_eq!(count, 2);
}

/// Pods that fit on an existing or upcoming node do not count towards a scale-up (what keeps a
/// restarted autoscaler from adding the nodes again).
#[test]
fn pods_that_fit_somewhere_are_filtered_out() {
    let nodes = [node("node-1", "2"), node("node-101", "2")];
    let bound = [pod("running", "1", Some("node-1"))];
    let mut infos: Vec<_> = snapshot(&nodes, &bound).into_values().collect();
    let pending = pods(4, "1");
    let refs: Vec<&Pod> = pending.iter().collect();
    let left = filter_out_schedulable(&refs, &mut infos);
    assert_eq!(left.len(), 1, "1 CPU free on node-1, 2 on node-101");
}

/// Utilization is requests over allocatable, the larger of cpu and memory.
#[test]
fn utilization_is_the_larger_ratio() {
    let nodes = [node("node-2", "2")];
    let bound = [pod("a", "500m", Some("node-2"))];
    let infos = snapshot(&nodes, &bound);
    assert!((utilization(&infos["node-2"]) - 0.25).abs() < 1e-9);
}

/// A node's pods must fit on the others for it to be removed.
#[test]
fn pods_fit_elsewhere_only_with_room() {
    let nodes = [node("node-1", "2")];
    let mut infos: Vec<_> = snapshot(&nodes, &[pod("x", "1", Some("node-1"))])
        .into_values()
        .collect();
    let small = pod("small", "1", Some("node-2"));
    let big = pod("big", "2", Some("node-2"));
    assert!(!pods_fit_elsewhere(&[&big], &mut infos.clone()));
    assert!(pods_fit_elsewhere(&[&small], &mut infos));
}

/// The template loses its taints and name; the group's labels are added.
#[test]
fn a_template_node_is_clean() {
    let mut base = node("node-1", "2");
    base.spec.as_mut().unwrap().taints = Some(vec![Taint {
        key: TO_BE_DELETED_TAINT.into(),
        effect: "NoSchedule".into(),
        ..Default::default()
    }]);
    let labels = BTreeMap::from([("minik.dev/autoscaled".to_string(), "true".to_string())]);
    let fresh = template_node(&base, "template-0", &labels);
    assert!(!is_to_be_deleted(&fresh));
    assert_eq!(
        fresh.metadata.labels.unwrap()["minik.dev/autoscaled"],
        "true"
    );
    assert!(is_unschedulable(&pod("p", "1", None)));
    assert!(!is_unschedulable(&pod("p", "1", Some("node-1"))));
}
