//! Tests of the binder's decisions: waiting for a consumer, provisioning, static matching, the
//! three binding writes, and a volume's phases through release and reclaim.

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use minik_api::storage::default_storage_class;
use serde_json::json;

use super::*;

fn claim(extra: serde_json::Value) -> PersistentVolumeClaim {
    let mut value = json!({
        "metadata": {"name": "data-web-0", "namespace": "default", "uid": "c1"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                 "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"}});
    merge(&mut value, extra);
    serde_json::from_value(value).unwrap()
}

fn volume(name: &str, extra: serde_json::Value) -> PersistentVolume {
    let mut value = json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                 "capacity": {"storage": "2Gi"}, "hostPath": {"path": "/tmp/x"},
                 "persistentVolumeReclaimPolicy": "Delete"},
        "status": {"phase": "Available"}});
    merge(&mut value, extra);
    serde_json::from_value(value).unwrap()
}

fn merge(base: &mut serde_json::Value, extra: serde_json::Value) {
    if let (Some(base), serde_json::Value::Object(extra)) = (base.as_object_mut(), extra) {
        for (key, value) in extra {
            match (base.get_mut(&key), value) {
                (Some(serde_json::Value::Object(inner)), serde_json::Value::Object(more)) => {
                    inner.extend(more)
                }
                (_, value) => {
                    base.insert(key, value);
                }
            }
        }
    }
}

fn bound_ref() -> serde_json::Value {
    json!({"spec": {"claimRef": {"namespace": "default", "name": "data-web-0", "uid": "c1"}}})
}

#[test]
fn a_wait_for_first_consumer_claim_waits_then_is_provisioned_on_the_consumers_node() {
    let class = default_storage_class();
    let pvc = claim(json!({}));
    assert!(matches!(
        claim_step(&pvc, &[], Some(&class), None),
        ClaimStep::Wait(_)
    ));
    assert_eq!(
        claim_step(&pvc, &[], Some(&class), Some("node-2")),
        ClaimStep::Provision {
            node: "node-2".into()
        }
    );
}

#[test]
fn an_available_volume_that_fits_is_claimed_before_provisioning_the_smallest_first() {
    let class = default_storage_class();
    let pvc = claim(json!({}));
    let big = volume("big", json!({"spec": {"capacity": {"storage": "10Gi"}}}));
    let small = volume("small", json!({}));
    let tiny = volume("tiny", json!({"spec": {"capacity": {"storage": "500Mi"}}}));
    let rwx = volume("rwx", json!({"spec": {"accessModes": ["ReadOnlyMany"]}}));
    let volumes = [&big, &small, &tiny, &rwx];
    assert_eq!(
        claim_step(&pvc, &volumes, Some(&class), Some("node-1")),
        ClaimStep::ClaimVolume("small".into())
    );
}

#[test]
fn a_volume_on_another_node_is_not_matched() {
    let class = default_storage_class();
    let pvc = claim(json!({}));
    let elsewhere = volume(
        "elsewhere",
        json!({"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}]}}}}),
    );
    assert!(reaches(&elsewhere, "node-1"));
    assert_eq!(
        claim_step(&pvc, &[&elsewhere], Some(&class), Some("node-2")),
        ClaimStep::Provision {
            node: "node-2".into()
        }
    );
}

#[test]
fn binding_is_three_writes_volume_then_claim_then_claim_status() {
    let claimed = volume("pv-1", bound_ref());
    let pvc = claim(json!({}));
    assert_eq!(
        claim_step(&pvc, &[&claimed], None, None),
        ClaimStep::SetVolumeName("pv-1".into())
    );
    let named = claim(json!({"spec": {"volumeName": "pv-1"}}));
    assert_eq!(
        claim_step(&named, &[&claimed], None, None),
        ClaimStep::MarkBound("pv-1".into())
    );
    let bound = claim(json!({"spec": {"volumeName": "pv-1"}, "status": {"phase": "Bound"}}));
    assert_eq!(
        claim_step(&bound, &[&claimed], None, None),
        ClaimStep::Wait("bound")
    );
    assert_eq!(claim_step(&bound, &[], None, None), ClaimStep::MarkLost);
    let free = volume("pv-1", json!({}));
    assert_eq!(
        claim_step(&named, &[&free], None, None),
        ClaimStep::ClaimVolume("pv-1".into())
    );
}

#[test]
fn a_volume_goes_available_bound_released_then_deleted_or_kept() {
    let free = volume("pv-1", json!({"status": {"phase": "Pending"}}));
    assert_eq!(volume_step(&free, None), VolumeStep::SetPhase("Available"));
    let claimed = volume("pv-1", bound_ref());
    let bound_claim = claim(json!({"spec": {"volumeName": "pv-1"}}));
    assert_eq!(
        volume_step(&claimed, Some(&bound_claim)),
        VolumeStep::SetPhase("Bound")
    );
    assert_eq!(
        volume_step(&claimed, None),
        VolumeStep::SetPhase("Released")
    );
    let recreated = claim(json!({"metadata": {"uid": "c2"}}));
    assert_eq!(
        volume_step(&claimed, Some(&recreated)),
        VolumeStep::SetPhase("Released")
    );
    let mut released = claimed.clone();
    released.status.as_mut().unwrap().phase = Some("Released".into());
    assert_eq!(volume_step(&released, None), VolumeStep::Delete);
    released
        .spec
        .as_mut()
        .unwrap()
        .persistent_volume_reclaim_policy = Some("Retain".into());
    assert_eq!(volume_step(&released, None), VolumeStep::Nothing);
}

#[test]
fn quantities_compare_in_bytes() {
    assert_eq!(bytes("1Gi"), 1024.0 * 1024.0 * 1024.0);
    assert!(bytes("1G") < bytes("1Gi"));
    assert_eq!(bytes("1.5k"), 1500.0);
}
