//! The containers' state and how it changes: adopting a container directory left by an earlier
//! runtime, and watching shims end (a pidfd on an adopted shim; our own shims are awaited by
//! their reaper task in `mod.rs`). The one place a running container becomes exited is
//! [`ProcessRuntime::shim_ended`], which reads the shim's `exit.json` once.
//!
//! Kubernetes counterpart: containerd's shim exit events (`TaskExit`) that update the CRI
//! plugin's in-memory container store (`internal/cri/server/events.go`); the kubelet's PLEG then
//! sees the change without reading any file.

use std::os::fd::OwnedFd;
use std::path::Path;

use jiff::Timestamp;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::sync::watch;
use tracing::warn;

use super::{ProcessRuntime, Record, UNKNOWN_EXIT_CODE};
use crate::cri::{Error, Result};
use crate::shim::{self, ExitRecord, StartedRecord, StoredConfig};

impl ProcessRuntime {
    /// Starts a pidfd watcher for every adopted container that still runs (when called inside
    /// a tokio runtime), so that its exit is recorded when it happens.
    pub(super) fn watch_adopted(&self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let mut containers = self.lock();
        for (id, record) in containers.iter_mut() {
            if record.exit.is_some() {
                continue;
            }
            let (tx, rx) = watch::channel(false);
            record.shim_done = Some(rx);
            let (this, id, started) = (self.clone(), id.clone(), record.started.clone());
            tokio::spawn(async move {
                match wait_for_exit(started.shim_pid, started.shim_start_ticks).await {
                    Ok(()) => this.shim_ended(&id, &started, &tx),
                    Err(error) => {
                        // Fall back to looking at the disk (dropping `tx` tells waiters so).
                        warn!(container = %id, %error, "cannot watch the adopted shim");
                        if let Some(record) = this.lock().get_mut(&id) {
                            record.shim_done = None;
                        }
                    }
                }
            });
        }
    }

    /// The shim of `id` has ended: load the exit it recorded (or record a lost shim), then tell
    /// the waiters. The one place a running container becomes exited.
    pub(super) fn shim_ended(&self, id: &str, started: &StartedRecord, done: &watch::Sender<bool>) {
        let mut containers = self.lock();
        if let Some(record) = containers.get_mut(id) {
            let same = record.started.shim_pid == started.shim_pid
                && record.started.shim_start_ticks == started.shim_start_ticks;
            if same && record.exit.is_none() {
                record.exit = shim::read_json(&record.dir.join(shim::EXIT_FILE)).ok();
                if record.exit.is_none() {
                    record_lost_shim(record);
                }
            }
        }
        drop(containers);
        done.send_replace(true);
    }
}

/// Rebuilds a record from a container directory left by an earlier runtime. `None` if the
/// container never got as far as running.
pub(super) fn adopt(dir: &Path) -> Option<Record> {
    let config: StoredConfig = shim::read_json(&dir.join(shim::CONFIG_FILE)).ok()?;
    let started: StartedRecord = shim::read_json(&dir.join(shim::STARTED_FILE)).ok()?;
    let mut record = Record {
        config: config.into(),
        dir: dir.to_path_buf(),
        started,
        exit: None,
        shim_done: None,
    };
    refresh(&mut record);
    Some(record)
}

/// Brings an unwatched running record up to date: loads `exit.json` if the shim has written it,
/// and notices a shim that ended without writing one. A watched record is already up to date
/// (its watcher records the exit), so this reads nothing for it.
pub(super) fn refresh(record: &mut Record) {
    if record.exit.is_some() || record.shim_done.is_some() {
        return;
    }
    record.exit = shim::read_json(&record.dir.join(shim::EXIT_FILE)).ok();
    if record.exit.is_none() && shim_gone(record) {
        // The shim writes exit.json before it ends: read again in case it did so just now.
        record.exit = shim::read_json(&record.dir.join(shim::EXIT_FILE)).ok();
        if record.exit.is_none() {
            record_lost_shim(record);
        }
    }
}

/// Has the (unwatched) container's shim ended? Its pid no longer exists with the recorded start
/// time.
fn shim_gone(record: &Record) -> bool {
    !same_process(record.started.shim_pid, record.started.shim_start_ticks)
}

/// The shim died without recording an exit (it was SIGKILLed): nobody supervises the group any
/// more, so kill it, and record exit code 255 ("unknown") with an explanation.
pub(super) fn record_lost_shim(record: &mut Record) {
    let StartedRecord {
        pid, start_ticks, ..
    } = record.started;
    if same_process(pid, start_ticks) {
        let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
    warn!(pid, "container shim ended without recording an exit status");
    let exit = ExitRecord {
        exit_code: UNKNOWN_EXIT_CODE,
        started_at: record.started.started_at,
        finished_at: Timestamp::now(),
        message: Some("the container's shim died; exit status unknown".into()),
    };
    if let Ok(bytes) = serde_json::to_vec(&exit) {
        let _ = shim::write_atomic(&record.dir.join(shim::EXIT_FILE), &bytes);
    }
    record.exit = Some(exit);
}

/// True if `pid` is alive (not a zombie) and is the process that started at `start_ticks`, not
/// a recycled pid.
pub(super) fn same_process(pid: u32, start_ticks: u64) -> bool {
    shim::proc_stat(pid)
        .is_some_and(|stat| stat.start_ticks == start_ticks && !matches!(stat.state, 'Z' | 'X'))
}

/// Waits for a process that is not our child to end, through a pidfd (readable once it exits).
pub(super) async fn wait_for_exit(pid: u32, start_ticks: u64) -> Result<()> {
    let Some(raw) = rustix::process::Pid::from_raw(pid as i32) else {
        return Ok(());
    };
    let fd = match rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::SRCH) => return Ok(()),
        Err(err) => return Err(Error::Io(err.into())),
    };
    // Checked after opening: if the pid had been recycled before, the pidfd is for a stranger.
    if !same_process(pid, start_ticks) {
        return Ok(());
    }
    let fd = register_readable(fd)?;
    let _ = fd.readable().await?;
    Ok(())
}

/// Registers a pidfd with tokio's reactor. The only `unsafe` of the runtime: tokio requires the
/// registered fd to stay open and unchanged while the `AsyncFd` lives, which an [`OwnedFd`] moved
/// into it guarantees (nobody else can close or replace it).
#[allow(unsafe_code)]
fn register_readable(fd: OwnedFd) -> std::io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    // SAFETY: `fd` is an open, owned descriptor; ownership moves into the AsyncFd.
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
        .map_err(std::io::Error::from)
}
