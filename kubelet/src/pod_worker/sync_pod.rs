//! `sync_pod`: one pass of a pod worker over a running pod — plan, act, report.
//!
//! Kubernetes counterpart: `Kubelet.SyncPod` (`pkg/kubelet/kubelet.go`) and
//! `kubeGenericRuntimeManager.SyncPod` (`pkg/kubelet/kuberuntime/kuberuntime_manager.go`):
//! create the sandbox if needed, compute the actions, start containers (`startContainer`:
//! pull the image, create, start, run postStart), and hand the status to the status manager.
//!
//! The events are upstream's: `Pulled` (`Container image "nginx" already present on
//! machine`), `Created`, `Started`, `Failed`, `BackOff`, `Killing`. minik adds
//! `PostStartHookStarted` / `PostStartHookCompleted` (its own names, for the demo's timeline).
//!
//! Read next: `sync_terminating_pod.rs`, the other way a worker's pass can go.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::container::{container_config, pod_log_dir, ConfigError, PodContext};
use crate::cri::{ContainerState, ContainerStatus};
use crate::plan::{
    is_terminal, plan, Action, KillReason, PlanInput, StartFailure, StartFailureKind,
};
use crate::pod_worker::{find_container, ContainerEvent, PodWorker};
use crate::status::{compute, PodView};
use crate::terminate::{stop_container, StopRequest};

impl PodWorker {
    /// Plans and applies the next steps for a pod that is not terminating, then reports status.
    pub(crate) async fn sync_pod(&mut self, pod: &Arc<Pod>) {
        if is_terminal(pod) || self.released {
            // A finished pod never runs again: report what it was, then give its IP back.
            self.report(pod, false).await;
            return self.release_finished().await;
        }
        if self.past_active_deadline(pod) {
            return self.fail_past_deadline(pod).await;
        }
        if !self.ensure_sandbox(pod).await {
            return;
        }
        self.refresh_tokens(pod).await;
        if !self.sync_config_volumes(pod) {
            return self.report(pod, false).await;
        }
        let containers = self.containers();
        let started: std::collections::BTreeSet<String> = self
            .post_start_done
            .intersection(&self.startup_passed)
            .cloned()
            .collect();
        let actions = plan(&PlanInput {
            pod,
            containers: &containers,
            memos: &self.memos,
            unhealthy: &self.unhealthy,
            killing: &self.killing,
            started: &started,
            post_start_done: &self.post_start_done,
            backoff: self.ctx.backoff,
            now: jiff::Timestamp::now(),
        });
        self.backoff.clear();
        for action in actions {
            self.apply(pod, action).await;
        }
        self.report(pod, false).await;
    }

    /// Computes the status from what the worker knows now and writes it if it changed.
    pub(crate) async fn report(&mut self, pod: &Pod, terminated_by_kubelet: bool) {
        let containers = self.containers();
        let pod_ip = self.pod_ip();
        // The kubelet owns these fields: transition times and the phase build on what it last
        // wrote, not on a possibly older copy from the watch (which would make writes ping-pong).
        let mut base = pod.clone();
        if let Some(last) = &self.last_status {
            // Conditions of other writers (readiness gates) are the API's, not our last copy.
            let api = pod.status.as_ref();
            base.status = Some(crate::phase::with_foreign_conditions(last.clone(), api));
        }
        let mut status = compute(&PodView {
            pod: &base,
            containers: &containers,
            memos: &self.memos,
            post_start_done: &self.post_start_done,
            startup_passed: &self.startup_passed,
            readiness_ok: &self.readiness_ok,
            backoff: &self.backoff,
            pod_ip: (!pod_ip.is_empty()).then_some(pod_ip.as_str()),
            host_ip: &self.ctx.host_ip,
            terminated_by_kubelet,
            now: jiff::Timestamp::now(),
        });
        if self.deadline_exceeded {
            status.phase = Some("Failed".into());
            status.reason = Some(crate::phase::DEADLINE_EXCEEDED.into());
            status.message = Some(crate::phase::DEADLINE_MESSAGE.into());
        }
        self.write_status(pod, status).await;
    }

    /// True once `activeDeadlineSeconds` has passed since the start time the kubelet reported;
    /// before that, asks for a sync at the deadline.
    fn past_active_deadline(&mut self, pod: &Pod) -> bool {
        if pod
            .spec
            .as_ref()
            .and_then(|s| s.active_deadline_seconds)
            .is_none()
        {
            return false;
        }
        let mut view = pod.clone();
        if let Some(last) = &self.last_status {
            view.status = Some(last.clone());
        }
        match crate::phase::active_deadline_left(&view, jiff::Timestamp::now()) {
            Some(left) if left.is_zero() => true,
            Some(left) => {
                self.wake_at(Instant::now() + left);
                false
            }
            None => false,
        }
    }

    /// Allocates the IP and volumes once; false (and a retry in 2 s) if that failed.
    pub(super) async fn ensure_sandbox(&mut self, pod: &Pod) -> bool {
        if self.sandbox.is_some() {
            return true;
        }
        match self.ctx.sandbox.setup(pod).await {
            Ok(sandbox) => {
                let rewrite_binds = sandbox.rewrite_binds;
                info!(pod = %self.key, ip = %sandbox.ip, rewrite_binds, "pod sandbox ready");
                let reporter = &self.ctx.reporter;
                if let Some(note) = &sandbox.mount_note {
                    reporter.event(pod, None, "Warning", "NoMountNamespace", note);
                }
                if let Some(warning) = &sandbox.network_warning {
                    reporter.event(pod, None, "Warning", "PodNetworkNotIsolated", warning);
                }
                self.sandbox = Some(sandbox);
                true
            }
            Err(error) => {
                let message = format!("Failed to create pod sandbox: {error}");
                self.ctx
                    .reporter
                    .event(pod, None, "Warning", "FailedCreatePodSandBox", &message);
                self.wake_at(Instant::now() + Duration::from_secs(2));
                false
            }
        }
    }

    async fn apply(&mut self, pod: &Arc<Pod>, action: Action) {
        match action {
            Action::StartContainer { name, attempt, .. } => {
                self.start_container(pod, &name, attempt).await
            }
            Action::KillContainer { id, name, reason } => {
                self.kill_container(pod, id, &name, reason)
            }
            Action::BackOff {
                name,
                delay,
                until,
                start_failure,
            } => {
                if !start_failure {
                    self.backoff.insert(name.clone(), delay);
                    self.announce_backoff(pod, &name, until);
                }
                let wait = until.duration_since(jiff::Timestamp::now()).unsigned_abs();
                self.wake_at(Instant::now() + wait);
            }
            Action::ShowImagePullBackOff { name } => {
                if let Some(failure) = self
                    .memos
                    .get_mut(&name)
                    .and_then(|m| m.start_failure.as_mut())
                {
                    failure.reason = "ImagePullBackOff".into();
                }
                let image = find_container(pod, &name)
                    .and_then(|c| c.image)
                    .unwrap_or_default();
                let message = format!("Back-off pulling image \"{image}\"");
                self.ctx
                    .reporter
                    .event(pod, Some(&name), "Normal", "BackOff", &message);
            }
            Action::ResetBackoff { name, from_attempt } => {
                self.memos.entry(name).or_default().backoff_from_attempt = from_attempt;
            }
        }
    }

    /// `BackOff` once per backoff period, as upstream's `doBackOff`.
    fn announce_backoff(&mut self, pod: &Pod, name: &str, until: jiff::Timestamp) {
        if self.announced_backoff.get(name) == Some(&until) {
            return;
        }
        self.announced_backoff.insert(name.to_string(), until);
        let meta = &pod.metadata;
        let message = format!(
            "Back-off restarting failed container {name} in pod {}_{}({})",
            meta.name.as_deref().unwrap_or_default(),
            meta.namespace.as_deref().unwrap_or_default(),
            meta.uid.as_deref().unwrap_or_default()
        );
        self.ctx
            .reporter
            .event(pod, Some(name), "Warning", "BackOff", &message);
    }

    /// `startContainer`: resolve the "image", start the process, then postStart alongside it.
    async fn start_container(&mut self, pod: &Arc<Pod>, name: &str, attempt: u32) {
        let Some(spec) = find_container(pod, name) else {
            return;
        };
        let mut ctx = self.pod_context(pod);
        crate::ephemeral::lend_world(&mut ctx, pod, name);
        let config = match container_config(pod, &spec, attempt, &ctx, self.ctx.sources.as_ref()) {
            Ok((config, warnings)) => {
                for warning in warnings {
                    self.ctx.reporter.event(
                        pod,
                        Some(name),
                        "Warning",
                        "InvalidEnvironmentVariableNames",
                        &warning,
                    );
                }
                config
            }
            Err(ConfigError::Image(error)) => {
                return self.start_failed(pod, &spec, StartFailureKind::Image, error.message)
            }
            Err(ConfigError::Config(message)) => {
                return self.start_failed(pod, &spec, StartFailureKind::Config, message)
            }
        };
        let image = spec.image.clone().unwrap_or_default();
        let pulled = format!("Container image \"{image}\" already present on machine");
        self.ctx
            .reporter
            .event(pod, Some(name), "Normal", "Pulled", &pulled);
        if let Some(parent) = config.log_path.parent() {
            let _ = tokio::fs::create_dir_all(parent).await;
        }
        let status = match self.ctx.runtime.start_container(config).await {
            Ok(status) => status,
            Err(error) => {
                return self.start_failed(pod, &spec, StartFailureKind::Run, error.to_string())
            }
        };
        if let Some(memo) = self.memos.get_mut(name) {
            memo.start_failure = None;
        }
        let pid = match status.state {
            ContainerState::Running { pid, .. } => pid,
            ContainerState::Exited { .. } => 0,
        };
        info!(pod = %self.key, container = %name, attempt, pid, "started container");
        self.ctx.reporter.event(
            pod,
            Some(name),
            "Normal",
            "Created",
            &format!("Created container {name}"),
        );
        self.ctx.reporter.event(
            pod,
            Some(name),
            "Normal",
            "Started",
            &format!("Started container {name}"),
        );
        self.watch_exit(&status.id);
        self.run_post_start(pod, &spec, &status.id);
        self.prune_attempts(name, attempt).await;
    }

    /// Records a failed start: the waiting reason, `Failed` events, and the retry memo.
    fn start_failed(
        &mut self,
        pod: &Pod,
        spec: &Container,
        kind: StartFailureKind,
        message: String,
    ) {
        let name = spec.name.as_str();
        let (reason, event) = match kind {
            StartFailureKind::Image => {
                let image = spec.image.clone().unwrap_or_default();
                (
                    "ErrImagePull",
                    format!("Failed to pull image \"{image}\": {message}"),
                )
            }
            StartFailureKind::Run => ("RunContainerError", format!("Error: {message}")),
            StartFailureKind::Config => ("CreateContainerConfigError", format!("Error: {message}")),
        };
        warn!(pod = %self.key, container = %name, %message, "could not start container");
        self.ctx
            .reporter
            .event(pod, Some(name), "Warning", "Failed", &event);
        if kind == StartFailureKind::Image {
            self.ctx
                .reporter
                .event(pod, Some(name), "Warning", "Failed", "Error: ErrImagePull");
        }
        let memo = self.memos.entry(name.to_string()).or_default();
        let count = memo.start_failure.as_ref().map_or(0, |f| f.count) + 1;
        let at = jiff::Timestamp::now();
        memo.start_failure = Some(StartFailure {
            kind,
            count,
            at,
            reason: reason.into(),
            message,
        });
        // A missing ConfigMap or Secret is retried when one changes (the sources' watch wakes
        // the worker); the backoff delay is only a slow resync, as upstream's periodic sync.
        let retry = match kind {
            StartFailureKind::Config => self.ctx.backoff.retry_delay(count),
            _ => Duration::from_millis(100),
        };
        self.wake_at(Instant::now() + retry);
    }

    /// Runs postStart in the background; the container counts as Running once it finished.
    fn run_post_start(&mut self, pod: &Arc<Pod>, spec: &Container, id: &str) {
        let Some(handler) = crate::hooks::post_start(spec).cloned() else {
            self.post_start_done.insert(id.to_string());
            self.start_probes(pod, spec, id, false);
            return;
        };
        let name = spec.name.clone();
        let message = format!("PostStart hook of container {name} started");
        self.ctx
            .reporter
            .event(pod, Some(&name), "Normal", "PostStartHookStarted", &message);
        let token = self.container_token(id);
        let (runtime, events, spec, pod_ip) = (
            self.ctx.runtime.clone(),
            self.events_tx.clone(),
            spec.clone(),
            self.pod_ip(),
        );
        let id = id.to_string();
        self.ctx.tracker.spawn(async move {
            let hook = crate::hooks::run(runtime.as_ref(), &id, &spec, &handler, &pod_ip, None);
            tokio::select! {
                _ = token.cancelled() => {}
                result = hook => { let _ = events.send(ContainerEvent::PostStart { id, result }); }
            }
        });
    }

    /// Kills a container whose liveness/startup probe or postStart failed, or whose image
    /// changed, in the background.
    fn kill_container(&mut self, pod: &Arc<Pod>, id: String, name: &str, reason: KillReason) {
        let Some(spec) = find_container(pod, name) else {
            return;
        };
        self.killing.insert(id.clone());
        let probe_grace = match reason {
            KillReason::Liveness => spec
                .liveness_probe
                .as_ref()
                .and_then(|p| p.termination_grace_period_seconds),
            KillReason::Startup => spec
                .startup_probe
                .as_ref()
                .and_then(|p| p.termination_grace_period_seconds),
            KillReason::PostStartHook | KillReason::DefinitionChanged => None,
        };
        let grace_seconds = minik_api::grace::container_kill_grace(pod.as_ref(), probe_grace);
        let grace = Duration::from_secs(grace_seconds as u64);
        let message = match reason {
            KillReason::Liveness => {
                format!("Container {name} failed liveness probe, will be restarted")
            }
            KillReason::Startup => {
                format!("Container {name} failed startup probe, will be restarted")
            }
            KillReason::PostStartHook => format!("FailedPostStartHook: stopping container {name}"),
            KillReason::DefinitionChanged => {
                format!("Container {name} definition changed, will be restarted")
            }
        };
        info!(pod = %self.key, container = %name, ?reason, "killing unhealthy container");
        let (ctx, pod, pod_ip) = (self.ctx.clone(), pod.clone(), self.pod_ip());
        self.ctx.tracker.spawn(async move {
            let (_grace_tx, grace_rx) = watch::channel(grace);
            let request = StopRequest {
                runtime: ctx.runtime.as_ref(),
                reporter: ctx.reporter.as_ref(),
                pod: &pod,
                container: &spec,
                id: &id,
                pod_ip: &pod_ip,
                start: Instant::now(),
                grace: grace_rx,
                reason_message: message,
            };
            // The exit reaches the worker through its exit watcher.
            stop_container(request).await;
        });
    }

    /// Keeps the newest two attempts of a container (the current one and `previous` for logs).
    async fn prune_attempts(&self, name: &str, attempt: u32) {
        let old: Vec<ContainerStatus> = self
            .containers()
            .into_iter()
            .filter(|c| c.config.name == name && c.config.attempt + 1 < attempt)
            .collect();
        for container in old {
            let _ = self.ctx.runtime.remove_container(&container.id).await;
        }
    }

    /// The per-pod facts that go into every container config.
    pub(crate) fn pod_context(&self, pod: &Pod) -> PodContext {
        PodContext {
            pod_ip: self.pod_ip(),
            node_name: self.ctx.node_name.clone(),
            api_host: self.ctx.api_host.clone(),
            api_port: self.ctx.api_port.clone(),
            minik_binary: self.ctx.minik_binary.clone(),
            path: std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
            home: std::env::var("HOME").unwrap_or_else(|_| "/".into()),
            volume_env: self
                .sandbox
                .as_ref()
                .map(|s| s.volume_env.clone())
                .unwrap_or_default(),
            working_dirs: self
                .sandbox
                .as_ref()
                .map(|s| s.working_dirs.clone())
                .unwrap_or_default(),
            log_dir: pod_log_dir(&self.ctx.root_dir, pod),
            host_ip: self.ctx.host_ip.clone(),
            allocatable: self.ctx.allocatable.clone(),
            mounts: self
                .sandbox
                .as_ref()
                .map(|s| s.mounts.clone())
                .unwrap_or_default(),
            rewrite_binds: self.sandbox.as_ref().is_some_and(|s| s.rewrite_binds),
        }
    }
}
