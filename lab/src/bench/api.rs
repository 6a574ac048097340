//! Measurement 3: the API server, durable create throughput, write latency under load, GET latency.
//!
//! Kubernetes counterpart: etcd's `benchmark put` (`Documentation/op-guide/performance.md`: 583
//! writes/s for one client, 44–50 k/s for 1 000 clients on 3 members) and the API call latency
//! SLO (`slos/api_call_latency.md`: mutating and single-object reads p99 ≤ 1 s). Every write here is
//! acknowledged only once on disk (the apiserver groups concurrent writers into one fsync), so the
//! numbers are durable ones.
//!
//! The objects are Leases (`coordination.k8s.io/v1`): small, and no minik controller watches them,
//! so the figures are the API server's alone.
//!
//! 1. creates: N Leases by 64 concurrent clients (N = 10 000, or 1 000 with `--quick`);
//! 2. write latency: one client patching Leases one after another while a background task patches
//!    others at 200/s, with the N Leases stored;
//! 3. GET latency: one client reading single Leases one after another.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Context;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use minik_client::{Api, Patch};
use serde_json::json;

use super::report::{rate, Row, Stats};
use super::Bench;

/// The rows this measurement fills.
pub fn templates() -> Vec<Row> {
    vec![
        Row::new(
            "api_create_throughput",
            "3. API durable creates, 64 concurrent clients",
            "≥ 10,000/s",
            "etcd 1 000 clients 44–50 k/s (3 members, 8 vCPU); 1 client 583/s",
        ),
        Row::new(
            "api_write_latency",
            "3. API write latency, objects stored + 200 writes/s background",
            "p99 ≤ 5 ms",
            "k8s SLO p99 ≤ 1 s; etcd 1 client 1.6 ms avg; fdatasync p99 0.26–0.43 ms",
        ),
        Row::new(
            "api_get_latency",
            "3. API single-object GET",
            "– (SLO p99 ≤ 1 s)",
            "etcd serializable read 0.3 ms avg (1 client)",
        ),
    ]
}

/// A Lease named `name`.
pub fn lease(name: &str, holder: &str) -> Lease {
    let value = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "labels": {"bench": "api"}},
        "spec": {"holderIdentity": holder},
    });
    // Invariant: the literal above is a valid Lease.
    serde_json::from_value(value).expect("a valid lease literal")
}

/// Runs the three parts in order.
pub async fn measure(ctx: &Bench) -> crate::Result<Vec<Row>> {
    let api: Api<Lease> = Api::namespaced(ctx.client.clone(), "default");
    let count = ctx.size(1_000, 10_000);
    let mut rows = templates().into_iter();
    let next = |rows: &mut std::vec::IntoIter<Row>| rows.next().context("a template per part");

    // 1. Creates, 64 in flight.
    let processes = super::footprint::with_bench(&ctx.components);
    let cpu_before = super::footprint::cpu_seconds(&processes);
    let started = Instant::now();
    let latencies: Vec<Duration> = futures::stream::iter(0..count)
        .map(|i| {
            let api = api.clone();
            async move {
                let t = Instant::now();
                api.create(&lease(&format!("bench-lease-{i}"), "create"))
                    .await
                    .map(|_| t.elapsed())
            }
        })
        .buffer_unordered(64)
        .try_collect()
        .await
        .context("creating leases")?;
    let per_second = count as f64 / started.elapsed().as_secs_f64();
    let cpu = super::footprint::cpu_per_unit(
        &processes,
        &cpu_before,
        &super::footprint::cpu_seconds(&processes),
        count as f64,
    );
    let creates = Stats::new(latencies);
    let create_row = next(&mut rows)?
        .result(format!(
            "{} ({count} creates; per create {}; CPU per create: {cpu})",
            rate(per_second),
            creates.summary()
        ))
        .value("per_second", per_second)
        .stats("", &creates)
        .met(per_second >= 10_000.0);

    // 2. Sequential writes with 200 writes/s in the background.
    let stop = Arc::new(AtomicBool::new(false));
    let background = tokio::spawn(background_writes(api.clone(), count, stop.clone()));
    let samples = ctx.size(300, 3_000);
    let mut writes = Vec::with_capacity(samples);
    for i in 0..samples {
        let name = format!("bench-lease-{}", (i * 7919) % count);
        let patch = Patch::Merge(json!({"spec": {"holderIdentity": format!("fg-{i}")}}));
        let t = Instant::now();
        api.patch(&name, &patch).await.context("patching a lease")?;
        writes.push(t.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    let background_done = background.await.context("background writer")??;
    let writes = Stats::new(writes);
    let write_row = next(&mut rows)?
        .result(format!(
            "{} ({count} objects, {background_done} background writes)",
            writes.summary()
        ))
        .stats("", &writes)
        .value("stored_objects", count as f64)
        .met(writes.p99_ms() <= 5.0);

    // 3. Sequential GETs.
    let samples = ctx.size(500, 5_000);
    let mut reads = Vec::with_capacity(samples);
    for i in 0..samples {
        let name = format!("bench-lease-{}", (i * 104_729) % count);
        let t = Instant::now();
        api.get(&name).await.context("reading a lease")?;
        reads.push(t.elapsed());
    }
    let reads = Stats::new(reads);
    let get_row = next(&mut rows)?.result(reads.summary()).stats("", &reads);
    Ok(vec![create_row, write_row, get_row])
}

/// Patches Leases at 200/s (each write in its own task, so a slow one does not slow the pace)
/// until `stop`; returns how many writes it made.
async fn background_writes(
    api: Api<Lease>,
    count: usize,
    stop: Arc<AtomicBool>,
) -> crate::Result<usize> {
    let mut ticker = tokio::time::interval(Duration::from_millis(5));
    let tasks = tokio_util::task::TaskTracker::new();
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        ticker.tick().await;
        let api = api.clone();
        let name = format!("bench-lease-{}", (n * 31 + 17) % count);
        tasks.spawn(async move {
            let _ = api
                .patch(
                    &name,
                    &Patch::Merge(json!({"spec": {"holderIdentity": format!("bg-{n}")}})),
                )
                .await;
        });
        n += 1;
    }
    tasks.close();
    tasks.wait().await;
    Ok(n)
}
