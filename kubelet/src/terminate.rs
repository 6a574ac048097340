//! Stopping a container the Kubernetes way: preStop, SIGTERM, the rest of the grace, SIGKILL.
//!
//! Kubernetes counterpart: `killContainer` in `pkg/kubelet/kuberuntime/kuberuntime_container.go`
//! (preStop bounded by the grace period, its time deducted, a 2-second minimum before SIGKILL)
//! and `calculateEffectiveGracePeriod` in `pkg/kubelet/pod_workers.go` (which grace applies).
//! The rules are docs/kubernetes-rules.md#termination, T1–T5:
//!
//! - the budget is `deletionGracePeriodSeconds`, else `spec.terminationGracePeriodSeconds`
//!   (default 30), and never less than 1 (T3); the callers get it from `minik_api::grace`, the
//!   rule the API server shares, and hand it in as [`StopRequest::grace`];
//! - the countdown starts *before* preStop, and SIGTERM waits for preStop only until the grace
//!   deadline (T1, T2.3); a preStop still running then is not killed but runs on until the
//!   container has stopped, as upstream's hook goroutine does;
//! - then SIGTERM goes to the container's process group;
//! - SIGKILL follows at the end of the budget, but never sooner than 2 s after SIGTERM
//!   (`minimumGracePeriodInSeconds`, T2.4): a preStop that eats the whole budget still leaves
//!   the app 2 s to react to SIGTERM;
//! - a second DELETE that shortens the grace moves the deadline while we wait (D4): the deadline
//!   is always `start + grace`, with the grace read from the pod as it changes.
//!
//! **Force delete (grace 0), minik's documented choice (T4):** the grace is floored to 1 s as
//! upstream does, so preStop still runs but gets at most 1 s, SIGTERM follows, and SIGKILL comes
//! 2 s after SIGTERM at the latest. (rusternetes instead skips preStop and SIGKILLs at once.)
//!
//! Upstream computes in whole seconds; minik keeps sub-second precision, so `grace − preStop
//! time` is exact.
//!
//! Each step is recorded as an Event with its `eventTime`, which is how the demo draws its
//! timeline. Upstream names: `Killing` (at SIGTERM), `FailedPreStopHook`. minik's own names (not
//! upstream): `PreStopHookStarted`, `PreStopHookCompleted`, `Killed` (at SIGKILL), `Exited`.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::cri::{ContainerStatus, Runtime, StopSignal};
use crate::hooks::{self, Hook};
use crate::reporter::PodReporter;

/// `minimumGracePeriodInSeconds`: SIGKILL never comes sooner than this after SIGTERM.
pub const MINIMUM_GRACE_AFTER_TERM: Duration = Duration::from_secs(2);

/// When each step happens, counted from the start of termination (a pure summary of the rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TerminationSchedule {
    /// preStop is abandoned at this point (None: no preStop).
    pub pre_stop_deadline: Option<Duration>,
    /// SIGTERM is sent here (when preStop ends, or at its deadline).
    pub term_at: Duration,
    /// SIGKILL is sent here if the process is still alive.
    pub kill_at: Duration,
}

/// The schedule for a `grace` budget and a preStop hook that would take `pre_stop` (None: no
/// hook). The hook is cut at the grace deadline; SIGKILL comes at the deadline or 2 s after
/// SIGTERM, whichever is later.
pub fn termination_schedule(grace: Duration, pre_stop: Option<Duration>) -> TerminationSchedule {
    let term_at = pre_stop.map_or(Duration::ZERO, |took| took.min(grace));
    TerminationSchedule {
        pre_stop_deadline: pre_stop.map(|_| grace),
        term_at,
        kill_at: kill_after(grace, term_at),
    }
}

/// The kill time relative to the start: `max(grace, term_at + 2 s)`.
fn kill_after(grace: Duration, term_at: Duration) -> Duration {
    grace.max(term_at + MINIMUM_GRACE_AFTER_TERM)
}

/// What the caller knows about the container to stop.
pub struct StopRequest<'a> {
    /// The runtime.
    pub runtime: &'a dyn Runtime,
    /// Where events go.
    pub reporter: &'a dyn PodReporter,
    /// The pod (for events).
    pub pod: &'a Pod,
    /// The container's spec (its preStop).
    pub container: &'a Container,
    /// Its runtime id.
    pub id: &'a str,
    /// The pod IP (preStop httpGet).
    pub pod_ip: &'a str,
    /// When the countdown started.
    pub start: Instant,
    /// The current grace; a smaller value sent while we wait moves the deadline.
    pub grace: watch::Receiver<Duration>,
    /// The `Killing` event's message (`Stopping container web`, or the liveness wording).
    pub reason_message: String,
}

/// A preStop hook still running; it is dropped (its processes killed) once the container stops.
type PendingHook<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// Stops one container per the rules above and returns its final status.
pub async fn stop_container<'a>(mut req: StopRequest<'a>) -> Option<ContainerStatus> {
    let name = req.container.name.clone();
    let still_running = match hooks::pre_stop(req.container) {
        Some(handler) => run_pre_stop(&mut req, handler, &name).await,
        None => None,
    };
    // The event is stamped just before the signal, so its eventTime is the moment of SIGTERM.
    req.reporter.event(
        req.pod,
        Some(&name),
        "Normal",
        "Killing",
        &req.reason_message,
    );
    if let Err(error) = req.runtime.signal_container(req.id, StopSignal::Term) {
        warn!(container = %name, %error, "could not send SIGTERM");
    }
    let term_at = Instant::now();
    info!(pod = %pod_key(req.pod), container = %name, "sent SIGTERM");
    // Upstream does not kill a preStop that outlived the grace period: it runs on beside the
    // stopping container and ends with it (seed 001 prints its output after SIGTERM, T2.3).
    let hook_runs_on = async move {
        if let Some(hook) = still_running {
            let _ = hook.await;
        }
        std::future::pending::<()>().await
    };
    let exited = tokio::select! {
        exited = wait_or_kill(&mut req, term_at, &name) => exited,
        () = hook_runs_on => unreachable!("pending never completes"),
    };
    if let Some(ContainerStatus {
        state: crate::cri::ContainerState::Exited { exit_code, .. },
        ..
    }) = &exited
    {
        info!(pod = %pod_key(req.pod), container = %name, exit_code, "container exited");
        let message = format!("Container {name} exited with code {exit_code}");
        req.reporter
            .event(req.pod, Some(&name), "Normal", "Exited", &message);
    }
    exited
}

/// Runs preStop until it ends or the grace deadline passes (moving with the grace); returns the
/// hook if it is still running at the deadline.
async fn run_pre_stop<'a>(
    req: &mut StopRequest<'a>,
    handler: &'a k8s_openapi::api::core::v1::LifecycleHandler,
    name: &str,
) -> Option<PendingHook<'a>> {
    req.reporter.event(
        req.pod,
        Some(name),
        "Normal",
        "PreStopHookStarted",
        &format!("PreStop hook of container {name} started"),
    );
    info!(pod = %pod_key(req.pod), container = %name, "running prestop hook");
    // No timeout of its own: the grace deadline below decides when SIGTERM goes, and the hook
    // ends with the container.
    let mut hook: PendingHook<'a> = Box::pin(hooks::run(
        req.runtime,
        req.id,
        req.container,
        handler,
        req.pod_ip,
        None,
    ));
    let outcome = loop {
        let deadline = req.start + *req.grace.borrow();
        tokio::select! {
            result = &mut hook => break Some(result),
            _ = tokio::time::sleep_until(deadline) => break None,
            _ = grace_changed(&mut req.grace) => {}
        }
    };
    let cut_short = outcome.is_none();
    let (kind, reason, message) = match outcome {
        Some(Ok(())) => (
            "Normal",
            "PreStopHookCompleted",
            format!("PreStop hook of container {name} completed"),
        ),
        Some(Err(error)) => (
            "Warning",
            "FailedPreStopHook",
            hooks::failure_message(Hook::PreStop, name, &error),
        ),
        None => (
            "Normal",
            "PreStopHookCompleted",
            format!("PreStop hook of container {name} cut short by the grace period (it runs on until the container stops)"),
        ),
    };
    req.reporter
        .event(req.pod, Some(name), kind, reason, &message);
    cut_short.then_some(hook)
}

/// Waits for the exit until the kill deadline (which follows the grace), then SIGKILLs.
async fn wait_or_kill(
    req: &mut StopRequest<'_>,
    term_at: Instant,
    name: &str,
) -> Option<ContainerStatus> {
    let exit = req.runtime.wait_container(req.id);
    tokio::pin!(exit);
    loop {
        let grace = *req.grace.borrow();
        let deadline = req.start + kill_after(grace, term_at.saturating_duration_since(req.start));
        tokio::select! {
            status = &mut exit => return status.ok(),
            _ = tokio::time::sleep_until(deadline) => break,
            _ = grace_changed(&mut req.grace) => {}
        }
    }
    if let Err(error) = req.runtime.signal_container(req.id, StopSignal::Kill) {
        warn!(container = %name, %error, "could not send SIGKILL");
    }
    info!(pod = %pod_key(req.pod), container = %name, "sent SIGKILL");
    req.reporter.event(
        req.pod,
        Some(name),
        "Normal",
        "Killed",
        &format!("Container {name} killed with SIGKILL"),
    );
    exit.await.ok()
}

/// Resolves when the grace changes; never, once nobody can change it any more.
async fn grace_changed(grace: &mut watch::Receiver<Duration>) {
    if grace.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn pod_key(pod: &Pod) -> minik_api::ObjectKey {
    minik_api::ObjectKey::of(&pod.metadata)
}

#[cfg(test)]
#[path = "terminate_tests.rs"]
mod tests;
