//! The binder: a helper process that stays in the host's user namespace and binds privileged
//! ports for a container that runs in a user namespace of its own.
//!
//! Why (issue 18, point 6): a pod with mount namespaces runs in a new user namespace, its shim
//! included (`mountns/enter.rs`), but keeps the host's network namespace, which belongs to the
//! host's user namespace. Binding a port below `net.ipv4.ip_unprivileged_port_start` (1024) needs
//! `CAP_NET_BIND_SERVICE` in the network namespace's owner (`inet_bind` checks
//! `ns_capable(net->user_ns, …)`), which nothing inside the new user namespace has, even when the
//! kubelet runs as root: `bind(POD_IP:80)` from the supervisor thread fails with `EACCES`. So the
//! shim forks this helper *before* it unshares; the supervisor sends it the socket (SCM_RIGHTS,
//! the same open file) and the address, and the helper binds it with the host's credentials:
//! root's, or, for an unprivileged kubelet, a user's, who gets the same `EACCES` as on the host.
//!
//! Kubernetes counterpart: none; a real pod has a network namespace of its own, owned by its
//! user namespace, where port 80 is allowed. The helper ends when the shim closes its end (or
//! dies), and the shim's final sweep (`kill_descendants`) takes it along.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;

use nix::errno::Errno;
use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags,
    SockFlag, SockType, SockaddrStorage,
};

/// The shim's handle on its binder process.
pub struct Binder {
    socket: Mutex<OwnedFd>,
}

impl Binder {
    /// Forks the helper. Call it while the shim is single-threaded, before `unshare`.
    #[allow(unsafe_code)]
    pub fn fork() -> io::Result<Binder> {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )?;
        // SAFETY: the shim has one thread here (it is about to `unshare(CLONE_NEWUSER)`, which
        // requires that), so the child may run any code.
        match unsafe { nix::unistd::fork() }? {
            nix::unistd::ForkResult::Child => {
                drop(ours);
                // Not the shim's pipes to the kubelet: their readers wait for EOF.
                if let Ok(null) = std::fs::File::options()
                    .read(true)
                    .write(true)
                    .open("/dev/null")
                {
                    let _ = nix::unistd::dup2_stdin(&null);
                    let _ = nix::unistd::dup2_stdout(&null);
                    let _ = nix::unistd::dup2_stderr(&null);
                }
                serve(&theirs);
                std::process::exit(0);
            }
            nix::unistd::ForkResult::Parent { .. } => Ok(Binder {
                socket: Mutex::new(ours),
            }),
        }
    }

    /// Binds `socket` to `to` in the helper; the helper's errno if it failed.
    pub fn bind(&self, socket: &OwnedFd, to: SocketAddr) -> Result<(), Errno> {
        let channel = self.socket.lock().unwrap_or_else(|p| p.into_inner());
        let text = to.to_string();
        let fds = [socket.as_raw_fd()];
        let iov = [io::IoSlice::new(text.as_bytes())];
        sendmsg::<()>(
            channel.as_raw_fd(),
            &iov,
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::empty(),
            None,
        )?;
        let mut answer = [0u8; 4];
        let got = nix::unistd::read(&*channel, &mut answer)?;
        match i32::from_ne_bytes(answer) {
            _ if got != 4 => Err(Errno::EIO),
            0 => Ok(()),
            errno => Err(Errno::from_raw(errno)),
        }
    }
}

/// The helper's loop: one request (an address, a socket) in, its errno (0: bound) out, until EOF.
fn serve(channel: &OwnedFd) {
    loop {
        let Some((socket, to)) = receive(channel.as_raw_fd()) else {
            return;
        };
        let result = nix::sys::socket::bind(socket.as_raw_fd(), &SockaddrStorage::from(to));
        let errno = result.err().map_or(0, |e| e as i32);
        if nix::unistd::write(channel, &errno.to_ne_bytes()).is_err() {
            return;
        }
    }
}

/// One request; `None` at EOF or on a malformed one.
#[allow(unsafe_code)]
fn receive(channel: RawFd) -> Option<(OwnedFd, SocketAddr)> {
    let mut text = [0u8; 64];
    let mut iov = [io::IoSliceMut::new(&mut text)];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let msg = recvmsg::<()>(
        channel,
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .ok()?;
    let len = msg.bytes;
    let mut socket = None;
    for cmsg in msg.cmsgs().ok()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            // SAFETY: SCM_RIGHTS installed these fds in our table just now; nothing else owns
            // them.
            socket = fds.first().map(|&fd| unsafe { OwnedFd::from_raw_fd(fd) });
        }
    }
    let to = std::str::from_utf8(&text[..len]).ok()?.parse().ok()?;
    Some((socket?, to))
}
