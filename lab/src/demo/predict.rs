//! What the rules say should happen: the kubelet's termination schedule, as a pure function.
//!
//! Kubernetes counterpart: `killContainer` in `pkg/kubelet/kuberuntime/kuberuntime_container.go`
//! and the hook rules of the container-lifecycle-hooks page (see
//! docs/kubernetes-rules.md#start-path and #termination). `minik demo hooks` prints this prediction
//! next to what the cluster measured, so the rule and the behaviour can be compared line by line:
//!
//! - postStart starts with the process and runs alongside it; the container counts as Running
//!   only once postStart has finished;
//! - on delete, the grace period starts *before* preStop and covers it (floored at 1 s);
//! - SIGTERM follows preStop, or the end of the grace period if preStop is still running;
//! - SIGKILL follows SIGTERM after what is left of the grace period, but never sooner than 2 s
//!   (`minimumGracePeriodInSeconds`), unless the process has exited by then.

use std::time::Duration;

/// The experiment's knobs, as seed 001 ("What Happens When Deleting a Pod") names them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hooks {
    /// How long the postStart hook runs.
    pub post_start: Duration,
    /// How long the preStop hook runs.
    pub pre_stop: Duration,
    /// `terminationGracePeriodSeconds`.
    pub grace: Duration,
    /// How long the application takes to exit after SIGTERM (`None`: it ignores SIGTERM).
    pub shutdown: Option<Duration>,
}

/// One predicted step: `(what, milliseconds after the reference moment)`.
pub type Step = (&'static str, f64);

/// The smallest gap between SIGTERM and SIGKILL the kubelet allows.
const MINIMUM_GRACE: Duration = Duration::from_secs(2);

/// The start of the container, measured from the moment its process started.
pub fn start_schedule(hooks: &Hooks) -> Vec<Step> {
    let post_start = ms(hooks.post_start);
    vec![
        ("process started", 0.0),
        ("postStart started", 0.0),
        ("postStart finished", post_start),
        ("Running", post_start),
    ]
}

/// The termination of the container, measured from the moment the deletion was accepted.
pub fn termination_schedule(hooks: &Hooks) -> Vec<Step> {
    // The grace period is floored at 1 s: "no matter what, we always supply a grace period of 1".
    let budget = hooks.grace.max(Duration::from_secs(1));
    let mut steps = vec![("preStop started", 0.0)];
    let sigterm_at = if hooks.pre_stop < budget {
        steps.push(("preStop finished", ms(hooks.pre_stop)));
        hooks.pre_stop
    } else {
        // The hook is abandoned at the deadline; it may go on running, but the kubelet moves on.
        steps.push(("preStop cut short by the grace period", ms(budget)));
        budget
    };
    steps.push(("SIGTERM", ms(sigterm_at)));
    let kill_after = budget.saturating_sub(sigterm_at).max(MINIMUM_GRACE);
    match hooks.shutdown {
        Some(shutdown) if shutdown < kill_after => {
            steps.push(("process exited", ms(sigterm_at + shutdown)))
        }
        _ => {
            steps.push(("SIGKILL", ms(sigterm_at + kill_after)));
            steps.push(("process exited", ms(sigterm_at + kill_after)));
        }
    }
    steps
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(post_start: u64, pre_stop: u64, grace: u64, shutdown: Option<u64>) -> Hooks {
        Hooks {
            post_start: Duration::from_secs(post_start),
            pre_stop: Duration::from_secs(pre_stop),
            grace: Duration::from_secs(grace),
            shutdown: shutdown.map(Duration::from_secs),
        }
    }

    fn at(steps: &[Step], name: &str) -> Option<f64> {
        steps
            .iter()
            .find(|(step, _)| *step == name)
            .map(|(_, t)| *t / 1000.0)
    }

    /// Seed 001, scenario 1: preStop 5 s inside a 10 s grace; the app needs 2 s and makes it.
    #[test]
    fn short_prestop_sends_sigterm_when_the_hook_ends() {
        let steps = termination_schedule(&hooks(5, 5, 10, Some(2)));
        assert_eq!(at(&steps, "SIGTERM"), Some(5.0));
        assert_eq!(at(&steps, "process exited"), Some(7.0));
        assert_eq!(at(&steps, "SIGKILL"), None);
    }

    /// Seed 001, scenario 2: the hook outlives the grace; SIGTERM at the deadline, SIGKILL 2 s later.
    #[test]
    fn long_prestop_gets_sigterm_at_the_deadline_and_sigkill_two_seconds_later() {
        let steps = termination_schedule(&hooks(0, 15, 10, Some(5)));
        assert_eq!(at(&steps, "SIGTERM"), Some(10.0));
        assert_eq!(at(&steps, "SIGKILL"), Some(12.0));
    }

    /// The docs' example: grace 60 s, a 55 s hook, an app that needs 10 s: SIGKILL at 60 s, 5 s after SIGTERM.
    #[test]
    fn app_that_needs_more_than_what_is_left_is_killed_at_the_deadline() {
        let steps = termination_schedule(&hooks(0, 55, 60, Some(10)));
        assert_eq!(at(&steps, "SIGTERM"), Some(55.0));
        assert_eq!(at(&steps, "SIGKILL"), Some(60.0));
    }

    #[test]
    fn app_ignoring_sigterm_is_killed() {
        let steps = termination_schedule(&hooks(0, 0, 3, None));
        assert_eq!(at(&steps, "SIGTERM"), Some(0.0));
        assert_eq!(at(&steps, "SIGKILL"), Some(3.0));
    }

    #[test]
    fn running_is_reported_after_post_start() {
        let steps = start_schedule(&hooks(1, 0, 30, None));
        assert_eq!(at(&steps, "Running"), Some(1.0));
    }
}
