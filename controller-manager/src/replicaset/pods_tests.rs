//! Tests of the ReplicaSet controller's pure decisions: which pods count, which go first, status.

use super::*;
use k8s_openapi::api::apps::v1::ReplicaSetSpec;
use minik_api::core::{ContainerStatus, PodSpec, PodStatus, PodTemplateSpec};
use minik_api::meta::LabelSelector;

fn now() -> jiff::Timestamp {
    "2026-01-01T12:00:00Z".parse().unwrap()
}

fn ago(seconds: i64) -> Time {
    Time(now() - jiff::SignedDuration::from_secs(seconds))
}

/// A pod `name`, scheduled when `node` is set, in `phase`, Ready since `ready_for` seconds.
fn pod(name: &str, node: Option<&str>, phase: &str, ready_for: Option<i64>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            uid: Some(name.into()),
            creation_timestamp: Some(ago(3600)),
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: node.map(String::from),
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some(phase.into()),
            conditions: ready_for.map(|seconds| {
                vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(ago(seconds)),
                    ..PodCondition::default()
                }]
            }),
            ..PodStatus::default()
        }),
    }
}

fn names(pods: &[&Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

/// RS6: unscheduled, then pending, then not ready go before ready running pods.
#[test]
fn scale_down_takes_unscheduled_then_pending_then_not_ready_first() {
    let ready = pod("ready", Some("n1"), "Running", Some(600));
    let not_ready = pod("not-ready", Some("n1"), "Running", None);
    let pending = pod("pending", Some("n1"), "Pending", None);
    let unscheduled = pod("unscheduled", None, "Pending", None);
    let pods = [&ready, &not_ready, &pending, &unscheduled];
    assert_eq!(
        names(&pods_to_delete(&pods, 3, now())),
        ["unscheduled", "pending", "not-ready"]
    );
}

/// RS7–RS8: among ready pods, the one ready most recently (another log2 bucket) goes first, then
/// the one with more restarts; deletion cost overrides both.
#[test]
fn among_ready_pods_the_most_recently_ready_then_the_most_restarted_goes() {
    let old = pod("old", Some("n1"), "Running", Some(4000));
    let recent = pod("recent", Some("n1"), "Running", Some(10));
    assert_eq!(
        names(&pods_to_delete(&[&old, &recent], 1, now())),
        ["recent"]
    );
    let mut restarted = pod("restarted", Some("n1"), "Running", Some(4000));
    restarted.status.as_mut().unwrap().container_statuses = Some(vec![ContainerStatus {
        restart_count: 3,
        ..ContainerStatus::default()
    }]);
    assert_eq!(
        names(&pods_to_delete(&[&old, &restarted], 1, now())),
        ["restarted"]
    );
    let mut cheap = pod("cheap", Some("n1"), "Running", Some(4000));
    cheap.metadata.annotations = Some([(POD_DELETION_COST.to_string(), "-5".to_string())].into());
    assert_eq!(
        names(&pods_to_delete(&[&recent, &cheap], 1, now())),
        ["cheap"]
    );
}

/// The rank is a total order even when pods share a ready time second (hollow or fast kubelets
/// report many in the same second): sorting 1 000 such pods must not panic, and no three pods
/// may form a cycle (equal by time, then ordered by uid both ways round).
#[test]
fn rank_is_a_total_order_for_pods_ready_in_the_same_second() {
    let (a, b, c) = (
        pod("c3", Some("n1"), "Running", Some(4000)),
        pod("a1", Some("n1"), "Running", Some(4000)),
        pod("b2", Some("n1"), "Running", Some(4001)),
    );
    let pods = [&a, &b, &c];
    for x in pods {
        for y in pods {
            for z in pods {
                let (xy, yz, xz) = (rank(x, y, now()), rank(y, z, now()), rank(x, z, now()));
                if xy.is_le() && yz.is_le() {
                    assert!(xz.is_le(), "{:?} {:?} {:?}", names(&[x, y, z]), xy, yz);
                }
            }
        }
    }
    let many: Vec<Pod> = (0..1000)
        .map(|i| {
            pod(
                &format!("p{i:04}"),
                Some("n1"),
                "Running",
                Some(4000 + i % 3),
            )
        })
        .collect();
    let refs: Vec<&Pod> = many.iter().collect();
    assert_eq!(pods_to_delete(&refs, 10, now()).len(), 10);
}

/// RS5: creates go in batches of 1, 2, 4, …
#[test]
fn slow_start_doubles_each_batch() {
    assert_eq!(slow_start_batches(0), Vec::<usize>::new());
    assert_eq!(slow_start_batches(1), [1]);
    assert_eq!(slow_start_batches(10), [1, 2, 4, 3]);
}

/// RS4: terminating and finished pods are not replicas.
#[test]
fn terminating_and_finished_pods_are_not_active() {
    let mut terminating = pod("t", Some("n1"), "Running", Some(10));
    terminating.metadata.deletion_timestamp = Some(ago(1));
    assert!(!is_active(&terminating));
    assert!(!is_active(&pod("done", Some("n1"), "Succeeded", None)));
    assert!(is_active(&pod("p", None, "Pending", None)));
}

fn replica_set(min_ready_seconds: i32) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some("web-abc".into()),
            namespace: Some("default".into()),
            uid: Some("rs-uid".into()),
            generation: Some(4),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(3),
            min_ready_seconds: Some(min_ready_seconds),
            selector: LabelSelector::default(),
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(
                        [
                            ("app".to_string(), "web".to_string()),
                            ("v".to_string(), "2".to_string()),
                        ]
                        .into(),
                    ),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec::default()),
            }),
        }),
        status: None,
    }
}

/// RS9: available honours minReadySeconds; fully labeled needs every template label.
#[test]
fn status_counts_ready_available_and_fully_labeled_pods() {
    let rs = replica_set(30);
    let long_ready = pod("a", Some("n1"), "Running", Some(60));
    let just_ready = pod("b", Some("n1"), "Running", Some(5));
    let mut labeled = pod("c", Some("n1"), "Running", None);
    labeled
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("v".into(), "2".into());
    let status = calculate_status(&rs, &[&long_ready, &just_ready, &labeled], None, now());
    assert_eq!(status.replicas, 3);
    assert_eq!(status.ready_replicas, Some(2));
    assert_eq!(status.available_replicas, Some(1));
    assert_eq!(status.fully_labeled_replicas, Some(1));
    assert_eq!(status.observed_generation, Some(4));
    let failed = calculate_status(&rs, &[], Some(("FailedCreate", "quota".into())), now());
    assert_eq!(
        failed.conditions.unwrap()[0].reason.as_deref(),
        Some("FailedCreate")
    );
}

/// Pods carry `generateName: RSNAME-` and a controller reference with blockOwnerDeletion.
#[test]
fn pods_are_named_after_the_replica_set_and_owned_by_it() {
    let pod = pod_from_template(&replica_set(0), ("apps/v1", "ReplicaSet"));
    assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-abc-"));
    let owner = &pod.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (owner.api_version.as_str(), owner.kind.as_str()),
        ("apps/v1", "ReplicaSet")
    );
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(owner.uid, "rs-uid");
}

/// The ranking is a total order: sorting many pods with equal and near times never panics
/// (Rust's sort checks its comparator) and is stable under reversal of the input.
#[test]
fn the_ranking_is_a_total_order() {
    let pods: Vec<Pod> = (0..200)
        .map(|i| {
            let mut p = pod(
                &format!("p{i:03}"),
                Some("n1"),
                "Running",
                Some(100 + (i % 7) as i64),
            );
            p.metadata.creation_timestamp = Some(ago(3600 + (i % 3) as i64));
            p
        })
        .collect();
    let refs: Vec<&Pod> = pods.iter().collect();
    let forward = names(&pods_to_delete(&refs, 199, now()));
    let reversed: Vec<&Pod> = refs.iter().rev().copied().collect();
    assert_eq!(names(&pods_to_delete(&reversed, 199, now())), forward);
}
