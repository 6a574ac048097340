//! Tests of the collector's graph and decisions.

use super::*;

fn pods() -> &'static ResourceInfo {
    minik_api::resource::lookup("pods").unwrap()
}

fn reference(uid: &str, block: bool) -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: uid.into(),
        uid: uid.into(),
        controller: Some(true),
        block_owner_deletion: Some(block),
    }
}

fn node(uid: &str, owners: &[OwnerReference]) -> Node {
    Node {
        uid: uid.into(),
        kind: pods(),
        namespace: Some("default".into()),
        name: uid.into(),
        owners: owners.to_vec(),
        deleting: false,
        finalizers: Vec::new(),
    }
}

fn sorted(mut uids: Vec<String>) -> Vec<String> {
    uids.sort();
    uids.dedup();
    uids
}

/// Background: when an owner goes, its dependents are looked at (and found dangling).
#[test]
fn a_removed_owner_sends_its_dependents_to_be_checked() {
    let mut graph = Graph::default();
    graph.upsert(node("rs", &[]));
    assert_eq!(
        graph.upsert(node("pod-a", &[reference("rs", true)])),
        ["pod-a"]
    );
    graph.upsert(node("pod-b", &[reference("rs", false)]));
    assert_eq!(sorted(graph.remove("rs")), ["pod-a", "pod-b"]);
    assert_eq!(
        graph.dependents("rs").len(),
        2,
        "the dependents still name it"
    );
}

/// Foreground: the owner and its dependents are attended; only blockOwnerDeletion blocks; a
/// dependent that goes wakes the owner.
#[test]
fn a_foreground_owner_waits_for_blocking_dependents() {
    let mut graph = Graph::default();
    graph.upsert(node("pod-a", &[reference("rs", true)]));
    graph.upsert(node("pod-b", &[reference("rs", false)]));
    let mut owner = node("rs", &[]);
    owner.deleting = true;
    owner.finalizers = vec![FOREGROUND.into()];
    assert_eq!(sorted(graph.upsert(owner)), ["pod-a", "pod-b", "rs"]);
    let blocking: Vec<_> = graph
        .blocking_dependents("rs")
        .iter()
        .map(|n| n.uid.clone())
        .collect();
    assert_eq!(blocking, ["pod-a"]);
    assert_eq!(graph.remove("pod-a"), ["rs"]);
    assert!(graph.blocking_dependents("rs").is_empty());
}

/// GC7: a solid owner keeps the dependent (stale references are patched away); otherwise it is
/// deleted, in the foreground when it waits on a foreground owner and has dependents itself.
#[test]
fn decisions_follow_the_owners_states() {
    let pod = node("pod", &[reference("a", true), reference("b", true)]);
    let states = |a, b| vec![("a".to_string(), a), ("b".to_string(), b)];
    use OwnerState::*;
    assert_eq!(decide(&pod, &states(Solid, Solid), false), Decision::Keep);
    assert_eq!(
        decide(&pod, &states(Solid, Dangling), false),
        Decision::RemoveReferences(vec!["b".into()])
    );
    assert_eq!(
        decide(&pod, &states(Dangling, Dangling), false),
        Decision::Delete("Background")
    );
    assert_eq!(
        decide(&pod, &states(Waiting, Dangling), true),
        Decision::Delete("Foreground")
    );
    assert_eq!(
        decide(&pod, &states(Waiting, Dangling), false),
        Decision::Delete("Background")
    );
    let mut orphaning = pod.clone();
    orphaning.finalizers = vec![ORPHAN.into()];
    assert_eq!(
        decide(&orphaning, &states(Dangling, Dangling), false),
        Decision::Delete("Orphan")
    );
}

/// Orphan: an owner carrying the `orphan` finalizer is attended.
#[test]
fn an_orphaning_owner_is_attended() {
    let mut graph = Graph::default();
    let mut owner = node("deploy", &[]);
    assert!(
        graph.upsert(owner.clone()).is_empty(),
        "nothing to do for a live owner without owners"
    );
    owner.deleting = true;
    owner.finalizers = vec![ORPHAN.into()];
    assert_eq!(graph.upsert(owner), ["deploy"]);
}
