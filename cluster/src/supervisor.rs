//! The components of a cluster, supervised: start each one (a child process or a tokio task), watch
//! it, stop it, and reap whatever outlives it.
//!
//! Kubernetes counterpart: none inside Kubernetes itself; this is the job systemd does for a
//! kubeadm node, or kind's node container entrypoint. minik keeps it small:
//!
//! - every component is a child process of the one `minik` binary (`minik apiserver …`), in its own
//!   process group so that a Ctrl-C in the terminal reaches only `minik up`, which then stops the
//!   cluster in order;
//! - its stdout and stderr go to `DATA/logs/COMPONENT.log`;
//! - one task per child owns the `Child`, reports an unexpected exit, and on request sends SIGTERM,
//!   then SIGKILL to the whole group after a bound;
//! - `minik up` is a *child subreaper* (`PR_SET_CHILD_SUBREAPER`), so container shims that outlive
//!   their kubelet are re-parented to it instead of init, and [`reap_orphans`] kills and reaps them.
//!
//! - in-process (the test harness's default), a component is its crate's `run(config, token)` on a
//!   task: stopping cancels the token and waits as long as for a process, then aborts the task.
//!
//! Ctrl-C: the components run in their own process groups (and the shims in their own sessions),
//! so the terminal's SIGINT reaches `minik up` alone; it then drains and stops them in order.
//!
//! Read next: `cluster.rs`, which decides the order.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{Error, Result};

/// How long a component gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// One running component, a process or a task, watched by its own supervising task.
pub struct Supervised {
    /// The component's name, also the name of its log file (`kubelet-node-1`).
    pub name: String,
    /// The address it serves, if any (shown by `minik status`).
    pub address: Option<String>,
    /// Its process id, which is also its process group id; `None` for an in-process component.
    pub pid: Option<u32>,
    /// Its log file (a process's stdout and stderr; an in-process component logs through the
    /// embedding program's `tracing` subscriber instead).
    pub log: PathBuf,
    /// When it was started (a restart's backoff resets after a stable run).
    pub started: std::time::Instant,
    /// Cancelled to ask the supervising task to stop the component (for a task: its token).
    stop: CancellationToken,
    /// Cancelled by the supervising task once the component has ended (for whatever reason).
    exited: CancellationToken,
    /// The supervising task; it returns how the component ended. `None` once awaited.
    task: Option<JoinHandle<Exit>>,
}

/// How a component ended.
#[derive(Debug)]
pub enum Exit {
    /// A process exited with this status (`None`: waiting on it failed).
    Process(Option<ExitStatus>),
    /// A task's `run` returned: `Err` holds its error (or its panic).
    Task(std::result::Result<(), String>),
    /// A task did not return within [`STOP_GRACE`] of its token being cancelled: aborted.
    Aborted,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Process(Some(status)) => write!(f, "{status}"),
            Exit::Process(None) => write!(f, "gone"),
            Exit::Task(Ok(())) => write!(f, "returned"),
            Exit::Task(Err(error)) => write!(f, "failed: {error}"),
            Exit::Aborted => write!(f, "aborted after {STOP_GRACE:?}"),
        }
    }
}

impl Exit {
    /// What went wrong, if the component did not end cleanly.
    pub fn error(&self) -> Option<String> {
        match self {
            Exit::Process(Some(status)) if !status.success() => {
                Some(format!("exited with {status}"))
            }
            Exit::Process(_) | Exit::Task(Ok(())) => None,
            _ => Some(self.to_string()),
        }
    }
}

/// An exit nobody asked for, sent to `minik up`'s main loop so it can say so on stderr.
#[derive(Debug)]
pub struct UnexpectedExit {
    /// The component's name.
    pub name: String,
    /// How it ended (`None` if waiting on it failed).
    pub status: Option<ExitStatus>,
}

/// Starts `<binary> <args…>` (the `minik` binary) as a supervised child logging to `log_dir/<name>.log`.
pub fn spawn(
    binary: &Path,
    name: &str,
    address: Option<String>,
    args: &[String],
    log_dir: &Path,
    unexpected: mpsc::UnboundedSender<UnexpectedExit>,
) -> Result<Supervised> {
    let log = log_dir.join(format!("{name}.log"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(|e| Error::io(format!("opening {}", log.display()), e))?;
    let mut child = Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(
            file.try_clone()
                .map_err(|e| Error::io(format!("opening {}", log.display()), e))?,
        )
        .stderr(file)
        // Log files are read by people and by `up`'s readiness check: no colour codes.
        .env("NO_COLOR", "1")
        // Its own process group: the terminal's Ctrl-C goes to `minik up` only.
        .process_group(0)
        .spawn()
        .map_err(|e| {
            Error::io(
                format!("starting {} {}", binary.display(), args.join(" ")),
                e,
            )
        })?;
    let pid = child
        .id()
        .ok_or_else(|| Error::Start("the child exited before it had a pid".into()))?;
    let stop = CancellationToken::new();
    let exited = CancellationToken::new();
    let task = tokio::spawn({
        let (name, stop, exited) = (name.to_string(), stop.clone(), exited.clone());
        async move {
            let status = tokio::select! {
                status = child.wait() => {
                    let status = status.ok();
                    if !stop.is_cancelled() {
                        let _ = unexpected.send(UnexpectedExit { name, status });
                    }
                    status
                }
                _ = stop.cancelled() => terminate(&mut child, pid).await,
            };
            exited.cancel();
            Exit::Process(status)
        }
    });
    Ok(Supervised {
        name: name.to_string(),
        address,
        pid: Some(pid),
        log,
        started: std::time::Instant::now(),
        stop,
        exited,
        task: Some(task),
    })
}

/// Runs `run` (a component's `run(config, stop)`) on a task supervised like a process: an
/// unexpected return is reported, and [`Supervised::stop`] cancels `stop`, then aborts the task
/// if it has not returned within [`STOP_GRACE`].
pub fn spawn_task(
    name: &str,
    address: Option<String>,
    log_dir: &Path,
    stop: CancellationToken,
    run: crate::component::Run,
    unexpected: mpsc::UnboundedSender<UnexpectedExit>,
) -> Supervised {
    let exited = CancellationToken::new();
    let mut join = tokio::spawn(run);
    let task = tokio::spawn({
        let (name, stop, exited) = (name.to_string(), stop.clone(), exited.clone());
        async move {
            let exit = tokio::select! {
                result = &mut join => {
                    if !stop.is_cancelled() {
                        let _ = unexpected.send(UnexpectedExit { name, status: None });
                    }
                    task_exit(result)
                }
                _ = stop.cancelled() => match tokio::time::timeout(STOP_GRACE, &mut join).await {
                    Ok(result) => task_exit(result),
                    Err(_) => {
                        join.abort();
                        Exit::Aborted
                    }
                },
            };
            exited.cancel();
            exit
        }
    });
    Supervised {
        name: name.to_string(),
        address,
        pid: None,
        log: log_dir.join(format!("{name}.log")),
        started: std::time::Instant::now(),
        stop,
        exited,
        task: Some(task),
    }
}

fn task_exit(
    result: std::result::Result<std::result::Result<(), String>, tokio::task::JoinError>,
) -> Exit {
    match result {
        Ok(returned) => Exit::Task(returned),
        Err(panic) => Exit::Task(Err(format!("panicked: {panic}"))),
    }
}

/// SIGTERM, then SIGKILL to the whole process group after [`STOP_GRACE`]; returns the exit status.
async fn terminate(child: &mut tokio::process::Child, pid: u32) -> Option<ExitStatus> {
    let pid = Pid::from_raw(pid as i32);
    let _ = kill(pid, Signal::SIGTERM);
    match tokio::time::timeout(STOP_GRACE, child.wait()).await {
        Ok(status) => {
            // Anything the component left in its group (it should have none) goes too.
            let _ = killpg(pid, Signal::SIGKILL);
            status.ok()
        }
        Err(_) => {
            eprintln!("   process {pid} did not stop within {STOP_GRACE:?}; killing it");
            let _ = killpg(pid, Signal::SIGKILL);
            child.wait().await.ok()
        }
    }
}

impl Supervised {
    /// True while the process runs.
    pub fn is_running(&self) -> bool {
        !self.exited.is_cancelled()
    }

    /// Completes when the process has exited.
    pub async fn exited(&self) {
        self.exited.cancelled().await
    }

    /// Stops the component (SIGTERM then SIGKILL; or its token, then abort) and waits until it
    /// has ended; `None` if it had been stopped already.
    pub async fn stop(&mut self) -> Option<Exit> {
        self.stop.cancel();
        Some(self.task.take()?.await.unwrap_or(Exit::Process(None)))
    }

    /// Sends `signal` to the process; for SIGKILL, waits until it has been reaped.
    pub async fn signal(&mut self, signal: Signal) -> Result<()> {
        let pid = self
            .pid
            .filter(|_| self.is_running())
            .ok_or_else(|| Error::Component {
                name: self.name.clone(),
                message: "not a running process (in-process components take no signals)".into(),
            })?;
        kill(Pid::from_raw(pid as i32), signal)
            .map_err(|e| Error::io(format!("signalling {}", self.name), e.into()))?;
        if signal == Signal::SIGKILL {
            // Killed on purpose: it has ended, nothing to report when the cluster stops.
            if let Some(task) = self.task.take() {
                let _ = task.await;
            }
        }
        Ok(())
    }

    /// Kills the component at once, without waiting (for `Drop`, where nothing can be awaited).
    pub fn kill_now(&self) {
        match self.pid {
            Some(pid) => {
                let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
            }
            None => self.stop.cancel(),
        }
    }

    /// The last `lines` lines of its log, to explain a failure.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// Makes this process a child subreaper: orphaned descendants are re-parented to it, not to init.
pub fn become_subreaper() -> Result<()> {
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| Error::io("prctl(PR_SET_CHILD_SUBREAPER)", e.into()))
}

/// Kills and reaps the processes of this cluster that were re-parented to us (shims and
/// containers that outlived their kubelet), until none is left or `bound` has passed. Returns how
/// many were killed.
///
/// A process counts as the cluster's when its command line or working directory mentions
/// `data_dir`, or it runs the `minik` binary itself (`minik shim`, `minik image web`). Other
/// children of this process (a program embedding `start_cluster` may have its own) are left alone,
/// and only the pids killed here are waited for, so no exit status is stolen from tokio.
pub async fn reap_orphans(bound: Duration, data_dir: &Path) -> usize {
    let me = std::process::id();
    let exe = std::env::current_exe().ok();
    let deadline = tokio::time::Instant::now() + bound;
    // Killed but not yet reaped, and how many were killed in all.
    let mut killed: Vec<u32> = Vec::new();
    let mut total = 0;
    loop {
        let orphans: Vec<u32> = children_of(me)
            .into_iter()
            .filter(|pid| belongs_to_cluster(*pid, data_dir, exe.as_deref()))
            .collect();
        for pid in &orphans {
            let target = Pid::from_raw(*pid as i32);
            let _ = killpg(target, Signal::SIGKILL);
            let _ = kill(target, Signal::SIGKILL);
            if !killed.contains(pid) {
                killed.push(*pid);
                total += 1;
            }
        }
        killed.retain(|pid| !reap(*pid));
        if orphans.is_empty() && killed.is_empty() {
            return total;
        }
        if tokio::time::Instant::now() >= deadline {
            eprintln!(
                "   {} process(es) could not be reaped: {:?}",
                orphans.len(),
                orphans
            );
            return total;
        }
        // Orphans of the processes just killed are re-parented to us asynchronously by the kernel.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reaps `pid` if it has exited; true once it is gone.
fn reap(pid: u32) -> bool {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    match waitpid(Pid::from_raw(pid as i32), Some(WaitPidFlag::WNOHANG)) {
        Ok(WaitStatus::StillAlive) => false,
        Ok(_) | Err(_) => true,
    }
}

/// True if the process mentions `data_dir` (command line, working directory) or runs `exe`.
fn belongs_to_cluster(pid: u32, data_dir: &Path, exe: Option<&Path>) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    let dir = data_dir.to_string_lossy();
    let argv0 = cmdline.split(' ').next().unwrap_or("");
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap_or_default();
    cmdline.contains(dir.as_ref())
        || cwd.starts_with(data_dir)
        || exe.is_some_and(|exe| Path::new(argv0) == exe)
}

/// The pids of the live (non-zombie) processes whose parent is `parent`, read from `/proc`.
pub fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // Fields after the last ')' are: state, ppid, … (the command name may contain spaces).
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next().unwrap_or("");
            let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
            ppid == Some(parent) && state != "Z"
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// A clean exit or return is no error; a failure, a kill or an abort is.
    #[test]
    fn exit_errors() {
        assert_eq!(Exit::Process(Some(ExitStatus::from_raw(0))).error(), None);
        assert_eq!(Exit::Process(None).error(), None);
        assert_eq!(Exit::Task(Ok(())).error(), None);
        let killed = Exit::Process(Some(ExitStatus::from_raw(9))).error();
        assert!(killed.is_some_and(|e| e.contains("SIGKILL")));
        assert_eq!(
            Exit::Task(Err("boom".into())).error().as_deref(),
            Some("failed: boom")
        );
        assert!(Exit::Aborted.error().is_some());
    }
}
