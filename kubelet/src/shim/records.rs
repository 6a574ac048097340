//! The shim's files in a container's state directory: the stored config, the start and exit
//! records and the handshake line, each read back by a restarted kubelet.
//!
//! Kubernetes counterpart: containerd-shim's task state under its bundle directory (and the CRI
//! `ContainerStatus` the runtime derives from it); minik keeps it as small JSON files written
//! atomically, with no fsync (they must survive a process crash, not a power loss).

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::cri::ContainerConfig;

/// `DIR/config.json`: the container's config, written by the runtime.
pub const CONFIG_FILE: &str = "config.json";
/// `DIR/started.json`: a [`StartedRecord`], written by the shim once the process runs.
pub const STARTED_FILE: &str = "started.json";
/// `DIR/exit.json`: an [`ExitRecord`], written by the shim after everything is reaped.
pub const EXIT_FILE: &str = "exit.json";
/// `DIR/shim.log`: what the shim had to say after its handshake (absent if nothing).
pub const SHIM_LOG_FILE: &str = "shim.log";

/// [`ContainerConfig`] as stored in `config.json` (the runtime reads it back after a restart).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StoredConfig {
    pub pod_uid: String,
    pub pod_key: String,
    pub name: String,
    /// Absent in a config written before minik recorded it: "" means unknown.
    #[serde(default)]
    pub image: String,
    pub attempt: u32,
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub working_dir: Option<PathBuf>,
    pub log_path: PathBuf,
    /// The container's own mount namespace (`mountns/`), if the node can make one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<Vec<crate::mountns::BindMount>>,
    /// Absent in a config written before bind rewriting: no rewriting.
    #[serde(default)]
    pub pod_ip: Option<std::net::Ipv4Addr>,
    /// The grace the shim was started with; absent in older configs and for the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_grace_seconds: Option<u32>,
    /// `stdin: true`: the container reads a FIFO attach sessions write into (`stdin.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stdin: bool,
    /// `stdinOnce`: its stdin closes when the first attach session ends.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stdin_once: bool,
    /// `tty: true`: the container runs on a pseudo-terminal (`tty.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tty: bool,
}

impl From<&ContainerConfig> for StoredConfig {
    fn from(c: &ContainerConfig) -> Self {
        StoredConfig {
            pod_uid: c.pod_uid.clone(),
            pod_key: c.pod_key.clone(),
            name: c.name.clone(),
            image: c.image.clone(),
            attempt: c.attempt,
            argv: c.argv.clone(),
            env: c.env.clone(),
            working_dir: c.working_dir.clone(),
            log_path: c.log_path.clone(),
            mounts: c.mounts.clone(),
            pod_ip: c.pod_ip,
            stop_grace_seconds: c.stop_grace_seconds,
            stdin: c.stdin,
            stdin_once: c.stdin_once,
            tty: c.tty,
        }
    }
}

impl From<StoredConfig> for ContainerConfig {
    fn from(c: StoredConfig) -> Self {
        ContainerConfig {
            pod_uid: c.pod_uid,
            pod_key: c.pod_key,
            name: c.name,
            image: c.image,
            attempt: c.attempt,
            argv: c.argv,
            env: c.env,
            working_dir: c.working_dir,
            log_path: c.log_path,
            mounts: c.mounts,
            pod_ip: c.pod_ip,
            stop_grace_seconds: c.stop_grace_seconds,
            stdin: c.stdin,
            stdin_once: c.stdin_once,
            tty: c.tty,
        }
    }
}

/// `started.json`: who runs, so a restarted kubelet can re-adopt it without trusting a bare pid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StartedRecord {
    /// The container's main process (and process group) id.
    pub pid: u32,
    /// Its start time in clock ticks since boot (`/proc/PID/stat` field 22).
    pub start_ticks: u64,
    /// The shim's pid, and its start time, for the same check.
    pub shim_pid: u32,
    pub shim_start_ticks: u64,
    /// Wall-clock start.
    pub started_at: Timestamp,
}

/// `exit.json`: how the container ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExitRecord {
    /// Exit code; 128 + N after death by signal N; 126/127/128 when it could not start.
    pub exit_code: i32,
    pub started_at: Timestamp,
    pub finished_at: Timestamp,
    /// Why it could not start, or why the status is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The one line the shim prints on stdout for the runtime waiting on it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Handshake {
    Started(StartedRecord),
    Failed(ExitRecord),
}

/// Writes `path` atomically: a temporary file in the same directory, then `rename`. A reader (or
/// a kubelet restarted after `kill -9`) sees the old content or the new, never half of it. No
/// fsync: the files must survive a process crash, not a power loss.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(bytes)?;
    }
    fs::rename(&tmp, path)
}

/// Reads a JSON file.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> io::Result<T> {
    let bytes = fs::read(path)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}
