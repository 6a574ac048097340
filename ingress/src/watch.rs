//! The informers a consumer of endpoints runs, the changes they mark, and when a sync happens.
//!
//! Kubernetes counterpart: the shared informers of ingress-nginx's `store` package
//! (`internal/ingress/controller/store/store.go`: Ingresses, Services and EndpointSlices, each
//! event enqueuing a sync) and its sync queue, which batches events and rate-limits reloads. The
//! time each EndpointSlice change happened is kept for the lag metric: the slice's
//! `endpoints.kubernetes.io/last-change-trigger-time` when it carries a new one (the time the pod
//! change that caused it was seen upstream of us), else the time its watch event arrived.
//!
//! Two paces, one per consumer of seed 003: [`Pacing::Delay`] syncs each burst of changes a fixed
//! time after its first event (an ingress controller; 0 is "at once"), [`Pacing::Batch`] syncs on
//! a fixed period whatever happened in between (an external load balancer that pushes its
//! configuration in batches).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::ListableResource;
use minik_api::ObjectKey;
use minik_client::{Api, Client, Event, ListParams, Object, Store};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::warn;

use crate::backends::TRIGGER_TIME_ANNOTATION;

/// What happened since the last sync: a dirty flag, a wake-up, and the slice changes' times.
#[derive(Debug, Default)]
pub struct Changes {
    dirty: AtomicBool,
    /// How many changes were marked so far (to see whether a quiet period stayed quiet).
    marks: AtomicU64,
    notify: Notify,
    triggers: Mutex<Vec<Timestamp>>,
    /// The trigger annotation last seen per slice: a slice rewritten with the same value carries
    /// no new change of its own.
    seen: Mutex<HashMap<ObjectKey, String>>,
}

impl Changes {
    /// Something changed: the next sync must run.
    pub fn mark(&self) {
        self.marks.fetch_add(1, Ordering::SeqCst);
        self.dirty.store(true, Ordering::SeqCst);
        self.notify.notify_one();
    }

    /// An EndpointSlice event: its trigger time is recorded, then [`Changes::mark`].
    pub fn slice_event(&self, event: &Event<EndpointSlice>) {
        let arrived = Timestamp::now();
        let trigger = match event {
            Event::Applied(slice) => self.trigger_of(slice).unwrap_or(arrived),
            Event::Deleted(_) | Event::Restarted(_) => arrived,
        };
        self.triggers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(trigger);
        self.mark();
    }

    fn trigger_of(&self, slice: &EndpointSlice) -> Option<Timestamp> {
        let value = slice
            .metadata
            .annotations
            .as_ref()?
            .get(TRIGGER_TIME_ANNOTATION)?;
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let previous = seen.insert(ObjectKey::of(&slice.metadata), value.clone());
        if previous.as_ref() == Some(value) {
            return None;
        }
        value.parse().ok()
    }

    /// The slice changes since the last call, if anything changed at all.
    pub fn take(&self) -> Option<Vec<Timestamp>> {
        if !self.dirty.swap(false, Ordering::SeqCst) {
            return None;
        }
        let mut triggers = self.triggers.lock().unwrap_or_else(|p| p.into_inner());
        Some(std::mem::take(&mut *triggers))
    }
}

/// Starts a reflector on every object of kind `K`; each event goes to `on_event`. Returns the
/// store it fills.
pub fn informer<K>(
    client: &Client,
    tasks: &TaskTracker,
    changes: Arc<Changes>,
    on_event: fn(&Changes, &Event<K>),
    shutdown: CancellationToken,
) -> Store<K>
where
    K: Object + ListableResource,
{
    let (store, writer) = minik_client::store::<K>();
    let watch = minik_client::watcher(Api::<K>::all(client.clone()), ListParams::default());
    let mut events = Box::pin(minik_client::reflector(writer, watch));
    tasks.spawn(async move {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                item = events.next() => match item {
                    Some(Ok(event)) => on_event(&changes, &event),
                    Some(Err(error)) => warn!(kind = K::KIND, %error, "watch failed; retrying"),
                    None => return,
                },
            }
        }
    });
    store
}

/// Any event of a kind whose time is not measured: just mark the change.
pub fn any_event<K>(changes: &Changes, _: &Event<K>) {
    changes.mark();
}

/// When a consumer syncs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pacing {
    /// Once no change came for this long (0: at once), so every change a sync carries is at least
    /// this old; a burst that never quiets down is applied after [`MAX_QUIET_ROUNDS`] delays.
    Delay(Duration),
    /// On every tick of this period, if anything changed.
    Batch(Duration),
}

/// The most delays a delayed sync waits for a burst of changes to quiet down.
pub const MAX_QUIET_ROUNDS: usize = 5;

/// Waits for the next sync as `pacing` says; `None` once `shutdown` fires. Returns the slice
/// changes the sync carries.
pub async fn next_sync(
    changes: &Changes,
    pacing: Pacing,
    shutdown: &CancellationToken,
) -> Option<Vec<Timestamp>> {
    loop {
        let wait = async {
            match pacing {
                Pacing::Delay(delay) => {
                    changes.notify.notified().await;
                    for _ in 0..MAX_QUIET_ROUNDS {
                        let before = changes.marks.load(Ordering::SeqCst);
                        tokio::time::sleep(delay).await;
                        if delay.is_zero() || changes.marks.load(Ordering::SeqCst) == before {
                            break;
                        }
                    }
                }
                Pacing::Batch(period) => tokio::time::sleep(until_next_tick(period)).await,
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => return None,
            _ = wait => {}
        }
        if let Some(triggers) = changes.take() {
            return Some(triggers);
        }
    }
}

/// Time to the next multiple of `period` on the wall clock, so batches fall on a steady grid.
fn until_next_tick(period: Duration) -> Duration {
    let period_ms = period.as_millis().max(1) as i64;
    let now_ms = Timestamp::now().as_millisecond();
    Duration::from_millis((period_ms - now_ms.rem_euclid(period_ms)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn slice(trigger: &str) -> EndpointSlice {
        serde_json::from_value(json!({"metadata": {"name": "web-x", "namespace": "default",
            "annotations": {TRIGGER_TIME_ANNOTATION: trigger}},
            "addressType": "IPv4", "endpoints": []}))
        .unwrap()
    }

    #[test]
    fn a_new_trigger_annotation_is_used_once() {
        let changes = Changes::default();
        assert_eq!(changes.take(), None);
        changes.slice_event(&Event::Applied(slice("2026-11-25T12:00:00.5Z")));
        let first = changes.take().unwrap();
        assert_eq!(
            first,
            ["2026-11-25T12:00:00.5Z".parse::<Timestamp>().unwrap()]
        );
        // The same annotation again: the arrival time instead.
        changes.slice_event(&Event::Applied(slice("2026-11-25T12:00:00.5Z")));
        assert!(changes.take().unwrap()[0] > first[0]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_delayed_sync_waits_until_its_changes_are_a_delay_old() {
        let changes = Arc::new(Changes::default());
        let shutdown = CancellationToken::new();
        let started = tokio::time::Instant::now();
        changes.mark();
        let late = changes.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            late.mark();
        });
        next_sync(&changes, Pacing::Delay(Duration::from_secs(2)), &shutdown).await;
        assert!(started.elapsed() >= Duration::from_millis(3500));
    }

    #[tokio::test(start_paused = true)]
    async fn a_delayed_sync_waits_its_delay_after_the_first_change() {
        let changes = Arc::new(Changes::default());
        let shutdown = CancellationToken::new();
        let started = tokio::time::Instant::now();
        changes.mark();
        let sync = next_sync(&changes, Pacing::Delay(Duration::from_secs(2)), &shutdown).await;
        assert_eq!(sync, Some(Vec::new()));
        assert!(started.elapsed() >= Duration::from_secs(2));
        shutdown.cancel();
        assert_eq!(
            next_sync(&changes, Pacing::Delay(Duration::ZERO), &shutdown).await,
            None
        );
    }
}
