//! `tty: true` containers: the shim starts the container on a pseudo-terminal and keeps its
//! controlling side (the master), so the terminal outlives every attach session.
//!
//! Kubernetes counterpart: the runtime's console (runc's `--console-socket`, whose master
//! containerd's shim keeps and copies, `pkg/process/init.go` `copyConsole`; CRI-O's `conmon`,
//! whose control FIFO `ctl` takes `1 HEIGHT WIDTH` lines to resize the terminal). As upstream
//! for a tty container: stdin, stdout and stderr are all the terminal (stderr is merged into
//! stdout), the process is a session leader with the terminal as its controlling one, and its
//! output is logged as the `stdout` stream.
//!
//! minik simplifies: attach reads the terminal's output from the container log (which the shim
//! writes one record per read, `P` for a piece of a line, so a prompt shows before its newline)
//! rather than from a socket of the shim; input arrives through the stdin FIFO (`stdin.rs`),
//! which writes into the master; resizes through the FIFO `DIR/ctl`.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use jiff::Timestamp;
use nix::sys::stat::Mode;

use super::log::rfc3339_nanos;

/// The control FIFO's name in the container's state directory.
pub const CONTROL_FIFO: &str = "ctl";

/// conmon's message type for a resize (`1 HEIGHT WIDTH`).
const RESIZE: u32 = 1;

/// A terminal opened for a container: the master the shim keeps, the side the container gets.
pub struct Terminal {
    master: File,
    terminal: OwnedFd,
}

impl Terminal {
    /// Opens a pseudo-terminal (both ends close-on-exec: only the container gets its side, as
    /// its stdio) and makes the control FIFO `DIR/ctl`.
    pub fn open(state_dir: &Path) -> io::Result<Self> {
        let (master, terminal) = crate::streaming::spawn::open_pty()?;
        let fifo = state_dir.join(CONTROL_FIFO);
        let _ = std::fs::remove_file(&fifo);
        nix::unistd::mkfifo(&fifo, Mode::S_IRUSR | Mode::S_IWUSR)?;
        Ok(Terminal { master, terminal })
    }

    /// Wires the container onto the terminal: all three stdio, a session of its own (so its pid
    /// is still its process group's id) with the terminal as its controlling one. Returns the
    /// master; the terminal's side lives only in `cmd` (dropped after the spawn), so the master
    /// reads an end (EIO) once the container and all it left behind are gone.
    #[allow(unsafe_code)]
    pub fn wire(self, cmd: &mut Command) -> io::Result<File> {
        cmd.stdin(Stdio::from(self.terminal.try_clone()?))
            .stdout(Stdio::from(self.terminal.try_clone()?))
            .stderr(Stdio::from(self.terminal));
        let hook = || {
            // SAFETY: two async-signal-safe syscalls in the forked child, on its own stdin.
            unsafe {
                if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        };
        // SAFETY: the hook only calls async-signal-safe functions.
        unsafe {
            cmd.pre_exec(hook);
        }
        Ok(self.master)
    }
}

/// Serves `DIR/ctl` on a thread: each `1 HEIGHT WIDTH` line resizes the terminal (`TIOCSWINSZ`;
/// the kernel sends SIGWINCH to the terminal's foreground process group).
pub fn serve_control(state_dir: &Path, master: File) -> io::Result<()> {
    // Read and write: the FIFO never reads an end when a writer (an attach session) goes away.
    let fifo = OpenOptions::new()
        .read(true)
        .write(true)
        .open(state_dir.join(CONTROL_FIFO))?;
    std::thread::spawn(move || {
        for line in BufReader::new(fifo).lines() {
            let Ok(line) = line else { return };
            if let Some((height, width)) = parse_control(&line) {
                let _ = crate::streaming::spawn::resize(&master, width, height);
            }
        }
    });
    Ok(())
}

/// A control line: `Some((height, width))` for a resize, `None` for anything else.
pub fn parse_control(line: &str) -> Option<(u16, u16)> {
    let mut fields = line.split_whitespace().map(str::parse::<u32>);
    let (kind, height, width) = (
        fields.next()?.ok()?,
        fields.next()?.ok()?,
        fields.next()?.ok()?,
    );
    if kind != RESIZE {
        return None;
    }
    Some((u16::try_from(height).ok()?, u16::try_from(width).ok()?))
}

/// The control line for a resize, as the kubelet writes it.
pub fn resize_line(width: u16, height: u16) -> String {
    format!("{RESIZE} {height} {width}\n")
}

/// Copies the terminal's output into the log as the `stdout` stream, one record per line and
/// a `P` record for what a read returned after the last newline (a prompt).
pub fn spawn_copier(mut master: File, log: Arc<Mutex<File>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            // EIO once no process holds the terminal's side any more.
            let n = match master.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let records = terminal_records(Timestamp::now(), &buf[..n]);
            if let Ok(mut file) = log.lock() {
                let _ = file.write_all(&records);
            }
        }
    })
}

/// CRI records for one read of terminal output: `F` for each whole line, `P` for the rest.
pub fn terminal_records(at: Timestamp, chunk: &[u8]) -> Vec<u8> {
    let time = rfc3339_nanos(at);
    let mut out = Vec::with_capacity(chunk.len() + 64);
    for piece in chunk.split_inclusive(|b| *b == b'\n') {
        let (content, tag) = match piece.strip_suffix(b"\n") {
            Some(content) => (content, "F"),
            None => (piece, "P"),
        };
        out.extend_from_slice(format!("{time} stdout {tag} ").as_bytes());
        out.extend_from_slice(content);
        out.push(b'\n');
    }
    out
}

/// Hangs the terminal up for its processes, as closing the master does upstream when a
/// `stdinOnce` container's stdin ends: SIGHUP to the session (the container's process group)
/// and to the terminal's foreground process group.
#[allow(unsafe_code)]
pub fn hang_up(master: &File, session: i32) {
    use nix::sys::signal::{killpg, Signal};
    use nix::unistd::Pid;
    use std::os::fd::AsRawFd;
    // SAFETY: tcgetpgrp reads the foreground group of the terminal behind an open fd.
    let foreground = unsafe { libc::tcgetpgrp(master.as_raw_fd()) };
    for group in [session, foreground] {
        if group > 0 {
            let _ = killpg(Pid::from_raw(group), Signal::SIGHUP);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_lines_are_conmons_resize_messages() {
        assert_eq!(parse_control("1 40 120"), Some((40, 120)));
        assert_eq!(
            parse_control(resize_line(120, 40).trim_end()),
            Some((40, 120))
        );
        assert_eq!(parse_control("2 0 0"), None);
        assert_eq!(parse_control("1 40"), None);
        assert_eq!(parse_control("1 70000 80"), None);
    }

    #[test]
    fn terminal_output_is_logged_by_line_and_a_prompt_as_a_piece() {
        let at: Timestamp = "2026-11-22T02:30:00Z".parse().unwrap();
        let records = terminal_records(at, b"hi\r\n/ # ");
        assert_eq!(
            String::from_utf8(records).unwrap(),
            "2026-11-22T02:30:00.000000000Z stdout F hi\r\n\
             2026-11-22T02:30:00.000000000Z stdout P / # \n"
        );
    }
}
