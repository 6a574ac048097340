//! The `minik` binary: kubectl-like verbs, `minik up`, and every component as a subcommand.
//!
//! Kubernetes counterpart: `kubectl` and the `cmd/kube-*` mains. As kubectl does, every failure is
//! one line on stderr and exit code 1, usage errors included (clap alone would exit 2). Left out of
//! kubectl: plugins, `edit`, `exec`/`attach`/`port-forward`/`cp`, and most output formats beyond
//! tables, wide, yaml, json and name.
//! Read next: `commands/mod.rs` for the subcommands, `printers/` for `get`'s columns.

mod commands;
mod config;
mod manifest;
mod output;
mod printers;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    // `minik shim` and `minik image` start for every container: no clap, no async runtime.
    if let Some(code) = commands::components::hidden_helper(&args) {
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let cli = match commands::Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(error) if !error.use_stderr() => {
            let _ = error.print(); // --help, --version
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("{}", output::usage_error(&error, &args));
            return ExitCode::FAILURE;
        }
    };
    if cli.command.writes_for_a_reader() {
        die_by_sigpipe_when_stdout_closes();
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if error.is::<output::Reported>() => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("{}", output::error_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// Lets a closed stdout end the command quietly, as it ends kubectl (`minik get pods | head`).
///
/// Rust ignores SIGPIPE, so printing to a pipe whose reader has gone fails and `println!` panics.
/// The signal's default action cannot simply be restored: the same process writes to its TCP
/// connections, and a server closing one (an apiserver restarting under `get -w`) would then kill
/// it. So only that panic is turned into what kubectl's end looks like: death by SIGPIPE, with
/// nothing on stderr. Every other panic is reported as before.
#[allow(unsafe_code)]
fn die_by_sigpipe_when_stdout_closes() {
    use nix::sys::signal::{raise, signal, SigHandler, Signal};
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            // SAFETY: SIG_DFL installs no handler code; the process ends on the next line.
            let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
            let _ = raise(Signal::SIGPIPE);
        }
        report(info)
    }));
}
