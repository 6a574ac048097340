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
        restore_default_sigpipe();
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
/// Client verbs take the signal's default action instead, like any Unix filter and like Go
/// programs writing to stdout; components keep ignoring it, since a peer closing a socket must
/// stay an error they handle, not their end.
#[allow(unsafe_code)]
fn restore_default_sigpipe() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: called before any thread is started; SIG_DFL installs no handler code.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}
