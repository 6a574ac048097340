//! The volume binder's decisions, as pure functions of a claim or a volume and what it points at.
//!
//! Kubernetes counterpart: `pkg/controller/volume/persistentvolume/pv_controller.go`
//! (`syncClaim`, `syncUnboundClaim`, `syncBoundClaim`, `syncVolume`, `reclaimVolume`) and
//! `index.go` (`findBestMatchForClaim`). The rules:
//!
//! - an unbound claim takes the volume whose `claimRef` already names it; else the smallest
//!   Available volume of its class with room and the access modes it asks for (under
//!   WaitForFirstConsumer, only once a pod using it has a node, and only a volume that node can
//!   reach); else, when its class's provisioner is minik's local-path, a new volume is provisioned
//!   on the node of the first pod that uses it (its consumer); else it stays Pending;
//! - binding writes the volume's `claimRef` first, then the claim's `volumeName`, then the
//!   claim's status (Bound, with the volume's capacity and modes) — each step one write, so a
//!   binder killed in between resumes from what is stored;
//! - a volume with no `claimRef` is Available; bound to a claim that names it, Bound; bound to a
//!   claim that is gone (its uid no longer stored), Released, and then deleted under the reclaim
//!   policy `Delete` or kept under `Retain`;
//! - a claim whose volume disappeared is Lost.

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use minik_api::storage::{HOSTNAME_LABEL, LOCAL_PATH_PROVISIONER};

/// What to do for a claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimStep {
    /// Nothing now; the reason is the claim's state (logged).
    Wait(&'static str),
    /// Write the volume's `claimRef` to this claim.
    ClaimVolume(String),
    /// Write the claim's `spec.volumeName` (the volume already names it).
    SetVolumeName(String),
    /// Write the claim's status: Bound to this volume.
    MarkBound(String),
    /// Write the claim's status: Lost (its volume is gone).
    MarkLost,
    /// Create a local-path volume for the claim on this node.
    Provision { node: String },
}

/// What to do for a volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VolumeStep {
    Nothing,
    /// Write `status.phase`.
    SetPhase(&'static str),
    /// A released volume under `persistentVolumeReclaimPolicy: Delete`.
    Delete,
}

/// The next step for `claim` (`syncClaim`).
pub fn claim_step(
    claim: &PersistentVolumeClaim,
    volumes: &[&PersistentVolume],
    class: Option<&StorageClass>,
    consumer_node: Option<&str>,
) -> ClaimStep {
    if claim.metadata.deletion_timestamp.is_some() {
        return ClaimStep::Wait("claim is being deleted");
    }
    let spec = claim.spec.clone().unwrap_or_default();
    let phase = claim.status.as_ref().and_then(|s| s.phase.as_deref());
    if let Some(volume_name) = spec.volume_name.filter(|n| !n.is_empty()) {
        let Some(volume) = volumes
            .iter()
            .find(|v| v.metadata.name.as_deref() == Some(&volume_name))
        else {
            return if phase == Some("Lost") {
                ClaimStep::Wait("volume lost")
            } else {
                ClaimStep::MarkLost
            };
        };
        let claim_ref = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        return match claim_ref {
            None => ClaimStep::ClaimVolume(volume_name),
            Some(_) if names_claim(volume, claim) && phase != Some("Bound") => {
                ClaimStep::MarkBound(volume_name)
            }
            Some(_) if names_claim(volume, claim) => ClaimStep::Wait("bound"),
            Some(_) => ClaimStep::Wait("volume already bound to another claim"),
        };
    }
    if let Some(volume) = volumes.iter().find(|v| names_claim(v, claim)) {
        let name = volume.metadata.name.clone().unwrap_or_default();
        return ClaimStep::SetVolumeName(name);
    }
    let wait_for_consumer = class
        .and_then(|c| c.volume_binding_mode.as_deref())
        .is_some_and(|mode| mode == "WaitForFirstConsumer");
    if wait_for_consumer && consumer_node.is_none() {
        return ClaimStep::Wait("waiting for first consumer to be created before binding");
    }
    if let Some(volume) = best_match(claim, volumes, consumer_node) {
        return ClaimStep::ClaimVolume(volume.metadata.name.clone().unwrap_or_default());
    }
    match (class, consumer_node) {
        (Some(class), Some(node)) if class.provisioner == LOCAL_PATH_PROVISIONER => {
            ClaimStep::Provision {
                node: node.to_string(),
            }
        }
        (Some(class), None) if class.provisioner == LOCAL_PATH_PROVISIONER => {
            // rancher's local-path needs a node: it provisions for the first consumer only.
            ClaimStep::Wait("waiting for a pod using the claim to be scheduled")
        }
        _ => ClaimStep::Wait("no persistent volumes available for this claim"),
    }
}

/// Whether the volume's `claimRef` names this claim (same namespace and name, and the same uid
/// when the reference carries one).
pub fn names_claim(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(reference) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    let uid_ok = reference
        .uid
        .as_deref()
        .is_none_or(|uid| uid.is_empty() || Some(uid) == claim.metadata.uid.as_deref());
    reference.namespace == claim.metadata.namespace
        && reference.name == claim.metadata.name
        && uid_ok
}

/// `findBestMatchForClaim`: the smallest Available volume of the claim's class that is large
/// enough, offers every access mode asked for and (with a consumer) reaches the consumer's node.
fn best_match<'a>(
    claim: &PersistentVolumeClaim,
    volumes: &[&'a PersistentVolume],
    node: Option<&str>,
) -> Option<&'a PersistentVolume> {
    let spec = claim.spec.clone().unwrap_or_default();
    let class = spec.storage_class_name.clone().unwrap_or_default();
    let wanted = storage_of(spec.resources.as_ref().and_then(|r| r.requests.as_ref()));
    let modes = spec.access_modes.clone().unwrap_or_default();
    volumes
        .iter()
        .copied()
        .filter(|v| v.metadata.deletion_timestamp.is_none())
        .filter(|v| v.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available"))
        .filter(|v| {
            let vs = v.spec.clone().unwrap_or_default();
            let offered = vs.access_modes.unwrap_or_default();
            vs.claim_ref.is_none()
                && vs.storage_class_name.unwrap_or_default() == class
                && storage_of(vs.capacity.as_ref()) >= wanted
                && modes.iter().all(|m| offered.contains(m))
                && node.is_none_or(|node| reaches(v, node))
        })
        .min_by(|a, b| {
            let size = |v: &PersistentVolume| {
                storage_of(v.spec.as_ref().and_then(|s| s.capacity.as_ref()))
            };
            size(a).total_cmp(&size(b))
        })
}

/// Whether a volume's node affinity lets `node` use it (no affinity: every node). Only the
/// hostname terms minik's provisioner writes are understood; other terms are taken as a match.
pub fn reaches(volume: &PersistentVolume, node: &str) -> bool {
    let terms = volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
        .map(|r| r.node_selector_terms.clone())
        .unwrap_or_default();
    if terms.is_empty() {
        return true;
    }
    terms.iter().any(|term| {
        term.match_expressions.iter().flatten().all(|e| {
            e.key != HOSTNAME_LABEL
                || (e.operator == "In" && e.values.iter().flatten().any(|v| v == node))
        })
    })
}

/// The `storage` quantity of a capacity or request map, in bytes (0 if missing or malformed).
pub fn storage_of(
    map: Option<
        &std::collections::BTreeMap<
            String,
            k8s_openapi::apimachinery::pkg::api::resource::Quantity,
        >,
    >,
) -> f64 {
    map.and_then(|m| m.get("storage"))
        .map_or(0.0, |q| bytes(&q.0))
}

/// A quantity in bytes: `1Gi`, `500Mi`, `2G`, `1500`.
pub fn bytes(text: &str) -> f64 {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(end);
    let factor = match suffix {
        "" => 1.0,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        _ => return 0.0,
    };
    number.parse::<f64>().unwrap_or(0.0) * factor
}

/// The next step for `volume` (`syncVolume`); `claim` is the claim its `claimRef` names, if it
/// exists.
pub fn volume_step(volume: &PersistentVolume, claim: Option<&PersistentVolumeClaim>) -> VolumeStep {
    if volume.metadata.deletion_timestamp.is_some() {
        return VolumeStep::Nothing;
    }
    let spec = volume.spec.clone().unwrap_or_default();
    let phase = volume
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("");
    let set = |wanted: &'static str| {
        if phase == wanted {
            VolumeStep::Nothing
        } else {
            VolumeStep::SetPhase(wanted)
        }
    };
    let Some(reference) = &spec.claim_ref else {
        return set("Available");
    };
    let bound_uid = reference.uid.clone().unwrap_or_default();
    match claim {
        Some(claim) if names_claim(volume, claim) => {
            let name = volume.metadata.name.as_deref();
            let claims_us = claim.spec.as_ref().and_then(|s| s.volume_name.as_deref()) == name;
            set(if claims_us { "Bound" } else { "Available" })
        }
        // Pre-bound to a claim that does not exist yet.
        None if bound_uid.is_empty() => set("Available"),
        _ if phase != "Released" => VolumeStep::SetPhase("Released"),
        _ if spec.persistent_volume_reclaim_policy.as_deref() == Some("Delete") => {
            VolumeStep::Delete
        }
        _ => VolumeStep::Nothing,
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
