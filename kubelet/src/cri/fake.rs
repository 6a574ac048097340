//! An in-memory [`Runtime`] for the kubelet's unit tests: containers "run" until told otherwise.
//!
//! Kubernetes counterpart: the kubelet's `FakeRuntime` (`pkg/kubelet/container/testing/fake_runtime.go`)
//! and the CRI `FakeRuntimeService` (`cri-api/pkg/apis/testing/fake_runtime_service.go`), which record
//! calls so tests can assert on them. Behaviour is configured per container *name*
//! ([`FakeRuntime::set_behavior`]): fail to start, exit by itself after a while, exit on SIGTERM after
//! N ms with some code, or ignore SIGTERM. SIGKILL always ends a container with 137. Every signal is
//! recorded with a [`tokio::time::Instant`] (so tests may run with a paused clock) and a wall time.
//!
//! Clone the runtime to "restart the kubelet" on the same containers.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use jiff::Timestamp;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{
    ContainerConfig, ContainerId, ContainerState, ContainerStatus, Error, ExecResult, Result,
    Runtime, StopSignal,
};

/// What a container does on SIGTERM.
#[derive(Clone, Debug, PartialEq)]
pub enum OnTerm {
    /// Exit `after` the signal with `exit_code` (a process without a handler: 0 ms, 143).
    Exit { after: Duration, exit_code: i32 },
    /// Keep running; only SIGKILL ends it.
    Ignore,
}

/// How containers with a given name behave.
#[derive(Clone, Debug, PartialEq)]
pub struct Behavior {
    /// `start_container` fails with this message.
    pub fail_start: Option<String>,
    /// The container exits by itself after this long with this code.
    pub exit_after: Option<(Duration, i32)>,
    /// Reaction to SIGTERM.
    pub on_term: OnTerm,
    /// What `exec_sync` answers (after `exec_delay`; a delay over the timeout gives 137).
    pub exec_result: ExecResult,
    pub exec_delay: Duration,
}

impl Default for Behavior {
    fn default() -> Self {
        Behavior {
            fail_start: None,
            exit_after: None,
            on_term: OnTerm::Exit {
                after: Duration::ZERO,
                exit_code: 143,
            },
            exec_result: ExecResult {
                exit_code: 0,
                output: String::new(),
            },
            exec_delay: Duration::ZERO,
        }
    }
}

/// One signal a container received.
#[derive(Clone, Debug, PartialEq)]
pub struct SignalRecord {
    pub id: ContainerId,
    pub name: String,
    pub signal: StopSignal,
    pub at: Instant,
    pub wall: Timestamp,
}

/// The fake runtime. Cheap to clone; clones share the containers.
#[derive(Clone, Default)]
pub struct FakeRuntime {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    behaviors: HashMap<String, Behavior>,
    containers: BTreeMap<ContainerId, FakeContainer>,
    signals: Vec<SignalRecord>,
    starts: Vec<ContainerConfig>,
    execs: Vec<(ContainerId, Vec<String>)>,
    next_pid: u32,
}

struct FakeContainer {
    status: ContainerStatus,
    exited: watch::Sender<bool>,
}

impl FakeRuntime {
    /// An empty runtime; every name behaves as [`Behavior::default`].
    pub fn new() -> Self {
        FakeRuntime::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sets how containers named `name` behave from their next start on.
    pub fn set_behavior(&self, name: &str, behavior: Behavior) {
        self.lock().behaviors.insert(name.to_string(), behavior);
    }

    /// Every signal sent so far, in order.
    pub fn signals(&self) -> Vec<SignalRecord> {
        self.lock().signals.clone()
    }

    /// The signals sent to containers named `name`.
    pub fn signals_for(&self, name: &str) -> Vec<SignalRecord> {
        self.signals()
            .into_iter()
            .filter(|s| s.name == name)
            .collect()
    }

    /// Every config passed to a successful `start_container`, in order.
    pub fn starts(&self) -> Vec<ContainerConfig> {
        self.lock().starts.clone()
    }

    /// Every `exec_sync` call: container id and argv.
    pub fn execs(&self) -> Vec<(ContainerId, Vec<String>)> {
        self.lock().execs.clone()
    }

    /// Makes a running container exit now with `exit_code` (a crash, or a job finishing).
    pub fn exit_container(&self, id: &str, exit_code: i32) {
        let mut state = self.lock();
        let Some(container) = state.containers.get_mut(id) else {
            return;
        };
        if let ContainerState::Running { started_at, .. } = container.status.state {
            container.status.state = ContainerState::Exited {
                started_at,
                finished_at: Timestamp::now(),
                exit_code,
            };
            container.exited.send_replace(true);
        }
    }

    /// Exits `id` after `delay` (at once if zero or outside a tokio runtime).
    fn exit_later(&self, id: &str, delay: Duration, exit_code: i32) {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if !delay.is_zero() => {
                let (this, id) = (self.clone(), id.to_string());
                handle.spawn(async move {
                    tokio::time::sleep(delay).await;
                    this.exit_container(&id, exit_code);
                });
            }
            _ => self.exit_container(id, exit_code),
        }
    }

    fn behavior(&self, name: &str) -> Behavior {
        self.lock().behaviors.get(name).cloned().unwrap_or_default()
    }

    fn start(&self, config: ContainerConfig) -> Result<ContainerStatus> {
        let behavior = self.behavior(&config.name);
        if let Some(message) = behavior.fail_start {
            return Err(Error::StartFailed {
                name: config.name,
                message,
            });
        }
        let id = format!("{}-{}-{}", config.pod_uid, config.name, config.attempt);
        let status = {
            let mut state = self.lock();
            if let Some(existing) = state.containers.get(&id) {
                if matches!(existing.status.state, ContainerState::Running { .. }) {
                    let message = format!("container {id} is already running");
                    return Err(Error::StartFailed {
                        name: config.name,
                        message,
                    });
                }
            }
            state.next_pid += 1;
            let pid = 10_000 + state.next_pid;
            let state_now = ContainerState::Running {
                pid,
                started_at: Timestamp::now(),
            };
            let status = ContainerStatus {
                id: id.clone(),
                config: config.clone(),
                state: state_now,
            };
            let (exited, _) = watch::channel(false);
            state.containers.insert(
                id.clone(),
                FakeContainer {
                    status: status.clone(),
                    exited,
                },
            );
            state.starts.push(config);
            status
        };
        if let Some((after, exit_code)) = behavior.exit_after {
            self.exit_later(&id, after, exit_code);
        }
        Ok(status)
    }
}

impl Runtime for FakeRuntime {
    fn start_container(&self, config: ContainerConfig) -> BoxFuture<'_, Result<ContainerStatus>> {
        let result = self.start(config);
        async move { result }.boxed()
    }

    fn signal_container(&self, id: &str, signal: StopSignal) -> Result<()> {
        let (name, running) = {
            let mut state = self.lock();
            let container = state
                .containers
                .get(id)
                .ok_or_else(|| Error::NotFound(id.to_string()))?;
            let name = container.status.config.name.clone();
            let running = matches!(container.status.state, ContainerState::Running { .. });
            let record = SignalRecord {
                id: id.to_string(),
                name: name.clone(),
                signal,
                at: Instant::now(),
                wall: Timestamp::now(),
            };
            state.signals.push(record);
            (name, running)
        };
        if !running {
            return Ok(());
        }
        match (signal, self.behavior(&name).on_term) {
            (StopSignal::Kill, _) => self.exit_container(id, 137),
            (StopSignal::Term, OnTerm::Exit { after, exit_code }) => {
                self.exit_later(id, after, exit_code)
            }
            (StopSignal::Term, OnTerm::Ignore) => {}
        }
        Ok(())
    }

    fn wait_container(&self, id: &str) -> BoxFuture<'_, Result<ContainerStatus>> {
        let id = id.to_string();
        async move {
            let mut exited = {
                let state = self.lock();
                let container = state
                    .containers
                    .get(&id)
                    .ok_or_else(|| Error::NotFound(id.clone()))?;
                container.exited.subscribe()
            };
            let _ = exited.wait_for(|done| *done).await;
            self.container_status(&id).ok_or(Error::NotFound(id))
        }
        .boxed()
    }

    fn container_status(&self, id: &str) -> Option<ContainerStatus> {
        self.lock().containers.get(id).map(|c| c.status.clone())
    }

    fn list_containers(&self) -> Vec<ContainerStatus> {
        self.lock()
            .containers
            .values()
            .map(|c| c.status.clone())
            .collect()
    }

    fn remove_container(&self, id: &str) -> BoxFuture<'_, Result<()>> {
        self.exit_container(id, 137);
        self.lock().containers.remove(id);
        async { Ok(()) }.boxed()
    }

    fn exec_sync(
        &self,
        id: &str,
        argv: Vec<String>,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<ExecResult>> {
        let name = self.container_status(id).map(|s| s.config.name);
        self.lock().execs.push((id.to_string(), argv));
        async move {
            let name = name.ok_or_else(|| Error::NotFound(String::new()))?;
            let behavior = self.behavior(&name);
            if behavior.exec_delay > timeout {
                tokio::time::sleep(timeout).await;
                return Ok(ExecResult {
                    exit_code: 137,
                    output: String::new(),
                });
            }
            tokio::time::sleep(behavior.exec_delay).await;
            Ok(behavior.exec_result)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(name: &str) -> ContainerConfig {
        ContainerConfig {
            pod_uid: "uid".into(),
            name: name.into(),
            argv: vec!["x".into()],
            ..Default::default()
        }
    }

    fn exit_code(status: &ContainerStatus) -> Option<i32> {
        match status.state {
            ContainerState::Exited { exit_code, .. } => Some(exit_code),
            ContainerState::Running { .. } => None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn term_exits_after_the_configured_delay_and_is_recorded() {
        let rt = FakeRuntime::new();
        rt.set_behavior(
            "app",
            Behavior {
                on_term: OnTerm::Exit {
                    after: Duration::from_millis(500),
                    exit_code: 0,
                },
                ..Default::default()
            },
        );
        let id = rt.start_container(config("app")).await.unwrap().id;
        let t0 = Instant::now();
        rt.signal_container(&id, StopSignal::Term).unwrap();
        let status = rt.wait_container(&id).await.unwrap();
        assert_eq!(exit_code(&status), Some(0));
        assert_eq!(t0.elapsed(), Duration::from_millis(500));
        assert_eq!(rt.signals_for("app").len(), 1);
        assert_eq!(rt.signals_for("app")[0].signal, StopSignal::Term);
    }

    #[tokio::test(start_paused = true)]
    async fn ignored_term_needs_a_kill_and_gives_137() {
        let rt = FakeRuntime::new();
        rt.set_behavior(
            "stubborn",
            Behavior {
                on_term: OnTerm::Ignore,
                ..Default::default()
            },
        );
        let id = rt.start_container(config("stubborn")).await.unwrap().id;
        rt.signal_container(&id, StopSignal::Term).unwrap();
        assert_eq!(exit_code(&rt.container_status(&id).unwrap()), None);
        rt.signal_container(&id, StopSignal::Kill).unwrap();
        assert_eq!(exit_code(&rt.wait_container(&id).await.unwrap()), Some(137));
    }

    #[tokio::test(start_paused = true)]
    async fn configured_failures_and_self_exits_happen() {
        let rt = FakeRuntime::new();
        rt.set_behavior(
            "broken",
            Behavior {
                fail_start: Some("no such image".into()),
                ..Default::default()
            },
        );
        rt.set_behavior(
            "job",
            Behavior {
                exit_after: Some((Duration::from_secs(2), 3)),
                ..Default::default()
            },
        );
        assert!(matches!(
            rt.start_container(config("broken")).await,
            Err(Error::StartFailed { .. })
        ));
        let id = rt.start_container(config("job")).await.unwrap().id;
        assert_eq!(exit_code(&rt.wait_container(&id).await.unwrap()), Some(3));
        assert_eq!(rt.starts().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn exec_over_the_timeout_gives_137() {
        let rt = FakeRuntime::new();
        rt.set_behavior(
            "app",
            Behavior {
                exec_delay: Duration::from_secs(5),
                ..Default::default()
            },
        );
        let id = rt.start_container(config("app")).await.unwrap().id;
        let result = rt
            .exec_sync(&id, vec!["true".into()], Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(result.exit_code, 137);
        assert_eq!(rt.execs().len(), 1);
    }
}
