//! The seccomp filter that hands a pod's `bind(2)` and `connect(2)` calls to a supervisor, and the
//! small dance that gets its listener fd out of the new process before it `exec`s.
//!
//! Kubernetes counterpart: none (upstream gives a pod a network namespace); the mechanism is the
//! one described in seccomp_unotify(2), as used by LXD and crun's `seccomp-notify` support.
//!
//! The filter is seven classic-BPF instructions written by hand: load the architecture, let any
//! other architecture through (a 32-bit binary on a 64-bit kernel is not rewritten), load the
//! syscall number, return `SECCOMP_RET_USER_NOTIF` for `bind` and `connect`, `ALLOW` for the rest.
//! Every other syscall costs those few instructions and nothing else.
//!
//! Installing it happens in the forked child just before `exec` (`pre_exec`): `no_new_privs`
//! (required to install a filter without privileges), `seccomp(SECCOMP_SET_MODE_FILTER,
//! NEW_LISTENER | WAIT_KILLABLE_RECV)`, then the listener fd goes to the parent over a socketpair
//! (`SCM_RIGHTS`) and is closed in the child, so the container never holds it. The child runs only
//! async-signal-safe syscalls there (no allocation): the parent may be multi-threaded.
//!
//! [`detect`] checks once, on a short-lived thread (filters and `no_new_privs` are per thread), that
//! the kernel has everything: the filter installs with a listener and `pidfd_getfd` exists.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;

use nix::sys::socket::{
    recvmsg, socketpair, AddressFamily, ControlMessageOwned, MsgFlags, SockFlag, SockType,
};

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

/// Offsets in `struct seccomp_data`.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;

const fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jeq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    }
}

const LOAD_WORD: u32 = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
const RETURN: u32 = libc::BPF_RET | libc::BPF_K;

/// The program (jump offsets count from the next instruction).
static PROGRAM: [libc::sock_filter; 7] = [
    stmt(LOAD_WORD, OFFSET_ARCH),
    jeq(AUDIT_ARCH, 0, 3), // another architecture: to ALLOW
    stmt(LOAD_WORD, OFFSET_NR),
    jeq(libc::SYS_bind as u32, 2, 0),    // to USER_NOTIF
    jeq(libc::SYS_connect as u32, 1, 0), // to USER_NOTIF
    stmt(RETURN, libc::SECCOMP_RET_ALLOW),
    stmt(RETURN, libc::SECCOMP_RET_USER_NOTIF),
];

/// A socketpair made before the spawn: the child sends the listener on one end, we read the other.
pub struct ListenerChannel {
    ours: OwnedFd,
    child: OwnedFd,
}

impl ListenerChannel {
    /// Both ends close on `exec`, so no other program ever holds them.
    pub fn new() -> io::Result<Self> {
        let (ours, child) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )?;
        Ok(ListenerChannel { ours, child })
    }

    /// Makes `cmd`'s child install the filter and send its listener here before it `exec`s.
    #[allow(unsafe_code)]
    pub fn attach(&self, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        let sock = self.child.as_raw_fd();
        // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
        // syscalls (prctl, seccomp, sendmsg, close) on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(move || install_in_child(sock));
        }
    }

    /// Same as [`attach`](Self::attach), for tokio's `Command`.
    #[allow(unsafe_code)]
    pub fn attach_tokio(&self, cmd: &mut tokio::process::Command) {
        let sock = self.child.as_raw_fd();
        // SAFETY: as in `attach`.
        unsafe {
            cmd.pre_exec(move || install_in_child(sock));
        }
    }

    /// After a successful spawn (the child has `exec`ed, so it has sent): the listener.
    #[allow(unsafe_code)]
    pub fn receive(self) -> io::Result<OwnedFd> {
        drop(self.child); // an EOF instead of a hang if the child sent nothing
        let mut byte = [0u8; 1];
        let mut iov = [io::IoSliceMut::new(&mut byte)];
        let mut space = nix::cmsg_space!([RawFd; 1]);
        let msg = recvmsg::<()>(
            self.ours.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )?;
        for cmsg in msg.cmsgs()? {
            if let ControlMessageOwned::ScmRights(fds) = cmsg {
                if let Some(&fd) = fds.first() {
                    // SAFETY: SCM_RIGHTS installed this fd in our table just now; nothing else
                    // owns it.
                    return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
                }
            }
        }
        Err(io::Error::other("the container sent no seccomp listener"))
    }
}

/// In the child: `no_new_privs`, the filter, the listener to the parent.
fn install_in_child(sock: RawFd) -> io::Result<()> {
    nix::sys::prctl::set_no_new_privs().map_err(io::Error::from)?;
    let listener = install_filter()?;
    let sent = send_fd(sock, listener);
    close(listener);
    sent
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, …)` on the calling thread; returns the listener fd.
/// `WAIT_KILLABLE_RECV` (Linux 5.19) keeps a signal from interrupting a call the supervisor has
/// already started to act on; without it (older kernels) the filter is installed anyway.
#[allow(unsafe_code)]
fn install_filter() -> io::Result<RawFd> {
    let prog = libc::sock_fprog {
        len: PROGRAM.len() as u16,
        filter: PROGRAM.as_ptr().cast_mut(),
    };
    let base = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER;
    for flags in [base | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, base] {
        // SAFETY: `prog` points at a valid program that outlives the call.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &prog as *const libc::sock_fprog,
            )
        };
        if fd >= 0 {
            return Ok(fd as RawFd);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINVAL) || flags == base {
            return Err(err);
        }
    }
    Err(io::Error::from_raw_os_error(libc::EINVAL))
}

/// `sendmsg` of one fd with `SCM_RIGHTS`, without allocating.
#[allow(unsafe_code)]
fn send_fd(sock: RawFd, fd: RawFd) -> io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // u64s: aligned for `cmsghdr`; 32 bytes hold CMSG_SPACE(4) (24 on 64-bit).
    let mut control = [0u64; 4];
    // SAFETY: every pointer refers to a local that outlives the `sendmsg`; the header and the fd
    // are written inside `control`, which is larger than CMSG_SPACE(sizeof(int)).
    let sent = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(size_of::<RawFd>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL)
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn close(fd: RawFd) {
    let _ = nix::unistd::close(fd);
}

/// Whether bind rewriting works here: `Err` says why not. Runs the real installation on a
/// throwaway thread (which then ends, taking its filter with it).
#[allow(unsafe_code)]
pub fn detect() -> Result<(), String> {
    let probe = std::thread::spawn(|| -> Result<(), String> {
        nix::sys::prctl::set_no_new_privs().map_err(|e| format!("no_new_privs: {e}"))?;
        let raw = install_filter().map_err(|e| format!("seccomp user notification: {e}"))?;
        // SAFETY: `install_filter` returned a fresh fd that nothing else owns.
        let listener = unsafe { OwnedFd::from_raw_fd(raw) };
        let me =
            rustix::process::Pid::from_raw(std::process::id() as i32).ok_or("no pid of our own")?;
        let pidfd = rustix::process::pidfd_open(me, rustix::process::PidfdFlags::empty())
            .map_err(|e| format!("pidfd_open: {e}"))?;
        rustix::process::pidfd_getfd(
            &pidfd,
            listener.as_raw_fd(),
            rustix::process::PidfdGetfdFlags::empty(),
        )
        .map_err(|e| format!("pidfd_getfd: {e}"))?;
        Ok(())
    });
    probe
        .join()
        .unwrap_or_else(|_| Err("the probe thread panicked".into()))
}
