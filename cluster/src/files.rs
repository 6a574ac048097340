//! Where a cluster keeps its files: the data directory, `minik.pid` and `minik.state.json`.
//!
//! Kubernetes counterpart: kind keeps its state in Docker (containers and their labels) and
//! kubeadm in `/etc/kubernetes`; minik keeps one directory per cluster, by default
//! `$XDG_DATA_HOME/minik` (or `~/.local/share/minik`), holding the apiserver's database, each
//! node's root directory, the logs, and two small files `minik down` and `minik status` read.
//!
//! The directory holds the database, the cluster's keys and the admin's kubeconfig, so it is
//! its owner's alone: [`prepare_data_dir`] refuses a directory another user can write (they could
//! have planted a CA or a kubeconfig there), makes it 0700 and sets the process umask to 077, so
//! that every file the cluster creates afterwards (database, logs, pod logs) is 0600.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

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

/// Creates the data directory, or checks the one there: it must belong to this user and be
/// writable by nobody else. Then makes it 0700 and sets the umask to 077 for the whole process
/// (its children, the components and the pods, inherit it).
pub fn prepare_data_dir(dir: &Path) -> Result<()> {
    if let Ok(meta) = std::fs::metadata(dir) {
        check_owner_only(dir, meta.uid(), meta.mode())?;
    }
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| Error::io(format!("chmod {}", dir.display()), e))
}

/// Refuses a directory owned by another user, or writable by its group or by others.
fn check_owner_only(dir: &Path, uid: u32, mode: u32) -> Result<()> {
    let me = nix::unistd::geteuid().as_raw();
    if uid != me {
        return Err(Error::Start(format!(
            "data dir {} belongs to uid {uid}, not to you (uid {me}): refusing to start; use another --data-dir",
            dir.display()
        )));
    }
    if mode & 0o022 != 0 {
        return Err(Error::Start(format!(
            "data dir {} is writable by other users (mode {:o}): refusing to start; `chmod 700 {}` or use another --data-dir",
            dir.display(),
            mode & 0o777,
            dir.display()
        )));
    }
    Ok(())
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

    /// A data dir another user could write is refused; the owner's own 0755 is made 0700.
    #[test]
    fn a_data_dir_others_can_write_is_refused() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("data");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let error = prepare_data_dir(&dir).unwrap_err().to_string();
        assert!(
            error.contains("is writable by other users (mode 777)"),
            "{error}"
        );
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        prepare_data_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let foreign = check_owner_only(&dir, nix::unistd::geteuid().as_raw() + 1, 0o700);
        assert!(foreign.unwrap_err().to_string().contains("not to you"));
    }

    /// Our own pid is not `minik up` (the test binary is not called minik).
    #[test]
    fn a_test_process_is_not_minik_up() {
        assert!(!is_minik_up(std::process::id()));
    }
}
