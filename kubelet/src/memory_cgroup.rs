//! Memory limits in the kernel: a cgroup v1 memory cgroup per limited container, where writable.
//!
//! Kubernetes counterpart: the runtime's container cgroup (`memory.limit_in_bytes` on cgroup v1,
//! `memory.max` on v2), created before the process starts, and the OOM it reports from the
//! cgroup's `oom_kill` counter (containerd's `OOMKilled`). The kernel stops the container the
//! moment it cannot reclaim below the limit.
//!
//! minik simplifies: the kubelet is usually unprivileged, so this is tried, not required: where
//! `/sys/fs/cgroup/memory` is writable (cgroup v1 and root, as on the CI machine), a running
//! container with a limit is moved, with its process tree, into `minik/<container id>` at its
//! first usage sample (within a second of its start; pages it touched before are charged only where
//! the kernel still has `memory.move_charge_at_immigrate`), and the kernel enforces the limit from
//! then on.
//! Elsewhere `memory.rs`'s watchdog does. No cgroup v2 (`memory.max`) support yet.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

const ROOT: &str = "/sys/fs/cgroup/memory";

/// Containers moved into a cgroup of their own (by runtime id).
static ATTACHED: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);

fn dir(container_id: &str) -> PathBuf {
    Path::new(ROOT).join("minik").join(container_id)
}

/// Whether `container_id` runs in a memory cgroup the kubelet made.
pub fn attached(container_id: &str) -> bool {
    ATTACHED
        .lock()
        .map(|s| s.contains(container_id))
        .unwrap_or(false)
}

/// Makes the container's cgroup with `limit` bytes and moves `pids` into it; false where the
/// machine does not allow it (then the watchdog enforces the limit).
pub fn attach(container_id: &str, limit: u64, pids: &[u32]) -> bool {
    let cgroup = dir(container_id);
    let write = |file: &str, value: &str| std::fs::write(cgroup.join(file), value).is_ok();
    let made = std::fs::create_dir_all(&cgroup).is_ok();
    // Charge what the tree already uses where the kernel still can (removed in recent kernels).
    let _ = made && write("memory.move_charge_at_immigrate", "3");
    let made = made && write("memory.limit_in_bytes", &limit.to_string());
    if !made {
        let _ = std::fs::remove_dir(&cgroup);
        return false;
    }
    // Every process of the tree; one that exited meanwhile is no failure.
    let moved = pids
        .iter()
        .filter(|pid| write("cgroup.procs", &pid.to_string()))
        .count();
    if moved == 0 {
        let _ = std::fs::remove_dir(&cgroup);
        return false;
    }
    if let Ok(mut set) = ATTACHED.lock() {
        set.insert(container_id.to_string());
    }
    true
}

/// The `oom_kill` count of `memory.oom_control` (`oom_kill_disable 0\nunder_oom 0\noom_kill 1`).
pub fn oom_kills(oom_control: &str) -> u64 {
    oom_control
        .lines()
        .find_map(|line| line.strip_prefix("oom_kill "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Whether the kernel OOM-killed in the container's cgroup (read while it still exists).
pub fn oom_killed(container_id: &str) -> bool {
    attached(container_id)
        && std::fs::read_to_string(dir(container_id).join("memory.oom_control"))
            .is_ok_and(|text| oom_kills(&text) > 0)
}

/// Whether this machine lets the kubelet make memory cgroups (probed once).
pub fn available() -> bool {
    static AVAILABLE: LazyLock<bool> = LazyLock::new(|| {
        let parent = Path::new(ROOT).join("minik");
        let made = std::fs::create_dir_all(&parent).is_ok();
        // Cgroups of containers that exited while no kubelet watched them: the kernel refuses to
        // remove one that still holds a process, so only empty ones go.
        for entry in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
            let _ = std::fs::remove_dir(entry.path());
        }
        made
    });
    *AVAILABLE
}

/// After the container exited: whether the kernel OOM-killed in its cgroup; the cgroup is removed.
pub fn release(container_id: &str) -> bool {
    let cgroup = dir(container_id);
    let killed = std::fs::read_to_string(cgroup.join("memory.oom_control"))
        .map(|text| oom_kills(&text) > 0)
        .unwrap_or(false);
    let _ = std::fs::remove_dir(&cgroup);
    if let Ok(mut set) = ATTACHED.lock() {
        set.remove(container_id);
    }
    killed
}

/// Removes the container's cgroup if no process is left in it (a kubelet stopping).
pub fn remove_if_empty(container_id: &str) {
    if std::fs::remove_dir(dir(container_id)).is_ok() {
        if let Ok(mut set) = ATTACHED.lock() {
            set.remove(container_id);
        }
    }
}

/// The containers attached now.
pub fn all_attached() -> Vec<String> {
    ATTACHED
        .lock()
        .map(|s| s.iter().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oom_kill_counter_is_read_from_oom_control() {
        assert_eq!(
            oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"),
            2
        );
        assert_eq!(oom_kills("oom_kill_disable 0\nunder_oom 0\n"), 0);
    }
}
