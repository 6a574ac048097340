//! `plan`: the kubelet's decision of what to do next for one pod, as a pure function.
//!
//! Kubernetes counterpart: `computePodActions` in
//! `pkg/kubelet/kuberuntime/kuberuntime_manager.go` (which containers to start or kill), with the
//! restart rules of `pkg/kubelet/container/helpers.go` (`ShouldContainerBeRestarted`) and the
//! CrashLoopBackOff curve of `doBackOff`. The pod worker (`pod_worker/`) gathers the facts — the
//! pod from the API, the containers the runtime reports, the kubelet's small memory of past
//! failures — calls [`plan`], and applies the actions it returns. Nothing here does I/O, so every
//! rule is pinned by a unit test at the bottom of this file.
//!
//! The rules, in the order `plan` applies them:
//! 1. A pod that is terminating, or already finished (phase Succeeded/Failed), gets no action:
//!    termination has its own path (`terminate.rs`) and a finished pod never restarts.
//! 2. Init containers run one at a time, in order, each to a zero exit before the next starts.
//!    A failed one is restarted (with backoff) unless `restartPolicy: Never`, which fails the pod.
//! 3. Then every app container is started; an exited one is restarted per `restartPolicy`
//!    (Always: always; OnFailure: on a non-zero exit; Never: never).
//! 4. A start held by a missing ConfigMap or Secret (`CreateContainerConfigError`) is tried again
//!    on every sync. A restart waits out the backoff: the first crash restarts at once, the next ones wait
//!    `base`, `2 × base`, … up to `max` (10 s … 300 s upstream). After 10 minutes of running the
//!    count starts over.
//! 5. A running container whose liveness (or startup) probe failed is killed; its exit then
//!    takes rule 3.
//! 6. An app container started from another `image` than the spec now names (the one container
//!    field a pod update may change) is killed, and restarted at once whatever `restartPolicy`
//!    says: its definition changed, so its exit is no crash.
//!
//! 7. A sidecar (an init container with its own `restartPolicy: Always`) lets the next container
//!    start once it has started (postStart done, startup probe passed), keeps running, and is
//!    restarted whenever it exits.
//!
//! minik simplifies: no sandboxes (a pod has no pause container), sidecars are not stopped when
//! the main containers of a `Never`/`OnFailure` pod complete, and image "pulls" are
//! instantaneous lookups in a table of built-in programs.
//!
//! Read next: `pod_worker/mod.rs` and `pod_worker/sync_pod.rs`, which turn these actions into
//! runtime calls.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, Pod};

use crate::cri::{ContainerState, ContainerStatus};

/// A container that runs this long without trouble resets its backoff (upstream: 10 minutes).
pub const BACKOFF_RESET_AFTER: Duration = Duration::from_secs(600);

/// How long `ErrImagePull` is shown before it turns into `ImagePullBackOff`.
pub const IMAGE_PULL_ERROR_SHOWN_FOR: Duration = Duration::from_secs(1);

/// The CrashLoopBackOff curve: the first delay and the cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// The delay before the second restart (10 s upstream).
    pub base: Duration,
    /// The longest delay (300 s upstream).
    pub max: Duration,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        BackoffPolicy {
            base: Duration::from_secs(10),
            max: Duration::from_secs(300),
        }
    }
}

impl BackoffPolicy {
    /// The wait before restarting after the `crashes`-th crash in a row: 0 for the first one, then
    /// `base`, `2 × base`, `4 × base` … capped at `max`.
    pub fn restart_delay(&self, crashes: u32) -> Duration {
        if crashes <= 1 {
            return Duration::ZERO;
        }
        self.doubled(crashes - 2)
    }

    /// The wait before retrying a start that failed `failures` times in a row (image not found):
    /// `base`, `2 × base` … capped at `max`.
    pub fn retry_delay(&self, failures: u32) -> Duration {
        self.doubled(failures.saturating_sub(1))
    }

    fn doubled(&self, doublings: u32) -> Duration {
        let factor = 1u32.checked_shl(doublings.min(31)).unwrap_or(u32::MAX);
        self.base
            .checked_mul(factor)
            .unwrap_or(self.max)
            .min(self.max)
    }
}

/// Why a start failed before any process ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartFailureKind {
    /// The image names no built-in program (`ErrImagePull`, then `ImagePullBackOff`).
    Image,
    /// The program could not be started (`RunContainerError`, then `CrashLoopBackOff`).
    Run,
    /// A ConfigMap, Secret or key it references is missing (`CreateContainerConfigError`):
    /// retried on every sync, with no backoff of its own.
    Config,
}

/// The kubelet's memory of a start that failed (no runtime container exists for it).
#[derive(Clone, Debug, PartialEq)]
pub struct StartFailure {
    /// What kind of failure.
    pub kind: StartFailureKind,
    /// How many starts failed in a row.
    pub count: u32,
    /// When the last one failed.
    pub at: Timestamp,
    /// The waiting reason shown now (`ErrImagePull`, `ImagePullBackOff`, `RunContainerError` …).
    pub reason: String,
    /// The message shown with it.
    pub message: String,
}

/// What the kubelet remembers about one container beyond what the runtime reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContainerMemo {
    /// Crashes are counted from this attempt on (moved forward after 10 minutes of running).
    pub backoff_from_attempt: u32,
    /// The last failed start, cleared by a successful one.
    pub start_failure: Option<StartFailure>,
}

/// Why the kubelet kills a running container outside pod termination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillReason {
    /// Its liveness probe failed `failureThreshold` times.
    Liveness,
    /// Its startup probe failed `failureThreshold` times.
    Startup,
    /// Its postStart hook failed.
    PostStartHook,
    /// The spec names another image than the one it runs (rule 6).
    DefinitionChanged,
}

/// One step for the pod worker.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Start (or restart) a container as attempt number `attempt`.
    StartContainer {
        /// The container's name.
        name: String,
        /// Whether it is an init container.
        init: bool,
        /// 0 for the first start; the restart count afterwards.
        attempt: u32,
    },
    /// Kill a running container; restart policy then applies to its exit.
    KillContainer {
        /// The runtime id.
        id: String,
        /// The container's name.
        name: String,
        /// Why.
        reason: KillReason,
    },
    /// The container must wait before its next start; wake the worker at `until`.
    BackOff {
        /// The container's name.
        name: String,
        /// The current backoff delay (shown in the CrashLoopBackOff message).
        delay: Duration,
        /// When the next start may happen.
        until: Timestamp,
        /// A start failure (image) rather than a crash.
        start_failure: bool,
    },
    /// `ErrImagePull` has been shown long enough: show `ImagePullBackOff` now.
    ShowImagePullBackOff {
        /// The container's name.
        name: String,
    },
    /// The container ran long enough: count crashes from `from_attempt` on.
    ResetBackoff {
        /// The container's name.
        name: String,
        /// The attempt that ran for 10 minutes.
        from_attempt: u32,
    },
}

/// Everything `plan` looks at: a snapshot, never mutated.
#[derive(Clone, Copy, Debug)]
pub struct PlanInput<'a> {
    /// The pod as the API server last showed it.
    pub pod: &'a Pod,
    /// Every container attempt the runtime knows for this pod (running or exited).
    pub containers: &'a [ContainerStatus],
    /// The kubelet's memory per container name.
    pub memos: &'a BTreeMap<String, ContainerMemo>,
    /// Runtime ids of running containers whose liveness/startup probe or postStart hook failed.
    pub unhealthy: &'a BTreeMap<String, KillReason>,
    /// Runtime ids already being killed (no second kill).
    pub killing: &'a BTreeSet<String>,
    /// Runtime ids of running containers whose postStart finished and startup probe passed (a
    /// sidecar lets the next container start only then).
    pub started: &'a BTreeSet<String>,
    /// Runtime ids of running containers whose postStart hook finished (or that have none).
    pub post_start_done: &'a BTreeSet<String>,
    /// The backoff curve.
    pub backoff: BackoffPolicy,
    /// The time now.
    pub now: Timestamp,
}

/// Decides the next actions for a pod (see the module doc for the rules).
pub fn plan(input: &PlanInput<'_>) -> Vec<Action> {
    let pod = input.pod;
    if pod.metadata.deletion_timestamp.is_some() || is_terminal(pod) {
        return Vec::new();
    }
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let policy = restart_policy(pod);
    let mut actions = Vec::new();
    let inits = spec.init_containers.as_deref().unwrap_or_default();
    for (index, container) in inits.iter().enumerate() {
        let step = if is_sidecar(container) {
            let later = inits[index + 1..].iter().chain(&spec.containers);
            let progressed = later
                .into_iter()
                .any(|c| latest_attempt(input.containers, &c.name).is_some());
            sidecar_step(input, container, progressed, &mut actions)
        } else {
            init_step(input, container, policy, &mut actions)
        };
        match step {
            InitStep::Done => continue,
            InitStep::Blocked => return actions,
        }
    }
    let mut hook_running = false;
    for container in &spec.containers {
        let mut step = Vec::new();
        app_step(input, container, policy, &mut step);
        let starts = step
            .iter()
            .any(|a| matches!(a, Action::StartContainer { .. }));
        if hook_running {
            // Upstream starts app containers one by one, each after the previous one's postStart
            // returned (`startContainer` runs the hook synchronously): hold this start back.
            step.retain(|a| !matches!(a, Action::StartContainer { .. }));
        }
        actions.extend(step);
        hook_running |= post_start_pending(input, container, starts);
    }
    crate::ephemeral::plan_step(input, &mut actions);
    actions
}

/// True while `container`'s postStart hook has not returned: it is starting now (`starts`) with
/// a hook, or it runs and its hook is still going.
fn post_start_pending(input: &PlanInput<'_>, container: &Container, starts: bool) -> bool {
    let has_hook = container
        .lifecycle
        .as_ref()
        .is_some_and(|l| l.post_start.is_some());
    let running_hook = latest_attempt(input.containers, &container.name).is_some_and(|c| {
        matches!(c.state, ContainerState::Running { .. }) && !input.post_start_done.contains(&c.id)
    });
    has_hook && (starts || running_hook)
}

/// Whether an init container let the next one go.
enum InitStep {
    Done,
    Blocked,
}

fn init_step(
    input: &PlanInput<'_>,
    container: &Container,
    policy: &str,
    out: &mut Vec<Action>,
) -> InitStep {
    match latest_attempt(input.containers, &container.name).map(|c| &c.state) {
        Some(ContainerState::Exited { exit_code: 0, .. }) => InitStep::Done,
        Some(ContainerState::Running { .. }) => {
            kill_if_unhealthy(input, container, false, out);
            InitStep::Blocked
        }
        Some(ContainerState::Exited { .. }) => {
            // Under Never a failed init container fails the pod; otherwise it is retried.
            if policy != "Never" {
                restart_step(input, container, true, out);
            }
            InitStep::Blocked
        }
        None => {
            first_start_step(input, container, true, policy, out);
            InitStep::Blocked
        }
    }
}

/// An init container with its own `restartPolicy: Always`: a sidecar.
pub fn is_sidecar(container: &Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

/// A sidecar lets the next container go once it has *started* (running, postStart done, startup
/// probe passed); it is restarted whenever it exits, whatever the pod's policy. `progressed`: a
/// later container already ran, so a restarting sidecar no longer blocks it.
fn sidecar_step(
    input: &PlanInput<'_>,
    container: &Container,
    progressed: bool,
    out: &mut Vec<Action>,
) -> InitStep {
    let latest = latest_attempt(input.containers, &container.name);
    let done = |yes: bool| {
        if yes {
            InitStep::Done
        } else {
            InitStep::Blocked
        }
    };
    match latest.map(|c| &c.state) {
        None => {
            first_start_step(input, container, true, "Always", out);
            InitStep::Blocked
        }
        Some(ContainerState::Running { .. }) => {
            kill_if_unhealthy(input, container, false, out);
            let started = latest.is_some_and(|c| input.started.contains(&c.id));
            done(started || progressed)
        }
        Some(ContainerState::Exited { .. }) => {
            restart_step(input, container, true, out);
            done(progressed)
        }
    }
}

fn app_step(input: &PlanInput<'_>, container: &Container, policy: &str, out: &mut Vec<Action>) {
    let Some(latest) = latest_attempt(input.containers, &container.name) else {
        return first_start_step(input, container, false, policy, out);
    };
    let ContainerState::Exited {
        exit_code,
        finished_at,
        ..
    } = latest.state
    else {
        return kill_if_unhealthy(input, container, true, out);
    };
    let changed = definition_changed(latest, container);
    let start_failed = input
        .memos
        .get(&container.name)
        .and_then(|memo| memo.start_failure.as_ref())
        .is_some_and(|failure| failure.at >= finished_at);
    if changed && !start_failed {
        // A new definition has no crash behind it: no backoff, and the policy does not apply.
        out.push(Action::StartContainer {
            name: container.name.clone(),
            init: false,
            attempt: latest.config.attempt + 1,
        });
    } else if changed || should_restart(policy, exit_code) {
        // Also a new image that failed to start: `restart_step` backs off as for any failed start.
        restart_step(input, container, false, out);
    }
}

/// Whether the spec now names another image than the one `attempt` was started from
/// (upstream's `containerChanged` compares a hash of the whole container spec).
fn definition_changed(attempt: &ContainerStatus, container: &Container) -> bool {
    let started_from = &attempt.config.image;
    // "" is a container adopted from a kubelet that did not record images: unknown, so kept.
    !started_from.is_empty() && Some(started_from) != container.image.as_ref()
}

/// `ShouldContainerBeRestarted`: Always restarts everything, OnFailure only non-zero exits.
pub fn should_restart(policy: &str, exit_code: i32) -> bool {
    match policy {
        "Never" => false,
        "OnFailure" => exit_code != 0,
        _ => true,
    }
}

/// Kills a running container whose probe or hook failed, or (`app`) whose definition changed.
fn kill_if_unhealthy(
    input: &PlanInput<'_>,
    container: &Container,
    app: bool,
    out: &mut Vec<Action>,
) {
    let Some(latest) = latest_attempt(input.containers, &container.name) else {
        return;
    };
    if input.killing.contains(&latest.id) {
        return;
    }
    let changed = app && definition_changed(latest, container);
    let reason = input.unhealthy.get(&latest.id).copied();
    if let Some(reason) = reason.or(changed.then_some(KillReason::DefinitionChanged)) {
        out.push(Action::KillContainer {
            id: latest.id.clone(),
            name: container.name.clone(),
            reason,
        });
    }
}

/// A container that has never run: start it, unless a failed start is backing off.
fn first_start_step(
    input: &PlanInput<'_>,
    container: &Container,
    init: bool,
    policy: &str,
    out: &mut Vec<Action>,
) {
    let name = container.name.clone();
    let memo = input.memos.get(&container.name);
    match memo.and_then(|m| m.start_failure.as_ref()) {
        None => out.push(Action::StartContainer {
            name,
            init,
            attempt: 0,
        }),
        // A program that cannot start under Never is a terminated container (StartError).
        Some(failure) if failure.kind == StartFailureKind::Run && policy == "Never" => {}
        Some(failure) => start_failure_step(input, failure, name, init, 0, out),
    }
}

fn start_failure_step(
    input: &PlanInput<'_>,
    failure: &StartFailure,
    name: String,
    init: bool,
    attempt: u32,
    out: &mut Vec<Action>,
) {
    if failure.kind == StartFailureKind::Config {
        // The worker syncs again when a ConfigMap or Secret changes: try again each time.
        out.push(Action::StartContainer {
            name,
            init,
            attempt,
        });
        return;
    }
    let delay = input.backoff.retry_delay(failure.count);
    let until = add(failure.at, delay);
    let flip_at = add(failure.at, IMAGE_PULL_ERROR_SHOWN_FOR.min(delay / 2));
    let showing_error = failure.kind == StartFailureKind::Image && failure.reason == "ErrImagePull";
    if showing_error && input.now >= flip_at {
        out.push(Action::ShowImagePullBackOff { name: name.clone() });
    }
    if input.now >= until {
        out.push(Action::StartContainer {
            name,
            init,
            attempt,
        });
    } else {
        let until = if showing_error && input.now < flip_at {
            flip_at
        } else {
            until
        };
        out.push(Action::BackOff {
            name,
            delay,
            until,
            start_failure: true,
        });
    }
}

/// An exited container that must run again: now, or after its backoff.
fn restart_step(input: &PlanInput<'_>, container: &Container, init: bool, out: &mut Vec<Action>) {
    let Some(latest) = latest_attempt(input.containers, &container.name) else {
        return;
    };
    let ContainerState::Exited {
        started_at,
        finished_at,
        ..
    } = latest.state
    else {
        return;
    };
    let name = container.name.clone();
    let attempt = latest.config.attempt + 1;
    let memo = input
        .memos
        .get(&container.name)
        .cloned()
        .unwrap_or_default();
    if let Some(failure) = memo.start_failure.as_ref() {
        if failure.at >= finished_at {
            return start_failure_step(input, failure, name, init, attempt, out);
        }
    }
    let ran_for = finished_at.duration_since(started_at).unsigned_abs();
    let mut from_attempt = memo.backoff_from_attempt;
    if ran_for >= BACKOFF_RESET_AFTER && from_attempt < latest.config.attempt {
        from_attempt = latest.config.attempt;
        out.push(Action::ResetBackoff {
            name: name.clone(),
            from_attempt,
        });
    }
    let crashes = (latest.config.attempt + 1)
        .saturating_sub(from_attempt)
        .max(1);
    let delay = input.backoff.restart_delay(crashes);
    let until = add(finished_at, delay);
    if input.now >= until {
        out.push(Action::StartContainer {
            name,
            init,
            attempt,
        });
    } else {
        out.push(Action::BackOff {
            name,
            delay,
            until,
            start_failure: false,
        });
    }
}

/// The newest attempt of a container, as the runtime reports it.
pub fn latest_attempt<'c>(
    containers: &'c [ContainerStatus],
    name: &str,
) -> Option<&'c ContainerStatus> {
    containers
        .iter()
        .filter(|c| c.config.name == name)
        .max_by_key(|c| c.config.attempt)
}

/// The attempt before the newest one (its state becomes `lastState`).
pub fn previous_attempt<'c>(
    containers: &'c [ContainerStatus],
    name: &str,
) -> Option<&'c ContainerStatus> {
    let latest = latest_attempt(containers, name)?.config.attempt;
    containers
        .iter()
        .filter(|c| c.config.name == name && c.config.attempt < latest)
        .max_by_key(|c| c.config.attempt)
}

/// `spec.restartPolicy`, defaulting to Always.
pub fn restart_policy(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always")
}

/// Whether the pod's phase is final (Succeeded or Failed).
pub fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Adds a duration to a timestamp, saturating.
pub fn add(at: Timestamp, delay: Duration) -> Timestamp {
    let span = jiff::SignedDuration::try_from(delay).unwrap_or(jiff::SignedDuration::MAX);
    at.checked_add(span).unwrap_or(Timestamp::MAX)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
