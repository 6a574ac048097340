//! Tests of `decide.rs`: eligibility, the plan per node, both rolling-update paths, the status.

use serde_json::{json, Value};

use super::*;

fn now() -> jiff::Timestamp {
    "2026-11-22T02:05:00Z".parse().unwrap()
}

fn agent(strategy: Value) -> DaemonSet {
    serde_json::from_value(json!({
        "metadata": {"name": "agent", "namespace": "default", "uid": "u1", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "updateStrategy": strategy,
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [{"name": "agent", "image": "nginx"}]}}}}))
    .unwrap()
}

fn rolling(unavailable: Value, surge: Value) -> DaemonSet {
    agent(json!({"type": "RollingUpdate",
                 "rollingUpdate": {"maxUnavailable": unavailable, "maxSurge": surge}}))
}

fn node(name: &str, spec: Value) -> Node {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    )
    .unwrap()
}

/// A pod on `node` of revision `hash`, created at `created` (minutes), ready or not.
fn pod(name: &str, node: &str, hash: &str, created: u8, ready: bool) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "agent", "controller-revision-hash": hash},
                     "creationTimestamp": format!("2026-11-22T01:{created:02}:00Z")},
        "spec": {"nodeName": node, "containers": [{"name": "agent"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready",
                   "status": if ready { "True" } else { "False" },
                   "lastTransitionTime": "2026-11-22T01:30:00Z"}]}}))
    .unwrap()
}

fn three_nodes() -> Vec<Node> {
    vec![
        node("node-1", json!({})),
        node("node-2", json!({})),
        node("node-3", json!({})),
    ]
}

fn refs<T>(items: &[T]) -> Vec<&T> {
    items.iter().collect()
}

#[test]
fn untolerated_taints_exclude_a_node_but_a_cordon_does_not() {
    let nodes = vec![
        node("node-1", json!({})),
        node(
            "node-2",
            json!({"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}),
        ),
        node(
            "node-3",
            json!({"unschedulable": true,
             "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}),
        ),
    ];
    let plan = plan(&agent(json!({})), &refs(&nodes), &[], "h1", now());
    assert_eq!(plan.create_on, ["node-1", "node-3"]);
    let mut tolerant = agent(json!({}));
    tolerant
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .tolerations = Some(vec![serde_json::from_value(
        json!({"key": "dedicated", "operator": "Exists"}),
    )
    .unwrap()]);
    assert_eq!(plan_for(&tolerant, &nodes, &[]).create_on.len(), 3);
}

fn plan_for(ds: &DaemonSet, nodes: &[Node], pods: &[Pod]) -> Plan {
    plan(ds, &refs(nodes), &refs(pods), "h1", now())
}

#[test]
fn a_node_selector_limits_the_nodes_and_pods_off_it_are_deleted() {
    let mut nodes = three_nodes();
    nodes[1]
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("disk".into(), "ssd".into());
    let mut ds = agent(json!({}));
    ds.spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .node_selector = Some([("disk".to_string(), "ssd".to_string())].into());
    let pods = [pod("a", "node-1", "h1", 1, true)];
    let plan = plan_for(&ds, &nodes, &pods);
    assert_eq!(plan.create_on, ["node-2"]);
    assert_eq!(plan.delete, ["a"]);
}

#[test]
fn a_node_gone_loses_its_pod_and_a_terminating_pod_holds_its_node() {
    let nodes = &three_nodes()[..2];
    let mut leaving = pod("b", "node-2", "h1", 1, true);
    leaving.metadata.deletion_timestamp = Some(minik_api::now());
    let pods = [pod("gone", "node-9", "h1", 1, true), leaving];
    let plan = plan_for(&agent(json!({})), nodes, &pods);
    assert_eq!(plan.create_on, ["node-1"], "node-2 waits for its pod to go");
    assert_eq!(plan.delete, ["gone"]);
}

#[test]
fn extra_and_finished_pods_on_a_node_are_deleted_keeping_the_oldest() {
    let nodes = &three_nodes()[..1];
    let mut failed = pod("failed", "node-1", "h1", 0, false);
    failed.status.as_mut().unwrap().phase = Some("Failed".into());
    let pods = [
        pod("young", "node-1", "h1", 5, true),
        pod("old", "node-1", "h1", 2, true),
        failed,
    ];
    let plan = plan_for(&agent(json!({})), nodes, &pods);
    assert!(plan.create_on.is_empty());
    let mut deleted = plan.delete.clone();
    deleted.sort();
    assert_eq!(deleted, ["failed", "young"]);
}

#[test]
fn a_rolling_update_without_surge_replaces_max_unavailable_nodes_at_a_time() {
    let nodes = three_nodes();
    let old = [
        pod("a", "node-1", "h0", 1, true),
        pod("b", "node-2", "h0", 1, true),
        pod("c", "node-3", "h0", 1, true),
    ];
    let ds = rolling(json!(1), json!(0));
    assert_eq!(plan_for(&ds, &nodes, &old).delete, ["a"]);
    // node-1's new pod is not ready yet: the budget is spent.
    let mid = [
        pod("a2", "node-1", "h1", 9, false),
        old[1].clone(),
        old[2].clone(),
    ];
    assert_eq!(plan_for(&ds, &nodes, &mid), Plan::default());
    let wide = rolling(json!("50%"), json!(0));
    assert_eq!(plan_for(&wide, &nodes, &old).delete, ["a", "b"]);
    let mut broken = old.clone();
    broken[2] = pod("c", "node-3", "h0", 1, false);
    // An old pod that is not available goes at once, without spending the budget (upstream).
    assert_eq!(plan_for(&ds, &nodes, &broken).delete, ["c", "a"]);
    let on_delete = agent(json!({"type": "OnDelete"}));
    assert_eq!(plan_for(&on_delete, &nodes, &old), Plan::default());
}

#[test]
fn a_rolling_update_with_surge_starts_the_new_pod_before_deleting_the_old() {
    let nodes = three_nodes();
    let ds = rolling(json!(0), json!(1));
    let old = [
        pod("a", "node-1", "h0", 1, true),
        pod("b", "node-2", "h0", 1, true),
        pod("c", "node-3", "h0", 1, true),
    ];
    let plan = plan_for(&ds, &nodes, &old);
    assert_eq!(
        (plan.create_on, plan.delete.len()),
        (vec!["node-1".to_string()], 0)
    );
    let mut surging = old.to_vec();
    surging.push(pod("a2", "node-1", "h1", 9, false));
    assert_eq!(plan_for(&ds, &nodes, &surging), Plan::default());
    surging[3] = pod("a2", "node-1", "h1", 9, true);
    let plan = plan_for(&ds, &nodes, &surging);
    assert_eq!(plan.delete, ["a"]);
}

#[test]
fn the_status_counts_nodes_by_their_oldest_pod() {
    let nodes = three_nodes();
    let pods = [
        pod("a", "node-1", "h1", 1, true),
        pod("b", "node-2", "h0", 1, false),
    ];
    let status = status(&agent(json!({})), &refs(&nodes), &refs(&pods), "h1", now());
    assert_eq!(status.desired_number_scheduled, 3);
    assert_eq!(status.current_number_scheduled, 2);
    assert_eq!(status.number_ready, 1);
    assert_eq!(status.number_available, Some(1));
    assert_eq!(status.number_unavailable, Some(2));
    assert_eq!(status.updated_number_scheduled, Some(1));
    assert_eq!(status.observed_generation, Some(1));
}
