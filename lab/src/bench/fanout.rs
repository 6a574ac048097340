//! Measurement 4: watch fan-out, 1,000 watchers (100 with `--quick`) while writes go on.
//!
//! Kubernetes counterpart: etcd's watch benchmark (`benchmark watch`, etcd-io/etcd#4686: 10 000
//! watchers at 1 000 puts/s delivered 45.7–95.4 k events/s) and the apiserver's watch cache
//! (`cacher.go`: one store watch per type, each event serialized once and fanned out to every
//! watcher). The watch latency SLI (`slos/watch_latency.md`) has no number yet.
//!
//! Two phases on 100 Leases, with 1,000 watches (the issue's goal) open on all Leases from one
//! resourceVersion:
//! 1. **steady**: 50,000 events/s offered (50 writes/s to 1,000 watchers, 500 to 100); write →
//!    event latency is taken here, from just before the PATCH to the moment a watcher has read the
//!    line;
//! 2. **capacity**: 32 writers as fast as the watchers keep up, to see how many events/s the server
//!    delivers. A writer waits while the slowest watcher is more than `WINDOW` (`fanout_writes.rs`) writes behind:
//!    the server cuts a watcher whose buffer (1,024 events) overflows, as upstream's cacher does,
//!    and a cut watcher would count as lost events rather than as the server's delivery rate.
//!
//! Each watcher checks that revisions only go up (nothing out of order or twice) and, at the end,
//! that it saw every acknowledged write (nothing lost). The watchers read raw lines and pick out
//! the two fields they need, so that the bench's own JSON decoding does not become the bottleneck
//! it is measuring.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Context;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use minik_client::{Api, ListParams};
use tokio::sync::watch;

use super::api::lease;
use super::fanout_writes::{capacity_writes, since_ns, steady_writes, Gate};
use super::report::{ms, rate, Row, Stats};
use super::Bench;

/// The Leases written (and watched).
pub(super) const KEYS: usize = 100;
/// Events per second the steady phase offers to all watchers together.
const STEADY_EVENTS_PER_S: u64 = 50_000;

/// The rows this measurement fills.
pub fn templates() -> Vec<Row> {
    vec![
        Row::new(
            "watch_fanout",
            "4. watch fan-out, 1,000 watchers (100 with --quick): events/s delivered",
            "≥ 200,000/s, none lost or out of order",
            "etcd 10 k watchers @ 1 k puts/s: 45.7–95.4 k events/s (etcd#4686)",
        ),
        Row::new(
            "watch_latency",
            "4. watch write → event at 50,000 events/s offered (1,000 watchers, 100 with --quick)",
            "– (SLI without a number)",
            "etcd put → event p99 ≈ 0.1 ms, 1 watcher (etcd#17562)",
        ),
    ]
}

/// What one watcher saw.
#[derive(Debug, Default)]
struct Seen {
    events: u64,
    out_of_order: u64,
    last_rv: u64,
    /// Write → event latencies of the steady phase, in microseconds.
    latencies_us: Vec<u32>,
    steady_events: u64,
    /// Events read so far, shared with the capacity writers' flow control.
    progress: Arc<AtomicU64>,
    capacity_events: u64,
    /// When the last event of each phase arrived (ns since the bench's base instant).
    steady_last_ns: u64,
    capacity_last_ns: u64,
}

/// Runs both phases.
pub async fn measure(ctx: &Bench) -> crate::Result<Vec<Row>> {
    let api: Api<Lease> = Api::namespaced(ctx.client.clone(), "default");
    futures::stream::iter(0..KEYS)
        .map(|i| {
            let api = api.clone();
            async move { api.create(&lease(&format!("bench-fan-{i}"), "c0")).await }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .context("creating the leases")?;
    let from = api
        .list(&ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .context("list without resourceVersion")?;
    let base = Instant::now();
    let (stop_tx, stop_rx) = watch::channel(u64::MAX);
    let watcher_count = ctx.size(100, 1_000);
    let mut watchers = Vec::new();
    let mut progress = Vec::new();
    for _ in 0..watcher_count {
        let path = format!(
            "{}?watch=true&resourceVersion={from}",
            api.collection_path()
        );
        let stream = ctx
            .client
            .get_stream(&path)
            .await
            .context("opening a watch")?;
        let seen = Seen::default();
        progress.push(seen.progress.clone());
        watchers.push(tokio::spawn(read_watch(
            seen,
            stream,
            base,
            stop_rx.clone(),
        )));
    }

    let steady_for = ctx.size(Duration::from_secs(1), Duration::from_secs(5));
    let steady_start = base.elapsed();
    let interval = Duration::from_micros(1_000_000 * watcher_count as u64 / STEADY_EVENTS_PER_S);
    let (steady_writes, steady_rv) = steady_writes(&api, base, steady_for, interval).await?;
    let capacity_start = base.elapsed();
    let processes = super::footprint::with_bench(&ctx.components);
    let cpu_before = super::footprint::cpu_seconds(&processes);
    let gate = Arc::new(Gate {
        started: AtomicU64::new(steady_writes as u64),
        progress,
    });
    let (capacity_writes, capacity_rv) = capacity_writes(&api, base, steady_for, gate).await?;
    let _ = stop_tx.send(steady_rv.max(capacity_rv));

    let mut seen = Vec::new();
    for watcher in watchers {
        seen.push(
            tokio::time::timeout(Duration::from_secs(20), watcher)
                .await
                .context("a watcher did not finish")???,
        );
    }
    let cpu_after = super::footprint::cpu_seconds(&processes);
    let writes = (steady_writes + capacity_writes) as u64;
    let lost: u64 = seen.iter().map(|s| writes.saturating_sub(s.events)).sum();
    let out_of_order: u64 = seen.iter().map(|s| s.out_of_order).sum();

    let steady_events: u64 = seen.iter().map(|s| s.steady_events).sum();
    let steady_end = seen.iter().map(|s| s.steady_last_ns).max().unwrap_or(0);
    let steady_rate = steady_events as f64 / secs_between(steady_start, steady_end);
    let capacity_events: u64 = seen.iter().map(|s| s.capacity_events).sum();
    let capacity_end = seen.iter().map(|s| s.capacity_last_ns).max().unwrap_or(0);
    let capacity_rate = capacity_events as f64 / secs_between(capacity_start, capacity_end);
    let writes_per_s = capacity_writes as f64 / steady_for.as_secs_f64();
    let cpu =
        super::footprint::cpu_per_unit(&processes, &cpu_before, &cpu_after, capacity_events as f64);

    let fanout = templates()
        .remove(0)
        .result(format!(
            "{} at capacity with {watcher_count} watchers ({} writes/s; CPU per event: {cpu}); {} at {:.0} writes/s; lost {lost}, out of order {out_of_order}",
            rate(capacity_rate),
            rate(writes_per_s),
            rate(steady_rate),
            1.0 / interval.as_secs_f64(),
        ))
        .value("watchers", watcher_count as f64)
        .value("capacity_events_per_s", capacity_rate)
        .value("capacity_writes_per_s", writes_per_s)
        .value("steady_events_per_s", steady_rate)
        .value("lost", lost as f64)
        .value("out_of_order", out_of_order as f64)
        .met(capacity_rate >= 200_000.0 && lost == 0 && out_of_order == 0);
    let latencies = Stats::new(
        seen.iter()
            .flat_map(|s| s.latencies_us.iter())
            .map(|us| Duration::from_micros(u64::from(*us))),
    );
    let latency = templates()
        .remove(1)
        .result(format!(
            "{} (p90 {})",
            latencies.summary(),
            ms(latencies.percentile_ms(90.0))
        ))
        .stats("", &latencies);
    Ok(vec![fanout, latency])
}

fn secs_between(start: Duration, end_ns: u64) -> f64 {
    (Duration::from_nanos(end_ns).saturating_sub(start))
        .as_secs_f64()
        .max(1e-6)
}

/// Reads one watch until it has seen revision `stop` (or it ends).
async fn read_watch<B: AsRef<[u8]>>(
    mut seen: Seen,
    mut stream: impl futures::Stream<Item = minik_client::Result<B>> + Unpin,
    base: Instant,
    mut stop: watch::Receiver<u64>,
) -> crate::Result<Seen> {
    let mut buffer: Vec<u8> = Vec::new();
    loop {
        if seen.last_rv >= *stop.borrow() {
            return Ok(seen);
        }
        let chunk = tokio::select! {
            chunk = stream.next() => chunk,
            changed = stop.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return Ok(seen), // the bench gave up on this run
            },
        };
        let Some(chunk) = chunk else { return Ok(seen) };
        let chunk = chunk?;
        let now_ns = since_ns(base);
        buffer.extend_from_slice(chunk.as_ref());
        let mut start = 0;
        while let Some(end) = buffer[start..].iter().position(|b| *b == b'\n') {
            seen.line(&buffer[start..start + end], now_ns);
            start += end + 1;
        }
        buffer.drain(..start);
        seen.progress.store(seen.events, Relaxed);
    }
}

impl Seen {
    /// Takes the revision and the holder out of one watch line.
    fn line(&mut self, line: &[u8], now_ns: u64) {
        let Some(rv) = field(line, b"\"resourceVersion\":\"")
            .and_then(|v| std::str::from_utf8(v).ok()?.parse::<u64>().ok())
        else {
            return;
        };
        if rv <= self.last_rv {
            self.out_of_order += 1;
        }
        self.last_rv = self.last_rv.max(rv);
        self.events += 1;
        let Some(holder) = field(line, b"\"holderIdentity\":\"") else {
            return;
        };
        let sent = std::str::from_utf8(holder.get(1..).unwrap_or(&[]))
            .ok()
            .and_then(|s| s.parse::<u64>().ok());
        match (holder.first(), sent) {
            (Some(b's'), Some(sent)) => {
                self.steady_events += 1;
                self.steady_last_ns = now_ns;
                self.latencies_us
                    .push(((now_ns.saturating_sub(sent)) / 1000).min(u64::from(u32::MAX)) as u32);
            }
            (Some(b'c'), Some(_)) => {
                self.capacity_events += 1;
                self.capacity_last_ns = now_ns;
            }
            _ => {}
        }
    }
}

/// The string value after `key` (up to the next `"`).
fn field<'a>(line: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = line.windows(key.len()).position(|w| w == key)? + key.len();
    let len = line[at..].iter().position(|b| *b == b'"')?;
    Some(&line[at..at + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A watch line gives its revision and, from a steady write, a latency; a repeat counts as
    /// out of order.
    #[test]
    fn watch_lines_are_checked_for_order_and_timed() {
        let mut seen = Seen::default();
        let line = br#"{"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"12"},"spec":{"holderIdentity":"s1000000"}}}"#;
        seen.line(line, 3_000_000);
        assert_eq!((seen.events, seen.last_rv, seen.steady_events), (1, 12, 1));
        assert_eq!(seen.latencies_us, vec![2000]);
        seen.line(line, 4_000_000);
        assert_eq!(seen.out_of_order, 1);
    }
}
