//! One component of a test cluster, run either as a tokio task in this process or as a
//! `minik <component>` child process, from the same command-line flags.
//!
//! Kubernetes counterpart: `test/integration/framework` starts control-plane pieces in-process,
//! while e2e tests run real binaries; minik's harness does both from one description. The flags
//! are the agreed ones (`minik kubelet --server … --node-name …`): in-process they are parsed with
//! the component's own clap `Args` and turned into its `Config` by `into_config()`, so both modes
//! exercise the same configuration path.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use clap::Parser;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};

/// How long a component gets to stop after its token is cancelled (or after SIGTERM).
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Parses a component's flags with its own clap `Args`, wrapped so both `Args` and `Parser`
/// derives work.
#[derive(Parser)]
struct Flags<A: clap::Args> {
    #[command(flatten)]
    inner: A,
}

fn parse<A: clap::Args>(name: &str, args: &[String]) -> Result<A> {
    // args[0] is the subcommand (`kubelet`); clap wants a program name in its place.
    Flags::<A>::try_parse_from(args)
        .map(|flags| flags.inner)
        .map_err(|err| Error::Component {
            name: name.into(),
            message: format!("bad flags: {err}"),
        })
}

/// A component's flags, name and how it currently runs.
pub(crate) struct Component {
    /// `apiserver`, `scheduler`, `kubelet-node-1`, `endpoint-controller`, `proxy`.
    pub name: String,
    /// The `minik` subcommand and its flags, e.g. `["scheduler", "--server", URL]`.
    pub args: Vec<String>,
    /// Where a process-mode component writes stdout and stderr.
    pub log: PathBuf,
    running: Option<Running>,
}

enum Running {
    Task {
        token: CancellationToken,
        join: JoinHandle<std::result::Result<(), String>>,
    },
    Process(tokio::process::Child),
}

impl Component {
    pub fn new(name: &str, args: Vec<String>, log_dir: &Path) -> Self {
        Component {
            name: name.into(),
            args,
            log: log_dir.join(format!("{name}.log")),
            running: None,
        }
    }

    /// Starts the component as a child process of `minik`.
    pub fn start_process(&mut self, minik: &Path) -> Result<()> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = tokio::process::Command::new(minik)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .env("NO_COLOR", "1")
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        self.running = Some(Running::Process(child));
        Ok(())
    }

    /// Starts the component as a task of this process under a child of `parent`.
    pub fn start_task(
        &mut self,
        parent: &CancellationToken,
        apiserver: Option<tokio::net::TcpListener>,
    ) -> Result<()> {
        let token = parent.child_token();
        let shutdown = token.clone();
        let name = self.name.clone();
        let args = &self.args;
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let join = match args.first().map(String::as_str) {
            Some("apiserver") => {
                let config = parse::<minik_apiserver::Args>(&name, args)?.into_config();
                let listener = apiserver.ok_or_else(|| Error::Component {
                    name: name.clone(),
                    message: "no listener".into(),
                })?;
                let backend = minik_apiserver::StorageBackend::sled(
                    &config.data_dir.join("sled"),
                    config.event_window,
                )
                .map_err(|e| Error::Component {
                    name: name.clone(),
                    message: e.to_string(),
                })?;
                let options = minik_apiserver::ServeOptions {
                    bookmark_interval: config.bookmark_interval,
                    ..Default::default()
                };
                tokio::spawn(async move {
                    minik_apiserver::serve_with(listener, backend, options, shutdown)
                        .await
                        .map_err(|e| err(&e))
                })
            }
            Some("scheduler") => {
                let config = parse::<minik_scheduler::Args>(&name, args)?.into_config();
                tokio::spawn(async move {
                    minik_scheduler::run(config, shutdown)
                        .await
                        .map_err(|e| err(&e))
                })
            }
            Some("kubelet") => {
                let config = parse::<minik_kubelet::Args>(&name, args)?.into_config();
                tokio::spawn(async move {
                    minik_kubelet::run(config, shutdown)
                        .await
                        .map_err(|e| err(&e))
                })
            }
            Some("endpoint-controller") => {
                let config = parse::<minik_endpoint_controller::Args>(&name, args)?.into_config();
                tokio::spawn(async move {
                    minik_endpoint_controller::run(config, shutdown)
                        .await
                        .map_err(|e| err(&e))
                })
            }
            Some("proxy") => {
                let config = parse::<minik_proxy::Args>(&name, args)?.into_config();
                tokio::spawn(async move {
                    minik_proxy::run(config, shutdown)
                        .await
                        .map_err(|e| err(&e))
                })
            }
            other => {
                return Err(Error::Component {
                    name,
                    message: format!("unknown component {other:?}"),
                })
            }
        };
        self.running = Some(Running::Task { token, join });
        Ok(())
    }

    /// The process id (process mode, while running).
    pub fn pid(&self) -> Option<u32> {
        match &self.running {
            Some(Running::Process(child)) => child.id(),
            _ => None,
        }
    }

    /// False once the task or process has ended.
    pub fn is_running(&mut self) -> bool {
        match &mut self.running {
            None => false,
            Some(Running::Task { join, .. }) => !join.is_finished(),
            Some(Running::Process(child)) => matches!(child.try_wait(), Ok(None)),
        }
    }

    /// Sends `signal` to the process and, for SIGKILL, waits until it has been reaped.
    /// In-process components cannot be signalled: they are stopped through their token instead.
    pub async fn signal(&mut self, signal: Signal) -> Result<()> {
        let Some(Running::Process(child)) = &mut self.running else {
            return Err(Error::Component {
                name: self.name.clone(),
                message: "not a running process (use .processes(true))".into(),
            });
        };
        let pid = child.id().ok_or_else(|| Error::Component {
            name: self.name.clone(),
            message: "already exited".into(),
        })?;
        kill(Pid::from_raw(pid as i32), signal).map_err(std::io::Error::from)?;
        if signal == Signal::SIGKILL {
            child.wait().await?;
            self.running = None;
        }
        Ok(())
    }

    /// Stops the component gracefully (token or SIGTERM), forcefully after [`STOP_GRACE`].
    /// Returns the error the component ended with, if any.
    pub async fn stop(&mut self) -> Option<String> {
        match self.running.take()? {
            Running::Task { token, mut join } => {
                token.cancel();
                match tokio::time::timeout(STOP_GRACE, &mut join).await {
                    Ok(Ok(Ok(()))) => None,
                    Ok(Ok(Err(message))) => Some(message),
                    Ok(Err(panic)) => Some(format!("panicked: {panic}")),
                    Err(_) => {
                        join.abort();
                        Some(format!(
                            "did not stop within {STOP_GRACE:?} of its token being cancelled"
                        ))
                    }
                }
            }
            Running::Process(mut child) => {
                let pid = Pid::from_raw(child.id()? as i32);
                let _ = kill(pid, Signal::SIGTERM);
                let outcome = match tokio::time::timeout(STOP_GRACE, child.wait()).await {
                    Ok(Ok(status)) if status.success() => None,
                    Ok(Ok(status)) => Some(format!("exited with {status}")),
                    Ok(Err(e)) => Some(e.to_string()),
                    Err(_) => Some(format!("did not stop within {STOP_GRACE:?} of SIGTERM")),
                };
                let _ = killpg(pid, Signal::SIGKILL);
                let _ = child.wait().await;
                outcome
            }
        }
    }

    /// Kills a process-mode component at once (used from `Drop`, where nothing can be awaited).
    pub fn kill_now(&mut self) {
        match self.running.take() {
            Some(Running::Process(mut child)) => {
                if let Some(pid) = child.id() {
                    let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
                }
                let _ = child.start_kill();
            }
            Some(Running::Task { token, join }) => {
                token.cancel();
                join.abort();
            }
            None => {}
        }
    }

    /// The component's log (process mode).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}
