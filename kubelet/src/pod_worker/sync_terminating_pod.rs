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
//! While the containers stop, readiness probes keep running (upstream's prober does not stop at
//! termination): a verdict flip or a container exit is written to the status at once, so Ready and
//! the EndpointSlice's `serving` follow the app until it exits.
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
use crate::pod_worker::{find_container, ContainerEvent, PodUpdate, PodWorker};
use crate::probes::ProbeKind;
use crate::terminate::{stop_container, StopRequest};

impl PodWorker {
    /// Stops the pod's containers and, unless the kubelet shuts down meanwhile, finishes the
    /// deletion. `removed`: the pod is already gone from the API (force delete).
    pub(crate) async fn terminate_pod(mut self, pod: Arc<Pod>, removed: bool) {
        let grace_seconds = grace::termination_grace(pod.as_ref(), removed);
        info!(pod = %self.key, grace_seconds, removed, "terminating pod");
        if let Some(removed) = self.stop_containers(&pod, grace_seconds, removed).await {
            self.finish_termination(&pod, removed).await;
        }
    }

    /// `activeDeadlineSeconds` has passed: the pod fails with `DeadlineExceeded` and its
    /// containers are killed with the pod's grace period, as upstream's `activeDeadlineHandler`
    /// makes `SyncPod` do; the object stays (phase Failed) unless it is deleted meanwhile.
    pub(crate) async fn fail_past_deadline(&mut self, pod: &Arc<Pod>) {
        use crate::phase::{DEADLINE_EXCEEDED, DEADLINE_MESSAGE};
        let grace_seconds = grace::container_kill_grace(pod.as_ref(), None);
        info!(pod = %self.key, grace_seconds, "active deadline exceeded; killing the pod");
        let reporter = &self.ctx.reporter;
        reporter.event(pod, None, "Normal", DEADLINE_EXCEEDED, DEADLINE_MESSAGE);
        self.deadline_exceeded = true;
        let Some(removed) = self.stop_containers(pod, grace_seconds, false).await else {
            return;
        };
        let latest = self.pod();
        if removed || latest.metadata.deletion_timestamp.is_some() {
            return self.finish_termination(&latest, removed).await;
        }
        self.report(&latest, true).await;
        self.release_finished().await;
    }

    /// Stops every running container within `grace_seconds`, which a second DELETE may shorten
    /// while we wait. Returns whether the pod was removed from the API meanwhile, or `None` if the
    /// kubelet is shutting down.
    async fn stop_containers(
        &mut self,
        pod: &Arc<Pod>,
        mut grace_seconds: i64,
        removed: bool,
    ) -> Option<bool> {
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
        let (ctx, pod_ref, pod_ip, grace_rx) = (&ctx, pod, &pod_ip, &grace_rx);
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
            let mut readiness_changed = false;
            tokio::select! {
                _ = &mut stops => break,
                // The prober keeps going while the pod terminates, so Ready (and the
                // EndpointSlice's `serving`) follows the app until its containers exit.
                Some(update) = self.probes_rx.recv() => {
                    if update.kind == ProbeKind::Readiness {
                        self.probe_changed(update);
                        readiness_changed = true;
                    }
                }
                Some(event) = self.events_rx.recv() => {
                    if let ContainerEvent::Exited(id) = event {
                        self.killing.remove(&id);
                        self.forget_running(&id);
                        readiness_changed = true;
                    }
                }
                _ = self.token.cancelled() => {
                    warn!(pod = %self.key, "kubelet stopping during pod termination; the next kubelet restarts it");
                    return None;
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
            if readiness_changed && !removed {
                let latest = self.pod();
                tokio::select! {
                    _ = self.report(&latest, false) => {}
                    _ = &mut stops => break,
                }
            }
        }
        self.stop_watching();
        Some(removed)
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
