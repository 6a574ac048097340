//! The shim's side: a new user + mount namespace with the container's bind mounts.
//!
//! Kubernetes counterpart: what runc does with an OCI spec's `mounts` and `linux.namespaces`
//! (`opencontainers/runc:libcontainer/rootfs_linux.go`), for a container whose root is the host's.
//!
//! Steps, in the shim while it is still single-threaded (before it starts the container, which
//! inherits the namespaces):
//!
//! 1. `unshare(CLONE_NEWUSER | CLONE_NEWNS)`; the shim's uid and gid map to themselves (the only
//!    mapping a process may write for itself), so the container runs as the same user;
//! 2. every mount becomes private (`MS_REC | MS_PRIVATE`): nothing done here reaches the host;
//! 3. each mount in order: its target is made if missing (below), `source` is bind-mounted there
//!    (`MS_BIND | MS_REC`), and `readOnly` remounts it read-only, keeping the flags the kernel
//!    locks in a user namespace (`nosuid`, `nodev`, `noexec`, atime).
//!
//! **A mount path that does not exist on the host** (`/data`, `/var/run/secrets/…`) must not be
//! created there: the host is not the container's to write. Instead, the nearest existing parent
//! is *mirrored*: a fresh tmpfs covers it, and each of the parent's entries reappears in the tmpfs
//! (a directory or file bind-mounted from the original — reached through a directory fd opened
//! before the tmpfs hid it, `/proc/self/fd/N/NAME` — a symlink copied). The tmpfs is ours, so the
//! missing directories are made in it; the host's tree is untouched. The root directory cannot be
//! covered that way (a process's `/` does not follow a mount stacked on it), so for `/` the mirror
//! is built on a tmpfs at the container's state directory `rootfs/` and the shim `chroot`s into it.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Component, Path, PathBuf};

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::statvfs::{statvfs, FsFlags};

use super::BindMount;

/// Enters a new user + mount namespace and makes `mounts`; `state_dir` holds the root mirror.
pub fn enter(mounts: &[BindMount], state_dir: &Path) -> io::Result<()> {
    new_namespace()?;
    let mut mirrors = Mirrors {
        writable: BTreeSet::new(),
        state_dir: state_dir.to_path_buf(),
    };
    for m in mounts {
        let is_dir = fs::metadata(&m.source)
            .map_err(|e| context(e, &format!("volume source {}", m.source.display())))?
            .is_dir();
        let target = mirrors
            .ensure(Path::new(&m.target), is_dir)
            .map_err(|e| context(e, &format!("mount path {}", m.target)))?;
        bind(&m.source, &target)?;
        if m.read_only {
            remount_read_only(&target)?;
        }
    }
    Ok(())
}

/// The probe `minik shim --probe-namespaces` runs: a namespace and a tmpfs in it.
pub fn probe() -> io::Result<()> {
    new_namespace()?;
    let dir = std::env::temp_dir();
    mount(
        Some("tmpfs"),
        &dir,
        Some("tmpfs"),
        MsFlags::empty(),
        None::<&str>,
    )
    .map_err(|e| context(e.into(), "mounting a tmpfs in the namespace"))
}

fn new_namespace() -> io::Result<()> {
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
        .map_err(|e| context(e.into(), "unshare(CLONE_NEWUSER|CLONE_NEWNS)"))?;
    // A process writing its own maps after unshare may map only its own ids (user_namespaces(7)),
    // and the gid only once setgroups(2) is given up. Root stays root; other owners read as
    // nobody, which changes no permission check (the kernel checks the real ids).
    let write = |file: &str, text: String| {
        fs::write(file, text).map_err(|e| context(e, &format!("writing {file}")))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{0} {0} 1", uid.as_raw()))?;
    write("/proc/self/gid_map", format!("{0} {0} 1", gid.as_raw()))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| context(e.into(), "making mounts private"))
}

/// The directories this namespace made writable (its tmpfs mirrors and what was made in them).
struct Mirrors {
    writable: BTreeSet<PathBuf>,
    state_dir: PathBuf,
}

impl Mirrors {
    /// `target` exists when this returns (as a directory or a file): the host's own, or one made
    /// in a mirror. Returns the path to mount on.
    fn ensure(&mut self, target: &Path, is_dir: bool) -> io::Result<PathBuf> {
        if target.exists() {
            return Ok(target.to_path_buf());
        }
        let (parent, rest) = nearest_existing(target)?;
        if !self.writable.contains(&parent) {
            self.mirror(&parent)?;
        }
        let mut path = parent;
        for (i, part) in rest.iter().enumerate() {
            path.push(part);
            if i + 1 < rest.len() || is_dir {
                fs::create_dir(&path)?;
                self.writable.insert(path.clone());
            } else {
                File::create(&path)?;
            }
        }
        Ok(path)
    }

    /// Covers `dir` with a tmpfs holding the same entries (see the module doc).
    fn mirror(&mut self, dir: &Path) -> io::Result<()> {
        let original = File::open(dir)?;
        let names: Vec<_> = fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        let root = dir == Path::new("/");
        let at = if root {
            self.state_dir.join("rootfs")
        } else {
            dir.to_path_buf()
        };
        if root {
            fs::create_dir_all(&at)?;
        }
        mount(
            Some("tmpfs"),
            &at,
            Some("tmpfs"),
            MsFlags::MS_NOSUID,
            Some("mode=755"),
        )
        .map_err(|e| context(e.into(), &format!("tmpfs over {}", at.display())))?;
        let fd = original.as_raw_fd();
        for name in names {
            let from = PathBuf::from(format!("/proc/self/fd/{fd}")).join(&name);
            let to = at.join(&name);
            let Ok(meta) = fs::symlink_metadata(&from) else {
                continue;
            };
            let made = if meta.file_type().is_symlink() {
                fs::read_link(&from).and_then(|link| std::os::unix::fs::symlink(link, &to))
            } else if meta.is_dir() {
                fs::create_dir(&to).and_then(|()| bind(&from, &to))
            } else {
                File::create(&to).and_then(|_| bind(&from, &to))
            };
            if let Err(error) = made {
                tracing::debug!(entry = %to.display(), %error, "not mirrored");
            }
        }
        if root {
            std::env::set_current_dir(&at)?;
            nix::unistd::chroot(".")
                .map_err(|e| context(e.into(), "chroot into the root mirror"))?;
            std::env::set_current_dir("/")?;
        }
        self.writable.insert(dir.to_path_buf());
        Ok(())
    }
}

/// The nearest existing ancestor of `target` (symlinks resolved) and the missing parts below it.
fn nearest_existing(target: &Path) -> io::Result<(PathBuf, Vec<PathBuf>)> {
    let mut rest = Vec::new();
    let mut at = target;
    loop {
        if at.exists() {
            rest.reverse();
            return Ok((fs::canonicalize(at)?, rest));
        }
        match (at.parent(), at.components().next_back()) {
            (Some(parent), Some(Component::Normal(name))) => {
                rest.push(PathBuf::from(name));
                at = parent;
            }
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not an absolute path",
                ))
            }
        }
    }
}

fn bind(source: &Path, target: &Path) -> io::Result<()> {
    mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| {
        context(
            e.into(),
            &format!("bind {} on {}", source.display(), target.display()),
        )
    })
}

/// Read-only, keeping the flags a user namespace may not clear (else the remount is EPERM).
fn remount_read_only(target: &Path) -> io::Result<()> {
    let current = statvfs(target)?.flags();
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
    for (fs_flag, ms_flag) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if current.contains(fs_flag) {
            flags |= ms_flag;
        }
    }
    mount(None::<&str>, target, None::<&str>, flags, None::<&str>).map_err(|e| {
        context(
            e.into(),
            &format!("read-only remount of {}", target.display()),
        )
    })
}

fn context(error: io::Error, what: &str) -> io::Error {
    io::Error::new(error.kind(), format!("{what}: {error}"))
}
