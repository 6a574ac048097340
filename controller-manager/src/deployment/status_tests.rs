//! Tests of the Deployment status: counts, Available, Progressing and its deadline.

use super::*;
use k8s_openapi::api::apps::v1::{DeploymentSpec, ReplicaSetSpec, ReplicaSetStatus};
use minik_api::meta::ObjectMeta;

fn now() -> jiff::Timestamp {
    "2026-01-01T12:00:00Z".parse().unwrap()
}

fn deployment(replicas: i32, status: Option<DeploymentStatus>) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            generation: Some(2),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            progress_deadline_seconds: Some(60),
            ..DeploymentSpec::default()
        }),
        status,
    }
}

fn rs(spec: i32, replicas: i32, ready: i32, available: i32) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta::default(),
        spec: Some(ReplicaSetSpec {
            replicas: Some(spec),
            ..ReplicaSetSpec::default()
        }),
        status: Some(ReplicaSetStatus {
            replicas,
            ready_replicas: Some(ready),
            available_replicas: Some(available),
            ..ReplicaSetStatus::default()
        }),
    }
}

const ROLLOUT: Rollout = Rollout {
    replicas: 10,
    max_surge: 3,
    max_unavailable: 2,
};

/// DP17, DP23: sums over RSs, updated from the new RS, Available at replicas − maxUnavailable.
#[test]
fn status_sums_replica_sets_and_sets_available() {
    let (old, new) = (rs(8, 8, 8, 8), rs(5, 5, 2, 0));
    let status = calculate_status(
        &deployment(10, None),
        &[&old, &new],
        Some(&new),
        &ROLLOUT,
        now(),
    );
    assert_eq!(
        (
            status.replicas,
            status.updated_replicas,
            status.ready_replicas,
            status.available_replicas,
            status.unavailable_replicas
        ),
        (Some(13), Some(5), Some(10), Some(8), Some(5))
    );
    assert_eq!(status.observed_generation, Some(2));
    assert_eq!(get_condition(&status, "Available").unwrap().status, "True");
    let (old, new) = (rs(7, 7, 7, 7), rs(5, 5, 0, 0));
    let status = calculate_status(
        &deployment(10, None),
        &[&old, &new],
        Some(&new),
        &ROLLOUT,
        now(),
    );
    assert_eq!(
        get_condition(&status, "Available")
            .unwrap()
            .reason
            .as_deref(),
        Some(reason::MIN_UNAVAILABLE)
    );
}

fn progressing(reason: &str, updated_secs_ago: i64) -> DeploymentStatus {
    let mut status = DeploymentStatus {
        replicas: Some(13),
        updated_replicas: Some(5),
        ready_replicas: Some(8),
        available_replicas: Some(8),
        ..DeploymentStatus::default()
    };
    let then = now() - jiff::SignedDuration::from_secs(updated_secs_ago);
    set_condition(
        &mut status,
        condition("Progressing", "True", reason, String::new(), then),
    );
    status
}

/// DP22, DP24: progress refreshes the condition; no progress past the deadline times out;
/// completion is NewReplicaSetAvailable.
#[test]
fn progressing_follows_counts_and_the_deadline() {
    let d = deployment(10, Some(progressing(reason::RS_UPDATED, 30)));
    let mut moved = DeploymentStatus {
        updated_replicas: Some(6),
        ..progressing(reason::RS_UPDATED, 30)
    };
    sync_progress(&d, &mut moved, Some("web-abc"), now());
    let condition = get_condition(&moved, "Progressing").unwrap();
    assert_eq!(condition.last_update_time, Some(Time(now())));
    assert_eq!(
        requeue_after(&d, &moved, now()),
        Some(Duration::from_secs(61))
    );

    let stuck = deployment(10, Some(progressing(reason::RS_UPDATED, 61)));
    let mut same = progressing(reason::RS_UPDATED, 61);
    sync_progress(&stuck, &mut same, Some("web-abc"), now());
    let condition = get_condition(&same, "Progressing").unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_deref()),
        ("False", Some(reason::TIMED_OUT))
    );

    let mut done = DeploymentStatus {
        replicas: Some(10),
        updated_replicas: Some(10),
        available_replicas: Some(10),
        observed_generation: Some(2),
        ..DeploymentStatus::default()
    };
    sync_progress(&stuck, &mut done, Some("web-abc"), now());
    assert_eq!(
        get_condition(&done, "Progressing")
            .unwrap()
            .reason
            .as_deref(),
        Some(reason::NEW_RS_AVAILABLE)
    );
    assert_eq!(requeue_after(&stuck, &done, now()), None);
}

/// DP26: pausing and resuming show as Progressing Unknown.
#[test]
fn pause_and_resume_conditions() {
    let mut paused = deployment(3, None);
    paused.spec.as_mut().unwrap().paused = Some(true);
    assert_eq!(
        paused_condition(&paused, now()).unwrap().reason.as_deref(),
        Some(reason::PAUSED)
    );
    let mut status = DeploymentStatus::default();
    set_condition(&mut status, paused_condition(&paused, now()).unwrap());
    let resumed = deployment(3, Some(status));
    assert_eq!(
        paused_condition(&resumed, now()).unwrap().reason.as_deref(),
        Some(reason::RESUMED)
    );
}
