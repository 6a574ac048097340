//! Where a cluster keeps its files: the data directory, `minik.pid` and `minik.state.json`.
//!
//! Kubernetes counterpart: kind keeps its state in Docker (containers and their labels) and
//! kubeadm in `/etc/kubernetes`; minik keeps one directory per cluster, by default
//! `$XDG_DATA_HOME/minik` (or `~/.local/share/minik`), holding the apiserver's database, each
//! node's root directory, the logs, and two small files `minik down` and `minik status` read.

use std::path::{Path, PathBuf};

/// `$XDG_DATA_HOME/minik`, else `~/.local/share/minik`.
pub fn default_data_dir() -> PathBuf {
    if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(xdg).join("minik");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".local").join("share").join("minik")
}

/// The pid file holding the pid of the running `minik up`.
pub fn pid_file(data_dir: &Path) -> PathBuf {
    data_dir.join("minik.pid")
}

/// The state file (`ClusterState` as JSON) next to the pid file.
pub fn state_file(data_dir: &Path) -> PathBuf {
    data_dir.join("minik.state.json")
}

/// True if `pid` is a live `minik up` (and not some unrelated process that reused the pid).
pub fn is_minik_up(pid: u32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        == Some("Z");
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    !zombie && args.iter().any(|a| a.ends_with(b"minik")) && args.iter().any(|a| *a == b"up")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The data directory is a `minik` directory.
    #[test]
    fn default_data_dir_ends_in_minik() {
        assert!(default_data_dir().ends_with("minik"));
    }

    /// Our own pid is not `minik up` (the test binary is not called minik).
    #[test]
    fn a_test_process_is_not_minik_up() {
        assert!(!is_minik_up(std::process::id()));
    }
}
