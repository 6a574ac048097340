//! `minik bench --scale`: how create, schedule and watch costs grow with nodes and pods.
//!
//! Kubernetes counterpart: scheduler_perf's size sweeps (`SchedulingBasic` at 500 / 5 000 nodes)
//! and kubemark / ClusterLoader2's density test, which run the same load on ever larger hollow
//! clusters and plot where throughput bends. minik repeats measurement 2 (`scheduling.rs`: P pods
//! created by 64 clients onto N hollow nodes, every bind durable) over a grid, **one fresh cluster
//! per point** (a cold start costs a fraction of a second, and no point inherits the previous
//! one's database or watch cache), and adds the watch side: after the last bind, a full LIST of
//! the P pods, which is what every informer pays when it starts or has to relist.
//!
//! Two sweeps share the point (1 000 nodes, 5 000 pods): nodes 100 → 5 000 at 5 000 pods, and pods
//! 1 000 → 50 000 at 1 000 nodes (≈ 6 minutes in a release build on 2 cores; `--pods N` leaves
//! out the points above N pods). `--quick` runs
//! three tiny points, to keep the harness under test. Each row carries the load average at its
//! start: on a shared machine the points are only comparable with it.

use std::time::{Duration, Instant};

use minik_api::core::Pod;
use minik_client::{Api, ListParams};

use super::report::{load_average, ms, rate, Machine, Report, Row};
use super::{cluster_config, context, guarded, say, scale_chart, scheduling, startup};
use super::{BenchOptions, Scale};

/// One point of the grid: hollow nodes and pods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    /// Hollow nodes registered.
    pub nodes: usize,
    /// Pods created and scheduled onto them.
    pub pods: usize,
}

/// The pods of the node sweep, and the nodes of the pod sweep.
const FIXED_PODS: usize = 5_000;
const FIXED_NODES: usize = 1_000;

/// The grid, smallest work first (so a run cut short still has its small points).
pub fn grid(quick: bool) -> Vec<Point> {
    if quick {
        return sweeps(&[20, 50], 100, &[100, 300], 50);
    }
    sweeps(
        &[100, 500, 1_000, 2_000, 5_000],
        FIXED_PODS,
        &[1_000, 5_000, 10_000, 20_000, 50_000],
        FIXED_NODES,
    )
}

/// `node_sweep` at `fixed_pods`, then `pod_sweep` at `fixed_nodes`, sorted, shared points once.
fn sweeps(
    node_sweep: &[usize],
    fixed_pods: usize,
    pod_sweep: &[usize],
    fixed_nodes: usize,
) -> Vec<Point> {
    let mut points: Vec<Point> = node_sweep
        .iter()
        .map(|&nodes| Point {
            nodes,
            pods: fixed_pods,
        })
        .chain(pod_sweep.iter().map(|&pods| Point {
            nodes: fixed_nodes,
            pods,
        }))
        .collect();
    points.sort_by_key(|p| (p.pods, p.nodes));
    points.dedup();
    points
}

/// Runs every point of the grid and prints one row per point (and the chart, with `--svg`).
pub async fn study(args: &BenchOptions) -> crate::Result<()> {
    let temp = super::temp_dir(args)?;
    let root = args
        .data_dir
        .clone()
        .or_else(|| temp.as_ref().map(|t| t.path().to_path_buf()))
        .unwrap_or_default();
    std::fs::create_dir_all(&root)?;
    let machine = Machine::detect(&root);
    let mut rows = Vec::new();
    let cap = args.scale.pods.unwrap_or(usize::MAX);
    for point in grid(args.quick).into_iter().filter(|p| p.pods <= cap) {
        say(&format!(
            "scale: {} hollow nodes, {} pods (load average {})",
            point.nodes,
            point.pods,
            load_average()
        ));
        let dir = root.join(format!("n{}-p{}", point.nodes, point.pods));
        rows.push(measure_point(args, point, dir).await);
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, scale_chart::svg(&rows))?;
        say(&format!("scale: chart written to {}", path.display()));
    }
    let report = Report {
        machine,
        command: args.command.clone(),
        quick: args.quick,
        measurements: rows,
    };
    super::print_report(&report, args.format)?;
    drop(temp);
    Ok(())
}

/// One point: a fresh cluster, measurement 2 at this size, a relist of the pods, the cluster
/// stopped and its data removed. Never fails: an error becomes the row's result.
async fn measure_point(args: &BenchOptions, point: Point, dir: std::path::PathBuf) -> Row {
    let load = load_average();
    let row = template(point).value("load_average_1m", first_number(&load));
    let outcome = async {
        std::fs::create_dir_all(&dir)?;
        let mut point_args = args.clone();
        point_args.scale = Scale {
            nodes: Some(point.nodes),
            pods: Some(point.pods),
            study: true,
            keep_pods: true,
        };
        let (cluster, _start_rows) =
            startup::cold_start(cluster_config(&point_args, dir.clone())?).await?;
        let ctx = context(&cluster, &point_args)?;
        let limit = Duration::from_secs(if args.quick { 60 } else { 600 });
        let mut measured = guarded(scheduling::templates(), limit, scheduling::measure(&ctx)).await;
        let relist = relist(&ctx).await;
        ctx.shutdown.cancel();
        // The hollow nodes are gone, so nothing would finish the drain's deletes: do not wait.
        let hurry = tokio_util::sync::CancellationToken::new();
        hurry.cancel();
        cluster.stop_with(hurry).await;
        let _ = std::fs::remove_dir_all(&dir);
        Ok::<_, crate::Error>((measured.remove(0), relist?))
    }
    .await;
    match outcome {
        Ok((scheduled, relist)) => combine(row, &scheduled, relist, &load),
        Err(err) => row.failed(&err),
    }
}

/// The row of one point, before it is measured.
fn template(point: Point) -> Row {
    Row::new(
        "scale_point",
        &format!("{} hollow nodes, {} pods", point.nodes, point.pods),
        "–",
        "scheduler_perf SchedulingBasic: 270 pods/s CI floor @ 5 k nodes",
    )
    .value("nodes", point.nodes as f64)
    .value("pods", point.pods as f64)
}

/// A full LIST of the bench's pods (best of three): the cost of an informer's start or relist.
async fn relist(ctx: &super::Bench) -> crate::Result<(Duration, usize)> {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), "default");
    let mut best: Option<(Duration, usize)> = None;
    for _ in 0..3 {
        let started = Instant::now();
        let list = api
            .list(&ListParams::default().labels("bench=sched"))
            .await?;
        let took = started.elapsed();
        if best.is_none_or(|(b, _)| took < b) {
            best = Some((took, list.items.len()));
        }
    }
    best.ok_or_else(|| crate::error::message!("no LIST was taken"))
}

/// The point's row: measurement 2's numbers, the relist, the load average.
fn combine(row: Row, scheduled: &Row, (relist, listed): (Duration, usize), load: &str) -> Row {
    if scheduled.result.starts_with("error") {
        return row.result(scheduled.result.clone());
    }
    let get = |key: &str| scheduled.values.get(key).and_then(|v| v.as_f64());
    let us = |name: &str| get(&format!("cpu_us_per_pod_{name}")).unwrap_or(0.0);
    let relist_ms = relist.as_secs_f64() * 1e3;
    let text = format!(
        "bound {} (created {}); CPU per pod: apiserver {:.0} µs, scheduler {:.0} µs, controller-manager {:.0} µs, bench {:.0} µs; nodes registered in {}; LIST of {listed} pods {}; load average {load}",
        rate(get("pods_per_s").unwrap_or(0.0)).replace("/s", " pods/s"),
        rate(get("create_pods_per_s").unwrap_or(0.0)),
        us("apiserver"),
        us("scheduler"),
        us("controller-manager"),
        us("bench"),
        ms(get("registration_ms").unwrap_or(0.0)),
        ms(relist_ms),
    );
    let mut row = row.result(text).value("relist_ms", relist_ms);
    for (key, value) in &scheduled.values {
        if let Some(number) = value.as_f64() {
            row = row.value(key, number);
        }
    }
    row
}

/// `1.36` of `1.36 1.46 2.02` (0 when unreadable).
fn first_number(load: &str) -> f64 {
    load.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The full grid has both sweeps, shares their common point once, and runs small work first.
    #[test]
    fn the_grid_sweeps_nodes_and_pods_smallest_first() {
        let full = grid(false);
        assert_eq!(full.len(), 9);
        assert_eq!(
            full.first(),
            Some(&Point {
                nodes: 1_000,
                pods: 1_000
            })
        );
        assert_eq!(
            full.last(),
            Some(&Point {
                nodes: 1_000,
                pods: 50_000
            })
        );
        let shared = Point {
            nodes: 1_000,
            pods: 5_000,
        };
        assert_eq!(full.iter().filter(|p| **p == shared).count(), 1);
        assert!(full.iter().any(|p| p.nodes == 5_000));
        assert_eq!(grid(true).len(), 3);
    }

    /// The load average's first field is read as a number.
    #[test]
    fn the_one_minute_load_is_parsed() {
        assert_eq!(first_number("1.36 1.46 2.02"), 1.36);
        assert_eq!(first_number(""), 0.0);
    }
}
