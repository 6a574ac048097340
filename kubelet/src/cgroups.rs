//! Pod cgroups for the process cap: one `pids` cgroup per pod whose `pids.max` is
//! `--pod-pids-limit`, so the kernel refuses the fork past the limit.
//!
//! Kubernetes counterpart: the pod cgroups of `pkg/kubelet/cm/pod_container_manager_linux.go`
//! (`kubepods/pod<uid>`, with `pids.max` from `podPidsLimit`) and the cgroup driver's detection of
//! v1 or v2 (`libcontainer/cgroups.IsCgroup2UnifiedMode`). minik asks for nothing: it uses the
//! `pids` controller where this process may (root, or a delegated subtree), in this order:
//!
//! 1. cgroup v2: `pids` is in the `cgroup.controllers` of our cgroup's parent-to-be and we can
//!    create `minik-<node>` below our own cgroup and enable `+pids` in it;
//! 2. cgroup v1: a `pids` hierarchy is mounted and we can create `minik-<node>` in our cgroup
//!    there;
//! 3. neither: `None`, and `pids.rs`'s watchdog counts processes instead.
//!
//! The shim joins its pod's cgroup before it starts the container (`--cgroup DIR`), so the
//! container and everything it forks are counted from their first instruction.
//!
//! minik simplifies: only the `pids` controller (no cpu or memory limits), no QoS tiers.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use tracing::info;

/// Which cgroup version holds the pods' `pids` cgroups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// The unified hierarchy.
    V2,
    /// A v1 `pids` hierarchy.
    V1,
}

/// The node's pod cgroups: `base/pod-<uid>` with `pids.max` = `limit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodCgroups {
    /// v1 or v2.
    pub version: Version,
    /// `…/minik-<node>`, the parent of every pod cgroup of this kubelet.
    pub base: PathBuf,
    /// `pids.max` of each pod.
    pub limit: i64,
}

/// Where a cgroup2 and a v1 `pids` hierarchy are mounted, read from `/proc/self/mountinfo`.
pub fn mounts(mountinfo: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let (mut v2, mut v1) = (None, None);
    for line in mountinfo.lines() {
        // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS … - FSTYPE SOURCE SUPEROPTIONS`
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let point = left.split_whitespace().nth(4).map(PathBuf::from);
        let mut fields = right.split_whitespace();
        let fstype = fields.next().unwrap_or_default();
        let super_options = fields.nth(1).unwrap_or_default();
        match fstype {
            "cgroup2" if v2.is_none() => v2 = point,
            "cgroup" if super_options.split(',').any(|o| o == "pids") => v1 = point,
            _ => {}
        }
    }
    (v2, v1)
}

/// This process's cgroup in a hierarchy, from `/proc/self/cgroup`: the `0::` line for v2, the
/// line naming `controller` for v1.
pub fn own_cgroup(proc_cgroup: &str, version: Version, controller: &str) -> Option<PathBuf> {
    proc_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let wanted = match version {
            Version::V2 => id == "0" && controllers.is_empty(),
            Version::V1 => controllers.split(',').any(|c| c == controller),
        };
        wanted.then(|| PathBuf::from(path.trim_start_matches('/')))
    })
}

/// The count of forks refused at `pids.max`, from a `pids.events` file (`max N`).
pub fn refused_forks(pids_events: &str) -> u64 {
    pids_events
        .lines()
        .find_map(|line| line.strip_prefix("max "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

impl PodCgroups {
    /// Finds a usable `pids` controller (v2, else v1) and creates `name` ([`base_name`]) in it;
    /// `None` when neither works here, or when `limit` is negative (no cap).
    pub fn detect(name: &str, limit: i64) -> Option<PodCgroups> {
        if limit < 0 {
            return None;
        }
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
        let proc_cgroup = fs::read_to_string("/proc/self/cgroup").ok()?;
        let (v2, v1) = mounts(&mountinfo);
        let try_v2 = v2.and_then(|mount| {
            let own = mount.join(own_cgroup(&proc_cgroup, Version::V2, "")?);
            setup_v2(&own, name).ok()
        });
        let found = try_v2.map(|base| (Version::V2, base)).or_else(|| {
            let own = v1?.join(own_cgroup(&proc_cgroup, Version::V1, "pids")?);
            setup_v1(&own, name).ok().map(|base| (Version::V1, base))
        });
        let (version, base) = found?;
        info!(?version, base = %base.display(), limit, "pod pids limit enforced by cgroups");
        Some(PodCgroups {
            version,
            base,
            limit,
        })
    }

    /// The pod's cgroup directory (created, with its `pids.max`, if it did not exist).
    pub fn ensure(&self, pod_uid: &str) -> io::Result<PathBuf> {
        let dir = self.dir(pod_uid);
        if !dir.join("pids.max").exists() {
            mkdir(&dir)?;
            fs::write(dir.join("pids.max"), self.limit.to_string())?;
        }
        Ok(dir)
    }

    /// `base/pod-<uid>`.
    pub fn dir(&self, pod_uid: &str) -> PathBuf {
        self.base.join(format!("pod-{pod_uid}"))
    }

    /// Forks refused so far in the pod's cgroup (0 if it has none).
    pub fn refused(&self, pod_uid: &str) -> u64 {
        let events = fs::read_to_string(self.dir(pod_uid).join("pids.events"));
        events.map(|text| refused_forks(&text)).unwrap_or(0)
    }

    /// Removes the pod cgroups that are empty and the base itself if it is (at kubelet shutdown;
    /// pods left running keep theirs).
    pub fn remove_empty(&self) {
        self.remove_others(&[]);
        let _ = fs::remove_dir(&self.base);
    }

    /// Removes the cgroups of pods not in `keep` (it fails, harmlessly, while processes remain).
    pub fn remove_others(&self, keep: &[String]) {
        let Ok(entries) = fs::read_dir(&self.base) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(uid) = name.strip_prefix("pod-") else {
                continue;
            };
            if !keep.iter().any(|k| k == uid) {
                let _ = fs::remove_dir(entry.path());
            }
        }
    }
}

/// Removes the cgroups of a kubelet that is gone (killed with -9 and never restarted): each
/// empty pod cgroup under `name` ([`base_name`]), then `name` itself, in whichever hierarchy holds
/// them; a cgroup that still has processes stays. Returns how many were removed. For the
/// launcher, once the kubelet has stopped (a running kubelet cleans its own at start and stop).
pub fn remove_node(name: &str) -> usize {
    let (Ok(mountinfo), Ok(proc_cgroup)) = (
        fs::read_to_string("/proc/self/mountinfo"),
        fs::read_to_string("/proc/self/cgroup"),
    ) else {
        return 0;
    };
    let (v2, v1) = mounts(&mountinfo);
    let bases = [
        v2.zip(own_cgroup(&proc_cgroup, Version::V2, "")),
        v1.zip(own_cgroup(&proc_cgroup, Version::V1, "pids")),
    ];
    let mut removed = 0;
    for (mount, own) in bases.into_iter().flatten() {
        let base = mount.join(own).join(name);
        let Ok(entries) = fs::read_dir(&base) else {
            continue;
        };
        for entry in entries.flatten() {
            let is_pod = entry.file_name().to_string_lossy().starts_with("pod-");
            removed += usize::from(is_pod && fs::remove_dir(entry.path()).is_ok());
        }
        removed += usize::from(fs::remove_dir(&base).is_ok());
    }
    removed
}

/// `minik-<node>-<hash of the root dir>`: two clusters on one machine (tests) both have a
/// `node-1`, and each kubelet must own its cgroups.
pub fn base_name(node: &str, root_dir: &Path) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    root_dir.hash(&mut hasher);
    format!("minik-{node}-{:08x}", hasher.finish() as u32)
}

/// v2: `own/NAME` with `+pids` enabled for its children. Enabling a controller in `own` itself
/// fails if `own` holds processes and is not the root ("no internal processes"): then v2 is not
/// delegated to us in a usable way.
fn setup_v2(own: &Path, name: &str) -> io::Result<PathBuf> {
    let controllers = fs::read_to_string(own.join("cgroup.controllers"))?;
    if !controllers.split_whitespace().any(|c| c == "pids") {
        return Err(io::Error::other("no pids controller in cgroup v2"));
    }
    let base = own.join(name);
    mkdir(&base)?;
    fs::write(base.join("cgroup.subtree_control"), "+pids")?;
    Ok(base)
}

/// v1: `own/NAME` in the pids hierarchy, checked by its `pids.max`.
fn setup_v1(own: &Path, name: &str) -> io::Result<PathBuf> {
    let base = own.join(name);
    mkdir(&base)?;
    if !base.join("pids.max").exists() {
        return Err(io::Error::other("no pids.max in the v1 pids hierarchy"));
    }
    Ok(base)
}

fn mkdir(dir: &Path) -> io::Result<()> {
    match fs::create_dir(dir) {
        Err(error) if error.kind() != io::ErrorKind::AlreadyExists => Err(error),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
30 23 0:26 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs ro,mode=755
35 30 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
36 30 0:32 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
37 30 0:33 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory";

    #[test]
    fn mountinfo_gives_the_v2_and_the_v1_pids_mounts() {
        let (v2, v1) = mounts(MOUNTINFO);
        assert_eq!(v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(v1, Some(PathBuf::from("/sys/fs/cgroup/pids")));
        assert_eq!(mounts("1 0 0:1 / / rw - ext4 /dev/sda rw"), (None, None));
    }

    #[test]
    fn own_cgroup_reads_the_v2_line_or_the_controller_line() {
        let text =
            "9:name=systemd:/\n8:pids:/user.slice\n4:memory:/x\n0::/user.slice/session-1.scope";
        let v2 = own_cgroup(text, Version::V2, "");
        assert_eq!(v2, Some(PathBuf::from("user.slice/session-1.scope")));
        let v1 = own_cgroup(text, Version::V1, "pids");
        assert_eq!(v1, Some(PathBuf::from("user.slice")));
        assert_eq!(own_cgroup("0::/", Version::V1, "pids"), None);
    }

    #[test]
    fn refused_forks_come_from_the_max_line() {
        assert_eq!(refused_forks("max 17\n"), 17);
        assert_eq!(refused_forks("max 0"), 0);
        assert_eq!(refused_forks(""), 0);
    }
}
