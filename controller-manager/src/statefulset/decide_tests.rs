//! Tests of the StatefulSet plan: ordered and parallel scaling, the partitioned rolling update,
//! OnDelete, and the revisions reported.

use std::collections::BTreeMap;

use super::{counts, next_current_revision, plan, Action, PodState, SetShape};

fn shape(replicas: i32) -> SetShape {
    SetShape {
        replicas,
        start: 0,
        parallel: false,
        on_delete: false,
        partition: 0,
        current_revision: "web-old".into(),
        update_revision: "web-old".into(),
    }
}

fn pod(revision: &str, phase: &str, ready: bool) -> PodState {
    PodState {
        revision: revision.into(),
        phase: phase.into(),
        ready,
        terminating: false,
    }
}

fn running(revision: &str, n: i32) -> BTreeMap<i32, PodState> {
    (0..n)
        .map(|o| (o, pod(revision, "Running", true)))
        .collect()
}

fn create(ordinal: i32, revision: &str) -> Action {
    Action::Create {
        ordinal,
        revision: revision.into(),
    }
}

fn delete(ordinal: i32, why: &'static str) -> Action {
    Action::Delete { ordinal, why }
}

#[test]
fn ordered_ready_creates_one_pod_after_its_predecessor_is_ready() {
    let set = shape(3);
    assert_eq!(plan(&set, &BTreeMap::new()), [create(0, "web-old")]);
    let mut pods = BTreeMap::from([(0, pod("web-old", "Pending", false))]);
    assert_eq!(plan(&set, &pods), []);
    pods.insert(0, pod("web-old", "Running", true));
    assert_eq!(plan(&set, &pods), [create(1, "web-old")]);
}

#[test]
fn parallel_creates_every_missing_pod_at_once() {
    let set = SetShape {
        parallel: true,
        ..shape(3)
    };
    let pods = BTreeMap::from([(1, pod("web-old", "Pending", false))]);
    assert_eq!(
        plan(&set, &pods),
        [create(0, "web-old"), create(2, "web-old")]
    );
}

#[test]
fn scale_down_deletes_the_highest_ordinal_first_and_waits_for_it() {
    let set = shape(1);
    let mut pods = running("web-old", 3);
    assert_eq!(plan(&set, &pods), [delete(2, "condemned")]);
    pods.get_mut(&2).unwrap().terminating = true;
    assert_eq!(plan(&set, &pods), []);
    pods.remove(&2);
    assert_eq!(plan(&set, &pods), [delete(1, "condemned")]);
    let parallel = SetShape {
        parallel: true,
        ..shape(1)
    };
    assert_eq!(
        plan(&parallel, &running("web-old", 3)),
        [delete(2, "condemned"), delete(1, "condemned")]
    );
}

#[test]
fn a_failed_pod_is_deleted_and_comes_back_with_its_name() {
    let set = shape(2);
    let mut pods = running("web-old", 2);
    pods.insert(0, pod("web-old", "Failed", false));
    assert_eq!(plan(&set, &pods), [delete(0, "finished")]);
    pods.remove(&0);
    assert_eq!(plan(&set, &pods), [create(0, "web-old")]);
}

#[test]
fn a_rolling_update_goes_from_the_highest_ordinal_down_to_the_partition() {
    let set = SetShape {
        update_revision: "web-new".into(),
        partition: 1,
        ..shape(3)
    };
    let mut pods = running("web-old", 3);
    assert_eq!(plan(&set, &pods), [delete(2, "outdated")]);
    pods.remove(&2);
    assert_eq!(plan(&set, &pods), [create(2, "web-new")]);
    pods.insert(2, pod("web-new", "Running", false));
    assert_eq!(plan(&set, &pods), [], "waits for the new pod to be ready");
    pods.insert(2, pod("web-new", "Running", true));
    assert_eq!(plan(&set, &pods), [delete(1, "outdated")]);
    pods.insert(1, pod("web-new", "Running", true));
    assert_eq!(plan(&set, &pods), [], "ordinal 0 is below the partition");
    pods.remove(&0);
    assert_eq!(
        plan(&set, &pods),
        [create(0, "web-old")],
        "below the partition a pod comes back at the current revision"
    );
}

#[test]
fn on_delete_never_deletes_for_an_update_but_recreates_at_the_new_revision() {
    let set = SetShape {
        update_revision: "web-new".into(),
        on_delete: true,
        ..shape(2)
    };
    let mut pods = running("web-old", 2);
    assert_eq!(plan(&set, &pods), []);
    pods.remove(&1);
    assert_eq!(plan(&set, &pods), [create(1, "web-new")]);
}

#[test]
fn the_update_revision_becomes_current_once_every_replica_runs_it_ready() {
    let set = SetShape {
        update_revision: "web-new".into(),
        ..shape(2)
    };
    let mut pods = running("web-old", 2);
    pods.insert(1, pod("web-new", "Running", true));
    let half = counts(&set, &pods);
    assert_eq!((half.current, half.updated, half.ready), (1, 1, 2));
    assert_eq!(next_current_revision(&set, &half), "web-old");
    pods.insert(0, pod("web-new", "Running", true));
    assert_eq!(next_current_revision(&set, &counts(&set, &pods)), "web-new");
    let fresh = SetShape {
        current_revision: String::new(),
        ..set
    };
    assert_eq!(
        next_current_revision(&fresh, &counts(&fresh, &BTreeMap::new())),
        "web-new"
    );
}
