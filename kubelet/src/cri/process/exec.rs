//! `exec_sync`: run a command "inside" a container, for exec hooks and exec probes.
//!
//! Kubernetes counterpart: CRI `ExecSync` (containerd `internal/cri/server/container_execsync.go`),
//! which the kubelet uses for `lifecycle.preStop.exec`, `postStart.exec` and exec probes, always
//! with a timeout. minik has no namespaces to enter, so "inside" means: the container's exact
//! environment and working directory, its own process group (so a timeout kills the command and
//! whatever it started), output captured and truncated to [`MAX_OUTPUT`] bytes. What it started
//! outside its group (`setsid`) is found by its mark and killed too, also when the exec is
//! abandoned (`exec_group.rs`).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::exec_group::{ExecGroup, EXEC_MARK};
use crate::cri::ExecResult;
use crate::shim::bind_rewrite::BindRewrite;

/// Output kept from an exec (stdout, then stderr).
pub const MAX_OUTPUT: usize = 4096;

/// How long to keep reading output after the command ended (a background process it left may
/// hold the pipe open; it has been killed with the group, this only bounds the wait).
const DRAIN_GRACE: Duration = Duration::from_millis(200);

/// Runs `argv` with exactly `env`, in `working_dir`, bounded by `timeout`, with its binds
/// rewritten to `pod_ip` as the container's are (so `wget localhost:PORT` reaches the pod). Never
/// fails: a program that cannot start gives exit code 127/126 and the reason as output; a timeout
/// gives 137.
pub async fn run_exec(
    argv: &[String],
    env: &BTreeMap<String, String>,
    working_dir: Option<&Path>,
    pod_ip: Option<Ipv4Addr>,
    timeout: Duration,
) -> ExecResult {
    let Some((program, args)) = argv.split_first() else {
        return ExecResult {
            exit_code: 127,
            output: "exec: empty command".into(),
        };
    };
    let mark = ExecGroup::new_mark();
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(env)
        .env(EXEC_MARK, &mark)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = working_dir {
        cmd.current_dir(dir);
    }
    let rewrite = match BindRewrite::prepare_tokio(&mut cmd, pod_ip) {
        Ok(rewrite) => rewrite,
        Err(err) => return start_error(128, format!("exec: bind rewriting: {err}")),
    };
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(err) => {
            let exit_code = if err.kind() == std::io::ErrorKind::PermissionDenied {
                126
            } else {
                127
            };
            return ExecResult {
                exit_code,
                output: format!("exec: {program:?}: {err}"),
            };
        }
    };
    if let Some(Err(err)) = rewrite.map(|r| r.supervise(supervisor_stopped)) {
        let _ = child.start_kill();
        let _ = child.wait().await;
        return start_error(128, format!("exec: bind rewriting: {err}"));
    }
    // Dropped with this future: an abandoned exec takes what it started with it.
    let group = ExecGroup::new(mark, child.id());
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let readers = [
        child
            .stdout
            .take()
            .map(|r| tokio::spawn(capture(r, stdout.clone()))),
        child
            .stderr
            .take()
            .map(|r| tokio::spawn(capture(r, stderr.clone()))),
    ];

    let exit_code = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) => exit_code_of(status),
        Ok(Err(_)) => 128,
        Err(_elapsed) => {
            group.kill_all();
            let _ = child.wait().await;
            137
        }
    };
    // Whatever the command left behind goes too (no orphans), then the pipes close.
    group.kill_all();
    for reader in readers.into_iter().flatten() {
        let abort = reader.abort_handle();
        if tokio::time::timeout(DRAIN_GRACE, reader).await.is_err() {
            abort.abort();
        }
    }
    let mut output = take(&stdout);
    output.extend(take(&stderr));
    output.truncate(MAX_OUTPUT);
    ExecResult {
        exit_code,
        output: String::from_utf8_lossy(&output).into_owned(),
    }
}

fn start_error(exit_code: i32, output: String) -> ExecResult {
    ExecResult { exit_code, output }
}

fn supervisor_stopped(message: &str) {
    tracing::warn!(message, "exec: bind rewriting supervisor stopped");
}

/// Reads a pipe to its end, keeping the first [`MAX_OUTPUT`] bytes (the rest is drained so the
/// writer never blocks on a full pipe).
async fn capture(mut reader: impl AsyncRead + Unpin, sink: Arc<Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = reader.read(&mut buf).await {
        if n == 0 {
            return;
        }
        if let Ok(mut sink) = sink.lock() {
            let room = MAX_OUTPUT.saturating_sub(sink.len());
            sink.extend_from_slice(&buf[..n.min(room)]);
        }
    }
}

fn take(buf: &Mutex<Vec<u8>>) -> Vec<u8> {
    buf.lock()
        .map(|mut b| std::mem::take(&mut *b))
        .unwrap_or_default()
}

/// The shell convention: the exit code, or 128 + N after death by signal N.
pub fn exit_code_of(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(128)
}
