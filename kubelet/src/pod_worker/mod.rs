//! The pod worker: one task per pod that makes the runtime match the pod spec, and reports back.
//!
//! Kubernetes counterpart: `pkg/kubelet/pod_workers.go` (one goroutine per pod UID, fed the
//! latest pod, running `SyncPod` until the pod terminates, then `SyncTerminatingPod` and
//! `SyncTerminatedPod`) and `Kubelet.SyncPod` in `pkg/kubelet/kubelet.go`. The worker is
//! level-triggered: whatever woke it (a new version of the pod, a container exit, a probe
//! verdict, a backoff timer), it looks at the latest pod and the runtime's containers again and
//! asks the pure [`crate::plan::plan`] what to do.
//!
//! The loop of one worker:
//! 1. set up the sandbox (IP, volumes), once;
//! 2. `sync_pod`: plan, apply (start, kill, back off), compute the status, write it if changed;
//! 3. wait for the next wake-up;
//! 4. when the pod has a `deletionTimestamp` (a MODIFIED event) or is gone from the API (a
//!    force delete), run the termination path (`sync_terminating_pod.rs`) and end.
//!
//! This folder holds the worker whole: the struct and its loop here, one pass over a running
//! pod in `sync_pod.rs`, the end of a pod in `sync_terminating_pod.rs` (both named after the
//! upstream functions they mirror), and the worker's tests in `tests.rs`. The main loop that
//! starts one worker per pod is `sync_loop.rs`, beside this folder.
//!
//! Read next: `sync_pod.rs`.
//!
//! When the kubelet itself shuts down, the worker just stops: the processes keep running and
//! the next kubelet adopts them (nothing killed, nothing started twice).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, PodStatus};
use minik_api::ObjectKey;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::cri::{ContainerState, ContainerStatus, Runtime};
use crate::plan::{BackoffPolicy, ContainerMemo, KillReason};
use crate::probes::{ProbeKind, ProbeUpdate};
use crate::reporter::PodReporter;
use crate::sandbox::{PodSandbox, Sandbox};
use crate::sources::ObjectLookup;

mod config_volumes;
mod sync_pod;
mod sync_terminating_pod;
#[cfg(test)]
mod tests;
mod tokens;

/// What every pod worker of one kubelet shares.
pub struct WorkerContext {
    /// The container runtime.
    pub runtime: Arc<dyn Runtime>,
    /// Events, status writes and the final delete.
    pub reporter: Arc<dyn PodReporter>,
    /// IPs and volumes.
    pub sandbox: Arc<dyn PodSandbox>,
    /// This node's name.
    pub node_name: String,
    /// This node's IP (`status.hostIP`).
    pub host_ip: String,
    /// Where container logs go (`{root}/logs/…`).
    pub root_dir: PathBuf,
    /// The `minik` binary for built-in images.
    pub minik_binary: PathBuf,
    /// `KUBERNETES_SERVICE_HOST` / `_PORT`.
    pub api_host: String,
    /// See `api_host`.
    pub api_port: String,
    /// The CrashLoopBackOff curve.
    pub backoff: BackoffPolicy,
    /// Every task a worker spawns (hooks, probes, exit watchers), so `run` can wait for them.
    pub tracker: TaskTracker,
    /// The ConfigMaps, Secrets and Services containers and volumes reference (`sources.rs`).
    pub sources: Arc<dyn ObjectLookup>,
    /// Changes whenever a ConfigMap or Secret changes: every worker syncs again.
    pub source_changes: watch::Receiver<u64>,
    /// The node's allocatable `cpu` and `memory` (downward API `resourceFieldRef`).
    pub allocatable: BTreeMap<String, String>,
}

/// The latest news about a pod, as the pod's watch channel carries it.
#[derive(Clone, Debug)]
pub enum PodUpdate {
    /// The pod as the API server has it now.
    Present(Arc<Pod>),
    /// The pod was removed from the API (force delete, or deleted while we were not looking).
    Removed(Arc<Pod>),
}

impl PodUpdate {
    /// The pod, present or removed.
    pub fn pod(&self) -> &Arc<Pod> {
        match self {
            PodUpdate::Present(pod) | PodUpdate::Removed(pod) => pod,
        }
    }
}

/// Things that happen to a pod's containers while the worker waits.
#[derive(Debug)]
pub(crate) enum ContainerEvent {
    /// A container's process ended.
    Exited(String),
    /// A postStart hook finished.
    PostStart {
        id: String,
        result: Result<(), String>,
    },
    /// A probe's verdict flipped.
    Probe(ProbeUpdate),
}

/// One pod's worker. See the module doc for its loop.
pub struct PodWorker {
    pub(crate) ctx: Arc<WorkerContext>,
    pub(crate) key: ObjectKey,
    pub(crate) uid: String,
    pub(crate) updates: watch::Receiver<PodUpdate>,
    pub(crate) events_tx: mpsc::UnboundedSender<ContainerEvent>,
    pub(crate) events_rx: mpsc::UnboundedReceiver<ContainerEvent>,
    pub(crate) probes_tx: mpsc::UnboundedSender<ProbeUpdate>,
    pub(crate) probes_rx: mpsc::UnboundedReceiver<ProbeUpdate>,
    pub(crate) token: CancellationToken,
    pub(crate) sandbox: Option<Sandbox>,
    pub(crate) memos: BTreeMap<String, ContainerMemo>,
    pub(crate) post_start_done: BTreeSet<String>,
    pub(crate) startup_passed: BTreeSet<String>,
    pub(crate) readiness_ok: BTreeSet<String>,
    pub(crate) unhealthy: BTreeMap<String, KillReason>,
    pub(crate) killing: BTreeSet<String>,
    pub(crate) backoff: BTreeMap<String, Duration>,
    pub(crate) announced_backoff: BTreeMap<String, jiff::Timestamp>,
    /// One child token per running container: cancelling it stops its probes and hooks.
    pub(crate) container_tokens: BTreeMap<String, CancellationToken>,
    pub(crate) last_status: Option<PodStatus>,
    pub(crate) wake_at: Option<Instant>,
    /// ConfigMap/Secret changes; `None` once its sender is gone.
    pub(crate) source_changes: Option<watch::Receiver<u64>>,
    /// Every configMap/secret/downwardAPI/projected volume has been written once.
    pub(crate) volumes_ready: bool,
    /// The last `FailedMount` message (reported once per change).
    pub(crate) mount_error: Option<String>,
    /// A finished pod's IP and volumes were released (they are not set up again).
    pub(crate) released: bool,
    /// `activeDeadlineSeconds` passed: the pod is reported Failed, reason `DeadlineExceeded`.
    pub(crate) deadline_exceeded: bool,
    /// ServiceAccount tokens of projected volumes, by `volume/path` (`tokens.rs`).
    pub(crate) tokens: BTreeMap<String, tokens::HeldToken>,
}

impl PodWorker {
    /// A worker for the pod in `updates`, stopping when `token` is cancelled.
    pub fn new(
        ctx: Arc<WorkerContext>,
        updates: watch::Receiver<PodUpdate>,
        token: CancellationToken,
    ) -> Self {
        let pod = updates.borrow().pod().clone();
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (probes_tx, probes_rx) = mpsc::unbounded_channel();
        PodWorker {
            key: ObjectKey::of(&pod.metadata),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            updates,
            events_tx,
            events_rx,
            probes_tx,
            probes_rx,
            token,
            sandbox: None,
            memos: BTreeMap::new(),
            post_start_done: BTreeSet::new(),
            startup_passed: BTreeSet::new(),
            readiness_ok: BTreeSet::new(),
            unhealthy: BTreeMap::new(),
            killing: BTreeSet::new(),
            backoff: BTreeMap::new(),
            announced_backoff: BTreeMap::new(),
            container_tokens: BTreeMap::new(),
            tokens: BTreeMap::new(),
            last_status: pod.status.clone(),
            wake_at: None,
            source_changes: Some(ctx.source_changes.clone()),
            volumes_ready: false,
            mount_error: None,
            released: false,
            deadline_exceeded: false,
            ctx,
        }
    }

    /// The worker's loop (see the module doc). Returns when the pod is gone or the kubelet stops.
    pub async fn run(mut self) {
        self.adopt().await;
        loop {
            let update = self.updates.borrow_and_update().clone();
            match update {
                PodUpdate::Removed(pod) => return self.terminate_pod(pod, true).await,
                PodUpdate::Present(pod) if pod.metadata.deletion_timestamp.is_some() => {
                    return self.terminate_pod(pod, false).await;
                }
                PodUpdate::Present(pod) => self.sync_pod(&pod).await,
            }
            if !self.wait().await {
                self.stop_watching();
                return;
            }
        }
    }

    /// Waits for the next reason to sync; false when the kubelet shuts down.
    async fn wait(&mut self) -> bool {
        let wake_at = self.wake_at.take();
        tokio::select! {
            _ = self.token.cancelled() => false,
            changed = self.updates.changed() => changed.is_ok(),
            Some(event) = self.events_rx.recv() => { self.handle_event(event); true }
            Some(update) = self.probes_rx.recv() => { self.handle_event(ContainerEvent::Probe(update)); true }
            changed = changed_opt(&mut self.source_changes) => {
                if !changed { self.source_changes = None; }
                true
            }
            _ = sleep_until_opt(wake_at) => true,
        }
    }

    /// The current pod.
    pub(crate) fn pod(&self) -> Arc<Pod> {
        self.updates.borrow().pod().clone()
    }

    /// This pod's containers as the runtime reports them.
    pub(crate) fn containers(&self) -> Vec<ContainerStatus> {
        self.ctx.runtime.pod_containers(&self.uid)
    }

    /// Takes over containers started by an earlier kubelet: watch their exits, probe them again.
    /// Their postStart is considered done (hooks are at-least-once; we do not rerun them).
    /// The sandbox (the pod's IP) is recovered first: a probe started without it would dial
    /// `:PORT` and keep the pod unready for good (found by tests/reliability/kill_components.rs).
    async fn adopt(&mut self) {
        let pod = self.pod();
        let containers = self.containers();
        let running = |c: &ContainerStatus| matches!(c.state, ContainerState::Running { .. });
        if containers.iter().any(running) {
            self.ensure_sandbox(&pod).await;
        }
        for container in containers {
            if !running(&container) {
                continue;
            }
            info!(pod = %self.key, container = %container.config.name, id = %container.id, "adopted running container");
            self.watch_exit(&container.id);
            self.post_start_done.insert(container.id.clone());
            if let Some(spec) = find_container(&pod, &container.config.name) {
                self.start_probes(&pod, &spec, &container.id, true);
            }
        }
    }

    /// Reacts to something that happened to a container; the next sync does the rest.
    fn handle_event(&mut self, event: ContainerEvent) {
        match event {
            ContainerEvent::Exited(id) => {
                // A kill by the kubelet records its own `Exited` event (terminate.rs).
                if !self.killing.remove(&id) {
                    self.record_exit(&id);
                }
                self.forget_running(&id);
            }
            ContainerEvent::PostStart { id, result } => self.post_start_finished(id, result),
            ContainerEvent::Probe(update) => self.probe_changed(update),
        }
    }

    /// `Exited` (minik's own event): a container's process ended by itself.
    fn record_exit(&self, id: &str) {
        let Some(status) = self.ctx.runtime.container_status(id) else {
            return;
        };
        if let ContainerState::Exited { exit_code, .. } = status.state {
            let name = status.config.name;
            info!(pod = %self.key, container = %name, exit_code, "container exited");
            let message = format!("Container {name} exited with code {exit_code}");
            self.ctx
                .reporter
                .event(&self.pod(), Some(&name), "Normal", "Exited", &message);
        }
    }

    pub(crate) fn forget_running(&mut self, id: &str) {
        if let Some(token) = self.container_tokens.remove(id) {
            token.cancel();
        }
        self.readiness_ok.remove(id);
        self.unhealthy.remove(id);
    }

    fn post_start_finished(&mut self, id: String, result: Result<(), String>) {
        let pod = self.pod();
        let name = self.container_name(&id);
        match result {
            Ok(()) => {
                let message = format!("PostStart hook of container {name} completed");
                self.ctx.reporter.event(
                    &pod,
                    Some(&name),
                    "Normal",
                    "PostStartHookCompleted",
                    &message,
                );
                self.post_start_done.insert(id.clone());
                if let Some(spec) = find_container(&pod, &name) {
                    self.start_probes(&pod, &spec, &id, false);
                }
            }
            Err(error) => {
                let message =
                    crate::hooks::failure_message(crate::hooks::Hook::PostStart, &name, &error);
                self.ctx.reporter.event(
                    &pod,
                    Some(&name),
                    "Warning",
                    "FailedPostStartHook",
                    &message,
                );
                self.unhealthy.insert(id, KillReason::PostStartHook);
            }
        }
    }

    pub(crate) fn probe_changed(&mut self, update: ProbeUpdate) {
        let id = update.container_id.clone();
        if !self.container_tokens.contains_key(&id) {
            return; // a late verdict about a container that already exited
        }
        match (update.kind, update.success) {
            (ProbeKind::Readiness, true) => {
                self.readiness_ok.insert(id);
            }
            (ProbeKind::Readiness, false) => {
                self.readiness_ok.remove(&id);
            }
            (ProbeKind::Liveness, false) => {
                self.unhealthy.insert(id, KillReason::Liveness);
            }
            (ProbeKind::Startup, true) => {
                self.startup_passed.insert(id.clone());
                let pod = self.pod();
                if let Some(spec) = find_container(&pod, &self.container_name(&id)) {
                    self.spawn_probe(&pod, &spec, &id, ProbeKind::Readiness);
                    self.spawn_probe(&pod, &spec, &id, ProbeKind::Liveness);
                }
            }
            (ProbeKind::Startup, false) => {
                self.unhealthy.insert(id, KillReason::Startup);
            }
            (ProbeKind::Liveness, true) => {}
        }
    }

    /// The container name of a runtime id.
    pub(crate) fn container_name(&self, id: &str) -> String {
        self.ctx
            .runtime
            .container_status(id)
            .map(|c| c.config.name)
            .unwrap_or_default()
    }

    /// Starts a container's probes: the startup probe first if it has one (the others wait for
    /// its success), else readiness and liveness. `adopted`: a container found running.
    pub(crate) fn start_probes(
        &mut self,
        pod: &Arc<Pod>,
        spec: &Container,
        id: &str,
        adopted: bool,
    ) {
        if spec.startup_probe.is_some() && !adopted {
            self.spawn_probe(pod, spec, id, ProbeKind::Startup);
            return;
        }
        self.startup_passed.insert(id.to_string());
        self.spawn_probe(pod, spec, id, ProbeKind::Readiness);
        self.spawn_probe(pod, spec, id, ProbeKind::Liveness);
    }

    fn spawn_probe(&mut self, pod: &Arc<Pod>, spec: &Container, id: &str, kind: ProbeKind) {
        let probe = match kind {
            ProbeKind::Readiness => spec.readiness_probe.clone(),
            ProbeKind::Liveness => spec.liveness_probe.clone(),
            ProbeKind::Startup => spec.startup_probe.clone(),
        };
        let Some(probe) = probe else { return };
        let token = self.container_token(id).child_token();
        let task = crate::probes::ProbeTask {
            runtime: self.ctx.runtime.clone(),
            reporter: self.ctx.reporter.clone(),
            pod: pod.clone(),
            container: spec.clone(),
            container_id: id.to_string(),
            pod_ip: self.pod_ip(),
            kind,
            probe,
            running_for: self.running_for(id),
        };
        self.ctx
            .tracker
            .spawn(crate::probes::run(task, self.probes_tx.clone(), token));
    }

    /// How long a container has been running (zero if the runtime does not know it).
    fn running_for(&self, id: &str) -> Duration {
        match self.ctx.runtime.container_status(id).map(|c| c.state) {
            Some(ContainerState::Running { started_at, .. }) => jiff::Timestamp::now()
                .duration_since(started_at)
                .try_into()
                .unwrap_or_default(),
            _ => Duration::ZERO,
        }
    }

    /// The token of a running container (created on first use).
    pub(crate) fn container_token(&mut self, id: &str) -> CancellationToken {
        let token = self.token.child_token();
        self.container_tokens
            .entry(id.to_string())
            .or_insert(token)
            .clone()
    }

    /// Sends `Exited(id)` when the container's process ends.
    pub(crate) fn watch_exit(&mut self, id: &str) {
        let token = self.container_token(id);
        let runtime = self.ctx.runtime.clone();
        let events = self.events_tx.clone();
        let id = id.to_string();
        self.ctx.tracker.spawn(async move {
            tokio::select! {
                _ = token.cancelled() => {}
                _ = runtime.wait_container(&id) => { let _ = events.send(ContainerEvent::Exited(id)); }
            }
        });
    }

    /// The pod's IP ("" before the sandbox exists).
    pub(crate) fn pod_ip(&self) -> String {
        self.sandbox
            .as_ref()
            .map(|s| s.ip.clone())
            .unwrap_or_default()
    }

    /// Cancels every per-container task (probes, hooks, exit watchers) without touching processes.
    pub(crate) fn stop_watching(&mut self) {
        for (_, token) in std::mem::take(&mut self.container_tokens) {
            token.cancel();
        }
    }

    /// Asks for a sync at `at` at the latest.
    pub(crate) fn wake_at(&mut self, at: Instant) {
        self.wake_at = Some(self.wake_at.map_or(at, |current| current.min(at)));
    }

    /// Writes the status if it differs from the last one written.
    pub(crate) async fn write_status(&mut self, pod: &Pod, status: PodStatus) {
        if self.last_status.as_ref() == Some(&status) {
            return;
        }
        match self.ctx.reporter.write_status(pod, &status).await {
            Ok(()) => {
                info!(pod = %self.key, phase = status.phase.as_deref().unwrap_or_default(), "wrote pod status");
                self.last_status = Some(status);
            }
            Err(error) => {
                warn!(pod = %self.key, %error, "could not write pod status, will retry");
                self.wake_at(Instant::now() + Duration::from_secs(1));
            }
        }
    }
}

/// The spec of a container (app or init) by name.
pub(crate) fn find_container(pod: &Pod, name: &str) -> Option<Container> {
    let spec = pod.spec.as_ref()?;
    spec.init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .find(|c| c.name == name)
        .cloned()
        .or_else(|| {
            let ephemeral = crate::ephemeral::containers(pod);
            ephemeral.into_iter().find(|c| c.name == name)
        })
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Waits for the next change of `changes`; false when its sender is gone (never, if `None`).
async fn changed_opt(changes: &mut Option<watch::Receiver<u64>>) -> bool {
    match changes {
        Some(changes) => changes.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}
