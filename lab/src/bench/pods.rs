//! Measurement 1: apply → Running, observed through a watch, one pod at a time and 16 at once.
//!
//! Kubernetes counterpart: the pod startup latency SLI (`sig-scalability/slos/pod_startup_latency.md`,
//! measured by ClusterLoader2's `PodStartupLatency`): from creation until the pod is Running *as
//! observed through a watch*, since that is when the next control loop can act. Upstream takes the
//! start from `creationTimestamp`, which has one-second precision; minik times from just before the
//! POST instead, so the figure includes the create request itself.
//!
//! Each pod runs a host program (`sleep 3600` via `command`): one process spawn under the shim, the
//! floor the issue names. Pods are created in batches of about 100 and deleted between batches
//! (untimed, followed by a pause for the kubelet to finish stopping them) so a single node never
//! exceeds its 110-pod allocatable and no measured pod competes with a teardown.
//!
//! Beside the latencies, each row gives the CPU time the components (apiserver, scheduler, kubelet,
//! endpoint-controller, proxy; not the containers) spent per pod: on a 2-core machine, N pods
//! started at once cannot all be Running before about N × that / 2.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::Context;
use futures::{StreamExt, TryStreamExt};
use minik_api::core::Pod;
use minik_client::{Api, Client, DeleteParams, Event, ListParams};
use serde_json::json;
use tokio::sync::oneshot;

use super::report::{Row, Stats};
use super::Bench;

/// The rows this measurement fills.
pub fn templates() -> Vec<Row> {
    let target = "p50 ≤ 10 ms, p99 ≤ 50 ms";
    let anchor =
        "k8s SLO p99 ≤ 5 s; typical p50 1.1 s / p99 2.1 s (k/k#42000); 2-core floor ≈ 2–3 ms";
    vec![
        Row::new(
            "pod_startup_sequential",
            "1. apply → Running (watch), one at a time",
            target,
            anchor,
        ),
        Row::new(
            "pod_startup_concurrent",
            "1. apply → Running (watch), 16 at once",
            target,
            anchor,
        ),
    ]
}

/// Runs both phases.
pub async fn measure(ctx: &Bench) -> crate::Result<Vec<Row>> {
    let total = ctx.size(20, 200);
    let watch = PodWatch::start(&ctx.client, "bench=startup").await?;
    let (sequential, seq_cpu) = run_phase(ctx, &watch, "bench-seq", total, 1)
        .await
        .context("one at a time")?;
    let (concurrent, par_cpu) = run_phase(ctx, &watch, "bench-par", total, 16)
        .await
        .context("16 at once")?;
    let mut rows = templates();
    let concurrent_row = row(
        rows.pop().unwrap_or_else(|| templates().remove(1)),
        &concurrent,
        par_cpu,
    );
    let sequential_row = row(
        rows.pop().unwrap_or_else(|| templates().remove(0)),
        &sequential,
        seq_cpu,
    );
    Ok(vec![sequential_row, concurrent_row])
}

fn row(template: Row, stats: &Stats, cpu: Vec<(String, f64)>) -> Row {
    let met = stats.p50_ms() <= 10.0 && stats.p99_ms() <= 50.0;
    let total: f64 = cpu.iter().map(|(_, ms)| ms).sum();
    let split: Vec<String> = cpu
        .iter()
        .map(|(name, ms)| format!("{name} {ms:.1}"))
        .collect();
    let mut row = template
        .result(format!(
            "{}; components' CPU {} per pod ({})",
            stats.summary(),
            super::report::ms(total),
            split.join(", ")
        ))
        .stats("", stats)
        .value("cpu_ms_per_pod", total);
    for (name, ms) in &cpu {
        row = row.value(&format!("cpu_ms_per_pod_{name}"), *ms);
    }
    row.met(met)
}

/// Creates `total` pods, `concurrency` in flight, in batches deleted between rounds; returns the
/// latencies and the components' CPU milliseconds per pod.
async fn run_phase(
    ctx: &Bench,
    watch: &PodWatch,
    prefix: &str,
    total: usize,
    concurrency: usize,
) -> crate::Result<(Stats, Vec<(String, f64)>)> {
    let batch = concurrency * (100 / concurrency);
    let settle = ctx.size(Duration::from_millis(300), Duration::from_secs(2));
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), "default");
    let mut samples = Vec::with_capacity(total);
    let mut cpu_seconds = vec![0.0; ctx.components.len()];
    for start in (0..total).step_by(batch) {
        let names: Vec<String> = (start..total.min(start + batch))
            .map(|i| format!("{prefix}-{i}"))
            .collect();
        let cpu_before = super::footprint::cpu_seconds(&ctx.components);
        let latencies: Vec<Duration> = futures::stream::iter(names.clone())
            .map(|name| start_one(&api, watch, name))
            .buffer_unordered(concurrency)
            .try_collect()
            .await?;
        let cpu_after = super::footprint::cpu_seconds(&ctx.components);
        for (sum, (after, before)) in cpu_seconds
            .iter_mut()
            .zip(cpu_after.iter().zip(&cpu_before))
        {
            *sum += after - before;
        }
        samples.extend(latencies);
        delete_and_wait(&api, watch, &names).await?;
        // Untimed: let the kubelet finish stopping the batch before the next one is measured.
        tokio::time::sleep(settle).await;
    }
    let per_pod = ctx
        .components
        .iter()
        .zip(cpu_seconds)
        .map(|((name, _), seconds)| (name.clone(), seconds * 1e3 / total.max(1) as f64))
        .collect();
    Ok((Stats::new(samples), per_pod))
}

/// Creates one pod and waits until the watch shows it Running; returns the time that took.
async fn start_one(api: &Api<Pod>, watch: &PodWatch, name: String) -> crate::Result<Duration> {
    let running = watch.expect(&name, Want::Running);
    let started = Instant::now();
    api.create(&sleep_pod(&name, "startup"))
        .await
        .with_context(|| format!("creating {name}"))?;
    let seen = tokio::time::timeout(Duration::from_secs(15), running)
        .await
        .with_context(|| format!("{name} not Running within 15s"))?
        .context("pod watch ended")?;
    Ok(seen.saturating_duration_since(started))
}

/// Deletes the pods (grace 0) and waits until the watch saw each one go.
pub async fn delete_and_wait(
    api: &Api<Pod>,
    watch: &PodWatch,
    names: &[String],
) -> crate::Result<()> {
    let gone: Vec<_> = names.iter().map(|n| watch.expect(n, Want::Gone)).collect();
    futures::stream::iter(names)
        .map(|name| async move {
            match api.delete(name, &DeleteParams::grace(0)).await {
                Err(err) if !err.is_not_found() => Err(err),
                _ => Ok(()),
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await?;
    for receiver in gone {
        tokio::time::timeout(Duration::from_secs(30), receiver)
            .await
            .context("pods not gone within 30s")??;
    }
    Ok(())
}

/// A pod running `sleep 3600` on the host, labelled `bench=<purpose>`.
pub fn sleep_pod(name: &str, purpose: &str) -> Pod {
    let value = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"bench": purpose}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "sleep", "image": "minik/sleep", "command": ["sleep", "3600"]}],
        },
    });
    // Invariant: the literal above is a valid Pod.
    serde_json::from_value(value).expect("a valid pod literal")
}

/// What a waiter waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Want {
    /// `status.phase == Running`.
    Running,
    /// A DELETED event.
    Gone,
}

type Waiters = Arc<Mutex<HashMap<(String, Want), oneshot::Sender<Instant>>>>;

/// One watch on the bench's pods (by label), handing the moment a pod reaches a state to whoever
/// asked for it: the timing is taken when the event is decoded, i.e. "observed through a watch".
pub struct PodWatch {
    waiters: Waiters,
    task: tokio::task::JoinHandle<()>,
}

impl PodWatch {
    /// Starts watching pods matching `label_selector` in every namespace; returns once the
    /// initial list is in (so nothing created afterwards can be missed).
    pub async fn start(client: &Client, label_selector: &str) -> crate::Result<PodWatch> {
        let waiters: Waiters = Arc::default();
        let (ready_tx, ready_rx) = oneshot::channel();
        let stream = minik_client::watcher(
            Api::<Pod>::all(client.clone()),
            ListParams::default().labels(label_selector),
        );
        let task = tokio::spawn(dispatch(stream, waiters.clone(), ready_tx));
        tokio::time::timeout(Duration::from_secs(10), ready_rx)
            .await
            .context("pod watch did not start")??;
        Ok(PodWatch { waiters, task })
    }

    /// A receiver that fires when pod `name` reaches `want` (register before acting).
    pub fn expect(&self, name: &str, want: Want) -> oneshot::Receiver<Instant> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut waiters) = self.waiters.lock() {
            waiters.insert((name.to_string(), want), tx);
        }
        rx
    }
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn dispatch(
    stream: impl futures::Stream<Item = minik_client::Result<Event<Pod>>>,
    waiters: Waiters,
    ready: oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        let now = Instant::now();
        let fire = |pod: &Pod, want: Want| {
            let name = pod.metadata.name.clone().unwrap_or_default();
            if let Some(tx) = waiters
                .lock()
                .ok()
                .and_then(|mut w| w.remove(&(name, want)))
            {
                let _ = tx.send(now);
            }
        };
        match event {
            Ok(Event::Applied(pod)) if is_running(&pod) => fire(&pod, Want::Running),
            Ok(Event::Applied(_)) => {}
            Ok(Event::Deleted(pod)) => fire(&pod, Want::Gone),
            Ok(Event::Restarted(pods)) => {
                pods.iter()
                    .filter(|p| is_running(p))
                    .for_each(|p| fire(p, Want::Running));
                if let Some(ready) = ready.take() {
                    let _ = ready.send(());
                }
            }
            Err(_) => {}
        }
    }
}

/// `status.phase == Running`.
pub fn is_running(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}
