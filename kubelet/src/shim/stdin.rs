//! The container's stdin, for `stdin: true` containers: a FIFO in the state directory that
//! `kubectl attach -i` (through the kubelet) writes into.
//!
//! Kubernetes counterpart: the runtime's attach stdin (containerd's `cio` FIFOs, which its shim
//! holds open for the container, and CRI-O's `conmon` attach socket). As upstream, the
//! container's stdin stays open between attach sessions, so it blocks reading rather than seeing
//! an end of file; with `stdinOnce` it is closed when the first attach session ends (the FIFO's
//! first writer goes away).
//!
//! How: the container's stdin is a pipe whose write end only the shim holds. A thread of the
//! shim opens `DIR/stdin` (a FIFO) for reading, which blocks until a writer comes, copies what
//! arrives into the pipe until every writer is gone, and opens it again — or, with `stdinOnce`,
//! closes the pipe. The kubelet opens the FIFO without blocking: no reader (the container has
//! ended, or its one session is over) means no stdin.
//!
//! With `tty: true` the pump writes into the terminal's master instead of a pipe (`tty.rs`), and
//! the end of a `stdinOnce` session hangs the terminal up, as containerd's shim closes the
//! console when the stdin FIFO ends.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use nix::sys::stat::Mode;

/// The FIFO's name in the container's state directory.
pub const STDIN_FIFO: &str = "stdin";

/// A container's stdin: none (`/dev/null`), or the FIFO and, once made, the pump.
#[derive(Default)]
pub struct ContainerStdin {
    fifo: Option<(PathBuf, bool)>,
    pump: Option<StdinPump>,
}

/// The shim's side of a container's stdin, ready to be pumped once the container runs.
struct StdinPump {
    fifo: PathBuf,
    writer: File,
    once: bool,
    /// The writer is a terminal's master: the end of a `stdinOnce` session hangs it up.
    terminal: bool,
}

impl ContainerStdin {
    /// Makes `DIR/stdin` when the container asked for a stdin (`stdin: true`).
    pub fn plan(state_dir: &Path, stdin: bool, once: bool) -> io::Result<Self> {
        if !stdin {
            return Ok(ContainerStdin::default());
        }
        let fifo = state_dir.join(STDIN_FIFO);
        let _ = std::fs::remove_file(&fifo);
        nix::unistd::mkfifo(&fifo, Mode::S_IRUSR | Mode::S_IWUSR)?;
        Ok(ContainerStdin {
            fifo: Some((fifo, once)),
            pump: None,
        })
    }

    /// The container's stdin. Called after the shim's last fork before the container's (the
    /// privileged-port binder): a forked copy holding the pipe's write end would keep the
    /// container's stdin open forever.
    pub fn child_end(&mut self) -> io::Result<Stdio> {
        let Some((fifo, once)) = self.fifo.clone() else {
            return Ok(Stdio::null());
        };
        let (reader, writer): (OwnedFd, OwnedFd) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let writer = File::from(writer);
        self.pump = Some(StdinPump {
            fifo,
            writer,
            once,
            terminal: false,
        });
        Ok(Stdio::from(reader))
    }

    /// A `tty: true` container's stdin is its terminal: sessions write into the master.
    pub fn to_terminal(&mut self, master: File) {
        if let Some((fifo, once)) = self.fifo.clone() {
            self.pump = Some(StdinPump {
                fifo,
                writer: master,
                once,
                terminal: true,
            });
        }
    }

    /// Starts copying attach sessions' bytes in (nothing without a stdin); `session` is the
    /// container's process group, hung up when a terminal's one session ends.
    pub fn start(self, session: i32) {
        if let Some(pump) = self.pump {
            pump.start(session);
        }
    }
}

impl StdinPump {
    /// Copies every attach session's bytes into the container until it closes its stdin (or,
    /// with `stdinOnce`, until the first session ends). Runs on a thread of its own.
    fn start(self, group: i32) {
        std::thread::spawn(move || self.run(group));
    }

    fn run(mut self, group: i32) {
        loop {
            // Blocks until a writer (the kubelet, for an attach session) opens the FIFO.
            let Ok(mut session) = File::open(&self.fifo) else {
                return;
            };
            if io::copy(&mut session, &mut self.writer).is_err() {
                return; // the container closed its stdin (or ended)
            }
            if self.once {
                // Dropping the pipe's only write end: the container reads the end of its input.
                let _ = std::fs::remove_file(&self.fifo);
                if self.terminal {
                    super::tty::hang_up(&self.writer, group);
                }
                return;
            }
        }
    }
}
