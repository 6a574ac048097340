//! Zero-copy forwarding with `splice(2)`: bytes go socket → pipe → socket inside the kernel.
//!
//! Kubernetes counterpart: none; the userspace proxy copied through user-space buffers
//! (`io.Copy` in `proxysocket.go`), which is why it moved about a third of a direct connection's
//! throughput. HAProxy and Envoy use the same trick as here on Linux.
//!
//! A plain copy loop (`tokio::io::copy_bidirectional`) reads every byte into a user buffer and
//! writes it back out: two copies across the user/kernel boundary per byte, on top of the two the
//! client and the backend already pay. `splice` moves page references from the receiving socket
//! into a pipe and from the pipe into the sending socket, so the proxy's cost per byte is close to
//! zero and its cost per *chunk* is two system calls.
//!
//! How it fits tokio: the sockets are already non-blocking and registered with tokio's reactor.
//! For each direction we wait for `readable()`, then `try_io(READABLE, || splice(…))`, which clears
//! the readiness if the kernel answers `EAGAIN`; the same on the writing side with `writable()`.
//! The pipe is emptied completely before it is filled again, so it is never the side that blocks.
//!
//! A connection starts by copying (`forward.rs`); a direction comes here once a read fills the
//! copy buffer, i.e. when it carries bulk data. Byte counters are updated per chunk (tens of KiB),
//! so `/metrics` shows long transfers live.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::pipe::{pipe_with, splice, PipeFlags, SpliceFlags};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// The most bytes moved per `splice` call; also the pipe size asked for (the kernel's default
/// maximum for unprivileged processes is 1 MiB, `/proc/sys/fs/pipe-max-size`).
const CHUNK: usize = 1024 * 1024;

/// A pipe used as the in-kernel buffer of one direction.
pub struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl Pipe {
    /// A pipe, or the error (out of file descriptors) that says to keep copying instead.
    pub fn new() -> io::Result<Pipe> {
        let (read, write) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        // A bigger pipe means fewer calls per megabyte; the default (64 KiB) still works.
        let _ = rustix::pipe::fcntl_setpipe_size(&write, CHUNK);
        Ok(Pipe { read, write })
    }
}

/// Moves bytes from `from` to `to` through `pipe` until `from` reaches EOF; passing the EOF on is
/// the caller's job (`forward.rs`).
pub async fn splice_until_eof(
    from: &TcpStream,
    to: &TcpStream,
    pipe: &Pipe,
    counter: &AtomicU64,
) -> io::Result<()> {
    loop {
        let filled = fill(from, pipe).await?;
        if filled == 0 {
            return Ok(());
        }
        drain(pipe, to, filled).await?;
        counter.fetch_add(filled as u64, Ordering::Relaxed);
    }
}

/// Splices what `from` has (up to [`CHUNK`]) into the empty pipe; 0 means EOF.
async fn fill(from: &TcpStream, pipe: &Pipe) -> io::Result<usize> {
    let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
    loop {
        from.readable().await?;
        let spliced = from.try_io(Interest::READABLE, || {
            splice(from.as_fd(), None, &pipe.write, None, CHUNK, flags).map_err(io::Error::from)
        });
        match spliced {
            Ok(count) => return Ok(count),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
            Err(error) => return Err(error),
        }
    }
}

/// Splices exactly `count` bytes from the pipe into `to`.
async fn drain(pipe: &Pipe, to: &TcpStream, mut count: usize) -> io::Result<()> {
    let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
    while count > 0 {
        to.writable().await?;
        let spliced = to.try_io(Interest::WRITABLE, || {
            splice(&pipe.read, None, to.as_fd(), None, count, flags).map_err(io::Error::from)
        });
        match spliced {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(moved) => count -= moved,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
