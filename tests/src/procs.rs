//! Reading `/proc`: which processes exist, who their parent is, when they started.
//!
//! Kubernetes counterpart: none in the tests upstream (they run in containers and ask the runtime);
//! minik's containers are plain processes, so the proof that a restart kept a PID, or that nothing
//! is left after a cluster stops, is read straight from the kernel, as `ps` would.
//!
//! A process belongs to a test cluster when its command line, its environment or its working
//! directory mentions the cluster's temporary directory (shims get `--state DIR/…`, containers
//! run in per-pod directories), or when it descends from such a process.

use std::collections::BTreeSet;
use std::path::Path;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// One process as `/proc/PID/stat` and `/proc/PID/cmdline` describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcInfo {
    /// Its pid.
    pub pid: u32,
    /// Its parent's pid.
    pub ppid: u32,
    /// Its process group.
    pub pgid: u32,
    /// The state letter (`R`, `S`, `Z` for a zombie …).
    pub state: char,
    /// When it started, in clock ticks since boot (with the pid, identifies a process for good).
    pub start_time: u64,
    /// Its command line, arguments separated by spaces.
    pub cmdline: String,
}

/// Reads one process; `None` if it is gone.
pub fn read(pid: u32) -> Option<ProcInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: parse after the last ')'.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): ppid is field 4, pgrp 5, starttime 22.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    Some(ProcInfo {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
        cmdline: String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .trim()
            .to_string(),
    })
}

/// Every process of the machine.
pub fn all() -> Vec<ProcInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read)
        .collect()
}

/// True if the process is alive and not a zombie.
pub fn is_alive(pid: u32) -> bool {
    read(pid).is_some_and(|p| p.state != 'Z')
}

/// Waits up to `timeout` until no live process belongs to the cluster in `dir` (processes exit
/// asynchronously after their group is killed); `Err` holds what is still there then.
pub async fn settled(dir: &Path, timeout: std::time::Duration) -> Result<(), Vec<ProcInfo>> {
    let gone = crate::wait::eventually("the cluster's processes to exit", timeout, || {
        let live = related_to(dir).iter().any(|p| p.state != 'Z');
        async move { (!live).then_some(()) }
    })
    .await;
    gone.map_err(|_| related_to(dir))
}

/// The processes that belong to the cluster living in `dir` (see the module doc), this test
/// process excluded, zombies included.
pub fn related_to(dir: &Path) -> Vec<ProcInfo> {
    let needle = dir.to_string_lossy().into_owned();
    let me = std::process::id();
    let everything = all();
    let mut members: BTreeSet<u32> = everything
        .iter()
        .filter(|p| p.pid != me && mentions(p.pid, &p.cmdline, &needle))
        .map(|p| p.pid)
        .collect();
    // Add descendants until nothing changes (a container's children need not mention the dir).
    loop {
        let before = members.len();
        for p in &everything {
            if p.pid != me && members.contains(&p.ppid) {
                members.insert(p.pid);
            }
        }
        if members.len() == before {
            break;
        }
    }
    everything
        .into_iter()
        .filter(|p| members.contains(&p.pid))
        .collect()
}

/// True if the command line, environment or working directory of `pid` contains `needle`.
fn mentions(pid: u32, cmdline: &str, needle: &str) -> bool {
    if cmdline.contains(needle) {
        return true;
    }
    if let Ok(cwd) = std::fs::read_link(format!("/proc/{pid}/cwd")) {
        if cwd.to_string_lossy().contains(needle) {
            return true;
        }
    }
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| String::from_utf8_lossy(&env).contains(needle))
        .unwrap_or(false)
}

/// The processes whose command line contains `needle` (e.g. `minik image web` of one pod).
pub fn with_cmdline(needle: &str) -> Vec<ProcInfo> {
    all()
        .into_iter()
        .filter(|p| p.cmdline.contains(needle))
        .collect()
}

/// The environment of a process as `KEY=value` strings.
pub fn environ(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| {
            env.split(|b| *b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The live processes whose environment has `POD_NAME=name` and whose environment or command
/// line mentions `dir`: a pod's containers (shims have no POD_NAME).
pub fn of_pod(dir: &Path, name: &str) -> Vec<ProcInfo> {
    let wanted = format!("POD_NAME={name}");
    related_to(dir)
        .into_iter()
        .filter(|p| p.state != 'Z' && environ(p.pid).contains(&wanted))
        .collect()
}

/// SIGKILLs every listed process.
pub fn kill_all(processes: &[ProcInfo]) {
    for p in processes {
        let _ = kill(Pid::from_raw(p.pid as i32), Signal::SIGKILL);
    }
}
