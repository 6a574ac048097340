//! `minik shim`: the small supervisor that sits between the kubelet and one container's process.
//!
//! Kubernetes counterpart: not the kubelet itself but the runtime below it — containerd's
//! `containerd-shim-runc-v2` (`containerd/containerd:cmd/containerd-shim-runc-v2`) and CRI-O's
//! `conmon`. A shim exists so that the container does not depend on the manager: the kubelet (or
//! containerd) can crash or restart, the shim keeps holding the container's stdio, reaps it, and
//! records its exit status in a file the next manager reads.
//!
//! Invocation (the kubelet's `ProcessRuntime` runs it; `args` are what follows the word `shim`):
//!
//! ```text
//! minik shim --state DIR --log FILE -- ARGV0 [ARGS…]
//! ```
//!
//! - `DIR/config.json` (written by the runtime before the shim starts) carries the environment and
//!   the working directory, so secrets in env never appear on a command line.
//! - The shim calls `setsid()` (its own session: a Ctrl-C aimed at `minik up` or a `kill -9` of the
//!   kubelet does not reach it) and `PR_SET_CHILD_SUBREAPER` (orphans of the container are
//!   re-parented to the shim instead of init, so it can reap and kill them).
//! - With `--cgroup DIR` it first joins the pod's `pids` cgroup (`cgroups.rs`), so the container
//!   and all it forks are counted there.
//! - It spawns the container in its own process group (`process_group(0)`), with exactly the given
//!   environment, stdin `/dev/null`, stdout/stderr piped into `FILE` in CRI log format
//!   (`2026-11-22T02:30:00.123456789Z stdout F line`).
//! - With a `pod_ip` in its config, the container starts under a seccomp filter that hands its
//!   `bind`/`connect` calls to a thread of the shim, which puts wildcard listeners on the pod IP
//!   (`bind_rewrite/`: the pod's own network, approximated).
//! - It writes `DIR/started.json` (pid and `/proc` start time, so a later kubelet can tell "our"
//!   process from a recycled pid), then prints one JSON handshake line on its stdout
//!   (`{"started":{…}}` or `{"failed":{…}}`) and detaches stdout and stderr.
//! - Its stderr, until the handshake, is a pipe the runtime reads if no handshake comes. After
//!   it, anything the shim has to say goes to `DIR/shim.log`, created only then: a container that
//!   starts and ends normally costs no file for it (files are created on the start path, see
//!   `cri/process/`).
//! - It reaps every child until the container's main process exits, then SIGKILLs every remaining
//!   descendant (also ones that called `setsid()`: they are still below the subreaper) until none
//!   is left, writes `DIR/exit.json` (`exit_code` = 128 + N after signal N) and exits 0.
//! - If the program cannot be started it writes `exit.json` with exit code 127 (not found),
//!   126 (not executable) or 128 (anything else) and a `message`, and exits with that code.
//!
//! The kubelet never signals the shim: it signals the container's process group (`pid` in
//! `DIR/started.json`). Anyone else may: SIGTERM to the shim stops its container (SIGTERM, then
//! SIGKILL after `--stop-grace`: the pod's terminationGracePeriodSeconds, else 10 s; `stop.rs`),
//! so a shim whose kubelet died does not leave its container running when it is told to stop.
//! If the shim itself is SIGKILLed, the exit status is lost (as with containerd, #6570): the runtime
//! then kills the orphaned group and reports exit code 255.
//!
//! - With `stdin: true` in its config, the container's stdin is fed from the FIFO `DIR/stdin`
//!   (`stdin.rs`), which the kubelet's attach writes into.
//! - With `tty: true`, the container runs on a pseudo-terminal whose master the shim keeps
//!   (`tty.rs`): its output is logged as `stdout`, resizes arrive through the FIFO `DIR/ctl`.
//!
//! minik simplifies: no log rotation, no OOM detection, no cgroups.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use jiff::Timestamp;
use nix::errno::Errno;
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use bind_rewrite::BindRewrite;

pub mod bind_rewrite;
mod log;
mod procfs;
mod records;
pub mod stdin;
mod stop;
pub mod tty;

pub use log::{cri_log_record, rfc3339_nanos};
use log::{open_log, spawn_copier};
pub use procfs::{descendants, parse_proc_stat, proc_stat, ProcStat};
pub use records::*;

/// Parsed command line of the shim.
#[derive(Debug, PartialEq)]
struct Options {
    state_dir: PathBuf,
    log_path: PathBuf,
    argv: Vec<String>,
    /// Seconds from the SIGTERM the shim forwards to the SIGKILL (`stop.rs`).
    stop_grace: u32,
    /// The pod's `pids` cgroup, joined before the container starts (`cgroups.rs`).
    cgroup: Option<PathBuf>,
}

const USAGE: &str =
    "usage: minik shim --state DIR --log FILE [--stop-grace SECONDS] [--cgroup DIR] -- ARGV0 [ARGS...]";

/// Set when the handshake is out: the state directory, whose `shim.log` then takes the shim's
/// messages (its stderr is `/dev/null` from that moment; see [`note`]).
static HANDSHAKE_SENT: OnceLock<PathBuf> = OnceLock::new();

/// Entry point of `minik shim …`. `args` are the arguments after the word `shim` (a leading
/// `"shim"` is tolerated). Returns the process exit code.
pub fn main(args: Vec<String>) -> i32 {
    if args.iter().any(|a| a == "--probe-namespaces") {
        return probe_namespaces();
    }
    let opts = match parse_args(&args) {
        Ok(opts) => opts,
        Err(message) => {
            eprintln!("minik shim: {message}\n{USAGE}");
            return 2;
        }
    };
    // A panic after the handshake would otherwise go to /dev/null with the rest of stderr.
    std::panic::set_hook(Box::new(|info| note(&format!("minik shim: {info}"))));
    match supervise(&opts) {
        Ok(code) => code,
        Err(err) => {
            note(&format!("minik shim: {err}"));
            1
        }
    }
}

/// `minik shim --probe-namespaces`: exit 0 if this process can make a user + mount namespace
/// with a tmpfs in it, else say why on stderr (the kubelet's `mountns::detect`).
fn probe_namespaces() -> i32 {
    match crate::mountns::enter::probe() {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("{error}");
            1
        }
    }
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut rest = args.iter().skip_while(|a| a.as_str() == "shim");
    let (mut state_dir, mut log_path) = (None, None);
    let mut stop_grace = stop::DEFAULT_STOP_GRACE_SECONDS;
    let mut cgroup = None;
    loop {
        match rest.next().map(String::as_str) {
            Some("--state") => state_dir = rest.next().map(PathBuf::from),
            Some("--log") => log_path = rest.next().map(PathBuf::from),
            Some("--cgroup") => cgroup = rest.next().map(PathBuf::from),
            Some("--stop-grace") => {
                let value = rest.next().map(String::as_str).unwrap_or_default();
                stop_grace = value
                    .parse()
                    .map_err(|_| format!("--stop-grace {value:?}: not a number of seconds"))?;
            }
            Some("--") => break,
            Some(other) => return Err(format!("unexpected argument {other:?}")),
            None => return Err("missing `-- ARGV`".into()),
        }
    }
    let argv: Vec<String> = rest.cloned().collect();
    if argv.is_empty() {
        return Err("empty ARGV".into());
    }
    Ok(Options {
        state_dir: state_dir.ok_or("missing --state DIR")?,
        log_path: log_path.ok_or("missing --log FILE")?,
        argv,
        stop_grace,
        cgroup,
    })
}

/// The shim's whole life: start the container, reap, clean up, record the exit.
fn supervise(opts: &Options) -> io::Result<i32> {
    // Relative paths are relative to the kubelet's directory, which the shim leaves in `detach`.
    let opts = &Options {
        state_dir: std::path::absolute(&opts.state_dir)?,
        log_path: std::path::absolute(&opts.log_path)?,
        argv: opts.argv.clone(),
        stop_grace: opts.stop_grace,
        cgroup: opts.cgroup.clone(),
    };
    let mut config: StoredConfig = read_json(&opts.state_dir.join(CONFIG_FILE))?;
    config.working_dir = config.working_dir.map(std::path::absolute).transpose()?;
    detach()?;
    let started_at = Timestamp::now();
    let log = match open_log(&opts.log_path) {
        Ok(log) => Arc::new(Mutex::new(log)),
        Err(err) => {
            let message = format!("cannot open log file {}: {err}", opts.log_path.display());
            return report_start_failure(
                opts,
                StartFailure {
                    exit_code: 128,
                    message,
                },
                started_at,
            );
        }
    };
    // The container and all it forks are counted in the pod's cgroup from the start.
    if let Some(cgroup) = &opts.cgroup {
        let me = std::process::id().to_string();
        if let Err(err) = fs::write(cgroup.join("cgroup.procs"), me) {
            eprintln!("minik shim: cannot join {}: {err}", cgroup.display());
        }
    }
    // `stdin: true`: a pipe fed from `DIR/stdin` by attach sessions (`stdin.rs`).
    let stdin = stdin::ContainerStdin::plan(&opts.state_dir, config.stdin, config.stdin_once);
    let mut stdin = match stdin {
        Ok(stdin) => stdin,
        Err(err) => {
            let message = format!("cannot make the stdin FIFO: {err}");
            let failure = StartFailure {
                exit_code: 128,
                message,
            };
            return report_start_failure(opts, failure, started_at);
        }
    };
    let (mut child, master) = match spawn_container(opts, &config, &mut stdin) {
        Ok(started) => started,
        Err(failure) => return report_start_failure(opts, failure, started_at),
    };
    let pid = Pid::from_raw(child.id() as i32);
    if let Some(master) = &master {
        let control = master
            .try_clone()
            .and_then(|m| tty::serve_control(&opts.state_dir, m));
        if let Err(err) = control {
            note(&format!("minik shim: no terminal resizes: {err}"));
        }
        match master.try_clone() {
            Ok(writer) => stdin.to_terminal(writer),
            Err(err) => note(&format!("minik shim: no terminal input: {err}")),
        }
    }
    stdin.start(pid.as_raw());
    if let Err(err) = record_start(opts, child.id(), started_at) {
        // Nobody could find this process later: do not leave it running.
        let _ = killpg(pid, Signal::SIGKILL);
        kill_descendants(pid);
        let message = format!("cannot write the container state: {err}");
        return report_start_failure(
            opts,
            StartFailure {
                exit_code: 128,
                message,
            },
            started_at,
        );
    }

    // Told to stop (the kubelet may be gone), the shim stops its container rather than leave it.
    if let Err(err) = stop::stop_on_sigterm(child.id(), opts.stop_grace) {
        note(&format!("minik shim: cannot handle SIGTERM: {err}"));
    }
    let terminal = master.map(|m| tty::spawn_copier(m, log.clone()));
    let copiers: Vec<_> = [
        terminal,
        child
            .stdout
            .take()
            .map(|r| spawn_copier(r, "stdout", log.clone())),
        child
            .stderr
            .take()
            .map(|r| spawn_copier(r, "stderr", log.clone())),
    ]
    .into_iter()
    .flatten()
    .collect();
    drop(child); // std's Child does not wait on drop; we reap with waitpid below.

    let exit_code = reap_until_exit(pid)?;
    let finished_at = Timestamp::now();
    kill_descendants(pid);
    for copier in copiers {
        let _ = copier.join();
    }
    let record = ExitRecord {
        exit_code,
        started_at,
        finished_at,
        message: None,
    };
    write_atomic(
        &opts.state_dir.join(EXIT_FILE),
        &serde_json::to_vec(&record)?,
    )?;
    Ok(0)
}

/// Makes the shim independent of the kubelet: its own session (no terminal signals, not in the
/// kubelet's process group, so a Ctrl-C or a `kill -9` of the kubelet does not reach it) and
/// subreaper of the container's orphans. Signals are left alone on purpose: a blocked or ignored
/// signal would be inherited by the container across `exec`.
fn detach() -> io::Result<()> {
    // Fails only if we already lead a process group, which the runtime never makes us do.
    let _ = nix::unistd::setsid();
    nix::sys::prctl::set_child_subreaper(true)?;
    // Do not keep the kubelet's working directory busy.
    let _ = std::env::set_current_dir("/");
    Ok(())
}

/// Writes `started.json` (the pid is in it), then tells the waiting runtime.
fn record_start(opts: &Options, pid: u32, started_at: Timestamp) -> io::Result<()> {
    let me = std::process::id();
    let started = StartedRecord {
        pid,
        start_ticks: proc_stat(pid).map(|s| s.start_ticks).unwrap_or(0),
        shim_pid: me,
        shim_start_ticks: proc_stat(me).map(|s| s.start_ticks).unwrap_or(0),
        started_at,
    };
    write_atomic(
        &opts.state_dir.join(STARTED_FILE),
        &serde_json::to_vec(&started)?,
    )?;
    send_handshake(opts, &Handshake::Started(started));
    Ok(())
}

/// Why a container did not start: exit code and a message a user can act on.
struct StartFailure {
    exit_code: i32,
    message: String,
}

/// Starts the container: the child, and the terminal's master for a `tty: true` one.
fn spawn_container(
    opts: &Options,
    config: &StoredConfig,
    stdin: &mut stdin::ContainerStdin,
) -> Result<(std::process::Child, Option<File>), StartFailure> {
    let argv0 = &opts.argv[0];
    // Forked before the user namespace, to bind privileged ports from outside it (binder.rs).
    let binder = match (&config.mounts, config.pod_ip) {
        (Some(_), Some(_)) => bind_rewrite::Binder::fork()
            .inspect_err(|e| note(&format!("minik shim: no privileged-port binder: {e}")))
            .ok(),
        _ => None,
    };
    // After the binder's fork (a copy of the terminal's side would keep it open), before the
    // namespaces: the host's `/dev/ptmx`.
    let terminal = match config.tty {
        true => Some(
            tty::Terminal::open(&opts.state_dir).map_err(|err| StartFailure {
                exit_code: 128,
                message: format!("cannot open a terminal: {err}"),
            })?,
        ),
        false => None,
    };
    if let Some(mounts) = &config.mounts {
        // Before the workingDir check: the working directory may be a mount path.
        crate::mountns::enter::enter(mounts, &opts.state_dir).map_err(|e| StartFailure {
            exit_code: 128,
            message: format!("entering the container's mount namespace: {e}"),
        })?;
    }
    let mut cmd = Command::new(argv0);
    cmd.args(&opts.argv[1..]).env_clear().envs(&config.env);
    let master = match terminal {
        Some(terminal) => Some(terminal.wire(&mut cmd).map_err(|err| StartFailure {
            exit_code: 128,
            message: format!("cannot wire the terminal: {err}"),
        })?),
        None => {
            let stdin = stdin.child_end().map_err(|err| StartFailure {
                exit_code: 128,
                message: format!("cannot make the container's stdin: {err}"),
            })?;
            cmd.process_group(0)
                .stdin(stdin)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            None
        }
    };
    if let Some(dir) = &config.working_dir {
        if !dir.is_dir() {
            let message = format!("working directory {} does not exist", dir.display());
            return Err(StartFailure {
                exit_code: 128,
                message,
            });
        }
        cmd.current_dir(dir);
    }
    let rewrite = BindRewrite::prepare(&mut cmd, config.pod_ip).map_err(|err| StartFailure {
        exit_code: 128,
        message: format!("cannot prepare bind rewriting: {err}"),
    })?;
    let rewrite = rewrite.map(|r| r.with_binder(binder));
    let mut child = cmd.spawn().map_err(|err| {
        let (exit_code, what) = match err.kind() {
            io::ErrorKind::NotFound if !argv0.contains('/') => {
                (127, "executable file not found in $PATH".to_string())
            }
            io::ErrorKind::NotFound => (127, "no such file or directory".to_string()),
            io::ErrorKind::PermissionDenied => (126, "permission denied".to_string()),
            _ => (128, err.to_string()),
        };
        StartFailure {
            exit_code,
            message: format!("exec: {argv0:?}: {what}"),
        }
    })?;
    if let Some(Err(err)) = rewrite.map(|r| r.supervise(note)) {
        // Its binds would fail with ENOSYS: better not to run it at all.
        let _ = child.kill();
        let _ = child.wait();
        return Err(StartFailure {
            exit_code: 128,
            message: format!("cannot supervise bind rewriting: {err}"),
        });
    }
    Ok((child, master))
}

fn report_start_failure(
    opts: &Options,
    failure: StartFailure,
    started_at: Timestamp,
) -> io::Result<i32> {
    note(&format!("minik shim: {}", failure.message));
    let record = ExitRecord {
        exit_code: failure.exit_code,
        started_at,
        finished_at: Timestamp::now(),
        message: Some(failure.message),
    };
    write_atomic(
        &opts.state_dir.join(EXIT_FILE),
        &serde_json::to_vec(&record)?,
    )?;
    send_handshake(opts, &Handshake::Failed(record));
    Ok(failure.exit_code)
}

/// Prints the handshake line, then points stdout and stderr at /dev/null: the runtime reads one
/// line only, and the pipes' reader may be gone (kubelet crash) long before the shim ends. Later
/// messages go to `DIR/shim.log` ([`note`]).
fn send_handshake(opts: &Options, handshake: &Handshake) {
    if let Ok(line) = serde_json::to_string(handshake) {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
    let _ = HANDSHAKE_SENT.set(opts.state_dir.clone());
    if let Ok(null) = File::options().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
        let _ = nix::unistd::dup2_stderr(&null);
    }
}

/// One line of the shim's own: on stderr (the runtime's pipe) until the handshake, appended to
/// `DIR/shim.log` after it.
fn note(line: &str) {
    let Some(dir) = HANDSHAKE_SENT.get() else {
        eprintln!("{line}");
        return;
    };
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dir.join(SHIM_LOG_FILE));
    if let Ok(mut file) = file {
        let _ = writeln!(file, "{line}");
    }
}

/// Reaps every child (orphans re-parented to us included) until the main process exits.
fn reap_until_exit(main: Pid) -> io::Result<i32> {
    loop {
        match waitpid(None::<Pid>, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => return Ok(code),
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == main => {
                return Ok(128 + signal as i32)
            }
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(err) => return Err(err.into()),
        }
    }
}

/// SIGKILLs the container's group and every process still below the shim, reaping as they die,
/// until no descendant is left. Re-reads /proc each round: a dying parent re-parents its children
/// to us, and a process may have forked meanwhile.
fn kill_descendants(main: Pid) {
    let _ = killpg(main, Signal::SIGKILL);
    let me = std::process::id();
    loop {
        let left = descendants(me);
        if left.is_empty() {
            return;
        }
        for pid in &left {
            let _ = kill(Pid::from_raw(*pid as i32), Signal::SIGKILL);
        }
        // Block until one of them is reaped, then drain the others that are ready.
        match waitpid(None::<Pid>, None) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return, // ECHILD: nothing of ours left to wait for
        }
        while let Ok(status) = waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            if status == WaitStatus::StillAlive {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parse_args_reads_state_log_and_argv() {
        let opts = parse_args(&strings(&[
            "shim", "--state", "/s", "--log", "/l", "--", "sleep", "--", "1",
        ]))
        .unwrap();
        assert_eq!(
            opts,
            Options {
                state_dir: "/s".into(),
                log_path: "/l".into(),
                argv: strings(&["sleep", "--", "1"]),
                stop_grace: 10,
                cgroup: None,
            }
        );
    }

    #[test]
    fn parse_args_rejects_missing_parts() {
        assert!(parse_args(&strings(&["--state", "/s", "--", "x"])).is_err());
        assert!(parse_args(&strings(&["--state", "/s", "--log", "/l", "--"])).is_err());
        assert!(parse_args(&strings(&["--bogus"])).is_err());
        let grace = [
            "--state",
            "/s",
            "--log",
            "/l",
            "--stop-grace",
            "2",
            "--",
            "x",
        ];
        assert_eq!(parse_args(&strings(&grace)).unwrap().stop_grace, 2);
        let bad = [
            "--state",
            "/s",
            "--log",
            "/l",
            "--stop-grace",
            "soon",
            "--",
            "x",
        ];
        assert!(parse_args(&strings(&bad)).is_err());
    }
}
