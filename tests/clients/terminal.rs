//! A pseudo-terminal for a client that wants one (`kubectl run -it`, `attach -it`, `debug -it`):
//! the test holds the master, types into it, reads what the client prints and resizes it.
//!
//! Kubernetes counterpart: what a person's terminal emulator is to kubectl. kubectl checks that
//! its stdin is a terminal, puts it in raw mode, sends its size on the resize channel and again
//! on every SIGWINCH, which the kernel sends to the terminal's foreground process group when
//! the master sets a new size (`TIOCSWINSZ`), as a terminal emulator does when its window
//! changes.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

/// A client running on a terminal of the test's.
pub struct Terminal {
    master: File,
    output: mpsc::UnboundedReceiver<Vec<u8>>,
    /// Everything printed so far, and how much of it an `expect` has already matched.
    seen: String,
    matched: usize,
    /// The client (killed when dropped).
    pub child: tokio::process::Child,
}

fn winsize(rows: u16, cols: u16) -> libc::winsize {
    libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

impl Terminal {
    /// Starts `command` on a new terminal of `rows` × `cols`, as its controlling terminal.
    #[allow(unsafe_code)]
    pub fn spawn(mut command: tokio::process::Command, rows: u16, cols: u16) -> Terminal {
        let (mut master, mut side): (RawFd, RawFd) = (-1, -1);
        let size = winsize(rows, cols);
        // SAFETY: openpty writes two fds into the integers and reads the size it is given.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut side,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: openpty just opened both; nothing else owns them.
        let (master, side) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(side)) };
        command
            .stdin(Stdio::from(side.try_clone().unwrap()))
            .stdout(Stdio::from(side.try_clone().unwrap()))
            .stderr(Stdio::from(side));
        // SAFETY: async-signal-safe calls in the forked child: a session of its own whose
        // controlling terminal is its stdin.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("start the client on a terminal");
        drop(command); // our copies of the terminal's side: EIO on the master once it exits
        let (tx, output) = mpsc::unbounded_channel();
        let mut reader = master.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    return;
                }
            }
        });
        Terminal {
            master,
            output,
            seen: String::new(),
            matched: 0,
            child,
        }
    }

    /// Types `text` (in raw mode: `\r` is Enter).
    pub fn send(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
    }

    /// Waits until the client prints `text` after what earlier `expect`s matched; returns what
    /// it printed up to and including it.
    pub async fn expect(&mut self, text: &str, within: Duration) -> String {
        match self.shows(text, within).await {
            Some(said) => said,
            None => panic!(
                "no {text:?} on the terminal within {within:?}; it shows {:?}",
                &self.seen[self.matched..]
            ),
        }
    }

    /// What the client printed up to `text` (after earlier matches), if it does within `within`.
    pub async fn shows(&mut self, text: &str, within: Duration) -> Option<String> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(at) = self.seen[self.matched..].find(text) {
                let end = self.matched + at + text.len();
                let said = self.seen[self.matched..end].to_string();
                self.matched = end;
                return Some(said);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.output.recv()).await {
                Ok(Some(bytes)) => self.seen.push_str(&String::from_utf8_lossy(&bytes)),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Resizes the terminal, as a window that changes size (the client gets SIGWINCH).
    #[allow(unsafe_code)]
    pub fn resize(&self, rows: u16, cols: u16) {
        let size = winsize(rows, cols);
        // SAFETY: TIOCSWINSZ reads one winsize from the pointer, which lives across the call.
        let rc = unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &size) };
        assert_eq!(rc, 0, "TIOCSWINSZ: {}", std::io::Error::last_os_error());
    }
}
