//! attach's stdin: what `kubectl attach -i` (and `kubectl debug -it`) types, written into the
//! container's stdin FIFO that its shim keeps (`shim/stdin.rs`).
//!
//! Kubernetes counterpart: the stdin half of CRI `Attach` (containerd's `container_attach.go`
//! copies the client's stdin into the container's stdin FIFO). The FIFO is opened without
//! blocking: with no reader there (a `stdinOnce` container whose session is over, or no
//! `stdin: true`) the session just carries no stdin, as upstream ignores stdin for a container
//! that did not ask for it.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;

use crate::cri::Runtime;

/// How long a just-started shim may take to open its end of the FIFO.
const READER_WAIT: Duration = Duration::from_millis(50);
const READER_TRIES: u32 = 20;

/// The container's stdin, if it keeps one and a reader is waiting on it.
pub async fn open(runtime: &dyn Runtime, id: &str) -> Option<pipe::Sender> {
    open_fifo(runtime.stdin_path(id)?).await
}

/// The terminal's control FIFO of a `tty: true` container (`shim/tty.rs`), for resizes.
pub async fn open_control(runtime: &dyn Runtime, id: &str) -> Option<pipe::Sender> {
    open_fifo(runtime.tty_control_path(id)?).await
}

async fn open_fifo(path: std::path::PathBuf) -> Option<pipe::Sender> {
    for _ in 0..READER_TRIES {
        match pipe::OpenOptions::new().open_sender(&path) {
            Ok(sender) => return Some(sender),
            // ENXIO: no reader yet (the shim's pump thread is about to open it) or any more.
            Err(error) if error.raw_os_error() == Some(libc::ENXIO) => {
                tokio::time::sleep(READER_WAIT).await;
            }
            Err(_) => return None,
        }
    }
    None
}

/// Writes one stdin frame; `false` once the container stopped reading (drop the sender then).
pub async fn write(sender: &mut pipe::Sender, bytes: &[u8]) -> bool {
    sender.write_all(bytes).await.is_ok()
}
