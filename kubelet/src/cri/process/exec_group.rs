//! Every process an exec (a hook or an exec probe) started, found again and killed — also the
//! ones that left its process group with `setsid`.
//!
//! Kubernetes counterpart: none in code; upstream gets this from the container's cgroup and PID
//! namespace (what an exec starts lives in the container and dies with it). minik has neither, so
//! each exec gets a mark in its environment, `MINIK_EXEC_ID=<kubelet pid>-<n>`, which its
//! children inherit through `fork`, `exec` and `setsid` alike. When the exec ends, times out or is
//! abandoned (its future dropped, e.g. a force-deleted pod), [`ExecGroup`]'s drop SIGKILLs the
//! process group and then every process of this user whose `/proc/PID/environ` carries the mark,
//! started since the exec was. A process that clears its own environment escapes; nothing in
//! minik's images does.

use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

use crate::shim::proc_stat;

/// The variable that marks an exec's processes.
pub const EXEC_MARK: &str = "MINIK_EXEC_ID";

/// Rounds of look-and-kill (a process may fork while the last round runs).
const ROUNDS: usize = 10;

static NEXT_EXEC: AtomicU64 = AtomicU64::new(1);

/// The processes of one exec: its process group, and its mark.
pub struct ExecGroup {
    mark: String,
    pgid: Option<Pid>,
    /// `/proc` start time of the exec's first process: nothing it started is older.
    since_ticks: u64,
}

impl ExecGroup {
    /// A new, unique mark (`MINIK_EXEC_ID`'s value) for the next exec.
    pub fn new_mark() -> String {
        let n = NEXT_EXEC.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", std::process::id())
    }

    /// The group of the exec whose first process is `pid`, marked with `mark`.
    pub fn new(mark: String, pid: Option<u32>) -> Self {
        let since_ticks = pid.and_then(proc_stat).map_or(0, |stat| stat.start_ticks);
        ExecGroup {
            mark,
            pgid: pid.map(|pid| Pid::from_raw(pid as i32)),
            since_ticks,
        }
    }

    /// SIGKILLs the process group and every marked process, until none is found.
    pub fn kill_all(&self) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        for _ in 0..ROUNDS {
            let marked = self.marked();
            if marked.is_empty() {
                return;
            }
            for pid in marked {
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            }
        }
    }

    /// The live processes carrying this exec's mark.
    fn marked(&self) -> Vec<u32> {
        let needle = format!("{EXEC_MARK}={}", self.mark);
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                proc_stat(*pid)
                    .is_some_and(|stat| stat.state != 'Z' && stat.start_ticks >= self.since_ticks)
            })
            .filter(|pid| {
                let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                environ
                    .split(|b| *b == 0)
                    .any(|var| var == needle.as_bytes())
            })
            .collect()
    }
}

impl Drop for ExecGroup {
    /// An abandoned exec (its future dropped) still takes everything it started with it.
    fn drop(&mut self) {
        self.kill_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `setsid` child of a marked command is found by its mark and killed.
    #[test]
    fn a_setsid_child_is_found_by_its_mark_and_killed() {
        let mark = ExecGroup::new_mark();
        let mut child = std::process::Command::new("sh")
            .args(["-c", "setsid sleep 30 >/dev/null 2>&1 & echo $!"])
            .env(EXEC_MARK, &mark)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let group = ExecGroup::new(mark, Some(child.id()));
        let output = std::io::read_to_string(child.stdout.take().unwrap()).unwrap();
        child.wait().unwrap();
        let escaped: u32 = output.trim().parse().unwrap();
        assert!(
            group.marked().contains(&escaped),
            "the setsid child carries the mark"
        );
        drop(group);
        // SIGKILL is delivered asynchronously: on a busy machine the process may still be
        // listed for a moment after kill(2) returns. Wait (bounded) for it to die.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let gone = || proc_stat(escaped).is_none_or(|stat| stat.state == 'Z');
        while !gone() && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(gone(), "the setsid child was killed");
    }
}
