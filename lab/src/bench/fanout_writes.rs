//! Measurement 4's writers: the steady, paced writes and the capacity writers held back by the
//! slowest watcher.
//!
//! Kubernetes counterpart: etcd's `benchmark watch` puts (a fixed rate) and the watch cache's
//! cut-off of watchers whose buffer overflows (`cacher.go`, "Forcing watcher close due to
//! unresponsiveness"), which the capacity writers stay clear of: a cut watcher would be counted
//! as lost events instead of measuring how many events the server delivers.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use minik_client::{Api, Patch};
use serde_json::json;

use super::fanout::KEYS;

/// How many writes the slowest watcher may be behind before the capacity writers wait: well
/// under the server's 1,024-event buffer per watcher, even with all 32 writers in flight.
const WINDOW: u64 = 256;

/// Nanoseconds since `base`: what the writes carry and the watchers subtract.
pub(super) fn since_ns(base: Instant) -> u64 {
    base.elapsed().as_nanos() as u64
}

/// One write per `interval` for `duration`, each carrying its send time; returns (writes,
/// highest revision).
pub(super) async fn steady_writes(
    api: &Api<Lease>,
    base: Instant,
    duration: Duration,
    interval: Duration,
) -> crate::Result<(usize, u64)> {
    let mut ticker = tokio::time::interval(interval);
    let count = (duration.as_micros() / interval.as_micros().max(1)) as usize;
    let tasks: Vec<_> = (0..count)
        .map(|i| {
            let api = api.clone();
            async move {
                let patch = Patch::Merge(
                    json!({"spec": {"holderIdentity": format!("s{}", since_ns(base))}}),
                );
                api.patch(&format!("bench-fan-{}", i % KEYS), &patch).await
            }
        })
        .collect();
    let mut handles = Vec::with_capacity(count);
    for task in tasks {
        ticker.tick().await;
        handles.push(tokio::spawn(task));
    }
    let mut max_rv = 0;
    for handle in handles {
        max_rv = max_rv.max(revision(&handle.await??));
    }
    Ok((count, max_rv))
}

/// The capacity writers' flow control: how many writes were started, and how far each watcher
/// has read.
pub(super) struct Gate {
    pub(super) started: AtomicU64,
    pub(super) progress: Vec<Arc<AtomicU64>>,
}

impl Gate {
    /// Waits until the slowest watcher is within [`WINDOW`] writes of the writes started, then
    /// counts one more. Several writers may pass at once, so a watcher may be up to
    /// `WINDOW + writers` behind: still far from the server's cut-off.
    async fn admit(&self) {
        while !self.try_admit() {
            // Polled, not signalled: a wake-up per watcher line would cost the bench more CPU
            // than the server it measures; a millisecond is small beside a 256-write window.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Counts one more write if the slowest watcher is within the window.
    fn try_admit(&self) -> bool {
        let slowest = self.progress.iter().map(|p| p.load(Relaxed)).min();
        let admitted = self.started.load(Relaxed) < slowest.unwrap_or(0) + WINDOW;
        if admitted {
            self.started.fetch_add(1, Relaxed);
        }
        admitted
    }
}

/// 32 writers as fast as the watchers keep up for `duration`; returns (writes, highest revision).
pub(super) async fn capacity_writes(
    api: &Api<Lease>,
    base: Instant,
    duration: Duration,
    gate: Arc<Gate>,
) -> crate::Result<(usize, u64)> {
    let deadline = Instant::now() + duration;
    let writers: Vec<_> = (0..32)
        .map(|w| {
            let api = api.clone();
            let gate = gate.clone();
            tokio::spawn(async move {
                let (mut n, mut max_rv) = (0usize, 0u64);
                while Instant::now() < deadline {
                    gate.admit().await;
                    let patch = Patch::Merge(
                        json!({"spec": {"holderIdentity": format!("c{}", since_ns(base))}}),
                    );
                    let written = api
                        .patch(&format!("bench-fan-{}", (w + n * 32) % KEYS), &patch)
                        .await?;
                    max_rv = max_rv.max(revision(&written));
                    n += 1;
                }
                Ok::<_, minik_client::Error>((n, max_rv))
            })
        })
        .collect();
    let (mut total, mut max_rv) = (0, 0);
    for writer in writers {
        let (n, rv) = writer.await??;
        total += n;
        max_rv = max_rv.max(rv);
    }
    Ok((total, max_rv))
}

fn revision(lease: &Lease) -> u64 {
    lease
        .metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer passes while the slowest watcher is within the window, and not beyond it.
    #[test]
    fn writers_wait_for_the_slowest_watcher() {
        let (fast, slow) = (Arc::new(AtomicU64::new(500)), Arc::new(AtomicU64::new(0)));
        let gate = Gate {
            started: AtomicU64::new(WINDOW - 1),
            progress: vec![fast, slow.clone()],
        };
        assert!(gate.try_admit());
        assert!(!gate.try_admit(), "the slowest watcher is a window behind");
        slow.store(1, Relaxed);
        assert!(gate.try_admit());
        assert_eq!(gate.started.load(Relaxed), WINDOW + 1);
    }
}
