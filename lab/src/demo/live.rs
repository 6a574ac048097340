//! The live terminal view of the rollout and rainbow demos: pods per ReplicaSet and state, and
//! the requests so far, on stderr.
//!
//! Kubernetes counterpart: `kubectl get pods -w` and `kubectl rollout status`, condensed to one
//! line per ReplicaSet. When stderr is a terminal the lines are rewritten in place (ANSI cursor
//! up, clear line), at most ten times a second; otherwise (a pipe, a CI log) a plain line is
//! printed when the counts change, at most once a second, so logs stay readable.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use super::census::{Census, State};

/// Draws the census on stderr as it changes.
pub struct LiveView {
    enabled: bool,
    tty: bool,
    /// Lines drawn last time (to move back over them on a terminal).
    drawn: usize,
    last: Option<Instant>,
    last_text: String,
}

impl LiveView {
    /// A view that draws only when `enabled` (narrated runs).
    pub fn new(enabled: bool) -> Self {
        LiveView {
            enabled,
            tty: std::io::stderr().is_terminal(),
            drawn: 0,
            last: None,
            last_text: String::new(),
        }
    }

    /// Redraws if the counts changed and the last draw is old enough; `extra` is a trailing
    /// line (requests sent and failed).
    pub fn update(&mut self, census: &Census, t_ms: f64, extra: &str) {
        if !self.enabled {
            return;
        }
        let lines = lines(census);
        let text = lines.join("\n");
        let pace = if self.tty {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(1)
        };
        if text == self.last_text || self.last.is_some_and(|at| at.elapsed() < pace) {
            return;
        }
        self.last = Some(Instant::now());
        self.last_text = text;
        self.draw(&lines, t_ms, extra);
    }

    /// Draws the final counts whatever the pace, and leaves them on screen.
    pub fn finish(&mut self, census: &Census, t_ms: f64, extra: &str) {
        if self.enabled {
            self.draw(&lines(census), t_ms, extra);
            self.drawn = 0;
        }
    }

    fn draw(&mut self, lines: &[String], t_ms: f64, extra: &str) {
        let mut err = std::io::stderr().lock();
        if self.tty {
            if self.drawn > 0 {
                let _ = write!(err, "\x1b[{}A", self.drawn);
            }
            let _ = writeln!(err, "\x1b[2K    {:>6.1} s  {extra}", t_ms / 1000.0);
            for line in lines {
                let _ = writeln!(err, "\x1b[2K    {line}");
            }
            self.drawn = lines.len() + 1;
        } else {
            let _ = writeln!(
                err,
                "    {:>6.1} s  {} | {extra}",
                t_ms / 1000.0,
                lines.join(" | ")
            );
        }
    }
}

/// One line per group: `NAME  running R  ready Y  terminating T` (pending only when some are).
pub fn lines(census: &Census) -> Vec<String> {
    let now = census.current();
    census
        .groups
        .iter()
        .enumerate()
        .map(|(group, name)| {
            let count = |state| now.count(group, state);
            let running = count(State::Running) + count(State::Ready);
            let mut line = format!(
                "{name:<26} running {running:>3}  ready {:>3}  terminating {:>3}",
                count(State::Ready),
                count(State::Terminating)
            );
            if count(State::Pending) > 0 {
                line.push_str(&format!("  pending {:>3}", count(State::Pending)));
            }
            line
        })
        .collect()
}
