//! Tests of the hub: batching, snapshots and the chart's samples, without I/O.

use super::*;

/// A key changed many times between two flushes is sent once, with its last value.
#[test]
fn changes_between_flushes_are_merged() {
    let mut hub = Hub::default();
    for i in 0..100 {
        hub.table("pods")
            .upsert("default/web".into(), json!({"n": i}));
    }
    hub.table("pods")
        .upsert("default/other".into(), json!({"n": 0}));
    hub.table("pods").remove("default/other");
    let patch = hub.take_patch().unwrap();
    assert_eq!(patch["tables"]["pods"]["upsert"]["default/web"]["n"], 99);
    assert_eq!(patch["tables"]["pods"]["remove"], json!(["default/other"]));
    assert!(hub.take_patch().is_none(), "nothing changed since");
    hub.table("pods")
        .upsert("default/web".into(), json!({"n": 99}));
    assert!(hub.take_patch().is_none(), "the same value is no change");
}

/// A snapshot carries every table, the events and the samples.
#[test]
fn a_snapshot_has_everything() {
    let mut hub = Hub::default();
    hub.table("nodes")
        .upsert("node-1".into(), json!({"name": "node-1"}));
    hub.add_event(json!({"reason": "Scheduled"}));
    let snapshot = hub.snapshot();
    assert_eq!(snapshot["snapshot"], true);
    assert_eq!(
        snapshot["tables"]["nodes"]["upsert"]["node-1"]["name"],
        "node-1"
    );
    assert_eq!(snapshot["tables"]["pods"]["upsert"], json!({}));
    assert_eq!(snapshot["events"][0]["reason"], "Scheduled");
}

/// The chart gets a sample per ReplicaSet when its counts change, and none otherwise.
#[test]
fn samples_follow_pod_counts_per_replica_set() {
    let mut hub = Hub::default();
    let pod = |state: &str| json!({"ns": "default", "owner": "web-1", "state": state});
    hub.table("pods").upsert("default/a".into(), pod("Ready"));
    hub.table("pods").upsert("default/b".into(), pod("Running"));
    hub.table("pods")
        .upsert("default/c".into(), pod("Terminating"));
    hub.table("replicasets")
        .upsert("default/web-2".into(), json!({}));
    hub.pods_changed = true;
    hub.sample(10);
    let patch = hub.take_patch().unwrap();
    let samples = patch["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2, "{samples:?}");
    assert_eq!(
        samples[0],
        json!({"rs": "default/web-1", "t": 10, "running": 2, "ready": 1, "terminating": 1})
    );
    assert_eq!(samples[1]["rs"], "default/web-2");
    hub.pods_changed = true;
    hub.sample(20);
    assert!(hub.take_patch().is_none(), "same counts: no sample");
}

/// A journey keeps its steps in order and is dropped once too many pods are gone.
#[test]
fn journeys_are_bounded() {
    let mut hub = Hub::default();
    let step = |at| Step {
        at,
        step: "s".into(),
        who: "w".into(),
        detail: String::new(),
        source: "watch",
    };
    hub.add_step("u1", "default/a", step(2));
    hub.add_step("u1", "default/a", step(1));
    let journeys = &hub.table("journeys").items()["u1"];
    assert_eq!(journeys["steps"][0]["at"], 1);
    for i in 0..=GONE_JOURNEYS {
        let uid = format!("g{i}");
        hub.add_step(&uid, "default/x", step(1));
        hub.forget_later(&uid);
    }
    assert!(!hub.table("journeys").items().contains_key("g0"));
    assert!(hub.table("journeys").items().contains_key("u1"));
}
