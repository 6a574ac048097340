//! The shim told to stop: SIGTERM to the shim stops its container — SIGTERM to the container's
//! process group, then SIGKILL once the stop grace has passed — and the shim goes on as after any
//! exit (reap, kill what is left, write `exit.json`).
//!
//! Kubernetes counterpart: none in the kubelet (it signals the container itself, `terminate.rs`);
//! this is the runtime's side, as `docker stop` (SIGTERM, then SIGKILL after 10 s) and containerd's
//! shim `Shutdown`. It matters when the kubelet is gone: a shim whose kubelet died is re-parented
//! to `minik up`, and stopping it must not leave its container running without a supervisor.
//!
//! The handlers only call `kill(2)` and `alarm(2)`, which are async-signal-safe: SIGTERM forwards
//! the signal and arms an alarm for the grace; SIGALRM sends SIGKILL. Signal handlers are reset by
//! `exec`, so the container never inherits them.
//!
//! The grace is the pod's `terminationGracePeriodSeconds` as it was when the container started
//! (the kubelet passes `--stop-grace`; upstream's kubelet records it as the container label
//! `io.kubernetes.pod.terminationGracePeriod` and uses it when the pod spec is gone), else 10 s.
//! minik simplifies: no preStop hook runs on this path (the hook belongs to the kubelet).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

use nix::sys::signal::{killpg, sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::unistd::Pid;

/// The grace between SIGTERM and SIGKILL when the shim is stopped, as `docker stop`'s default.
pub const DEFAULT_STOP_GRACE_SECONDS: u32 = 10;

/// The container's process group (0: none yet).
static GROUP: AtomicI32 = AtomicI32::new(0);
/// Seconds between the forwarded SIGTERM and SIGKILL.
static GRACE: AtomicU32 = AtomicU32::new(DEFAULT_STOP_GRACE_SECONDS);
/// Set by the first SIGTERM: later ones do not push the SIGKILL back.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// From now on, SIGTERM to the shim stops the container in process group `group` within `grace`
/// seconds (at least 1). Installing a handler is `unsafe` in Rust whatever it does; this one is
/// sound because both handlers are async-signal-safe (atomics, `kill`, `alarm`).
#[allow(unsafe_code)]
pub fn stop_on_sigterm(group: u32, grace: u32) -> nix::Result<()> {
    GROUP.store(group as i32, Ordering::SeqCst);
    GRACE.store(grace.max(1), Ordering::SeqCst);
    // SA_RESTART: the reaping `waitpid` carries on; the container's exit is what ends it.
    let action = |handler| {
        SigAction::new(
            SigHandler::Handler(handler),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        )
    };
    // SAFETY: both handlers only touch atomics and call async-signal-safe functions.
    unsafe {
        sigaction(Signal::SIGALRM, &action(on_alarm))?;
        sigaction(Signal::SIGTERM, &action(on_term))?;
    }
    Ok(())
}

/// SIGTERM to the shim: SIGTERM to the container's group, SIGKILL after the grace.
extern "C" fn on_term(_: nix::libc::c_int) {
    if STOPPING.swap(true, Ordering::SeqCst) {
        return;
    }
    signal_group(Signal::SIGTERM);
    nix::unistd::alarm::set(GRACE.load(Ordering::SeqCst));
}

/// The grace is over.
extern "C" fn on_alarm(_: nix::libc::c_int) {
    signal_group(Signal::SIGKILL);
}

fn signal_group(signal: Signal) {
    let group = GROUP.load(Ordering::SeqCst);
    if group > 0 {
        let _ = killpg(Pid::from_raw(group), signal);
    }
}
