//! Tests of the Deployment's ReplicaSet bookkeeping: hash, new RS, revisions, history.

use super::*;
use k8s_openapi::api::apps::v1::{DeploymentSpec, ReplicaSetStatus};
use minik_api::core::{Container, PodSpec};
use minik_api::meta::Time;

fn template(image: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "web".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    }
}

fn deployment(image: &str) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some("d-uid".into()),
            annotations: Some(
                [
                    ("team".to_string(), "a".to_string()),
                    (REVISION.to_string(), "7".to_string()),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(3),
            selector: LabelSelector {
                match_labels: Some([("app".to_string(), "web".to_string())].into()),
                ..LabelSelector::default()
            },
            template: template(image),
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

const ROLLOUT: Rollout = Rollout {
    replicas: 3,
    max_surge: 1,
    max_unavailable: 0,
};

/// DP18: a stable hash over the safe alphabet, changed by the template and by collisionCount.
#[test]
fn the_hash_is_stable_safe_and_moves_with_the_template() {
    let hash = pod_template_hash(&template("v1"), None);
    assert_eq!(hash, pod_template_hash(&template("v1"), None));
    assert!(
        hash.chars()
            .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
        "{hash}"
    );
    assert_ne!(hash, pod_template_hash(&template("v2"), None));
    assert_ne!(hash, pod_template_hash(&template("v1"), Some(1)));
}

/// DP18: name `DEPLOY-HASH`, the hash label on selector, labels and template, a controller ref.
#[test]
fn a_new_replica_set_carries_the_hash_everywhere() {
    let d = deployment("v1");
    let rs = new_replica_set(&d, 1, 8, &ROLLOUT);
    let hash = pod_template_hash(&d.spec.as_ref().unwrap().template, None);
    assert_eq!(rs.metadata.name, Some(format!("web-{hash}")));
    let spec = rs.spec.as_ref().unwrap();
    assert_eq!(
        spec.selector.match_labels.as_ref().unwrap()[POD_TEMPLATE_HASH],
        hash
    );
    assert_eq!(
        spec.template
            .as_ref()
            .unwrap()
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .as_ref()
            .unwrap()[POD_TEMPLATE_HASH],
        hash
    );
    assert_eq!(
        rs.metadata.labels.as_ref().unwrap()[POD_TEMPLATE_HASH],
        hash
    );
    let annotations = rs.metadata.annotations.unwrap();
    assert_eq!(annotations[REVISION], "8");
    assert_eq!(
        annotations["team"], "a",
        "deployment annotations are copied"
    );
    assert_eq!(
        (
            annotations[DESIRED_REPLICAS].as_str(),
            annotations[MAX_REPLICAS].as_str()
        ),
        ("3", "4")
    );
    assert_eq!(rs.metadata.owner_references.unwrap()[0].kind, "Deployment");
    assert!(equal_ignore_hash(
        spec.template.as_ref().unwrap(),
        &d.spec.unwrap().template
    ));
}

/// DP19: the oldest RS with the same template is the new one; rollback revives it.
#[test]
fn the_oldest_replica_set_with_the_template_is_the_new_one() {
    let mut older = new_replica_set(&deployment("v1"), 0, 1, &ROLLOUT);
    older.metadata.creation_timestamp = Some(Time("2026-01-01T00:00:00Z".parse().unwrap()));
    older.metadata.name = Some("older".into());
    let mut newer = older.clone();
    newer.metadata.creation_timestamp = Some(Time("2026-01-02T00:00:00Z".parse().unwrap()));
    newer.metadata.name = Some("newer".into());
    let other = new_replica_set(&deployment("v2"), 0, 2, &ROLLOUT);
    let found = find_new(&deployment("v1"), &[&newer, &other, &older]);
    assert_eq!(
        found.and_then(|rs| rs.metadata.name.as_deref()),
        Some("older")
    );
    assert!(find_new(&deployment("v3"), &[&newer, &other]).is_none());
}

/// DP20: the revision is only raised, and the old number goes into the history.
#[test]
fn a_reused_replica_set_gets_a_higher_revision_and_a_history() {
    let rs = new_replica_set(&deployment("v1"), 0, 2, &ROLLOUT);
    let (annotations, changed) = new_rs_annotations(&deployment("v1"), &rs.metadata, 5, &ROLLOUT);
    assert!(changed);
    assert_eq!(
        (
            annotations[REVISION].as_str(),
            annotations[REVISION_HISTORY].as_str()
        ),
        ("5", "2")
    );
    let (same, changed) = new_rs_annotations(&deployment("v1"), &rs.metadata, 1, &ROLLOUT);
    assert_eq!(same[REVISION], "2", "never lowered");
    assert!(!changed);
}

/// DP29: beyond the limit, the lowest revisions go, unless they still have pods.
#[test]
fn history_cleanup_keeps_the_limit_and_anything_with_pods() {
    let old = |revision: i64, spec: i32| {
        let mut rs = new_replica_set(
            &deployment(&format!("v{revision}")),
            spec,
            revision,
            &ROLLOUT,
        );
        rs.status = Some(ReplicaSetStatus {
            replicas: spec,
            ..ReplicaSetStatus::default()
        });
        rs
    };
    let (one, two, three, four) = (old(1, 0), old(2, 1), old(3, 0), old(4, 0));
    let deleted = history_to_delete(&[&four, &three, &two, &one], 1);
    let names: Vec<_> = deleted.iter().map(|rs| revision(&rs.metadata)).collect();
    assert_eq!(names, [1, 3], "revision 2 still has a pod");
    assert!(history_to_delete(&[&four, &three], 2).is_empty());
}
