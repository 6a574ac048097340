//! Moving one connection's bytes both ways: a plain read/write for request-sized chunks, and
//! `splice(2)` (`splice.rs`) once a direction turns out to carry bulk data.
//!
//! Kubernetes counterpart: `proxyTCP` and `copyBytes` in `pkg/proxy/userspace/proxysocket.go`
//! (≤ v1.25): one `io.Copy` per direction until either side closes. minik keeps tokio's
//! `copy_bidirectional` semantics instead (an EOF is passed on as a write shutdown, and the
//! connection ends when both directions have ended), and picks the cheaper way to move the bytes:
//!
//! - **small chunks** (an HTTP request, its answer): one `read` into a 16 KiB buffer and one
//!   `write`. tokio clears a socket's readiness when a read comes back short, so the next read
//!   waits for the kernel's next event instead of making a call that answers `EAGAIN`. Splicing
//!   the same chunk costs three calls (socket → pipe, pipe → socket, and the `EAGAIN`, because
//!   readiness is only cleared by a failed call there) plus two pipes per connection (four file
//!   descriptors, two `fcntl`s, four `close`s). HAProxy copies the same way by default;
//! - **bulk**: a read that fills the whole buffer means more is waiting, so that direction switches
//!   to `splice` for the rest of the connection, and its bytes no longer cross into user space
//!   (the bet HAProxy's `option splice-auto` makes). If the pipe cannot be created (out of file
//!   descriptors), the direction keeps copying.
//!
//! The last direction to end skips its write shutdown: both sockets are closed right after, and
//! a close sends the same FIN (both receive queues are at EOF by then, so it is never a reset).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::TcpStream;

use crate::splice::{splice_until_eof, Pipe};

/// Buffer per direction for the copy path; a read that fills it switches the direction to splice.
const COPY_BUFFER: usize = 16 * 1024;

/// Forwards both directions until both have ended, or until either fails. `bytes_in` (client →
/// backend) and `bytes_out` grow as bytes move.
pub async fn forward_bidirectional(
    client: &mut TcpStream,
    backend: &mut TcpStream,
    bytes_in: &AtomicU64,
    bytes_out: &AtomicU64,
) -> io::Result<()> {
    let one_ended = AtomicBool::new(false);
    let (client_read, client_write) = client.split();
    let (backend_read, backend_write) = backend.split();
    let to_backend = one_way(client_read, backend_write, bytes_in, &one_ended);
    let to_client = one_way(backend_read, client_write, bytes_out, &one_ended);
    tokio::try_join!(to_backend, to_client)?;
    Ok(())
}

/// Moves bytes from `from` to `to` until `from` reaches EOF, then passes the EOF on.
async fn one_way(
    mut from: ReadHalf<'_>,
    mut to: WriteHalf<'_>,
    counter: &AtomicU64,
    one_ended: &AtomicBool,
) -> io::Result<()> {
    // Read into spare capacity: a zeroed buffer would cost a 16 KiB memset per direction and
    // connection (visible in a profile of one-request connections).
    let mut buffer = Vec::with_capacity(COPY_BUFFER);
    loop {
        buffer.clear();
        let read = from.read_buf(&mut buffer).await?;
        if read == 0 {
            break;
        }
        to.write_all(&buffer).await?;
        counter.fetch_add(read as u64, Ordering::Relaxed);
        if read >= COPY_BUFFER {
            if let Ok(pipe) = Pipe::new() {
                drop(buffer);
                splice_until_eof(from.as_ref(), to.as_ref(), &pipe, counter).await?;
                break;
            }
        }
    }
    end_direction(&mut to, one_ended).await;
    Ok(())
}

/// Passes an EOF on as a write shutdown, unless the other direction has already ended (then both
/// sockets are about to be closed, which sends the FIN anyway). The peer may already be gone: not
/// an error here.
async fn end_direction(to: &mut WriteHalf<'_>, one_ended: &AtomicBool) {
    let other_ended = one_ended.swap(true, Ordering::AcqRel);
    if !other_ended {
        let _ = to.shutdown().await;
    }
}
