//! `minik bench --compare`: minik and the programs users would pick instead, in the same run on the
//! same machine, as ratios (issue 22).
//!
//! Kubernetes counterpart: none; perf-tests compares runs with thresholds. Here every figure of the
//! issue's goals becomes one `compare_*` row, ≥ 1.0× meaning minik is at least as good:
//! - durable creates/s ÷ etcd's bare puts/s of the same objects ([`etcd`]);
//! - proxied requests/s ÷ HAProxy's, keep-alive and a new connection per request ([`haproxy`]);
//! - watch fan-out, scheduling throughput, idle RSS and 16-concurrent-applies p99 against the
//!   issue's goals (no program to run beside minik for those on one machine);
//! - a real kube-apiserver: Debian packages none, so that row says "not installed".
//!
//! minik's side of each ratio comes from the rows its sections already measured in this run; the
//! peers run after them, while the cluster is idle. A peer that is missing is a row saying so.

mod etcd;
mod haproxy;
pub mod ratio;

use std::path::PathBuf;

use minik_api::core::{Endpoints, Service};
use minik_client::{Api, DeleteParams};

use super::report::Row;
use super::{say, Bench};
use ratio::{Better, Comparison, Peer};

/// Every id this section adds, in order.
pub const IDS: &[&str] = &[
    "compare_creates_vs_etcd",
    "compare_creates_vs_kube_apiserver",
    "compare_proxy_keep_alive",
    "compare_proxy_per_request",
    "compare_watch_fanout",
    "compare_scheduling",
    "compare_idle_rss",
    "compare_apply_p99",
];

/// Runs the peers and returns one ratio row per goal.
pub async fn measure(ctx: &Bench, measured: &[Row]) -> Vec<Row> {
    let puts = ctx.size(1_000, 10_000);
    say("comparing: etcd bare puts");
    let etcd = etcd::puts_per_second(etcd::Load { puts, clients: 64 }).await;
    say("comparing: minik's proxy and HAProxy under wrk");
    let load = haproxy::Load {
        seconds: ctx.size(1, 5),
        rounds: ctx.size(1, 2),
        connections: 64,
    };
    let proxy = match haproxy::measure(ctx, load).await {
        Ok(figures) => figures,
        Err(err) => haproxy::ProxyFigures {
            minik_keep_alive: Err(err.to_string()),
            haproxy_keep_alive: Peer::Failed(err.to_string()),
            minik_per_request: Err(err.to_string()),
            haproxy_per_request: Peer::Failed(err.to_string()),
        },
    };
    let creates = figure(measured, "api_create_throughput", "per_second");
    let mut comparisons = vec![
        compare(
            IDS[0],
            "durable creates/s vs etcd 3.4 bare puts/s, 64 clients",
            "etcd puts",
            "/s",
            creates.clone(),
            etcd,
        ),
        compare(
            IDS[1],
            "durable creates/s vs a real kube-apiserver",
            "kube-apiserver",
            "/s",
            creates,
            kube_apiserver(),
        ),
        compare(
            IDS[2],
            "proxy req/s vs HAProxy (tcp mode), keep-alive, wrk 64 connections",
            "HAProxy",
            " req/s",
            proxy.minik_keep_alive,
            proxy.haproxy_keep_alive,
        ),
        compare(
            IDS[3],
            "proxy req/s vs HAProxy (tcp mode), new connection per request",
            "HAProxy",
            " req/s",
            proxy.minik_per_request,
            proxy.haproxy_per_request,
        ),
    ];
    comparisons.extend(against_goals(measured));
    comparisons
        .iter()
        .map(|c| with_processes_figure(c.row(), measured))
        .collect()
}

/// The goals that have no peer program to run on one machine.
fn against_goals(measured: &[Row]) -> Vec<Comparison> {
    let goal = |id, measurement, unit, better, minik, value| Comparison {
        id,
        measurement,
        peer_name: "goal",
        unit,
        better,
        minik,
        peer: Peer::Measured(value),
    };
    vec![
        goal(
            IDS[4],
            fanout_measurement(measured),
            "/s",
            Better::Higher,
            figure(measured, "watch_fanout", "capacity_events_per_s"),
            200_000.0,
        ),
        goal(
            IDS[5],
            "scheduling pods/s on hollow nodes vs the goal",
            " pods/s",
            Better::Higher,
            figure(measured, "scheduling_throughput", "pods_per_s"),
            5_000.0,
        ),
        idle_memory(measured),
        goal(
            IDS[7],
            "16 concurrent applies → Running, p99, vs the goal",
            " ms",
            Better::Lower,
            figure(measured, "pod_startup_concurrent", "p99_ms"),
            50.0,
        ),
    ]
}

/// The goal is for 1,000 watchers; a `--quick` run opens 100 and says so.
fn fanout_measurement(measured: &[Row]) -> &'static str {
    match figure(measured, "watch_fanout", "watchers") {
        Ok(watchers) if watchers < 1_000.0 => {
            "watch fan-out events/s (100 watchers, --quick: not the goal's 1,000) vs the goal"
        }
        _ => "watch fan-out events/s (1,000 watchers) vs the goal",
    }
}

/// The idle-memory goal, judged on `minik up --one-process` (one process, as `k3s server` runs),
/// and on the default processes mode when that row is missing; the row says which.
fn idle_memory(measured: &[Row]) -> Comparison {
    // VmRSS for the one process: its PSS is split with the bench's own cluster (one_process.rs).
    let one_process = figure(measured, "idle_memory_one_process", "total_mb");
    let (measurement, minik) = match one_process {
        Ok(rss) => (
            "idle memory (VmRSS) of a one-node cluster, `minik up --one-process`, vs the goal",
            Ok(rss),
        ),
        // PSS, not the VmRSS sum: ten processes of one binary share its code pages, which a
        // VmRSS sum counts ten times; the PSS sum counts every page once (footprint.rs).
        Err(_) => (
            "idle memory (PSS) of a one-node cluster, processes mode (`minik up`), vs the goal",
            figure(measured, "idle_memory", "pss_mb"),
        ),
    };
    Comparison {
        id: IDS[6],
        measurement,
        peer_name: "goal",
        unit: " MB",
        better: Better::Lower,
        minik,
        peer: Peer::Measured(50.0),
    }
}

/// The idle-memory ratio row with the default (processes) mode's figure beside the judged one.
fn with_processes_figure(row: Row, measured: &[Row]) -> Row {
    let judged_on_processes = row.measurement.contains("processes mode");
    match figure(measured, "idle_memory", "pss_mb") {
        Ok(pss) if row.id == IDS[6] && !judged_on_processes => {
            let result = format!("{}; default processes mode {pss:.1} MB", row.result);
            row.result(result).value("processes_pss_mb", pss)
        }
        _ => row,
    }
}

fn compare(
    id: &'static str,
    measurement: &'static str,
    peer_name: &'static str,
    unit: &'static str,
    minik: Result<f64, String>,
    peer: Peer,
) -> Comparison {
    Comparison {
        id,
        measurement,
        peer_name,
        unit,
        better: Better::Higher,
        minik,
        peer,
    }
}

/// A real kube-apiserver is not in Debian's packages; if one is on the PATH, this bench still
/// does not start it (it would need its own etcd, certificates and flags).
fn kube_apiserver() -> Peer {
    match which("kube-apiserver") {
        None => Peer::NotInstalled("kube-apiserver (not packaged by Debian)".into()),
        Some(path) => Peer::Failed(format!(
            "{} found, but the bench does not drive it",
            path.display()
        )),
    }
}

/// minik's figure `key` of row `id` in this run, or why there is none.
pub fn figure(rows: &[Row], id: &str, key: &str) -> Result<f64, String> {
    let row = rows
        .iter()
        .find(|r| r.id == id)
        .ok_or_else(|| format!("{id} not run"))?;
    if row.result.starts_with("error") {
        return Err(format!("{id} failed"));
    }
    row.values
        .get(key)
        .and_then(|v| v.as_f64())
        .ok_or_else(|| format!("{id} has no {key}"))
}

/// The program `name` on the PATH, like `which`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Deletes a Service and its Endpoints; best effort.
async fn delete_service(ctx: &Bench, name: &str) {
    let _ = Api::<Service>::namespaced(ctx.client.clone(), "default")
        .delete(name, &DeleteParams::default())
        .await;
    let _ = Api::<Endpoints>::namespaced(ctx.client.clone(), "default")
        .delete(name, &DeleteParams::default())
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// minik's side comes from this run's rows; a section not run or failed says so.
    #[test]
    fn figures_come_from_the_runs_rows() {
        let rows = vec![
            Row::new("api_create_throughput", "", "", "").value("per_second", 4807.0),
            Row::new("watch_fanout", "", "", "").result("error: boom"),
        ];
        assert_eq!(
            figure(&rows, "api_create_throughput", "per_second"),
            Ok(4807.0)
        );
        assert_eq!(
            figure(&rows, "watch_fanout", "capacity_events_per_s"),
            Err("watch_fanout failed".into())
        );
        assert_eq!(
            figure(&rows, "idle_memory", "total_mb"),
            Err("idle_memory not run".into())
        );
    }

    /// The fan-out goal row names the watcher count the run used, and a quick run's 100 as such.
    #[test]
    fn the_fanout_goal_row_says_how_many_watchers() {
        let row = |watchers| vec![Row::new("watch_fanout", "", "", "").value("watchers", watchers)];
        assert!(fanout_measurement(&row(1_000.0)).contains("(1,000 watchers)"));
        assert!(fanout_measurement(&row(100.0)).contains("--quick"));
    }

    /// Goal rows exist for every goal, and 67.9 MB idle (PSS) against 50 MB is 0.74×.
    #[test]
    fn goals_are_ratios_too() {
        let rows = vec![Row::new("idle_memory", "", "", "")
            .value("total_mb", 242.0)
            .value("pss_mb", 67.9)];
        let goals = against_goals(&rows);
        let ids: Vec<_> = goals.iter().map(|c| c.id).collect();
        assert_eq!(ids, &IDS[4..]);
        let rss = goals[2].row();
        assert!(rss.result.starts_with("0.74×"), "{}", rss.result);
        assert_eq!(rss.met, Some(false));
        assert!(
            rss.measurement.contains("processes mode"),
            "{}",
            rss.measurement
        );
        assert_eq!(goals[1].row().met, None);
    }

    /// With the one-process row, the goal is judged on it and the processes figure stays shown.
    #[test]
    fn idle_memory_is_judged_on_one_process_with_the_processes_figure_beside() {
        let rows = vec![
            Row::new("idle_memory", "", "", "").value("pss_mb", 83.0),
            Row::new("idle_memory_one_process", "", "", "").value("total_mb", 40.0),
        ];
        let row = with_processes_figure(idle_memory(&rows).row(), &rows);
        assert!(
            row.measurement.contains("--one-process"),
            "{}",
            row.measurement
        );
        assert_eq!(
            row.result,
            "1.25× (minik 40.0 MB, goal 50.0 MB); default processes mode 83.0 MB"
        );
        assert_eq!(row.met, Some(true));
    }

    /// `which` finds a program every Linux has, and nothing for a made-up name.
    #[test]
    fn which_searches_the_path() {
        assert!(which("sh").is_some());
        assert!(which("no-such-program-minik").is_none());
    }
}
