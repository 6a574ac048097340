//! The PersistentVolume controller (the binder) and minik's local-path provisioner.
//!
//! Kubernetes counterpart: `pkg/controller/volume/persistentvolume/pv_controller_base.go` and
//! `pv_controller.go` (the `persistentvolume-binder` controller: one queue of claims and one of
//! volumes), with the role of an external provisioner (rancher's local-path-provisioner, which
//! kind and k3s ship) folded in: a claim of a class whose provisioner is `minik.dev/local-path` gets
//! a `local` volume under the node's data directory, with node affinity to the node its first
//! consumer was scheduled to ([`provision`]). The decisions are pure ([`decide`]); here they meet
//! the stores and the API. Keys: `namespace/name` for a claim, a bare `name` for a volume.
//!
//! minik simplifies: no `kubernetes.io/pvc-protection` finalizer (a claim in use can be deleted),
//! no expansion, no Events; a deleted local-path volume's directory stays on the node's disk
//! (upstream's provisioner runs a helper pod to remove it).

pub mod decide;
pub mod provision;

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use minik_api::storage::{BIND_COMPLETED_ANNOTATION, SELECTED_NODE_ANNOTATION};
use minik_api::ObjectKey;
use minik_client::{Api, Client, DeleteParams, Patch, Store, WorkQueue};
use serde_json::json;
use tracing::{debug, info};

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};
use decide::{ClaimStep, VolumeStep};

/// The controller: four stores, one queue for claims and volumes, the client.
pub struct VolumeController {
    claims: Store<PersistentVolumeClaim>,
    volumes: Store<PersistentVolume>,
    classes: Store<StorageClass>,
    pods: Store<Pod>,
    queue: Arc<WorkQueue>,
    client: Client,
}

impl VolumeController {
    /// Registers the handlers on the claim, volume, class and pod informers.
    pub fn new(informers: &SharedInformers, client: Client) -> Arc<Self> {
        let claim_informer = informers.informer::<PersistentVolumeClaim>();
        let volume_informer = informers.informer::<PersistentVolume>();
        let pod_informer = informers.informer::<Pod>();
        let controller = Arc::new(VolumeController {
            claims: claim_informer.store(),
            volumes: volume_informer.store(),
            classes: informers.informer::<StorageClass>().store(),
            pods: pod_informer.store(),
            queue: Arc::new(WorkQueue::new()),
            client,
        });
        let queue = controller.queue.clone();
        claim_informer.add_handler(move |change: &Change<PersistentVolumeClaim>| {
            let claim = change.object();
            queue.add(ObjectKey::of(&claim.metadata));
            // A deleted claim releases its volume; a bound one may move its volume to Bound.
            if let Some(volume) = claim.spec.as_ref().and_then(|s| s.volume_name.clone()) {
                queue.add(ObjectKey::cluster(volume));
            }
        });
        let queue = controller.queue.clone();
        volume_informer.add_handler(move |change: &Change<PersistentVolume>| {
            let volume = change.object();
            queue.add(ObjectKey::cluster(
                volume.metadata.name.clone().unwrap_or_default(),
            ));
            if let Some(claim) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) {
                let (ns, name) = (claim.namespace.clone(), claim.name.clone());
                queue.add(ObjectKey::new(
                    ns.unwrap_or_default(),
                    name.unwrap_or_default(),
                ));
            }
        });
        let queue = controller.queue.clone();
        pod_informer.add_handler(move |change: &Change<Pod>| {
            // A pod scheduled with a claim is the claim's first consumer.
            let pod = change.object();
            if pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_ref())
                .is_none()
            {
                return;
            }
            let namespace = pod.metadata.namespace.clone().unwrap_or_default();
            for claim in claims_of(pod) {
                queue.add(ObjectKey::new(namespace.clone(), claim));
            }
        });
        controller
    }

    /// Reconciles one claim or volume.
    pub async fn sync_key(&self, key: &ObjectKey) -> minik_client::Result<()> {
        match &key.namespace {
            Some(_) => self.sync_claim(key).await,
            None => self.sync_volume(key).await,
        }
    }

    async fn sync_claim(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let Some(claim) = self.claims.get(key) else {
            return Ok(());
        };
        let volumes = self.volumes.state();
        let volumes: Vec<&PersistentVolume> = volumes.iter().map(|v| &**v).collect();
        let class_name = claim
            .spec
            .as_ref()
            .and_then(|s| s.storage_class_name.clone());
        let class = class_name
            .filter(|n| !n.is_empty())
            .and_then(|n| self.classes.get(&ObjectKey::cluster(n)));
        let node = self.consumer_node(&claim);
        let step = decide::claim_step(&claim, &volumes, class.as_deref(), node.as_deref());
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(
            self.client.clone(),
            key.namespace.as_deref().unwrap_or("default"),
        );
        let pvs: Api<PersistentVolume> = Api::all(self.client.clone());
        match step {
            ClaimStep::Wait(why) => {
                debug!(claim = %key, why, "claim waits");
                Ok(())
            }
            ClaimStep::ClaimVolume(volume) => {
                let reference = provision::claim_reference(&claim);
                let body = json!({"spec": {"claimRef": reference}});
                pvs.patch(&volume, &Patch::Merge(body)).await?;
                info!(claim = %key, %volume, "volume claimed");
                Ok(())
            }
            ClaimStep::SetVolumeName(volume) => {
                let body = json!({"metadata": {"annotations": {BIND_COMPLETED_ANNOTATION: "yes"}},
                                  "spec": {"volumeName": volume}});
                claims.patch(&key.name, &Patch::Merge(body)).await?;
                info!(claim = %key, %volume, "claim bound to volume");
                Ok(())
            }
            ClaimStep::MarkBound(volume) => {
                let Some(pv) = self.volumes.get(&ObjectKey::cluster(volume.clone())) else {
                    return Ok(());
                };
                let spec = pv.spec.clone().unwrap_or_default();
                let body = json!({"status": {"phase": "Bound", "capacity": spec.capacity,
                                             "accessModes": spec.access_modes}});
                claims.patch_status(&key.name, &Patch::Merge(body)).await?;
                info!(claim = %key, %volume, "claim Bound");
                Ok(())
            }
            ClaimStep::MarkLost => {
                let body = json!({"status": {"phase": "Lost"}});
                claims.patch_status(&key.name, &Patch::Merge(body)).await?;
                info!(claim = %key, "claim Lost: its volume is gone");
                Ok(())
            }
            ClaimStep::Provision { node } => {
                let Some(class) = class else { return Ok(()) };
                let volume = provision::local_path_volume(&claim, &class, &node);
                match pvs.create(&volume).await {
                    Ok(_) => {
                        info!(claim = %key, volume = ?volume.metadata.name, %node, "provisioned local-path volume")
                    }
                    Err(error) if error.is_already_exists() => {}
                    Err(error) => return Err(error),
                }
                Ok(())
            }
        }
    }

    /// The node of the claim's first consumer: the scheduler's `selected-node` annotation, else
    /// the node of a pod that mounts the claim and was scheduled.
    fn consumer_node(&self, claim: &PersistentVolumeClaim) -> Option<String> {
        let selected = claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SELECTED_NODE_ANNOTATION).cloned());
        if selected.is_some() {
            return selected;
        }
        let name = claim.metadata.name.clone().unwrap_or_default();
        self.pods
            .state()
            .into_iter()
            .filter(|pod| pod.metadata.namespace == claim.metadata.namespace)
            .filter(|pod| claims_of(pod).contains(&name))
            .find_map(|pod| pod.spec.as_ref()?.node_name.clone())
    }

    async fn sync_volume(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let Some(volume) = self.volumes.get(key) else {
            return Ok(());
        };
        let claim = self.claim_named_by(&volume).await?;
        let step = decide::volume_step(&volume, claim.as_ref());
        let pvs: Api<PersistentVolume> = Api::all(self.client.clone());
        match step {
            VolumeStep::Nothing => Ok(()),
            VolumeStep::SetPhase(phase) => {
                let body = json!({"status": {"phase": phase}});
                pvs.patch_status(&key.name, &Patch::Merge(body)).await?;
                info!(volume = %key, phase, "volume phase");
                Ok(())
            }
            VolumeStep::Delete => {
                let params = DeleteParams {
                    preconditions_uid: volume.metadata.uid.clone(),
                    ..DeleteParams::default()
                };
                match pvs.delete(&key.name, &params).await {
                    Ok(_) => info!(volume = %key, "released volume deleted (reclaimPolicy Delete)"),
                    Err(error) if error.is_not_found() || error.is_conflict() => {}
                    Err(error) => return Err(error),
                }
                Ok(())
            }
        }
    }

    /// The claim a volume's `claimRef` names. A claim missing from the store is read from the API
    /// before the volume is called Released (the informer may lag, as upstream double-checks).
    async fn claim_named_by(
        &self,
        volume: &PersistentVolume,
    ) -> minik_client::Result<Option<PersistentVolumeClaim>> {
        let Some(reference) = volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
            return Ok(None);
        };
        let namespace = reference.namespace.clone().unwrap_or_default();
        let name = reference.name.clone().unwrap_or_default();
        let key = ObjectKey::new(namespace.clone(), name.clone());
        if let Some(claim) = self.claims.get(&key) {
            return Ok(Some((*claim).clone()));
        }
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), &namespace);
        claims.get_opt(&name).await
    }
}

impl Controller for VolumeController {
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        "persistentvolume-binder"
    }

    fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    async fn sync(&self, key: &ObjectKey) -> minik_client::Result<()> {
        self.sync_key(key).await
    }
}

/// The claims a pod mounts.
pub fn claims_of(pod: &Pod) -> Vec<String> {
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.clone())
        .collect()
}
