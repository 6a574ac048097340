//! Tests of the rollout measurement's bookkeeping: when a Deployment counts as available or
//! complete, and how pods are counted per template.

use super::*;

fn deployment_at(generation: i64, status: serde_json::Value) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": NAME, "generation": generation},
        "spec": {"replicas": 4, "selector": {}, "template": {}},
        "status": status,
    }))
    .unwrap()
}

/// Available needs the controller to have seen the generation; complete also needs every
/// replica updated and no old one left.
#[test]
fn available_and_complete_follow_rollout_status() {
    let stale = Seen::of(&deployment_at(
        2,
        json!({"observedGeneration": 1, "replicas": 4, "updatedReplicas": 4, "availableReplicas": 4}),
    ));
    assert!(!stale.available());
    let surging = Seen::of(&deployment_at(
        2,
        json!({"observedGeneration": 2, "replicas": 5, "updatedReplicas": 4, "availableReplicas": 4}),
    ));
    assert!(surging.available() && !surging.complete());
    let done = Seen::of(&deployment_at(
        2,
        json!({"observedGeneration": 2, "replicas": 4, "updatedReplicas": 4, "availableReplicas": 4}),
    ));
    assert!(done.complete());
}

fn pod(name: &str, hash: &str, node: Option<&str>, phase: Option<&str>) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {HASH_LABEL: hash}},
        "spec": {"nodeName": node, "containers": []},
        "status": {"phase": phase},
    }))
    .unwrap()
}

/// Each pod counts once per milestone, per template; a relist turns missing pods into gone.
#[test]
fn pods_are_counted_once_per_template() {
    let (now, mut progress) = (Instant::now(), Progress::default());
    progress.pod(&pod("a", "old", None, None), now);
    progress.pod(&pod("a", "old", Some("n"), None), now);
    progress.pod(&pod("a", "old", Some("n"), Some("Running")), now);
    progress.pod(&pod("a", "old", Some("n"), Some("Running")), now);
    progress.pod(&pod("b", "new", Some("n"), Some("Running")), now);
    let old = &progress.hashes["old"];
    assert_eq!(
        (old.existing, old.created.0, old.bound.0, old.running.0),
        (1, 1, 1, 1)
    );
    assert_eq!(progress.only_hash(), None);
    progress.relist(&[pod("b", "new", Some("n"), Some("Running"))], now);
    assert_eq!(progress.hashes["old"].existing, 0);
    assert_eq!(progress.only_hash().as_deref(), Some("new"));
    progress.pod_gone("b", now);
    assert_eq!(progress.existing(), 0);
}
