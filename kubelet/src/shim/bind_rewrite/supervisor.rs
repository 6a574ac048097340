//! The supervisor: a thread that answers the seccomp notifications of one container's processes,
//! binding (or connecting) their sockets to the pod IP itself where `decision.rs` says so.
//!
//! Kubernetes counterpart: none (see `mod.rs`); the protocol is seccomp_unotify(2)'s. For each
//! notification: read the `sockaddr` from the calling thread's memory (`process_vm_readv`), open
//! its process (`pidfd_open` on the thread group) and, only then, check that the notification is
//! still valid (`SECCOMP_IOCTL_NOTIF_ID_VALID`: the thread may have died and its pid been reused
//! between the two, the TOCTOU rule of the man page). To rewrite, take a duplicate of the socket
//! (`pidfd_getfd`: the same open file, so binding it binds the process's socket), `bind` it to the
//! new address, and answer with the result (0 or `-errno`); anything else is answered
//! `SECCOMP_USER_NOTIF_FLAG_CONTINUE` and the kernel runs the call unchanged.
//!
//! A redirected `connect` on a blocking socket can take time (a full backlog), so it runs on a
//! thread of its own; binds are answered inline. After `bind` or `connect` the socket is the
//! process's alone: accepting and reading cost nothing more. The loop ends when no process uses
//! the filter any more (the listener reports `POLLHUP`).
//!
//! This is a convenience, not a sandbox: with `CONTINUE` the kernel re-reads the arguments, so a
//! process rewriting its own memory in between gets what it asked for (seccomp_unotify(2)).

use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{
    getsockopt, setsockopt, socket, sockopt, AddressFamily, SockFlag, SockType, SockaddrStorage,
};
use nix::sys::uio::{process_vm_readv, RemoteIoVec};
use nix::unistd::Pid;

use super::binder::Binder;
use super::decision::{localhost_target, parse_sockaddr, rewrite_bind, Action};

/// How many bytes of a `sockaddr` are read: enough for a `sockaddr_in6`.
const SOCKADDR_READ: usize = 28;

/// How a notification is answered.
#[derive(Debug, PartialEq)]
enum Reply {
    Continue,
    Done(Result<(), Errno>),
}

/// Runs the notification loop of `listener` until no process uses the filter any more.
pub fn run(listener: OwnedFd, pod_ip: Ipv4Addr, binder: Option<&Binder>) -> Result<(), Errno> {
    let listener = Arc::new(listener);
    loop {
        let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Err(Errno::EINTR) => continue,
            Err(err) => return Err(err),
            Ok(_) => {}
        }
        let revents = fds[0].revents().unwrap_or(PollFlags::empty());
        if !revents.contains(PollFlags::POLLIN) {
            return Ok(()); // POLLHUP: every process of the container is gone
        }
        let notif = match ioctl::receive(&listener) {
            Ok(notif) => notif,
            // The caller was killed or interrupted between the poll and the receive.
            Err(Errno::ENOENT | Errno::EINTR) => continue,
            Err(err) => return Err(err),
        };
        handle(&listener, &notif, pod_ip, binder);
    }
}

/// Decides one notification and answers it (now, or from a thread for a redirected connect).
fn handle(
    listener: &Arc<OwnedFd>,
    notif: &libc::seccomp_notif,
    pod_ip: Ipv4Addr,
    binder: Option<&Binder>,
) {
    let id = notif.id;
    let caller = Caller {
        tid: notif.pid as i32,
        fd: notif.data.args[0] as i32,
    };
    let reply = match read_sockaddr(caller.tid, notif.data.args[1], notif.data.args[2]) {
        None => Reply::Continue,
        Some(addr) if i64::from(notif.data.nr) == libc::SYS_bind => {
            on_bind(listener, id, &caller, addr, pod_ip, binder)
        }
        Some(addr) => match on_connect(listener, id, &caller, addr, pod_ip) {
            Some((socket, target)) => {
                let shared = listener.clone();
                let answer = move || {
                    let result = connect(&socket, target);
                    let _ = ioctl::respond(&shared, id, Reply::Done(result));
                };
                if std::thread::Builder::new().spawn(answer).is_err() {
                    let _ = ioctl::respond(listener, id, Reply::Done(Err(Errno::EAGAIN)));
                }
                return;
            }
            None => Reply::Continue,
        },
    };
    // ENOENT: the caller died or was interrupted meanwhile; nobody is waiting for the answer.
    let _ = ioctl::respond(listener, id, reply);
}

/// The thread that made the call, and the socket fd it named.
struct Caller {
    tid: i32,
    fd: i32,
}

fn on_bind(
    listener: &OwnedFd,
    id: u64,
    caller: &Caller,
    addr: SocketAddr,
    pod_ip: Ipv4Addr,
    binder: Option<&Binder>,
) -> Reply {
    // A privileged port is bound by the binder even where no rewrite is needed (`binder.rs`).
    let privileged = binder.is_some() && (1..1024).contains(&addr.port());
    if rewrite_bind(addr, pod_ip, false) == Action::Continue && !privileged {
        return Reply::Continue;
    }
    let socket = match take_socket(listener, id, caller) {
        Ok(socket) => socket,
        Err(err) => return Reply::Done(Err(err)),
    };
    let v6only = addr.is_ipv6() && getsockopt(&socket, sockopt::Ipv6V6Only).unwrap_or(false);
    let to = match rewrite_bind(addr, pod_ip, v6only) {
        Action::Continue if !privileged => return Reply::Continue,
        Action::Continue => addr,
        Action::Refuse(errno) => return Reply::Done(Err(errno)),
        Action::Redirect(to) => to,
    };
    Reply::Done(match (bind(&socket, to), binder) {
        // A privileged port from inside a user namespace: bound from the host's (binder.rs).
        (Err(Errno::EACCES), Some(binder)) => binder.bind(&socket, to),
        (result, _) => result,
    })
}

/// The socket and address to connect instead, if the call is to the pod's own localhost and
/// the pod listens there (TCP only; `decision.rs`).
fn on_connect(
    listener: &OwnedFd,
    id: u64,
    caller: &Caller,
    addr: SocketAddr,
    pod_ip: Ipv4Addr,
) -> Option<(OwnedFd, SocketAddr)> {
    let target = localhost_target(addr, pod_ip)?;
    let socket = take_socket(listener, id, caller).ok()?;
    if getsockopt(&socket, sockopt::SockType).ok()? != SockType::Stream {
        return None;
    }
    pod_listens(target).then_some((socket, target))
}

/// Whether something listens on `addr` (the pod's IP and port), by trying to bind it: with
/// `SO_REUSEADDR` a bind conflicts only with a live socket there, a listener in practice (or a
/// host listener on the wildcard address, which `addr` reaches too). Reading `/proc/net/tcp`
/// instead costs milliseconds on a machine with thousands of sockets; this costs four syscalls.
fn pod_listens(addr: SocketAddr) -> bool {
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    };
    let flags = SockFlag::SOCK_CLOEXEC;
    let Ok(probe) = socket(family, SockType::Stream, flags, None) else {
        return false;
    };
    let _ = setsockopt(&probe, sockopt::ReuseAddr, &true);
    nix::sys::socket::bind(probe.as_raw_fd(), &SockaddrStorage::from(addr))
        == Err(Errno::EADDRINUSE)
}

/// Reads the caller's `sockaddr` argument; `None` if it cannot be read or is not inet.
fn read_sockaddr(tid: i32, ptr: u64, len: u64) -> Option<SocketAddr> {
    let len = usize::try_from(len).ok()?.min(SOCKADDR_READ);
    let mut buf = [0u8; SOCKADDR_READ];
    let remote = [RemoteIoVec {
        base: usize::try_from(ptr).ok()?,
        len,
    }];
    let read = process_vm_readv(
        Pid::from_raw(tid),
        &mut [std::io::IoSliceMut::new(&mut buf[..len])],
        &remote,
    )
    .ok()?;
    parse_sockaddr(&buf[..read])
}

/// A duplicate of the caller's socket fd, taken only while the notification is still valid.
fn take_socket(listener: &OwnedFd, id: u64, caller: &Caller) -> Result<OwnedFd, Errno> {
    let tgid = thread_group(caller.tid).ok_or(Errno::ESRCH)?;
    let pid = rustix::process::Pid::from_raw(tgid).ok_or(Errno::ESRCH)?;
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
        .map_err(|e| Errno::from_raw(e.raw_os_error()))?;
    // The TOCTOU rule: the memory we read and the process we opened are the caller's only if
    // the caller is still blocked in this very call.
    if !ioctl::id_valid(listener, id) {
        return Err(Errno::ESRCH);
    }
    rustix::process::pidfd_getfd(&pidfd, caller.fd, rustix::process::PidfdGetfdFlags::empty())
        .map_err(|e| Errno::from_raw(e.raw_os_error()))
}

/// The thread group (process) id of thread `tid`, from `/proc/TID/status`.
fn thread_group(tid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()
}

fn bind(socket: &OwnedFd, to: SocketAddr) -> Result<(), Errno> {
    nix::sys::socket::bind(socket.as_raw_fd(), &SockaddrStorage::from(to))
}

fn connect(socket: &OwnedFd, to: SocketAddr) -> Result<(), Errno> {
    nix::sys::socket::connect(socket.as_raw_fd(), &SockaddrStorage::from(to))
}

/// The three seccomp ioctls, the only `unsafe` of the supervisor.
#[allow(unsafe_code)]
mod ioctl {
    use std::os::fd::{AsRawFd, OwnedFd};

    use nix::errno::Errno;

    use super::Reply;

    /// `SECCOMP_IOCTL_NOTIF_RECV`: the next notification.
    pub fn receive(listener: &OwnedFd) -> Result<libc::seccomp_notif, Errno> {
        // SAFETY: all-zero is a valid `seccomp_notif` (plain integers), and the kernel requires
        // the buffer zeroed; it writes at most `sizeof(struct seccomp_notif)` bytes into it.
        let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: the request takes a pointer to a `seccomp_notif`, which `notif` is.
        let rc = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV as _,
                &mut notif as *mut libc::seccomp_notif,
            )
        };
        Errno::result(rc).map(|_| notif)
    }

    /// `SECCOMP_IOCTL_NOTIF_SEND`: the answer to notification `id`.
    pub fn respond(listener: &OwnedFd, id: u64, reply: Reply) -> Result<(), Errno> {
        let (error, flags) = match reply {
            Reply::Continue => (0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32),
            Reply::Done(Ok(())) => (0, 0),
            Reply::Done(Err(errno)) => (-(errno as i32), 0),
        };
        let mut resp = libc::seccomp_notif_resp {
            id,
            val: 0,
            error,
            flags,
        };
        // SAFETY: the request takes a pointer to a `seccomp_notif_resp`, which `resp` is.
        let rc = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SEND as _,
                &mut resp as *mut libc::seccomp_notif_resp,
            )
        };
        Errno::result(rc).map(drop)
    }

    /// `SECCOMP_IOCTL_NOTIF_ID_VALID`: whether the caller still waits in the call `id`.
    pub fn id_valid(listener: &OwnedFd, id: u64) -> bool {
        let mut id = id;
        // SAFETY: the request takes a pointer to a u64.
        let rc = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _,
                &mut id as *mut u64,
            )
        };
        rc == 0
    }
}
