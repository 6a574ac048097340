//! Measurement 2: scheduling throughput, N pods onto M hollow nodes with durable binds.
//!
//! Kubernetes counterpart: scheduler_perf's `SchedulingBasic` (`test/integration/scheduler_perf`,
//! 5 000 nodes / 10 000 pods, CI floor 270 pods/s) run against kwok-style nodes. Here the nodes are
//! [`crate::hollow`]: 1 000 Ready nodes (50 with `--quick`) registered by one task of the
//! bench, which also reports each bound pod Running without starting anything. The pods select
//! those nodes with a `nodeSelector`, so the real node of the bench cluster is left alone.
//!
//! The clock runs from the first create to the moment the last pod is seen bound on a watch: it
//! covers the creates (64 concurrent clients), the scheduler's watch, its decisions and every
//! binding, each a durable write. The time until the hollow nodes have reported all of them
//! Running is given beside it.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::error::Context;
use crate::hollow::{HollowConfig, HollowNodes, HOLLOW_LABEL};
use futures::{StreamExt, TryStreamExt};
use minik_api::core::Pod;
use minik_client::{Api, DeleteParams, Event, ListParams};
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::pods::is_running;
use super::report::{ms, rate, Row};
use super::Bench;

/// The rows this measurement fills.
pub fn templates() -> Vec<Row> {
    vec![Row::new(
        "scheduling_throughput",
        "2. scheduling throughput onto hollow nodes (durable binds)",
        "≥ 5,000 pods/s",
        "kube-scheduler CI floor 270 pods/s @ 5 k nodes; 792–909 @ 500 nodes; Nomad C1M 3 750/s",
    )]
}

/// The pod scheduled first, untimed: once it is bound the scheduler has seen the hollow nodes.
const WARM_UP: &str = "bench-sched-warmup";

/// Progress seen on the pod watch (`running` leaves the warm-up pod out).
#[derive(Clone, Debug, Default)]
struct Progress {
    bound: usize,
    running: usize,
    last_bound: Option<Instant>,
    last_running: Option<Instant>,
}

/// Registers the hollow nodes, schedules the pods, cleans up.
pub async fn measure(ctx: &Bench) -> crate::Result<Vec<Row>> {
    let node_count = ctx.scale.nodes.unwrap_or(ctx.size(50, 1_000));
    let pod_count = ctx.scale.pods.unwrap_or(ctx.size(500, 10_000));
    let config = HollowConfig {
        server: ctx.server.clone(),
        kubeconfig: ctx.kubeconfig.clone(),
        count: node_count,
        concurrency: 64,
        ..HollowConfig::default()
    };
    let registered = Instant::now();
    let hollow = HollowNodes::register(config)
        .await
        .context("registering hollow nodes")?;
    let registration = registered.elapsed();
    let shutdown = ctx.shutdown.child_token();
    // Cut short by its time bound, the section still stops the hollow nodes and the watch.
    let _stop_on_drop = shutdown.clone().drop_guard();
    let hollow_task = tokio::spawn(hollow.run(shutdown.child_token()));
    let result = schedule(ctx, &shutdown, node_count, pod_count, registration).await;
    if !ctx.scale.keep_pods {
        cleanup(ctx).await;
    }
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(60), hollow_task).await;
    result
}

async fn schedule(
    ctx: &Bench,
    shutdown: &CancellationToken,
    node_count: usize,
    pod_count: usize,
    registration: Duration,
) -> crate::Result<Vec<Row>> {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), "default");
    let mut progress = watch_progress(ctx, shutdown.child_token()).await?;

    // One warm-up pod: once it is bound, the scheduler has seen the hollow nodes.
    api.create(&hollow_pod(WARM_UP)).await?;
    wait_bound(&mut progress, 1, Duration::from_secs(20)).await?;
    // The warm-up pod may be gone already (a hollow node's final delete, the pod GC): fine.
    match api.delete(WARM_UP, &DeleteParams::grace(0)).await {
        Err(err) if !err.is_not_found() => return Err(err.into()),
        _ => {}
    }
    let already = progress.borrow().bound;

    let processes = super::footprint::with_bench(&ctx.components);
    let cpu_before = super::footprint::cpu_seconds(&processes);
    let started = Instant::now();
    futures::stream::iter(0..pod_count)
        .map(|i| {
            let api = api.clone();
            async move { api.create(&hollow_pod(&format!("bench-sched-{i}"))).await }
        })
        .buffer_unordered(64)
        .try_collect::<Vec<_>>()
        .await
        .context("creating pods")?;
    let created = started.elapsed();
    let limit = ctx
        .size(Duration::from_secs(15), Duration::from_secs(180))
        .max(Duration::from_millis(pod_count as u64 * 10));
    let done = wait_bound(&mut progress, already + pod_count, limit).await?;
    let bound = done
        .last_bound
        .map(|t| t.duration_since(started))
        .unwrap_or_default();
    let cpu_after = super::footprint::cpu_seconds(&processes);
    let busy: Vec<String> = processes
        .iter()
        .zip(cpu_after.iter().zip(&cpu_before))
        .map(|((name, _), (after, before))| {
            (
                name,
                (after - before) / bound.as_secs_f64().max(1e-3) * 100.0,
            )
        })
        .filter(|(_, percent)| *percent >= 1.0)
        .map(|(name, percent)| format!("{name} {percent:.0} %"))
        .collect();
    let per_pod =
        super::footprint::cpu_per_unit(&processes, &cpu_before, &cpu_after, pod_count as f64);
    let cpu_values: Vec<(String, f64)> = processes
        .iter()
        .zip(cpu_after.iter().zip(&cpu_before))
        .map(|((name, _), (a, b))| {
            (
                format!("cpu_us_per_pod_{name}"),
                (a - b) * 1e6 / pod_count as f64,
            )
        })
        .collect();
    let per_second = pod_count as f64 / bound.as_secs_f64();
    let running_limit = ctx.size(Duration::from_secs(4), Duration::from_secs(60));
    let all_running =
        tokio::time::timeout(running_limit, progress.wait_for(|p| p.running >= pod_count))
            .await
            .ok()
            .and_then(|found| found.ok().and_then(|p| p.last_running));
    let running = match all_running {
        Some(t) => ms(t.duration_since(started).as_secs_f64() * 1e3),
        None => {
            let p = progress.borrow();
            format!(
                "– only {} of {pod_count} Running after {running_limit:?}",
                p.running
            )
        }
    };
    let mut row = templates()
        .remove(0)
        .result(format!(
            "{} ({pod_count} pods on {node_count} nodes: all bound in {}, created in {}, all Running in {running}; nodes registered in {}; CPU while binding: {} of a core, per pod {per_pod})",
            rate(per_second).replace("/s", " pods/s"),
            ms(bound.as_secs_f64() * 1e3),
            ms(created.as_secs_f64() * 1e3),
            ms(registration.as_secs_f64() * 1e3),
            busy.join(", "),
        ))
        .value("pods_per_s", per_second)
        .value("create_pods_per_s", pod_count as f64 / created.as_secs_f64())
        .value("pods", pod_count as f64)
        .value("nodes", node_count as f64)
        .value("registration_ms", registration.as_secs_f64() * 1e3)
        .met(per_second >= 5_000.0);
    for (key, us) in cpu_values {
        row = row.value(&key, us);
    }
    Ok(vec![row])
}

async fn wait_bound(
    progress: &mut watch::Receiver<Progress>,
    count: usize,
    limit: Duration,
) -> crate::Result<Progress> {
    let outcome = tokio::time::timeout(limit, progress.wait_for(|p| p.bound >= count))
        .await
        .map(|found| found.map(|p| p.clone()));
    match outcome {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(_)) => crate::error::bail!("pod watch ended"),
        Err(_) => crate::error::bail!(
            "only {} of {count} pods bound within {limit:?}",
            progress.borrow().bound
        ),
    }
}

/// Counts pods seen bound and Running on one watch of the bench's pods.
async fn watch_progress(
    ctx: &Bench,
    stop: CancellationToken,
) -> crate::Result<watch::Receiver<Progress>> {
    let (tx, rx) = watch::channel(Progress::default());
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), "default");
    tokio::spawn(async move {
        let mut ready = Some(ready_tx);
        let mut events = std::pin::pin!(minik_client::watcher(
            api,
            ListParams::default().labels("bench=sched")
        ));
        let (mut bound, mut running) = (HashSet::new(), HashSet::new());
        loop {
            let event = tokio::select! {
                _ = stop.cancelled() => break,
                event = events.next() => match event {
                    Some(event) => event,
                    None => break,
                },
            };
            let now = Instant::now();
            let pods = match event {
                Ok(Event::Applied(pod)) => vec![pod],
                Ok(Event::Restarted(pods)) => {
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(());
                    }
                    pods
                }
                _ => continue,
            };
            let before = (bound.len(), running.len());
            for pod in pods {
                let name = pod.metadata.name.clone().unwrap_or_default();
                if pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_ref())
                    .is_some()
                {
                    bound.insert(name.clone());
                }
                if is_running(&pod) && name != WARM_UP {
                    running.insert(name);
                }
            }
            if (bound.len(), running.len()) != before {
                tx.send_modify(|p| {
                    if bound.len() != p.bound {
                        p.last_bound = Some(now);
                    }
                    if running.len() != p.running {
                        p.last_running = Some(now);
                    }
                    p.bound = bound.len();
                    p.running = running.len();
                });
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), ready_rx)
        .await
        .context("pod watch did not start")??;
    Ok(rx)
}

/// Deletes the bench's pods (grace 0, 64 at a time); best effort.
async fn cleanup(ctx: &Bench) {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), "default");
    let Ok(list) = api.list(&ListParams::default().labels("bench=sched")).await else {
        return;
    };
    futures::stream::iter(list.items.into_iter().filter_map(|p| p.metadata.name))
        .for_each_concurrent(64, |name| {
            let api = api.clone();
            async move {
                let _ = api.delete(&name, &DeleteParams::grace(0)).await;
            }
        })
        .await;
}

/// A pod for the hollow nodes only, with upstream scheduler_perf's kind of requests.
fn hollow_pod(name: &str) -> Pod {
    let value = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"bench": "sched"}},
        "spec": {
            "nodeSelector": {HOLLOW_LABEL: "true"},
            "containers": [{
                "name": "pause", "image": "minik/sleep",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            }],
        },
    });
    // Invariant: the literal above is a valid Pod.
    serde_json::from_value(value).expect("a valid pod literal")
}
