//! The pod worker's volume steps: write configMap, secret, downwardAPI and projected volumes
//! before the containers start (and again after every change), and release a finished pod's IP
//! and volumes.
//!
//! Kubernetes counterpart: the volume manager's `WaitForAttachAndMount` and the periodic remount
//! of these volumes (`pkg/kubelet/volumemanager/reconciler`, `SetUp` of each plugin, which calls
//! `AtomicWriter.Write`), and for a finished pod `SyncTerminatedPod` in `pkg/kubelet/kubelet.go`
//! (its sandbox and volumes are torn down; its status stays). A volume that cannot be written
//! holds every container back with a `FailedMount` event; once written, a later failure keeps the
//! old files (as upstream).

use k8s_openapi::api::core::v1::Pod;
use tracing::{info, warn};

use crate::atomic_writer;
use crate::pod_worker::PodWorker;
use crate::projection::{is_projected, payload};
use crate::volumes;

impl PodWorker {
    /// Writes every computed volume; false while one of them could never be written.
    pub(crate) fn sync_config_volumes(&mut self, pod: &Pod) -> bool {
        let facts = self.pod_context(pod).facts();
        let dir = volumes::pod_dir(&self.ctx.root_dir, &self.uid).join("volumes");
        let mut failure = None;
        for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            if !is_projected(volume) {
                continue;
            }
            let written =
                payload(pod, volume, &facts, self.ctx.sources.as_ref()).and_then(|mut files| {
                    self.add_tokens(volume, &mut files);
                    atomic_writer::write(&dir.join(&volume.name), &files).map_err(|e| e.to_string())
                });
            match written {
                Ok(true) if self.volumes_ready => {
                    info!(pod = %self.key, volume = %volume.name, "updated volume files")
                }
                Ok(_) => {}
                Err(error) => {
                    failure.get_or_insert(format!(
                        "MountVolume.SetUp failed for volume \"{}\" : {error}",
                        volume.name
                    ));
                }
            }
        }
        match failure {
            Some(message) => {
                if self.mount_error.as_ref() != Some(&message) {
                    warn!(pod = %self.key, %message, "volume not ready");
                    self.ctx
                        .reporter
                        .event(pod, None, "Warning", "FailedMount", &message);
                    self.mount_error = Some(message);
                }
            }
            None => {
                self.mount_error = None;
                self.volumes_ready = true;
            }
        }
        self.volumes_ready
    }

    /// A pod that reached Succeeded or Failed gives back its IP and volumes, once; its status
    /// (IP included) stays as it was.
    pub(crate) async fn release_finished(&mut self) {
        let running = self
            .containers()
            .iter()
            .any(|c| matches!(c.state, crate::cri::ContainerState::Running { .. }));
        // A sidecar still running keeps the IP until it is stopped (with the pod).
        if self.released || running {
            return;
        }
        self.released = true;
        self.stop_watching();
        info!(pod = %self.key, "pod finished: releasing its IP and volumes");
        self.ctx.sandbox.teardown(&self.uid).await;
        self.sandbox = None;
    }
}
