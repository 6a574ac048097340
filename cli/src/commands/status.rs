//! `minik status`: one line per component of the cluster `minik up` runs, and a non-zero exit code
//! when any of them is down.
//!
//! Kubernetes counterpart: `minikube status` (whose exit code is a bitmask) and the old
//! `kubectl get componentstatuses`. minik reads the state file `minik up` writes
//! (`DATA/minik.state.json`: each component's name, pid, address, log, restarts and last exit),
//! checks each pid in
//! `/proc`, and asks the API server's `/readyz`.
//!
//! What minik simplifies: the exit code is 0 (all running) or 1 (anything down), not a bitmask.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use minik_cluster::{default_data_dir, state_file, ClusterState, ComponentState};

/// Flags of `minik status`.
#[derive(clap::Args, Debug, Clone)]
pub struct StatusArgs {
    /// The data directory given to `minik up` [default: $XDG_DATA_HOME/minik or ~/.local/share/minik].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// `json` prints the state as JSON instead of lines.
    #[arg(long, short = 'o')]
    pub output: Option<String>,
}

/// Prints the components; errors (exit code 1) if the cluster or one of them is down.
pub async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let data_dir = args.data_dir.unwrap_or_else(default_data_dir);
    let path = state_file(&data_dir);
    let state: ClusterState = match std::fs::read(&path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))?
        }
        Err(_) => anyhow::bail!("no cluster is running from {}", data_dir.display()),
    };
    let up_alive = is_running(state.pid);
    let ca = std::fs::read(data_dir.join("pki").join("ca.crt")).ok();
    let readyz = up_alive && apiserver_ready(&state.server, ca.as_deref()).await;
    let rows: Vec<Row> = std::iter::once(Row {
        name: "minik up".to_string(),
        running: up_alive,
        pid: state.pid,
        address: data_dir.display().to_string(),
        restarts: 0,
        last_exit: None,
    })
    .chain(
        state
            .components
            .iter()
            .map(|c| row(c, &state.server, readyz)),
    )
    .collect();
    if args.output.as_deref() == Some("json") {
        let json: Vec<_> = rows
            .iter()
            .map(|r| serde_json::json!({"name": r.name, "running": r.running, "pid": r.pid, "address": r.address, "restarts": r.restarts, "lastExit": r.last_exit}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        for r in &rows {
            let state = if r.running { "running" } else { "stopped" };
            let restarts = match &r.last_exit {
                Some(exit) => format!("  restarts {} (last exit: {exit})", r.restarts),
                None => String::new(),
            };
            println!(
                "{:<22} {state:<8} pid {:<8} {}{restarts}",
                r.name, r.pid, r.address
            );
        }
    }
    let down: Vec<&str> = rows
        .iter()
        .filter(|r| !r.running)
        .map(|r| r.name.as_str())
        .collect();
    anyhow::ensure!(down.is_empty(), "not running: {}", down.join(", "));
    Ok(())
}

/// One line of the status.
struct Row {
    name: String,
    running: bool,
    pid: u32,
    address: String,
    restarts: u32,
    last_exit: Option<String>,
}

/// One line: the apiserver counts as running only if its process lives *and* `/readyz` answers.
fn row(component: &ComponentState, server: &str, readyz: bool) -> Row {
    let alive = is_running(component.pid);
    let (running, address) = if component.name == "apiserver" {
        (
            alive && readyz,
            if readyz {
                server.to_string()
            } else {
                format!("{server} (not ready)")
            },
        )
    } else {
        (
            alive,
            component.address.clone().unwrap_or_else(|| "-".into()),
        )
    };
    Row {
        name: component.name.clone(),
        running,
        pid: component.pid,
        address,
        restarts: component.restarts,
        last_exit: component.last_exit.clone(),
    }
}

/// True if the pid exists and is not a zombie.
fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                != Some("Z")
        }
        Err(_) => false,
    }
}

/// True if `GET {server}/readyz` answers 200 within a second (an https server of a secure
/// cluster is trusted through its CA, `DATA/pki/ca.crt`; `/readyz` needs no credentials).
async fn apiserver_ready(server: &str, ca_pem: Option<&[u8]>) -> bool {
    let mut http = reqwest::Client::builder().timeout(Duration::from_secs(1));
    if let Some(ca) = ca_pem.and_then(|pem| reqwest::Certificate::from_pem(pem).ok()) {
        http = http.tls_certs_only([ca]);
    }
    let Ok(http) = http.build() else {
        return false;
    };
    matches!(http.get(format!("{server}/readyz")).send().await, Ok(r) if r.status().is_success())
}
