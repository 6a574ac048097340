//! The real runtime: every container is an OS process supervised by a `minik shim`.
//!
//! Kubernetes counterpart: a CRI runtime such as containerd's CRI plugin
//! (`containerd/containerd:internal/cri/server/container_start.go`, `container_stop.go`,
//! `container_execsync.go`) with its per-container shim, and the kubelet's adoption of what runs
//! after a restart (the runtime is the source of truth, PLEG relists it).
//!
//! On disk, one directory per container under `{root_dir}/containers/{id}/`:
//! `config.json` (written here), `started.json` (written by the shim once the process runs: its
//! pid, which is also the process group id), `exit.json` (written by the shim after the process
//! and everything it left behind are gone) and `shim.log`, only if the shim had something to say
//! after its start (until its handshake, the shim's stderr is a pipe read here when the start
//! fails). Files are few on purpose: each is created on the start path, and creating a file can
//! cost a noticeable part of a millisecond on some filesystems. That directory is the whole
//! state: a new `ProcessRuntime` on the same root (a kubelet restarted even after `kill -9`) lists
//! the same containers with the same pids. A pid alone is never trusted: the start time in
//! `/proc/PID/stat` must match the one saved.
//!
//! Waiting for an exit: a shim we spawned is our child, so a task awaits it (and reaps it, no
//! zombies). An adopted shim is not our child; we open a pidfd on it (`pidfd_open`, Linux ≥ 5.3)
//! and await its readability with tokio's `AsyncFd` — no polling.
//!
//! The containers' state is kept in memory (`process/state.rs`) and changes only on those events: the task that
//! awaits a shim reads its `exit.json` once, when it ends, and records the exit. So listing the
//! containers (every pod sync does) reads no file; the disk is read at startup (adoption) and on
//! each exit. A pod worker asks for its own pod's containers only (`pod_containers`, a range
//! of the id-ordered map, since ids start with the pod uid), so a sync does not grow with the
//! number of pods on the node.
//!
//! minik simplifies: no images, sandboxes, cgroups or user namespaces; a stop is two signals sent
//! by the kubelet's pod worker, which owns the grace-period clock.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::{
    ContainerConfig, ContainerId, ContainerState, ContainerStatus, Error, ExecResult, Result,
    Runtime, StopSignal,
};
use crate::shim::{self, ExitRecord, Handshake, StartedRecord, StoredConfig};
use exec::run_exec;
use state::{adopt, record_lost_shim, refresh, same_process, wait_for_exit};

mod exec;
pub mod exec_group;
mod state;

/// How long `start_container` waits for the shim's handshake line.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `remove_container` waits for a SIGKILLed container to be gone.
const REMOVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Exit code when the shim died without recording one (containerd uses 255 for "unknown").
const UNKNOWN_EXIT_CODE: i32 = 255;

/// A [`Runtime`] running real processes under `minik shim`. Cheap to clone.
#[derive(Clone)]
pub struct ProcessRuntime {
    inner: Arc<Inner>,
}

struct Inner {
    containers_dir: PathBuf,
    minik_binary: PathBuf,
    /// Each pod's `pids` cgroup, which its shims join (`cgroups.rs`); unset: no cgroups.
    pod_cgroups: std::sync::OnceLock<crate::cgroups::PodCgroups>,
    containers: Mutex<BTreeMap<ContainerId, Record>>,
}

/// What the runtime knows of one container (a mirror of its directory).
#[derive(Clone)]
struct Record {
    config: ContainerConfig,
    dir: PathBuf,
    started: StartedRecord,
    exit: Option<ExitRecord>,
    /// Becomes `true` once the task awaiting the shim (our child's reaper, or a pidfd watcher
    /// for an adopted one) has seen it end and recorded `exit`. `None`: no task watches it (an
    /// adopted container outside a tokio runtime); then [`refresh`] looks at the disk.
    shim_done: Option<watch::Receiver<bool>>,
}

impl ProcessRuntime {
    /// Opens (or creates) the runtime state under `root_dir` and adopts every container recorded
    /// there. `minik_binary` is the program run as `{minik_binary} shim …`.
    pub fn new(root_dir: PathBuf, minik_binary: PathBuf) -> Result<Self> {
        let containers_dir = std::path::absolute(root_dir)?.join("containers");
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&containers_dir)?;
        let mut containers = BTreeMap::new();
        for entry in fs::read_dir(&containers_dir)?.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            match adopt(&entry.path()) {
                Some(record) => {
                    info!(container = %id, pid = record.started.pid, exited = record.exit.is_some(), "adopted container");
                    containers.insert(id, record);
                }
                None => {
                    warn!(container = %id, "removing the record of a container that never started");
                    let _ = fs::remove_dir_all(entry.path());
                }
            }
        }
        let inner = Inner {
            containers_dir,
            minik_binary,
            pod_cgroups: std::sync::OnceLock::new(),
            containers: Mutex::new(containers),
        };
        let runtime = ProcessRuntime {
            inner: Arc::new(inner),
        };
        runtime.watch_adopted();
        Ok(runtime)
    }

    /// From now on, every container starts in its pod's `pids` cgroup.
    pub fn set_pod_cgroups(&self, cgroups: crate::cgroups::PodCgroups) {
        let _ = self.inner.pod_cgroups.set(cgroups);
    }

    /// The pod's cgroup directory, created on first use (`None` without cgroups, or on error).
    fn pod_cgroup(&self, pod_uid: &str) -> Option<PathBuf> {
        let cgroups = self.inner.pod_cgroups.get()?;
        match cgroups.ensure(pod_uid) {
            Ok(dir) => Some(dir),
            Err(error) => {
                warn!(pod_uid, %error, "cannot create the pod's cgroup; the watchdog caps it");
                None
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<ContainerId, Record>> {
        self.inner
            .containers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The record of `id`, refreshed from disk (an `exit.json` may have appeared).
    fn record(&self, id: &str) -> Result<Record> {
        let mut containers = self.lock();
        let record = containers
            .get_mut(id)
            .ok_or_else(|| Error::NotFound(id.to_string()))?;
        refresh(record);
        Ok(record.clone())
    }

    async fn start(&self, config: ContainerConfig) -> Result<ContainerStatus> {
        let id = container_id(&config)?;
        let dir = self.prepare_dir(&id, &config)?;
        let fail = |message: String| {
            let _ = fs::remove_dir_all(&dir);
            Error::StartFailed {
                name: config.name.clone(),
                message,
            }
        };
        let mut cmd = tokio::process::Command::new(&self.inner.minik_binary);
        cmd.arg("shim")
            .arg("--state")
            .arg(&dir)
            .arg("--log")
            .arg(&config.log_path);
        if let Some(cgroup) = self.pod_cgroup(&config.pod_uid) {
            cmd.arg("--cgroup").arg(cgroup);
        }
        if let Some(grace) = config.stop_grace_seconds {
            cmd.arg("--stop-grace").arg(grace.to_string());
        }
        cmd.arg("--").args(&config.argv);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| {
            fail(format!(
                "cannot run the shim {}: {e}",
                self.inner.minik_binary.display()
            ))
        })?;

        let handshake = read_handshake(&mut child).await;
        // Read only if no handshake came; after one the shim writes nothing more to it.
        let stderr = child.stderr.take();
        match handshake {
            Some(Handshake::Started(started)) => {
                let (tx, rx) = watch::channel(false);
                info!(container = %id, pid = started.pid, argv0 = %config.argv[0], "started container");
                let record = Record {
                    config,
                    dir,
                    started: started.clone(),
                    exit: None,
                    shim_done: Some(rx),
                };
                let status = status_of(&id, &record);
                self.lock().insert(id.clone(), record);
                // Inserted before the reaper runs, so the exit always finds its record.
                let this = self.clone();
                tokio::spawn(async move {
                    let _ = child.wait().await; // reaps the shim: no zombie
                    this.shim_ended(&id, &started, &tx);
                });
                Ok(status)
            }
            Some(Handshake::Failed(exit)) => {
                let _ = child.wait().await;
                Err(fail(
                    exit.message
                        .unwrap_or_else(|| format!("exit code {}", exit.exit_code)),
                ))
            }
            None => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                // If the shim got as far as starting the process, do not leave it unsupervised.
                if let Ok(started) = shim::read_json::<StartedRecord>(&dir.join(shim::STARTED_FILE))
                {
                    if same_process(started.pid, started.start_ticks) {
                        let _ = killpg(Pid::from_raw(started.pid as i32), Signal::SIGKILL);
                    }
                }
                let log = read_stderr(stderr).await;
                Err(fail(format!(
                    "the shim did not report a start: {}",
                    log.trim()
                )))
            }
        }
    }

    /// Creates the container's directory and its `config.json`. An exited container with the
    /// same id is replaced; a running one is an error.
    fn prepare_dir(&self, id: &str, config: &ContainerConfig) -> Result<PathBuf> {
        if let Ok(existing) = self.record(id) {
            if existing.exit.is_none() {
                let message = format!("container {id} is already running");
                return Err(Error::StartFailed {
                    name: config.name.clone(),
                    message,
                });
            }
            self.lock().remove(id);
        }
        let dir = self.inner.containers_dir.join(id);
        let _ = fs::remove_dir_all(&dir);
        fs::DirBuilder::new().mode(0o700).create(&dir)?;
        if let Some(parent) = config.log_path.parent() {
            fs::create_dir_all(parent)?;
        }
        let stored =
            serde_json::to_vec_pretty(&StoredConfig::from(config)).map_err(std::io::Error::from)?;
        shim::write_atomic(&dir.join(shim::CONFIG_FILE), &stored)?;
        Ok(dir)
    }

    async fn wait(&self, id: &str) -> Result<ContainerStatus> {
        let record = self.record(id)?;
        // A watched shim is awaited even if `exit.json` is already there: once this returns, our
        // own shim is reaped and nothing of the container is left.
        if let Some(mut done) = record.shim_done.clone() {
            if done.wait_for(|done| *done).await.is_ok() {
                let record = self.record(id)?;
                if record.exit.is_some() {
                    return Ok(status_of(id, &record));
                }
            }
        }
        // Nobody watches this shim (or its watcher gave up): await it here.
        if record.exit.is_none() {
            wait_for_exit(record.started.shim_pid, record.started.shim_start_ticks).await?;
        }
        let mut containers = self.lock();
        let record = containers
            .get_mut(id)
            .ok_or_else(|| Error::NotFound(id.to_string()))?;
        if record.exit.is_none() {
            // The shim is gone (we just saw it): it wrote its exit, or this records "unknown".
            record.exit = shim::read_json(&record.dir.join(shim::EXIT_FILE)).ok();
            if record.exit.is_none() {
                record_lost_shim(record);
            }
        }
        Ok(status_of(id, record))
    }

    async fn remove(&self, id: &str) -> Result<()> {
        let Ok(record) = self.record(id) else {
            return Ok(());
        }; // CRI: removing twice is fine
        if record.exit.is_none() {
            self.signal(id, StopSignal::Kill)?;
            if tokio::time::timeout(REMOVE_TIMEOUT, self.wait(id))
                .await
                .is_err()
            {
                warn!(container = %id, "container did not exit after SIGKILL; removing its record anyway");
            }
        }
        let last_of_pod = {
            let mut containers = self.lock();
            containers.remove(id);
            let uid = &record.config.pod_uid;
            !containers.values().any(|r| &r.config.pod_uid == uid)
        };
        if let Some(cgroups) = self.inner.pod_cgroups.get().filter(|_| last_of_pod) {
            // Best effort: a shim still exiting keeps it busy; the watchdog removes it later.
            let _ = fs::remove_dir(cgroups.dir(&record.config.pod_uid));
        }
        let _ = fs::remove_dir_all(&record.dir);
        let _ = fs::remove_file(&record.config.log_path);
        info!(container = %id, "removed container");
        Ok(())
    }

    fn signal(&self, id: &str, signal: StopSignal) -> Result<()> {
        let record = self.record(id)?;
        if record.exit.is_some() || !same_process(record.started.pid, record.started.start_ticks) {
            return Ok(()); // already exited: nothing to signal
        }
        let sig = match signal {
            StopSignal::Term => Signal::SIGTERM,
            StopSignal::Kill => Signal::SIGKILL,
        };
        debug!(container = %id, pid = record.started.pid, signal = %sig, "signalling container group");
        match killpg(Pid::from_raw(record.started.pid as i32), sig) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
            Err(err) => Err(Error::Io(err.into())),
        }
    }
}

impl Runtime for ProcessRuntime {
    fn start_container(&self, config: ContainerConfig) -> BoxFuture<'_, Result<ContainerStatus>> {
        // Run as its own task: if the caller gives up (its future is dropped), the start still
        // completes and the container is recorded, so it is never left running unknown.
        let this = self.clone();
        async move {
            let start = tokio::spawn(async move { this.start(config).await });
            start
                .await
                .map_err(|e| Error::Io(std::io::Error::other(e)))?
        }
        .boxed()
    }

    fn signal_container(&self, id: &str, signal: StopSignal) -> Result<()> {
        self.signal(id, signal)
    }

    fn wait_container(&self, id: &str) -> BoxFuture<'_, Result<ContainerStatus>> {
        let id = id.to_string();
        async move { self.wait(&id).await }.boxed()
    }

    fn container_status(&self, id: &str) -> Option<ContainerStatus> {
        self.record(id).ok().map(|record| status_of(id, &record))
    }

    fn list_containers(&self) -> Vec<ContainerStatus> {
        let mut containers = self.lock();
        containers
            .iter_mut()
            .map(|(id, record)| {
                refresh(record);
                status_of(id, record)
            })
            .collect()
    }

    fn pod_containers(&self, pod_uid: &str) -> Vec<ContainerStatus> {
        // Ids are `{pod_uid}-{name}-{attempt}` and the map is ordered: the pod's containers are
        // one range. The uid is compared too (a uid could be a prefix of another).
        let prefix = format!("{pod_uid}-");
        let mut containers = self.lock();
        containers
            .range_mut(prefix.clone()..)
            .take_while(|(id, _)| id.starts_with(&prefix))
            .filter(|(_, record)| record.config.pod_uid == pod_uid)
            .map(|(id, record)| {
                refresh(record);
                status_of(id, record)
            })
            .collect()
    }

    fn stdin_path(&self, id: &str) -> Option<PathBuf> {
        let fifo = self
            .inner
            .containers_dir
            .join(id)
            .join(shim::stdin::STDIN_FIFO);
        fifo.exists().then_some(fifo)
    }

    fn tty_control_path(&self, id: &str) -> Option<PathBuf> {
        let fifo = self
            .inner
            .containers_dir
            .join(id)
            .join(shim::tty::CONTROL_FIFO);
        fifo.exists().then_some(fifo)
    }

    fn remove_container(&self, id: &str) -> BoxFuture<'_, Result<()>> {
        let id = id.to_string();
        async move { self.remove(&id).await }.boxed()
    }

    fn exec_sync(
        &self,
        id: &str,
        argv: Vec<String>,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<ExecResult>> {
        let record = self.record(id);
        async move {
            let config = record?.config;
            let (env, dir) = (&config.env, config.working_dir.as_deref());
            Ok(run_exec(&argv, env, dir, config.pod_ip, timeout).await)
        }
        .boxed()
    }
}

/// `{pod_uid}-{name}-{attempt}`, refused if it could escape the containers directory.
fn container_id(config: &ContainerConfig) -> Result<ContainerId> {
    let id = format!("{}-{}-{}", config.pod_uid, config.name, config.attempt);
    let bad =
        config.argv.is_empty() || id.contains('/') || id.contains('\0') || id.starts_with('.');
    if bad {
        let message = if config.argv.is_empty() {
            "empty argv".to_string()
        } else {
            format!("invalid container id {id:?}")
        };
        return Err(Error::StartFailed {
            name: config.name.clone(),
            message,
        });
    }
    Ok(id)
}

/// Reads the shim's one handshake line (or `None` if it ended or stalled without one).
async fn read_handshake(child: &mut tokio::process::Child) -> Option<Handshake> {
    let stdout = child.stdout.take()?;
    let mut line = String::new();
    let mut reader = BufReader::new(stdout);
    match tokio::time::timeout(START_TIMEOUT, reader.read_line(&mut line)).await {
        Ok(Ok(n)) if n > 0 => serde_json::from_str(&line).ok(),
        _ => None,
    }
}

/// What a shim that gave no handshake wrote on its stderr (it has ended: the pipe is at EOF).
async fn read_stderr(stderr: Option<tokio::process::ChildStderr>) -> String {
    use tokio::io::AsyncReadExt;
    let Some(stderr) = stderr else {
        return String::new();
    };
    let mut text = String::new();
    let mut limited = stderr.take(64 * 1024);
    let _ = tokio::time::timeout(Duration::from_secs(1), limited.read_to_string(&mut text)).await;
    text
}

fn status_of(id: &str, record: &Record) -> ContainerStatus {
    let state = match &record.exit {
        None => ContainerState::Running {
            pid: record.started.pid,
            started_at: record.started.started_at,
        },
        Some(exit) => ContainerState::Exited {
            started_at: exit.started_at,
            finished_at: exit.finished_at,
            exit_code: exit.exit_code,
        },
    };
    ContainerStatus {
        id: id.to_string(),
        config: record.config.clone(),
        state,
    }
}
