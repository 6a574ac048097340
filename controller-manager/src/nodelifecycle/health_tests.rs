//! Unit tests of the node health decisions: heartbeats on the controller's clock, Unknown, taints.

use super::*;
use minik_api::core::{NodeSpec, NodeStatus};
use minik_api::k8s_openapi::api::coordination::v1::LeaseSpec;
use minik_api::meta::MicroTime;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).unwrap()
}

fn node(ready: Option<&str>, heartbeat: i64) -> Node {
    let conditions = ready.map(|status| {
        vec![NodeCondition {
            type_: "Ready".into(),
            status: status.into(),
            last_heartbeat_time: Some(Time(t(heartbeat))),
            ..NodeCondition::default()
        }]
    });
    Node {
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            conditions,
            ..NodeStatus::default()
        }),
        ..Node::default()
    }
}

fn lease(renew: i64) -> Lease {
    Lease {
        spec: Some(LeaseSpec {
            renew_time: Some(MicroTime(t(renew))),
            ..LeaseSpec::default()
        }),
        ..Lease::default()
    }
}

fn keys(taints: &[Taint]) -> Vec<String> {
    taints
        .iter()
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect()
}

/// A renewed Lease alone keeps the node heard; a Lease that stops moving makes it late after the
/// grace period, counted on the controller's clock (NL3).
#[test]
fn the_lease_or_the_heartbeat_moving_counts_as_heard() {
    let start = Instant::now();
    let grace = Duration::from_secs(40);
    let first = observe(None, &node(Some("True"), 0), Some(&lease(0)), start);
    assert_eq!(first.at, start);
    let later = start + Duration::from_secs(30);
    let renewed = observe(
        Some(&first),
        &node(Some("True"), 0),
        Some(&lease(30)),
        later,
    );
    assert_eq!(renewed.at, later, "the lease moved");
    let silent = observe(
        Some(&renewed),
        &node(Some("True"), 0),
        Some(&lease(30)),
        later + grace,
    );
    assert_eq!(silent.at, later, "nothing moved");
    assert_eq!(time_left(&silent, later + grace, grace), None);
    assert_eq!(
        time_left(&silent, later + Duration::from_secs(10), grace),
        Some(Duration::from_secs(30))
    );
    let status = observe(
        Some(&silent),
        &node(Some("True"), 99),
        Some(&lease(30)),
        later + grace,
    );
    assert_eq!(status.at, later + grace, "a status heartbeat counts too");
}

#[test]
fn a_late_node_becomes_unknown_once() {
    let now = Time(t(100));
    let conditions = late_conditions(&node(Some("True"), 0), &now).expect("Ready changes");
    assert_eq!(conditions.len(), 1);
    let ready = &conditions[0];
    assert_eq!(ready.status, "Unknown");
    assert_eq!(ready.reason.as_deref(), Some(REASON_NODE_STATUS_UNKNOWN));
    assert_eq!(
        ready.message.as_deref(),
        Some("Kubelet stopped posting node status.")
    );
    assert_eq!(
        ready.last_heartbeat_time,
        Some(Time(t(0))),
        "the heartbeat is the kubelet's"
    );
    assert_eq!(late_conditions(&node(Some("Unknown"), 0), &now), None);
    let never = late_conditions(&node(None, 0), &now).expect("Ready is added");
    assert_eq!(never[0].reason.as_deref(), Some("NodeStatusNeverUpdated"));
}

#[test]
fn taints_follow_the_ready_condition() {
    let now = Time(t(100));
    let unknown = node(Some("Unknown"), 0);
    let taints = desired_taints(&unknown, true, &now).expect("taints are added");
    assert_eq!(
        keys(&taints),
        [
            format!("{TAINT_UNREACHABLE}:NoSchedule"),
            format!("{TAINT_UNREACHABLE}:NoExecute")
        ]
    );
    assert_eq!(
        taints[1].time_added,
        Some(now.clone()),
        "NoExecute carries timeAdded"
    );
    assert_eq!(taints[0].time_added, None);
    // Already there: nothing to write, and timeAdded is kept.
    let mut tainted = unknown.clone();
    tainted.spec.as_mut().unwrap().taints = Some(taints.clone());
    assert_eq!(desired_taints(&tainted, true, &Time(t(200))), None);
    // False swaps unreachable for not-ready; no node Ready at all: no NoExecute (NL7).
    let mut not_ready = tainted.clone();
    not_ready
        .status
        .as_mut()
        .unwrap()
        .conditions
        .as_mut()
        .unwrap()[0]
        .status = "False".into();
    let swapped = desired_taints(&not_ready, false, &now).expect("swapped");
    assert_eq!(keys(&swapped), [format!("{TAINT_NOT_READY}:NoSchedule")]);
    // Ready again: the controller's taints go, the user's stay; cordoned adds unschedulable.
    let mut back = tainted;
    back.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "True".into();
    let spec = back.spec.as_mut().unwrap();
    spec.taints.as_mut().unwrap().push(Taint {
        key: "dedicated".into(),
        effect: "NoSchedule".into(),
        value: Some("gpu".into()),
        time_added: None,
    });
    spec.unschedulable = Some(true);
    let cleaned = desired_taints(&back, true, &now).expect("cleaned");
    assert_eq!(
        keys(&cleaned),
        [
            "dedicated:NoSchedule".to_string(),
            format!("{TAINT_UNSCHEDULABLE}:NoSchedule")
        ]
    );
}
