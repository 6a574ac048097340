//! Unit tests of the scheduling algorithm, in the manner of upstream's `schedule_one_test.go` and the
//! plugin tests: build nodes and pods with the fixtures, call `schedule`, assert the node or message.

use super::*;
use crate::testing::{node, pod};

#[test]
fn pod_goes_to_the_only_node() {
    let nodes = [node("node-1").build()];
    assert_eq!(
        schedule(&pod("web").build(), &nodes, &[]),
        Ok("node-1".to_string())
    );
}

#[test]
fn no_nodes_gives_upstreams_no_nodes_message() {
    let err = schedule(&pod("web").build(), &[], &[]).unwrap_err();
    assert_eq!(err.message, "no nodes available to schedule pods");
}

#[test]
fn message_counts_reasons_and_sorts_them_as_strings() {
    let nodes = [
        node("node-1").cpu("1").build(),
        node("node-2").cpu("1").build(),
        node("node-3").label("disk", "hdd").build(),
    ];
    let p = pod("big").cpu("2").node_selector("disk", "ssd").build();
    let err = schedule(&p, &nodes, &[]).unwrap_err();
    // node-1 and node-2 fail the selector first: the affinity plugin runs before the resource fit.
    assert_eq!(
        err.message,
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    );

    let nodes = [
        node("node-1").cpu("1").label("disk", "ssd").build(),
        node("node-2").cpu("1").label("disk", "ssd").build(),
        node("node-3").label("disk", "hdd").build(),
    ];
    let err = schedule(&p, &nodes, &[]).unwrap_err();
    assert_eq!(
        err.message,
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient cpu."
    );
}

#[test]
fn requests_of_bound_pods_count_against_allocatable() {
    let nodes = [node("node-1").cpu("1").build()];
    let bound = [pod("a").cpu("600m").node_name("node-1").build()];
    let err = schedule(&pod("b").cpu("500m").build(), &nodes, &bound).unwrap_err();
    assert_eq!(err.message, "0/1 nodes are available: 1 Insufficient cpu.");
    assert!(
        schedule(&pod("c").cpu("400m").build(), &nodes, &bound).is_ok(),
        "exactly full still fits"
    );
}

#[test]
fn finished_pods_free_their_resources() {
    let nodes = [node("node-1").cpu("1").build()];
    let done = [pod("a")
        .cpu("1")
        .node_name("node-1")
        .phase("Succeeded")
        .build()];
    assert_eq!(
        schedule(&pod("b").cpu("1").build(), &nodes, &done),
        Ok("node-1".to_string())
    );
}

#[test]
fn one_node_can_fail_several_resources_and_pod_count() {
    let nodes = [node("node-1").cpu("1").memory("1Gi").pods(1).build()];
    let bound = [pod("a").node_name("node-1").build()];
    let err = schedule(&pod("b").cpu("2").memory("2Gi").build(), &nodes, &bound).unwrap_err();
    assert_eq!(
        err.message,
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 Too many pods."
    );
}

#[test]
fn cordoned_node_is_skipped_unless_tolerated() {
    let nodes = [node("node-1").unschedulable().build()];
    let err = schedule(&pod("web").build(), &nodes, &[]).unwrap_err();
    assert_eq!(
        err.message,
        "0/1 nodes are available: 1 node(s) were unschedulable."
    );
    let tolerant = pod("ds")
        .toleration(
            "node.kubernetes.io/unschedulable",
            "Exists",
            "",
            "NoSchedule",
        )
        .build();
    assert!(schedule(&tolerant, &nodes, &[]).is_ok());
}

#[test]
fn no_schedule_taint_repels_pods_without_a_toleration() {
    let nodes = [node("node-1")
        .taint("dedicated", "gpu", "NoSchedule")
        .build()];
    let err = schedule(&pod("web").build(), &nodes, &[]).unwrap_err();
    assert_eq!(
        err.message,
        "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}."
    );
    let equal = pod("a")
        .toleration("dedicated", "Equal", "gpu", "NoSchedule")
        .build();
    assert!(schedule(&equal, &nodes, &[]).is_ok());
    let exists_any_effect = pod("b").toleration("dedicated", "Exists", "", "").build();
    assert!(schedule(&exists_any_effect, &nodes, &[]).is_ok());
    let wrong_value = pod("c")
        .toleration("dedicated", "Equal", "cpu", "NoSchedule")
        .build();
    assert!(schedule(&wrong_value, &nodes, &[]).is_err());
    let wildcard = pod("d").toleration("", "Exists", "", "").build();
    assert!(schedule(&wildcard, &nodes, &[]).is_ok());
}

#[test]
fn prefer_no_schedule_taint_does_not_filter() {
    let nodes = [node("node-1")
        .taint("spot", "yes", "PreferNoSchedule")
        .build()];
    assert!(schedule(&pod("web").build(), &nodes, &[]).is_ok());
}

/// `TaintToleration` scores with weight 3: an untainted node wins over a PreferNoSchedule one
/// even when it is busier, unless the pod tolerates the taint.
#[test]
fn prefer_no_schedule_taint_is_avoided_by_the_score() {
    let nodes = [
        node("node-1")
            .taint("spot", "yes", "PreferNoSchedule")
            .build(),
        node("node-2").build(),
    ];
    let busy = pod("busy").node_name("node-2").cpu("1").build();
    assert_eq!(
        schedule(&pod("web").build(), &nodes, std::slice::from_ref(&busy)),
        Ok("node-2".into())
    );
    let tolerant = pod("t")
        .toleration("spot", "Equal", "yes", "PreferNoSchedule")
        .build();
    assert_eq!(schedule(&tolerant, &nodes, &[busy]), Ok("node-1".into()));
}

/// The message of a dead node's cluster, as `kubectl describe pod` shows it.
#[test]
fn unreachable_and_cordoned_nodes_make_upstreams_message() {
    let nodes = [
        node("node-1")
            .taint("node.kubernetes.io/unreachable", "", "NoSchedule")
            .build(),
        node("node-2").unschedulable().build(),
        node("node-3").unschedulable().build(),
    ];
    let err = schedule(&pod("web").build(), &nodes, &[]).unwrap_err();
    assert_eq!(
        err.message,
        "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, \
         2 node(s) were unschedulable."
    );
}

#[test]
fn not_ready_nodes_count_as_tainted() {
    let nodes = [
        node("node-1").ready("False").build(),
        node("node-2").ready("Unknown").build(),
    ];
    let err = schedule(&pod("web").build(), &nodes, &[]).unwrap_err();
    assert_eq!(
        err.message,
        "0/2 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, \
         1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }."
    );
    let tolerant = pod("t")
        .toleration("node.kubernetes.io/not-ready", "Exists", "", "NoSchedule")
        .build();
    assert_eq!(schedule(&tolerant, &nodes, &[]), Ok("node-1".to_string()));
}

#[test]
fn node_selector_picks_the_labelled_node() {
    let nodes = [
        node("node-1").build(),
        node("node-2").label("zone", "b").build(),
    ];
    let p = pod("web").node_selector("zone", "b").build();
    assert_eq!(schedule(&p, &nodes, &[]), Ok("node-2".to_string()));
}

#[test]
fn required_node_affinity_terms_are_ored_and_expressions_anded() {
    use minik_api::core::{
        Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    };
    let requirement = |key: &str, operator: &str, values: &[&str]| NodeSelectorRequirement {
        key: key.into(),
        operator: operator.into(),
        values: Some(values.iter().map(|v| v.to_string()).collect()),
    };
    let mut p = pod("web").build();
    p.spec.as_mut().unwrap().affinity = Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(vec![
                        requirement("zone", "In", &["a", "b"]),
                        requirement("cores", "Gt", &["8"]),
                    ]),
                    ..NodeSelectorTerm::default()
                }],
            }),
            ..NodeAffinity::default()
        }),
        ..Affinity::default()
    });
    let nodes = [
        node("small").label("zone", "a").label("cores", "4").build(),
        node("big").label("zone", "b").label("cores", "16").build(),
        node("elsewhere")
            .label("zone", "c")
            .label("cores", "64")
            .build(),
    ];
    assert_eq!(schedule(&p, &nodes, &[]), Ok("big".to_string()));
}

#[test]
fn least_allocated_node_wins() {
    let nodes = [node("node-1").build(), node("node-2").build()];
    let bound = [pod("a").cpu("2").memory("4Gi").node_name("node-1").build()];
    assert_eq!(
        schedule(&pod("web").cpu("100m").build(), &nodes, &bound),
        Ok("node-2".to_string())
    );
}

#[test]
fn least_allocated_score_follows_upstream_formula() {
    let info = NodeInfo::new(Arc::new(node("n").cpu("1").memory("1Gi").build()));
    let requests = PodRequests::of(&pod("p").cpu("250m").memory("512Mi").build());
    // cpu: (1000 - 250) * 100 / 1000 = 75; memory: 50; average 62.
    assert_eq!(score(&requests, &info), 62);
    let too_big = PodRequests::of(&pod("p").cpu("2").memory("512Mi").build());
    assert_eq!(
        score(&too_big, &info),
        25,
        "an over-capacity resource scores 0"
    );
}

#[test]
fn equal_nodes_are_filled_round_robin() {
    let nodes: Vec<_> = (1..=3)
        .map(|i| node(&format!("node-{i}")).build())
        .collect();
    let mut bound = Vec::new();
    for i in 0..6 {
        let chosen = schedule(&pod(&format!("p{i}")).build(), &nodes, &bound).unwrap();
        bound.push(pod(&format!("p{i}")).node_name(&chosen).build());
    }
    let placed: Vec<_> = bound
        .iter()
        .map(|p| p.spec.as_ref().unwrap().node_name.clone().unwrap())
        .collect();
    assert_eq!(
        placed,
        ["node-1", "node-2", "node-3", "node-1", "node-2", "node-3"]
    );
}

#[test]
fn big_clusters_score_an_adaptive_share_of_their_nodes() {
    // Upstream's numFeasibleNodesToFind with percentageOfNodesToScore unset.
    assert_eq!(num_feasible_nodes_to_find(3), 3);
    assert_eq!(num_feasible_nodes_to_find(99), 99);
    assert_eq!(
        num_feasible_nodes_to_find(100),
        100,
        "49 % of 100 is below the floor"
    );
    assert_eq!(
        num_feasible_nodes_to_find(1_000),
        420,
        "50 - 1000/125 = 42 %"
    );
    assert_eq!(num_feasible_nodes_to_find(5_000), 500, "10 %");
    assert_eq!(num_feasible_nodes_to_find(20_000), 1_000, "the 5 % floor");
}

#[test]
fn the_search_stops_once_enough_nodes_fit_but_an_unschedulable_pod_sees_them_all() {
    let infos: Vec<NodeInfo> = (0..1_000)
        .map(|i| NodeInfo::new(Arc::new(node(&format!("node-{i:04}")).build())))
        .collect();
    let small = pod("small").build();
    let enough = num_feasible_nodes_to_find(infos.len());
    let (chosen, examined) = find_and_score(&small, &PodRequests::of(&small), &infos, enough);
    assert_eq!(examined, 420);
    assert!(
        chosen.unwrap().as_str() < "node-0420",
        "chosen among the first 420"
    );
    let huge = pod("huge").cpu("64").build();
    let (refused, examined) = find_and_score(&huge, &PodRequests::of(&huge), &infos, enough);
    assert_eq!(examined, 1_000);
    assert!(refused
        .unwrap_err()
        .message
        .starts_with("0/1000 nodes are available: 1000 Insufficient cpu"));
}
