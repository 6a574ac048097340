//! What the built-in images do on SIGTERM, and the `event=… t=…` lines they print.
//!
//! Kubernetes counterpart: none; this is the test program of seed 001 ("What Happens When
//! Deleting a Pod", docs/seeds.md), which timestamps each event
//! of a container's life so the kubelet's termination sequence (preStop, SIGTERM, grace, SIGKILL)
//! can be measured from the log. `MINIK_ON_SIGTERM` picks the app's behaviour:
//! `exit` (default: exit 0 at once), `drain:N` (keep serving N ms, then exit 0), `ignore`.

use std::time::Duration;

use jiff::Timestamp;
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::shim::rfc3339_nanos;

/// The app's reaction to SIGTERM.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OnSigterm {
    /// Exit 0 at once.
    Exit,
    /// Keep serving this long, then exit 0.
    Drain(Duration),
    /// Carry on; only SIGKILL ends the process.
    Ignore,
}

impl OnSigterm {
    /// Parses `MINIK_ON_SIGTERM` (`None` → [`OnSigterm::Exit`]).
    pub fn parse(value: Option<&str>) -> Result<Self, String> {
        match value.map(str::trim) {
            None | Some("") | Some("exit") => Ok(OnSigterm::Exit),
            Some("ignore") => Ok(OnSigterm::Ignore),
            Some(other) => other
                .strip_prefix("drain:")
                .and_then(|ms| ms.parse::<u64>().ok())
                .map(|ms| OnSigterm::Drain(Duration::from_millis(ms)))
                .ok_or_else(|| {
                    format!("MINIK_ON_SIGTERM={other:?}: expected exit, drain:MILLIS or ignore")
                }),
        }
    }

    /// Reads it from the environment.
    pub fn from_env() -> Result<Self, String> {
        Self::parse(std::env::var("MINIK_ON_SIGTERM").ok().as_deref())
    }
}

/// Prints `event=NAME t=NOW[ extra]` on stdout (line-buffered, so it reaches the log at once).
pub fn event(name: &str, extra: &str) {
    let sep = if extra.is_empty() { "" } else { " " };
    println!(
        "event={name} t={}{sep}{extra}",
        rfc3339_nanos(Timestamp::now())
    );
}

/// Installs the SIGTERM handler. Do it before announcing `started` so no signal is lost.
pub fn sigterm_stream() -> std::io::Result<Signal> {
    signal(SignalKind::terminate())
}

/// Returns when the program should exit, according to `mode`: prints `event=sigterm` for every
/// SIGTERM, waits out a drain, and never returns under `Ignore`.
pub async fn until_exit(sigterm: &mut Signal, mode: OnSigterm) {
    loop {
        if sigterm.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
        event("sigterm", "");
        match mode {
            OnSigterm::Exit => return,
            OnSigterm::Drain(duration) => {
                tokio::time::sleep(duration).await;
                return;
            }
            OnSigterm::Ignore => continue,
        }
    }
}

/// `minik image sleep`: starts, waits for SIGTERM, exits 0.
pub fn run_sleep() -> i32 {
    let mode = match OnSigterm::from_env() {
        Ok(mode) => mode,
        Err(message) => {
            eprintln!("minik image sleep: {message}");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("minik image sleep: {err}");
            return 1;
        }
    };
    runtime.block_on(async {
        let Ok(mut sigterm) = sigterm_stream() else {
            return 1;
        };
        event("started", "");
        until_exit(&mut sigterm, mode).await;
        event("exit", "code=0");
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_sigterm_parses_the_three_modes() {
        assert_eq!(OnSigterm::parse(None), Ok(OnSigterm::Exit));
        assert_eq!(OnSigterm::parse(Some("exit")), Ok(OnSigterm::Exit));
        assert_eq!(OnSigterm::parse(Some("ignore")), Ok(OnSigterm::Ignore));
        assert_eq!(
            OnSigterm::parse(Some("drain:1500")),
            Ok(OnSigterm::Drain(Duration::from_millis(1500)))
        );
        assert!(OnSigterm::parse(Some("drain:soon")).is_err());
        assert!(OnSigterm::parse(Some("linger")).is_err());
    }
}
