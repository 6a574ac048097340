//! The container runtime interface: how the kubelet asks for processes without knowing how they run.
//!
//! Kubernetes counterpart: the CRI (`k8s.io/cri-api/pkg/apis/services.go`): `CreateContainer`,
//! `StartContainer`, `StopContainer(id, timeout)`, `ContainerStatus`, `ListContainers`, `ExecSync`.
//! minik keeps that narrow boundary but simplifies it: there are no images or sandboxes, a container
//! is one real OS process (in its own process group, watched over by a small `minik shim` process,
//! as containerd-shim or conmon do), and "stop" is split into its two signals so that the kubelet's
//! pod worker, not the runtime, owns the termination clock (preStop, SIGTERM, grace, SIGKILL).
//!
//! Implementations: `process/` (real processes) and `fake.rs` (in memory, for unit tests).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;

use futures::future::BoxFuture;
use jiff::Timestamp;

pub mod fake;
pub mod process;

/// Errors a runtime reports.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The program could not be started (not found, not executable, bad working directory …).
    #[error("failed to start container {name}: {message}")]
    StartFailed {
        /// The container's name.
        name: String,
        /// What went wrong, in words a user can act on.
        message: String,
    },
    /// No container has this id.
    #[error("container {0} not found")]
    NotFound(String),
    /// An I/O error while managing the container (state files, signals, logs).
    #[error("container runtime I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// Result with the runtime's [`Error`] as default.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything needed to start one container's process. The kubelet fills it from the pod spec:
/// the image is already resolved to a program (built-in images become `minik image NAME`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContainerConfig {
    /// `metadata.uid` of the pod; containers are grouped by it.
    pub pod_uid: String,
    /// `namespace/name` of the pod, for logs and state files.
    pub pod_key: String,
    /// The container's name in the pod spec.
    pub name: String,
    /// The spec's `image` it was started from: a different one in the spec later means its
    /// definition changed (upstream compares a hash of the whole container spec).
    pub image: String,
    /// How many times this container was started before (0 for the first start).
    pub attempt: u32,
    /// The exact argv: `argv[0]` is the program (resolved on PATH if it has no `/`).
    pub argv: Vec<String>,
    /// The whole environment of the process (nothing is inherited from the kubelet).
    pub env: BTreeMap<String, String>,
    /// The process's working directory (`workingDir`), or the container's own directory.
    pub working_dir: Option<PathBuf>,
    /// Where stdout and stderr go, one line each in CRI format (`RFC3339Nano stream F line`).
    pub log_path: PathBuf,
    /// Bind mounts in a mount namespace of its own (`mountns/`); `None`: the host's view.
    pub mounts: Option<Vec<crate::mountns::BindMount>>,
    /// The pod IP the process's wildcard binds are rewritten to (`shim/bind_rewrite/`); `None`:
    /// it binds on the host's addresses as it asks.
    pub pod_ip: Option<Ipv4Addr>,
    /// The pod's `terminationGracePeriodSeconds` when the container started: the shim's grace
    /// between SIGTERM and SIGKILL if it is told to stop without its kubelet (upstream records it
    /// as the container label `io.kubernetes.pod.terminationGracePeriod` for the same reason).
    /// `None`: the shim's default, 10 s as `docker stop`.
    pub stop_grace_seconds: Option<u32>,
    /// `stdin: true`: the shim keeps a stdin for the container that attach writes into.
    pub stdin: bool,
    /// `stdinOnce`: that stdin closes after the first attach session.
    pub stdin_once: bool,
    /// `tty: true`: the process runs on a pseudo-terminal the shim keeps (`shim/tty.rs`).
    pub tty: bool,
}

/// An id the runtime gave a container: `{pod_uid}-{name}-{attempt}` is fine.
pub type ContainerId = String;

/// What a container's process is doing.
#[derive(Clone, Debug, PartialEq)]
pub enum ContainerState {
    /// The process runs.
    Running {
        /// The process id, which is also its process group id.
        pid: u32,
        /// When it was started.
        started_at: Timestamp,
    },
    /// The process has ended (and every process it left behind has been killed).
    Exited {
        /// When it was started.
        started_at: Timestamp,
        /// When it ended.
        finished_at: Timestamp,
        /// The exit code, 128 + N after death by signal N (137 after SIGKILL).
        exit_code: i32,
    },
}

/// The runtime's view of one container.
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerStatus {
    /// The runtime's id for it.
    pub id: ContainerId,
    /// The config it was started with.
    pub config: ContainerConfig,
    /// Running or exited.
    pub state: ContainerState,
}

/// The result of running a command inside a container's environment (hooks and exec probes).
#[derive(Clone, Debug, PartialEq)]
pub struct ExecResult {
    /// The command's exit code (0 = success); 128 + N after death by signal N.
    pub exit_code: i32,
    /// stdout and stderr, joined, truncated to a few KiB.
    pub output: String,
}

/// Signals the kubelet sends to a container's process group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSignal {
    /// Ask the app to shut down.
    Term,
    /// End it now.
    Kill,
}

/// The narrow interface the kubelet drives. Object-safe, so the kubelet holds an `Arc<dyn Runtime>`.
pub trait Runtime: Send + Sync + 'static {
    /// Starts a container's process and returns once it runs (or failed to start).
    fn start_container(&self, config: ContainerConfig) -> BoxFuture<'_, Result<ContainerStatus>>;

    /// Sends a signal to the container's whole process group. Not an error if it has exited.
    fn signal_container(&self, id: &str, signal: StopSignal) -> Result<()>;

    /// Resolves when the container has exited, with its final status (at once if it already has).
    fn wait_container(&self, id: &str) -> BoxFuture<'_, Result<ContainerStatus>>;

    /// The current status of one container.
    fn container_status(&self, id: &str) -> Option<ContainerStatus>;

    /// Every container the runtime knows, running or exited, including ones started before a
    /// kubelet restart (this is how a restarted kubelet adopts its pods).
    fn list_containers(&self) -> Vec<ContainerStatus>;

    /// The containers of one pod (every attempt, running or exited). What a pod worker asks on
    /// each sync; a runtime with many pods should answer without looking at the others.
    fn pod_containers(&self, pod_uid: &str) -> Vec<ContainerStatus> {
        self.list_containers()
            .into_iter()
            .filter(|c| c.config.pod_uid == pod_uid)
            .collect()
    }

    /// The FIFO an attach session writes the container's stdin into (`shim/stdin.rs`), if the
    /// container has one.
    fn stdin_path(&self, _id: &str) -> Option<PathBuf> {
        None
    }

    /// The FIFO an attach session writes terminal resizes into (`shim/tty.rs`), if the
    /// container runs on a terminal.
    fn tty_control_path(&self, _id: &str) -> Option<PathBuf> {
        None
    }

    /// Forgets an exited container (its record and log are removed); kills it first if it runs.
    fn remove_container(&self, id: &str) -> BoxFuture<'_, Result<()>>;

    /// Runs `argv` with the container's environment and working directory, bounded by `timeout`
    /// (exit code 137 and what was read so far when it runs over).
    fn exec_sync(
        &self,
        id: &str,
        argv: Vec<String>,
        timeout: std::time::Duration,
    ) -> BoxFuture<'_, Result<ExecResult>>;
}
