//! `minik down`: stop a cluster that `minik up` is running in another terminal.
//!
//! Kubernetes counterpart: `kind delete cluster` / `minikube stop`. minik's cluster lives in the
//! `minik up` process, so stopping it is sending that process SIGTERM (read from `DATA/minik.pid`),
//! exactly what Ctrl-C does in its terminal: it drains the pods, stops the components and reaps
//! everything. `down` then waits until the process is gone.
//!
//! What minik simplifies: `down` cannot `waitpid` a process it did not start, so it checks
//! `/proc/PID` at a short interval until it disappears.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use minik_cluster::{default_data_dir, is_minik_up, pid_file};

/// Flags of `minik down`.
#[derive(clap::Args, Debug, Clone)]
pub struct DownArgs {
    /// The data directory given to `minik up` [default: $XDG_DATA_HOME/minik or ~/.local/share/minik].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// How long to wait for the cluster to stop (the pods' grace periods included).
    #[arg(long, default_value = "120s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
}

/// Signals `minik up` and waits for it to exit.
pub async fn down(args: DownArgs) -> anyhow::Result<()> {
    let data_dir = args.data_dir.unwrap_or_else(default_data_dir);
    let path = pid_file(&data_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            anyhow::bail!(
                "no cluster is running from {} (no {})",
                data_dir.display(),
                path.display()
            )
        }
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    let pid: u32 = text
        .trim()
        .parse()
        .with_context(|| format!("{} does not hold a pid", path.display()))?;
    if !is_minik_up(pid) {
        let _ = std::fs::remove_file(&path);
        anyhow::bail!(
            "no cluster is running from {} (stale pid file removed)",
            data_dir.display()
        );
    }
    println!("Stopping cluster \"minik\" (pid {pid}) ...");
    let started = Instant::now();
    kill(Pid::from_raw(pid as i32), Signal::SIGTERM).context("signalling minik up")?;
    while is_minik_up(pid) {
        if started.elapsed() > args.timeout {
            anyhow::bail!(
                "minik up (pid {pid}) is still running after {:?}",
                args.timeout
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "Cluster \"minik\" stopped ({:.1}s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
