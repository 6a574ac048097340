//! Measurement 7, one-process row: the idle memory of `minik up --one-process`.
//!
//! Kubernetes counterpart: k3s' resource profiling (docs.k3s.io/reference/resource-profiling),
//! which measures `k3s server`: the whole control plane and the kubelet in one process. The
//! processes-mode row (`footprint.rs`) sums ten processes of the one `minik` binary, each with
//! its own copy of the binary's relocated data and its own share of its code; this row runs the
//! same components as tasks of one process (`cluster/src/one_process.rs`).
//!
//! The bench starts `minik up --one-process` as a child: a one-node cluster in a temp dir, on a
//! free loopback port, with the bench cluster's TLS setting and proxy sync delay and a pod range
//! of its own (127.245.0.0/16, so its pods never share the bench cluster's addresses). Once the
//! state file `minik up` writes when every node is Ready appears, it gets the settle time and the
//! window of the processes mode; then the VmRSS, PSS and RssAnon of the `minik up` process (and
//! of its children, none while idle) are read, and it is stopped with SIGTERM, as `minik down`
//! stops it.
//!
//! The judged figure is VmRSS, not PSS: the bench's own cluster runs beside it from the same
//! binary, and PSS would split the code pages with those ten processes (27.6 MB PSS against
//! 57.6 MB VmRSS in one run). Alone, a one-process cluster's PSS is its VmRSS less a few shared
//! library pages.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use super::footprint::{clock_ticks, cpu_ticks, rollup_kib, status_kib};
use super::report::Row;
use super::Bench;
use crate::error::Context;

/// How long `minik up --one-process` may take to get its node Ready (a debug build is slow).
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long it may take to stop after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// The row this measurement fills.
pub fn templates() -> Vec<Row> {
    vec![Row::new(
        "idle_memory_one_process",
        "7. idle footprint: memory (VmRSS) of `minik up --one-process`",
        "≤ 50 MB",
        "k3s server (one process) 1.6 GB",
    )]
}

/// Starts `minik up --one-process`, lets it settle, reads its memory and stops it.
pub async fn measure(ctx: &Bench) -> crate::Result<Vec<Row>> {
    let temp = tempfile::Builder::new()
        .prefix("minik-bench-one-")
        .tempdir()
        .context("creating a temp dir")?;
    let data = temp.path().join("data");
    let output = temp.path().join("up.out");
    let mut up = start(ctx, &data, &output)?;
    let outcome = settle_and_sample(ctx, &mut up, &data, &output).await;
    stop(&mut up).await;
    outcome.map(|row| vec![row])
}

/// `minik up --one-process` on a free port, its output in `output`.
fn start(ctx: &Bench, data: &Path, output: &Path) -> crate::Result<Child> {
    let binary = std::env::current_exe().context("finding the minik binary")?;
    let listen = crate::free_loopback_port()?.to_string();
    let log = std::fs::File::create(output).context("creating up's output file")?;
    let mut command = Command::new(binary);
    command.args(["up", "--one-process", "--nodes", "1", "--listen", &listen]);
    command.args(["--sync-delay", "0s", "--cluster-cidr", "127.245.0.0/16"]);
    command.arg("--data-dir").arg(data);
    if ctx.server.starts_with("http://") {
        command.arg("--insecure");
    }
    let child = command
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .context("starting minik up --one-process")?;
    Ok(child)
}

/// Waits for the cluster, then samples CPU over the window and memory at its end.
async fn settle_and_sample(
    ctx: &Bench,
    up: &mut Child,
    data: &Path,
    output: &Path,
) -> crate::Result<Row> {
    let started = Instant::now();
    wait_ready(up, data, output).await?;
    let ready_s = started.elapsed().as_secs_f64();
    let pid = up.id().context("minik up exited")?;
    tokio::time::sleep(ctx.size(Duration::from_millis(500), Duration::from_secs(2))).await;
    let window = ctx.size(Duration::from_secs(2), Duration::from_secs(10));
    let before = cpu_ticks(pid)?;
    tokio::time::sleep(window).await;
    let cpu_s = cpu_ticks(pid)?.saturating_sub(before) as f64 / clock_ticks()?;
    let mut pids = vec![pid];
    pids.extend(minik_cluster::supervisor::children_of(pid));
    let sum_mb = |read: &dyn Fn(u32) -> Option<u64>| {
        pids.iter().filter_map(|p| read(*p)).sum::<u64>() as f64 / 1024.0
    };
    let pss_mb = sum_mb(&|p| rollup_kib(p, "Pss:"));
    let rss_mb = sum_mb(&|p| status_kib(p, "VmRSS:"));
    let anon_mb = sum_mb(&|p| status_kib(p, "RssAnon:"));
    let percent = cpu_s / window.as_secs_f64() * 100.0;
    Ok(templates()
        .remove(0)
        .result(format!(
            "{rss_mb:.1} MB VmRSS (its PSS beside the bench's cluster {pss_mb:.1} MB), \
             anonymous {anon_mb:.1} MB ({} process(es); ready in {ready_s:.1}s; \
             {percent:.2} % of a core idle)",
            pids.len()
        ))
        .value("pss_mb", pss_mb)
        .value("total_mb", rss_mb)
        .value("anon_mb", anon_mb)
        .value("percent_of_a_core", percent)
        .met(rss_mb <= 50.0))
}

/// Waits until `minik up` has written its state file (every node Ready), failing if it exits.
async fn wait_ready(up: &mut Child, data: &Path, output: &Path) -> crate::Result<()> {
    let state = minik_cluster::state_file(data);
    let deadline = Instant::now() + START_TIMEOUT;
    // A file nobody notifies about: polled, as `minik status` would find it.
    while !state.exists() {
        if let Some(status) = up.try_wait()? {
            let said = std::fs::read_to_string(output).unwrap_or_default();
            crate::error::bail!("minik up --one-process exited ({status}): {}", said.trim());
        }
        crate::error::ensure!(
            Instant::now() < deadline,
            "minik up --one-process not ready within {START_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// SIGTERM (what `minik down` sends), then a kill if it does not stop in time.
async fn stop(up: &mut Child) {
    if let Some(pid) = up.id() {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
    }
    if tokio::time::timeout(STOP_TIMEOUT, up.wait()).await.is_err() {
        super::say("  minik up --one-process did not stop in time; killing it");
        let _ = up.kill().await;
    }
}
