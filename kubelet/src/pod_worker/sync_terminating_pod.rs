//! The end of a pod: stop the main containers in parallel, then the sidecars in reverse order, report the final status, release the
//! sandbox, remove every container record and the pod's logs, and remove the pod object. Nothing
//! of a deleted pod stays on the node (`kubelet/tests/cleanup.rs` checks it on real processes).
//!
//! Kubernetes counterpart: `SyncTerminatingPod` and `SyncTerminatedPod` in
//! `pkg/kubelet/kubelet.go`, `killPodWithSyncResult` / `killContainersWithSyncResult` in
//! `pkg/kubelet/kuberuntime/kuberuntime_container.go` (one goroutine per container, T5), and
//! the status manager's final `DELETE` with grace 0 and a uid precondition (D6).
//!
//! The grace can shrink while we wait: a second `kubectl delete --grace-period=N` reaches us as
//! another MODIFIED event with a smaller `deletionGracePeriodSeconds`, and a force delete as a
//! DELETED event; both are fed into a watch channel every container's stop sequence follows
//! (see [`crate::terminate`] for the per-container rules).
//!
//! If the kubelet shuts down in the middle, termination is abandoned and the next kubelet
//! starts it over with the full grace, as upstream does (T3).

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use minik_api::grace;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::container::pod_log_dir;
use crate::cri::ContainerState;
use crate::pod_worker::{find_container, PodUpdate, PodWorker};
use crate::terminate::{stop_container, StopRequest};

impl PodWorker {
    /// Stops the pod's containers and, unless the kubelet shuts down meanwhile, finishes the
    /// deletion. `removed`: the pod is already gone from the API (force delete).
    pub(crate) async fn terminate_pod(mut self, pod: Arc<Pod>, removed: bool) {
        let mut grace_seconds = grace::termination_grace(pod.as_ref(), removed);
        info!(pod = %self.key, grace_seconds, removed, "terminating pod");
        self.stop_watching();
        let grace = Duration::from_secs(grace_seconds as u64);
        let (grace_tx, grace_rx) = watch::channel(grace);
        let start = Instant::now();
        let running: Vec<_> = self
            .containers()
            .into_iter()
            .filter(|c| matches!(c.state, ContainerState::Running { .. }))
            .collect();
        let pod_ip = self.pod_ip();
        let ctx = self.ctx.clone();
        let (ctx, pod_ref, pod_ip, grace_rx) = (&ctx, &pod, &pod_ip, &grace_rx);
        let stop = |container: &crate::cri::ContainerStatus| {
            let spec = find_container(pod_ref, &container.config.name);
            let id = container.id.clone();
            async move {
                let Some(spec) = spec else { return };
                let name = spec.name.clone();
                let request = StopRequest {
                    runtime: ctx.runtime.as_ref(),
                    reporter: ctx.reporter.as_ref(),
                    pod: pod_ref,
                    container: &spec,
                    id: &id,
                    pod_ip,
                    start,
                    grace: grace_rx.clone(),
                    reason_message: format!("Stopping container {name}"),
                };
                stop_container(request).await;
            }
        };
        // The main containers stop together; then the sidecars, one by one in reverse order,
        // within the same grace period (upstream's `killContainersWithSyncResult` since 1.29).
        let (sidecars, main) = split_sidecars(pod_ref, &running);
        let stops = async {
            join_all(main.iter().map(&stop).collect::<Vec<_>>()).await;
            for sidecar in sidecars.iter().rev() {
                stop(sidecar).await;
            }
        };
        tokio::pin!(stops);
        let mut removed = removed;
        loop {
            tokio::select! {
                _ = &mut stops => break,
                _ = self.token.cancelled() => {
                    warn!(pod = %self.key, "kubelet stopping during pod termination; the next kubelet restarts it");
                    return;
                }
                changed = self.updates.changed() => {
                    if changed.is_err() { continue; }
                    let update = self.updates.borrow_and_update().clone();
                    removed |= matches!(update, PodUpdate::Removed(_));
                    let proposed = grace::termination_grace(update.pod().as_ref(), removed);
                    // The grace may only shrink while we wait (`calculateEffectiveGracePeriod`).
                    if grace::shortens(grace_seconds, proposed) {
                        grace_seconds = proposed;
                        info!(pod = %self.key, grace_seconds, "grace period shortened");
                        let _ = grace_tx.send(Duration::from_secs(grace_seconds as u64));
                    }
                }
            }
        }
        self.finish_termination(&pod, removed).await;
    }

    /// Final status, sandbox release, container cleanup and the final DELETE.
    async fn finish_termination(&mut self, pod: &Arc<Pod>, removed: bool) {
        let latest = self.updates.borrow().pod().clone();
        if !removed {
            self.report(&latest, true).await;
        }
        self.ctx.sandbox.teardown(&self.uid).await;
        // Every attempt goes, exited ones included (their records kept `previous` logs
        // readable while the pod existed), and then the pod's log directory.
        for container in self.containers() {
            let _ = self.ctx.runtime.remove_container(&container.id).await;
        }
        let log_dir = pod_log_dir(&self.ctx.root_dir, &latest);
        if let Err(error) = std::fs::remove_dir_all(&log_dir) {
            if error.kind() != std::io::ErrorKind::NotFound {
                warn!(pod = %self.key, %error, "could not remove the pod's log directory");
            }
        }
        if removed {
            info!(pod = %self.key, "pod terminated (already removed from the API)");
            return;
        }
        // The final DELETE (grace 0, uid precondition), retried a few times if the API is away.
        let mut delay = Duration::from_millis(200);
        for _ in 0..6 {
            match self.ctx.reporter.delete_pod(pod).await {
                Ok(()) => return info!(pod = %self.key, "pod terminated and deleted"),
                Err(error) => {
                    warn!(pod = %self.key, %error, "could not delete terminated pod, retrying")
                }
            }
            tokio::select! {
                _ = self.token.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
            delay *= 2;
        }
    }
}

/// The running containers split into sidecars (in spec order) and the others.
fn split_sidecars(
    pod: &Pod,
    running: &[crate::cri::ContainerStatus],
) -> (
    Vec<crate::cri::ContainerStatus>,
    Vec<crate::cri::ContainerStatus>,
) {
    let sidecar_names: Vec<&str> = pod
        .spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .filter(|c| crate::plan::is_sidecar(c))
        .map(|c| c.name.as_str())
        .collect();
    let mut sidecars: Vec<_> = running
        .iter()
        .filter(|c| sidecar_names.contains(&c.config.name.as_str()))
        .cloned()
        .collect();
    sidecars.sort_by_key(|c| sidecar_names.iter().position(|n| *n == c.config.name));
    let main = running
        .iter()
        .filter(|c| !sidecar_names.contains(&c.config.name.as_str()))
        .cloned()
        .collect();
    (sidecars, main)
}
