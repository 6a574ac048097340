//! Restarting a component that exits on its own, with exponential backoff.
//!
//! Kubernetes counterpart: what keeps a kubeadm control plane up — systemd's `Restart=always` for
//! the kubelet, and the kubelet's restart of a crashed static pod (`CrashLoopBackOff`,
//! `pkg/kubelet/kuberuntime` backoff: doubling, capped, reset after a stable run). minik's
//! rule ([`RestartBackoff`]): the first restart comes after [`FIRST_RESTART_DELAY`], each quick
//! crash doubles the wait up to [`MAX_RESTART_DELAY`], and a component that ran for
//! [`STABLE_RUN`] starts again from the first delay.
//!
//! `minik up` calls [`Cluster::supervise`] in its main loop; the test harness does not, so a test
//! that kills a component decides itself when to restart it. A restarted component keeps its
//! command line: a kubelet finds its root directory and its running containers again, and every
//! component's watches relist and resume on their own.

use std::process::ExitStatus;
use std::time::Duration;

use crate::cluster::Cluster;
use crate::component::Component;

/// The wait before the first restart after a crash.
pub const FIRST_RESTART_DELAY: Duration = Duration::from_millis(500);
/// The longest wait between restarts.
pub const MAX_RESTART_DELAY: Duration = Duration::from_secs(30);
/// A run this long resets the backoff.
pub const STABLE_RUN: Duration = Duration::from_secs(60);

/// The doubling wait between restarts of one component.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestartBackoff {
    delay: Option<Duration>,
}

impl RestartBackoff {
    /// The wait before restarting a component that exited after running for `ran_for`.
    pub fn next_delay(&mut self, ran_for: Duration) -> Duration {
        let delay = match self.delay {
            Some(previous) if ran_for < STABLE_RUN => (previous * 2).min(MAX_RESTART_DELAY),
            _ => FIRST_RESTART_DELAY,
        };
        self.delay = Some(delay);
        delay
    }
}

/// One component's restart record, shown by `minik status`.
#[derive(Clone, Debug, Default)]
pub struct RestartState {
    /// How many times it was restarted after exiting on its own.
    pub restarts: u32,
    /// How its last unexpected exit ended (`signal: 9 (SIGKILL)`).
    pub last_exit: Option<String>,
    backoff: RestartBackoff,
    due: Option<tokio::time::Instant>,
}

/// What [`Cluster::supervise`] saw or did.
#[derive(Debug)]
pub enum Supervision {
    /// A component exited without being asked to; it is restarted after `restart_in`.
    Exited {
        /// Its name.
        name: String,
        /// How it ended (`None` if unknown).
        status: Option<ExitStatus>,
        /// The backoff before its restart.
        restart_in: Duration,
    },
    /// A component was started again.
    Restarted {
        /// Its name.
        name: String,
        /// Its restarts so far.
        restarts: u32,
    },
    /// Starting it again failed; the next exit (or the next call) tries again.
    RestartFailed {
        /// Its name.
        name: String,
        /// Why.
        error: String,
    },
}

impl Cluster {
    /// Waits for the next component that exits on its own (and schedules its restart) or for the
    /// next restart that is due (and performs it). `None` once no exit can come any more.
    pub async fn supervise(&mut self) -> Option<Supervision> {
        let due = self
            .members
            .iter()
            .filter_map(|m| m.restart.due.map(|at| (at, m.running.name.clone())))
            .min();
        let wait_due = async {
            match &due {
                Some((at, _)) => tokio::time::sleep_until(*at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            exit = self.unexpected.recv() => {
                let exit = exit?;
                Some(self.schedule_restart(exit.name, exit.status))
            }
            () = wait_due => {
                let (_, name) = due?;
                Some(self.restart_crashed(name).await)
            }
        }
    }

    fn schedule_restart(&mut self, name: String, status: Option<ExitStatus>) -> Supervision {
        let Some(member) = self.members.iter_mut().find(|m| m.running.name == name) else {
            return Supervision::RestartFailed {
                name,
                error: "no longer part of the cluster".into(),
            };
        };
        let ran_for = member.running.started.elapsed();
        let restart_in = member.restart.backoff.next_delay(ran_for);
        member.restart.last_exit = Some(status.map_or_else(|| "unknown".into(), |s| s.to_string()));
        member.restart.due = Some(tokio::time::Instant::now() + restart_in);
        tracing::warn!(component = %name, ?status, ?restart_in, "exited unexpectedly; restarting");
        Supervision::Exited {
            name,
            status,
            restart_in,
        }
    }

    async fn restart_crashed(&mut self, name: String) -> Supervision {
        if let Some(member) = self.members.iter_mut().find(|m| m.running.name == name) {
            member.restart.due = None;
        }
        match self.restart(&name).await {
            Ok(()) => {
                let Some(member) = self.members.iter_mut().find(|m| m.running.name == name) else {
                    return Supervision::RestartFailed {
                        name,
                        error: "gone".into(),
                    };
                };
                member.restart.restarts += 1;
                let restarts = member.restart.restarts;
                if member.component == Component::Apiserver {
                    tracing::info!(component = %name, restarts, "restarted; clients reconnect");
                }
                Supervision::Restarted { name, restarts }
            }
            Err(error) => Supervision::RestartFailed {
                name,
                error: error.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_crashes_double_the_wait_up_to_the_cap_and_a_stable_run_resets_it() {
        let mut backoff = RestartBackoff::default();
        let quick = Duration::from_secs(1);
        let waits: Vec<Duration> = (0..9).map(|_| backoff.next_delay(quick)).collect();
        let millis: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(
            millis,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        assert_eq!(backoff.next_delay(STABLE_RUN), FIRST_RESTART_DELAY);
        assert_eq!(backoff.next_delay(quick), Duration::from_secs(1));
    }
}
