//! persistentVolumeClaim volumes: from a pod's claim to the directory of the volume it is bound to.
//!
//! Kubernetes counterpart: the volume manager's desired-state populator
//! (`pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go`,
//! `getPVCExtractPV`: the claim must exist, not be terminating, and be Bound; its volume is then
//! read and handed to the plugin) and the `local` and `hostPath` plugins (`pkg/volume/local`,
//! `pkg/volume/hostpath`). A claim that is not bound yet holds the pod back: the sandbox fails and
//! is retried, as upstream's mount waits.
//!
//! minik's volumes: a `hostPath` volume is its path; a `local` volume is its path, except one made
//! by minik's local-path provisioner (annotation `pv.kubernetes.io/provisioned-by:
//! minik.dev/local-path`), whose path is relative to this node's data directory (minik runs without
//! root); that directory is created here, on first mount, and kept after the pod.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use minik_api::storage::{LOCAL_PATH_PROVISIONER, PROVISIONED_BY_ANNOTATION};
use minik_client::{Api, Client};

/// Resolves every persistentVolumeClaim volume of `pod` to a directory (by volume name), or says
/// why one cannot be mounted yet.
pub async fn resolve(
    client: &Client,
    root: &Path,
    pod: &Pod,
) -> Result<BTreeMap<String, PathBuf>, String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let mut resolved = BTreeMap::new();
    for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
        let Some(source) = &volume.persistent_volume_claim else {
            continue;
        };
        let name = &source.claim_name;
        let claim = claims
            .get_opt(name)
            .await
            .map_err(|e| format!("persistentvolumeclaim {name:?}: {e}"))?
            .ok_or_else(|| format!("persistentvolumeclaim {name:?} not found"))?;
        let volume_name = bound_volume(&claim)
            .ok_or_else(|| format!("persistentvolumeclaim {name:?} is not bound"))?;
        let pv = volumes
            .get(&volume_name)
            .await
            .map_err(|e| format!("persistentvolume {volume_name:?}: {e}"))?;
        let path = volume_path(root, &pv)?;
        std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        resolved.insert(volume.name.clone(), path);
    }
    Ok(resolved)
}

/// The volume a claim is bound to: `spec.volumeName` once the claim is Bound and not terminating.
pub fn bound_volume(claim: &PersistentVolumeClaim) -> Option<String> {
    let phase = claim.status.as_ref().and_then(|s| s.phase.as_deref());
    if claim.metadata.deletion_timestamp.is_some() || phase != Some("Bound") {
        return None;
    }
    claim
        .spec
        .as_ref()?
        .volume_name
        .clone()
        .filter(|n| !n.is_empty())
}

/// Where a volume's data lives on this node (pure).
pub fn volume_path(root: &Path, pv: &PersistentVolume) -> Result<PathBuf, String> {
    let name = pv.metadata.name.as_deref().unwrap_or_default();
    let spec = pv.spec.clone().unwrap_or_default();
    let local_path = pv
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(PROVISIONED_BY_ANNOTATION))
        .is_some_and(|p| p == LOCAL_PATH_PROVISIONER);
    match (spec.local, spec.host_path) {
        (Some(local), _) if local_path => {
            let relative = local.path.trim_start_matches('/');
            let relative = Path::new(relative);
            let plain = relative
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !plain || relative.as_os_str().is_empty() {
                return Err(format!(
                    "persistentvolume {name:?}: bad local path {:?}",
                    local.path
                ));
            }
            Ok(root.join(relative))
        }
        (Some(local), _) => Ok(PathBuf::from(local.path)),
        (None, Some(host)) => Ok(PathBuf::from(host.path)),
        (None, None) => Err(format!(
            "persistentvolume {name:?}: minik mounts only local and hostPath volumes"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(annotated: bool, source: serde_json::Value) -> PersistentVolume {
        let annotations = if annotated {
            json!({PROVISIONED_BY_ANNOTATION: LOCAL_PATH_PROVISIONER})
        } else {
            json!({})
        };
        serde_json::from_value(
            json!({"metadata": {"name": "pv", "annotations": annotations},
                                      "spec": source}),
        )
        .unwrap()
    }

    #[test]
    fn a_local_path_volume_lives_under_the_node_data_dir_others_where_they_say() {
        let root = Path::new("/data/node-1");
        let provisioned = pv(
            true,
            json!({"local": {"path": "/local-path/pvc-1_default_data"}}),
        );
        assert_eq!(
            volume_path(root, &provisioned).unwrap(),
            PathBuf::from("/data/node-1/local-path/pvc-1_default_data")
        );
        let escape = pv(true, json!({"local": {"path": "/../../etc"}}));
        assert!(volume_path(root, &escape).is_err());
        let host = pv(false, json!({"hostPath": {"path": "/srv/data"}}));
        assert_eq!(
            volume_path(root, &host).unwrap(),
            PathBuf::from("/srv/data")
        );
        assert!(volume_path(
            root,
            &pv(false, json!({"nfs": {"server": "x", "path": "/"}}))
        )
        .is_err());
    }

    #[test]
    fn only_a_bound_claim_names_its_volume() {
        let claim = |phase: &str| -> PersistentVolumeClaim {
            serde_json::from_value(
                json!({"spec": {"volumeName": "pv-1"}, "status": {"phase": phase}}),
            )
            .unwrap()
        };
        assert_eq!(bound_volume(&claim("Bound")), Some("pv-1".into()));
        assert_eq!(bound_volume(&claim("Pending")), None);
    }
}
