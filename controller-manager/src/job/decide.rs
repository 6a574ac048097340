//! The Job controller's decisions, as pure functions of the Job, its pods and the clock.
//!
//! Kubernetes counterpart: `pkg/controller/job/job_controller.go` (`syncJob`, `manageJob`,
//! `getNewFinishedPods`, `isPodFailed`, `trackJobStatusWithFinalizers`, `pastActiveDeadline`,
//! `pastBackoffLimitOnFailure`) and `backoff_utils.go`. docs/workloads.md#jobs names the rules
//! (JB1-JB8). What a sync does with them:
//!
//! 1. [`newly_finished`]: pods that ended and still carry the tracking finalizer go into
//!    `status.uncountedTerminatedPods` first, so a crash between the two writes loses nothing;
//! 2. their finalizers are removed, and only then are they counted into `succeeded`/`failed`;
//! 3. [`target`]: SuccessCriteriaMet or FailureTarget once the counts say so, [`want_active`]:
//!    how many pods should run, [`backoff_remaining`]: whether a replacement must wait;
//! 4. [`finish`]: Complete or Failed once every pod is terminal (JB6).
//!
//! minik simplifies: container restarts of `OnFailure` pods are not counted as failures, the
//! backoff counts failures since the last success among the pods still present rather than an
//! in-memory record, and pods deleted by the controller itself (suspend, a decided Job) are not
//! counted as failed.

use std::collections::BTreeSet;
use std::time::Duration;

use jiff::Timestamp;
use minik_api::batch::{Job, JobCondition};
use minik_api::core::Pod;
use minik_api::jobs::TRACKING_FINALIZER;

/// Where a pod of the Job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodState {
    /// Pending or Running, not being deleted: counted in `active`.
    Active,
    /// Being deleted before it ended: counted in `terminating`.
    Terminating,
    /// Phase Succeeded.
    Succeeded,
    /// Phase Failed.
    Failed,
}

/// A pod's [`PodState`].
pub fn pod_state(pod: &Pod) -> PodState {
    match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Succeeded") => PodState::Succeeded,
        Some("Failed") => PodState::Failed,
        _ if pod.metadata.deletion_timestamp.is_some() => PodState::Terminating,
        _ => PodState::Active,
    }
}

/// Whether the pod still carries `batch.kubernetes.io/job-tracking`.
pub fn has_tracking_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == TRACKING_FINALIZER)
}

/// The uids of finished pods not yet counted (`getNewFinishedPods`): tracked pods that ended,
/// not already in `uncountedTerminatedPods`, not already released by this controller (`done`).
/// A tracked pod deleted before it ended counts as failed (`isPodFailed`: it may never reach
/// Failed), unless `deleting_is_ours` (the Job is suspended or decided, the controller deleted it).
pub fn newly_finished(
    pods: &[&Pod],
    uncounted: &Uncounted,
    done: &BTreeSet<String>,
    deleting_is_ours: bool,
) -> Uncounted {
    let mut found = Uncounted::default();
    for pod in pods.iter().filter(|pod| has_tracking_finalizer(pod)) {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if uncounted.contains(&uid) || done.contains(&uid) {
            continue;
        }
        match pod_state(pod) {
            PodState::Succeeded => found.succeeded.insert(uid),
            PodState::Failed => found.failed.insert(uid),
            PodState::Terminating if !deleting_is_ours => found.failed.insert(uid),
            PodState::Terminating | PodState::Active => false,
        };
    }
    found
}

/// `status.uncountedTerminatedPods` as sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Uncounted {
    /// Uids of succeeded pods not yet in `status.succeeded`.
    pub succeeded: BTreeSet<String>,
    /// Uids of failed pods not yet in `status.failed`.
    pub failed: BTreeSet<String>,
}

impl Uncounted {
    /// The Job's recorded uncounted pods.
    pub fn of(job: &Job) -> Self {
        let status = job
            .status
            .as_ref()
            .and_then(|s| s.uncounted_terminated_pods.as_ref());
        let set = |list: Option<&Vec<String>>| list.into_iter().flatten().cloned().collect();
        Uncounted {
            succeeded: set(status.and_then(|u| u.succeeded.as_ref())),
            failed: set(status.and_then(|u| u.failed.as_ref())),
        }
    }

    /// Whether `uid` is listed.
    pub fn contains(&self, uid: &str) -> bool {
        self.succeeded.contains(uid) || self.failed.contains(uid)
    }

    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.succeeded.is_empty() && self.failed.is_empty()
    }

    /// Both lists together.
    pub fn extend(&mut self, other: &Uncounted) {
        self.succeeded.extend(other.succeeded.iter().cloned());
        self.failed.extend(other.failed.iter().cloned());
    }
}

/// The counts of the Job's pods by [`PodState`], and how many active ones are Ready.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Succeeded pods counted in status, plus those uncounted.
    pub succeeded: i32,
    /// Failed pods counted in status, plus those uncounted.
    pub failed: i32,
    /// Pods running or pending.
    pub active: i32,
    /// Active pods with condition Ready.
    pub ready: i32,
    /// Pods being deleted before they ended.
    pub terminating: i32,
}

/// What a Job's spec asks, defaults applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wanted {
    /// `completions`; `None` is a work queue (done at the first success).
    pub completions: Option<i32>,
    /// `parallelism`.
    pub parallelism: i32,
    /// `backoffLimit`.
    pub backoff_limit: i32,
    /// `activeDeadlineSeconds`.
    pub active_deadline: Option<i64>,
    /// `suspend`.
    pub suspend: bool,
}

impl Wanted {
    /// The spec of `job`, with upstream's defaults where a field is unset.
    pub fn of(job: &Job) -> Self {
        let spec = job.spec.clone().unwrap_or_default();
        Wanted {
            completions: spec.completions,
            parallelism: spec.parallelism.unwrap_or(1).max(0),
            backoff_limit: spec.backoff_limit.unwrap_or(6),
            active_deadline: spec.active_deadline_seconds,
            suspend: spec.suspend.unwrap_or(false),
        }
    }
}

/// The interim condition a sync may decide: the Job has succeeded or failed, pods may still run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `SuccessCriteriaMet` or `FailureTarget`.
    pub type_: &'static str,
    /// `CompletionsReached`, `BackoffLimitExceeded` or `DeadlineExceeded`.
    pub reason: &'static str,
    /// Upstream's message for the reason.
    pub message: &'static str,
}

impl Target {
    /// The terminal condition the target turns into once every pod ended (JB6).
    pub fn terminal_type(&self) -> &'static str {
        if self.type_ == "SuccessCriteriaMet" {
            "Complete"
        } else {
            "Failed"
        }
    }
}

const SUCCESS: Target = Target {
    type_: "SuccessCriteriaMet",
    reason: "CompletionsReached",
    message: "Reached expected number of succeeded pods",
};
const BACKOFF_EXCEEDED: Target = Target {
    type_: "FailureTarget",
    reason: "BackoffLimitExceeded",
    message: "Job has reached the specified backoff limit",
};
const DEADLINE_EXCEEDED: Target = Target {
    type_: "FailureTarget",
    reason: "DeadlineExceeded",
    message: "Job was active longer than specified deadline",
};

/// A FailJob rule of the `podFailurePolicy` matched a failed pod (the condition written then
/// carries the pod and the rule).
pub const POD_FAILURE_POLICY: Target = Target {
    type_: "FailureTarget",
    reason: "PodFailurePolicy",
    message: "Job failed by a FailJob rule of its pod failure policy",
};

/// The target already recorded in the Job's conditions, if any.
pub fn recorded_target(conditions: &[JobCondition]) -> Option<Target> {
    let has = |type_: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == type_ && c.status == "True")
    };
    if has("SuccessCriteriaMet").is_some() {
        return Some(SUCCESS);
    }
    let failure = has("FailureTarget")?;
    Some(match failure.reason.as_deref() {
        Some("DeadlineExceeded") => DEADLINE_EXCEEDED,
        Some("PodFailurePolicy") => POD_FAILURE_POLICY,
        _ => BACKOFF_EXCEEDED,
    })
}

/// Whether the Job succeeded or failed by now (JB5: the deadline wins over the backoff limit).
/// A suspended Job has no running deadline.
pub fn target(
    wanted: &Wanted,
    counts: &Counts,
    start: Option<Timestamp>,
    now: Timestamp,
) -> Option<Target> {
    let succeeded = match wanted.completions {
        Some(completions) => counts.succeeded >= completions,
        // A work queue is done once one pod succeeded and none still runs.
        None => counts.succeeded > 0 && counts.active == 0,
    };
    if succeeded {
        return Some(SUCCESS);
    }
    if !wanted.suspend && deadline_remaining(wanted, start, now) == Some(Duration::ZERO) {
        return Some(DEADLINE_EXCEEDED);
    }
    (counts.failed > wanted.backoff_limit).then_some(BACKOFF_EXCEEDED)
}

/// Time left before `activeDeadlineSeconds` (`None` without a deadline or a start time).
pub fn deadline_remaining(
    wanted: &Wanted,
    start: Option<Timestamp>,
    now: Timestamp,
) -> Option<Duration> {
    let deadline = wanted.active_deadline?;
    let elapsed = now.duration_since(start?).as_secs_f64().max(0.0);
    Some(Duration::from_secs_f64(
        (deadline as f64 - elapsed).max(0.0),
    ))
}

/// `onlyReplaceFailedPods`: `podReplacementPolicy: Failed` (the default with a
/// `podFailurePolicy`) — a deleted pod is replaced, and counted failed, only once it is Failed.
pub fn only_replace_failed(job: &Job) -> bool {
    job.spec.as_ref().is_some_and(|spec| {
        spec.pod_replacement_policy.as_deref() == Some("Failed")
            || spec.pod_failure_policy.is_some()
    })
}

/// Pods to create (negative: to delete) (`manageJob`): the wanted active pods minus the active
/// ones, and minus the terminating ones when only failed pods are replaced (they still hold
/// their place).
pub fn pods_missing(want: i32, counts: &Counts, only_replace_failed: bool) -> i32 {
    let holding = if only_replace_failed {
        counts.terminating
    } else {
        0
    };
    want - counts.active - holding
}

/// How many pods should be active (`manageJob`): none while suspended or decided; else up to
/// `parallelism`, never more than the completions still missing. A work queue that had a success
/// starts nothing new and lets its running pods finish.
pub fn want_active(wanted: &Wanted, counts: &Counts, decided: bool) -> i32 {
    if wanted.suspend || decided {
        return 0;
    }
    match wanted.completions {
        Some(completions) => (completions - counts.succeeded).clamp(0, wanted.parallelism),
        None if counts.succeeded > 0 => counts.active.min(wanted.parallelism),
        None => wanted.parallelism,
    }
}

/// The wait before a replacement pod (JB4): 10 s × 2^(n−1) after the n-th failure in a row,
/// capped at 10 min; `base` and `cap` are options so tests can scale time down.
pub fn backoff_delay(consecutive_failures: u32, base: Duration, cap: Duration) -> Duration {
    if consecutive_failures == 0 {
        return Duration::ZERO;
    }
    let factor = 2u32.saturating_pow(consecutive_failures.saturating_sub(1).min(30));
    base.saturating_mul(factor).min(cap)
}

/// Time left before a replacement may be created: failures since the last success among the
/// Job's pods, measured from the last one's finish time.
pub fn backoff_remaining(pods: &[&Pod], base: Duration, cap: Duration, now: Timestamp) -> Duration {
    let mut finished: Vec<(Timestamp, PodState)> = pods
        .iter()
        .filter_map(|pod| {
            let state = pod_state(pod);
            matches!(state, PodState::Succeeded | PodState::Failed)
                .then(|| (finish_time(pod), state))
        })
        .collect();
    finished.sort_by_key(|(time, _)| *time);
    let failures: Vec<Timestamp> = finished
        .iter()
        .rev()
        .take_while(|(_, state)| *state == PodState::Failed)
        .map(|(time, _)| *time)
        .collect();
    let Some(last) = failures.first() else {
        return Duration::ZERO;
    };
    let delay = backoff_delay(failures.len() as u32, base, cap);
    let elapsed = now.duration_since(*last).as_secs_f64().max(0.0);
    Duration::from_secs_f64((delay.as_secs_f64() - elapsed).max(0.0))
}

/// When a pod ended: its last container's `finishedAt`, else its creation (`getFinishedTime`).
fn finish_time(pod: &Pod) -> Timestamp {
    let finished = pod
        .status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref())
        .map(|t| t.0)
        .max();
    finished
        .or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

/// Whether a decided Job may take its terminal condition: no pod left running or terminating,
/// no finished pod left uncounted (JB6).
pub fn finish(counts: &Counts, uncounted: &Uncounted) -> bool {
    counts.active == 0 && counts.terminating == 0 && uncounted.is_empty()
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
