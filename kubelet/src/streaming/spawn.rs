//! Starting an exec'd process inside a running container's world, with pipes or a terminal.
//!
//! Kubernetes counterpart: the runtime side of CRI `Exec` (runc `exec`, as containerd runs it):
//! the new process joins the container's namespaces, gets its environment and working
//! directory, and either three pipes or a pseudo-terminal (`tty: true`, stderr merged into it).
//!
//! minik's containers have no PID or network namespace; where the container has a user + mount
//! namespace of its own (`mountns/`), the child joins both (`setns`, between fork and exec, where
//! it is single-threaded) and takes the container's root (`fchroot` through `/proc/PID/root`,
//! which also covers the root mirror). Binds are rewritten to the pod IP as the container's are.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Stdio;

use crate::cri::ContainerConfig;
use crate::shim::bind_rewrite::BindRewrite;

/// What to start, and how it is wired.
#[derive(Clone, Debug)]
pub struct ExecRequest {
    /// The command (`command=` parameters, in order).
    pub argv: Vec<String>,
    /// A pipe (or the terminal) for stdin.
    pub stdin: bool,
    /// A pseudo-terminal instead of pipes.
    pub tty: bool,
}

/// A started exec: the child and its ends of the pipes or of the terminal.
pub struct Started {
    /// The process (its own process group, killed when dropped).
    pub child: tokio::process::Child,
    /// The terminal's controlling side (`tty`), which reads its output and takes its input.
    pub pty: Option<File>,
}

/// The namespaces the child joins: open fds, taken before the fork.
struct Enter {
    user: Option<OwnedFd>,
    mount: Option<OwnedFd>,
    root: Option<OwnedFd>,
}

impl Enter {
    /// The container process' namespaces that differ from ours (none: a host-view container).
    fn of(pid: u32) -> io::Result<Self> {
        let theirs = |name: &str| PathBuf::from(format!("/proc/{pid}/ns/{name}"));
        let differs = |name: &str| -> io::Result<bool> {
            let ours = std::fs::metadata(format!("/proc/self/ns/{name}"))?.ino();
            Ok(std::fs::metadata(theirs(name))?.ino() != ours)
        };
        let open = |path: PathBuf| File::open(path).map(OwnedFd::from);
        let user = if differs("user")? {
            Some(open(theirs("user"))?)
        } else {
            None
        };
        let (mount, root) = if differs("mnt")? {
            let root = open(PathBuf::from(format!("/proc/{pid}/root")))?;
            (Some(open(theirs("mnt"))?), Some(root))
        } else {
            (None, None)
        };
        Ok(Enter { user, mount, root })
    }
}

/// Starts `request` in the container `config` (running as `pid`).
pub fn spawn(config: &ContainerConfig, pid: u32, request: &ExecRequest) -> io::Result<Started> {
    let Some((program, args)) = request.argv.split_first() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
    };
    let enter = Enter::of(pid)?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(&config.env as &BTreeMap<String, String>)
        .kill_on_drop(true);
    let working_dir = config.working_dir.clone();
    let pty = if request.tty {
        let (controller, terminal) = open_pty()?;
        cmd.stdin(Stdio::from(terminal.try_clone()?))
            .stdout(Stdio::from(terminal.try_clone()?))
            .stderr(Stdio::from(terminal));
        Some(controller)
    } else {
        cmd.stdin(if request.stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        None
    };
    enter_in_child(&mut cmd, enter, working_dir, request.tty);
    let rewrite = BindRewrite::prepare_tokio(&mut cmd, config.pod_ip)?;
    let child = cmd.spawn()?;
    if let Some(rewrite) = rewrite {
        rewrite.supervise(|message| tracing::warn!(message, "exec: bind rewriting stopped"))?;
    }
    Ok(Started { child, pty })
}

/// Between fork and exec: join the namespaces, take the root and working directory, and start a
/// session of its own (with the terminal as its controlling one) or a process group of its own.
#[allow(unsafe_code)]
fn enter_in_child(
    cmd: &mut tokio::process::Command,
    enter: Enter,
    working_dir: Option<PathBuf>,
    tty: bool,
) {
    let dir = working_dir
        .and_then(|d| std::ffi::CString::new(d.into_os_string().into_encoded_bytes()).ok());
    let user = enter.user.as_ref().map(AsRawFd::as_raw_fd);
    let mount = enter.mount.as_ref().map(AsRawFd::as_raw_fd);
    let root = enter.root.as_ref().map(AsRawFd::as_raw_fd);
    let hook = move || -> io::Result<()> {
        // The fds stay open in the parent's `Enter` until the spawn returns.
        let _keep = &enter;
        let check = |rc: libc::c_int| {
            if rc == -1 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        // SAFETY: only async-signal-safe syscalls on fds and a C string prepared before the fork.
        unsafe {
            if let Some(fd) = user {
                check(libc::setns(fd, libc::CLONE_NEWUSER))?;
            }
            if let Some(fd) = mount {
                check(libc::setns(fd, libc::CLONE_NEWNS))?;
            }
            if let Some(fd) = root {
                check(libc::fchdir(fd))?;
                check(libc::chroot(c".".as_ptr()))?;
            }
            match &dir {
                Some(dir) => check(libc::chdir(dir.as_ptr()))?,
                None => check(libc::chdir(c"/".as_ptr()))?,
            }
            if tty {
                check(libc::setsid())?;
                check(libc::ioctl(0, libc::TIOCSCTTY, 0))?;
            } else {
                check(libc::setpgid(0, 0))?;
            }
        }
        Ok(())
    };
    // SAFETY: the hook runs in the forked child and calls only async-signal-safe functions.
    unsafe {
        cmd.pre_exec(hook);
    }
}

/// A new pseudo-terminal: (the controlling side, the terminal the process gets).
#[allow(unsafe_code)]
pub fn open_pty() -> io::Result<(File, OwnedFd)> {
    let (mut controller, mut terminal): (RawFd, RawFd) = (-1, -1);
    // SAFETY: openpty writes two fds into the given integers; null name, termios and size.
    let rc = unsafe {
        libc::openpty(
            &mut controller,
            &mut terminal,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openpty just opened both; nothing else owns them.
    let (controller, terminal) = unsafe {
        (
            OwnedFd::from_raw_fd(controller),
            OwnedFd::from_raw_fd(terminal),
        )
    };
    for fd in [&controller, &terminal] {
        nix::fcntl::fcntl(
            fd,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        )?;
    }
    Ok((File::from(controller), terminal))
}

/// Sets the terminal's size (a resize message, channel 4).
#[allow(unsafe_code)]
pub fn resize(pty: &File, width: u16, height: u16) -> io::Result<()> {
    let size = libc::winsize {
        ws_row: height,
        ws_col: width,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize from the pointer, which lives across the call.
    let rc = unsafe { libc::ioctl(pty.as_raw_fd(), libc::TIOCSWINSZ, &size) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
