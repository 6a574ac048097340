//! A deduplicating work queue of keys, with per-key rate-limited retries.
//!
//! Kubernetes counterpart: client-go's `workqueue` (`staging/src/k8s.io/client-go/util/workqueue/
//! queue.go`, `delaying_queue.go`, `rate_limiting_queue.go` and `default_rate_limiters.go`), which
//! every controller of kube-controller-manager drains. Upstream explains why not a channel: "A
//! channel is inappropriate here, because it allows services with lots of pods to be serviced much
//! more often than services with few pods." A burst of 100 pod events for one Service becomes one
//! sync. The guarantees:
//!
//! - a key waits in the queue at most once (`dirty`);
//! - a key is never handed to two workers at once (`processing`); if it is added while a worker
//!   holds it, it is queued again when that worker calls [`WorkQueue::done`];
//! - [`WorkQueue::add_after`] queues a key later (a controller's "requeue after minReadySeconds");
//! - [`WorkQueue::add_rate_limited`] retries a failing key after `5 ms × 2^failures` (capped), until
//!   [`WorkQueue::forget`] (client-go's `ItemExponentialFailureRateLimiter`).
//!
//! Keys are usually [`ObjectKey`]s (`namespace/name`); any hashable key works (the garbage collector
//! queues uids).
//!
//! minik simplifies: no overall token bucket (upstream's 10 qps, burst 100), no metrics.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use minik_api::ObjectKey;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// First retry delay of a failing key (upstream `ItemExponentialFailureRateLimiter(5ms, 1000s)`).
const BASE_DELAY: Duration = Duration::from_millis(5);
/// Longest retry delay (minik caps lower than upstream's 1000 s, for a laptop).
const MAX_DELAY: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct Inner<T> {
    queue: VecDeque<T>,
    /// Keys that need processing (queued, or re-added while being processed).
    dirty: HashSet<T>,
    /// Keys a worker holds right now.
    processing: HashSet<T>,
    /// Consecutive failures per key.
    failures: HashMap<T, u32>,
    shutting_down: bool,
}

impl<T> Default for Inner<T> {
    fn default() -> Self {
        Inner {
            queue: VecDeque::new(),
            dirty: HashSet::new(),
            processing: HashSet::new(),
            failures: HashMap::new(),
            shutting_down: false,
        }
    }
}

/// The queue; share it behind an `Arc`.
#[derive(Debug)]
pub struct WorkQueue<T = ObjectKey> {
    inner: Mutex<Inner<T>>,
    notify: Notify,
    /// Cancelled by [`WorkQueue::shut_down`]: delayed adds waiting on a timer stop with it.
    stopped: CancellationToken,
}

impl<T> Default for WorkQueue<T> {
    fn default() -> Self {
        WorkQueue {
            inner: Mutex::default(),
            notify: Notify::new(),
            stopped: CancellationToken::new(),
        }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        WorkQueue::default()
    }

    /// A poisoned lock still holds consistent sets (each operation is a few set updates).
    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks `key` as needing a sync.
    pub fn add(&self, key: T) {
        let mut inner = self.lock();
        if inner.shutting_down || !inner.dirty.insert(key.clone()) {
            return;
        }
        if !inner.processing.contains(&key) {
            inner.queue.push_back(key);
            drop(inner);
            self.notify.notify_one();
        }
    }

    /// Adds `key` once `delay` has passed (at once for a zero delay). Must be called inside a tokio
    /// runtime; the timer is dropped when the queue shuts down.
    pub fn add_after(self: &Arc<Self>, key: T, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let queue = Arc::clone(self);
        tokio::spawn(async move {
            tokio::select! {
                _ = queue.stopped.cancelled() => {}
                _ = tokio::time::sleep(delay) => queue.add(key),
            }
        });
    }

    /// Adds `key` after its per-key backoff, and counts one more failure for it.
    pub fn add_rate_limited(self: &Arc<Self>, key: T) {
        let delay = self.next_retry_delay(&key);
        self.add_after(key, delay);
    }

    /// Waits for the next key and marks it as being processed; `None` once shut down and drained.
    pub async fn get(&self) -> Option<T> {
        loop {
            // Register interest before looking, so an `add` between the look and the wait is seen.
            let notified = self.notify.notified();
            {
                let mut inner = self.lock();
                if let Some(key) = inner.queue.pop_front() {
                    inner.dirty.remove(&key);
                    inner.processing.insert(key.clone());
                    // Others may be waiting for the rest of the queue.
                    if !inner.queue.is_empty() {
                        self.notify.notify_one();
                    }
                    return Some(key);
                }
                // As upstream, what was queued before the shutdown is still handed out.
                if inner.shutting_down {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// A worker finished with `key`; if it was added meanwhile, it is queued again.
    pub fn done(&self, key: &T) {
        let mut inner = self.lock();
        inner.processing.remove(key);
        if inner.dirty.contains(key) {
            inner.queue.push_back(key.clone());
            drop(inner);
            self.notify.notify_one();
        }
    }

    /// Records a failure of `key` and returns how long to wait before adding it again.
    pub fn next_retry_delay(&self, key: &T) -> Duration {
        let mut inner = self.lock();
        let failures = inner.failures.entry(key.clone()).or_default();
        *failures += 1;
        let exponent = (*failures - 1).min(20);
        (BASE_DELAY * 2u32.pow(exponent)).min(MAX_DELAY)
    }

    /// How many times in a row `key` failed.
    pub fn num_requeues(&self, key: &T) -> u32 {
        self.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// Clears the failure count of `key` (after a success, or when giving up).
    pub fn forget(&self, key: &T) {
        self.lock().failures.remove(key);
    }

    /// Wakes every waiting worker with `None`.
    pub fn shut_down(&self) {
        self.lock().shutting_down = true;
        self.stopped.cancel();
        self.notify.notify_waiters();
    }

    /// Number of keys waiting.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether no key is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("default", name)
    }

    #[tokio::test]
    async fn a_key_added_many_times_is_synced_once() {
        let queue = WorkQueue::<ObjectKey>::new();
        for _ in 0..100 {
            queue.add(key("web"));
        }
        queue.add(key("db"));
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.get().await, Some(key("web")));
        assert_eq!(queue.get().await, Some(key("db")));
    }

    #[tokio::test]
    async fn a_key_being_processed_is_requeued_only_when_done() {
        let queue = WorkQueue::<ObjectKey>::new();
        queue.add(key("web"));
        let held = queue.get().await.unwrap();
        queue.add(key("web"));
        assert!(queue.is_empty(), "not handed to a second worker while held");
        queue.done(&held);
        assert_eq!(queue.get().await, Some(key("web")));
    }

    #[tokio::test]
    async fn waiting_worker_wakes_on_add_and_on_shutdown() {
        let queue = Arc::new(WorkQueue::<ObjectKey>::new());
        let worker = tokio::spawn({
            let queue = queue.clone();
            async move { (queue.get().await, queue.get().await) }
        });
        tokio::task::yield_now().await;
        queue.add(key("web"));
        tokio::task::yield_now().await;
        queue.shut_down();
        let got = tokio::time::timeout(Duration::from_secs(5), worker)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, (Some(key("web")), None));
    }

    #[test]
    fn retry_delay_doubles_and_forget_resets_it() {
        let queue = WorkQueue::<ObjectKey>::new();
        assert_eq!(
            queue.next_retry_delay(&key("web")),
            Duration::from_millis(5)
        );
        assert_eq!(
            queue.next_retry_delay(&key("web")),
            Duration::from_millis(10)
        );
        assert_eq!(queue.num_requeues(&key("web")), 2);
        queue.forget(&key("web"));
        assert_eq!(
            queue.next_retry_delay(&key("web")),
            Duration::from_millis(5)
        );
        for _ in 0..40 {
            queue.next_retry_delay(&key("web"));
        }
        assert_eq!(queue.next_retry_delay(&key("web")), MAX_DELAY);
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_limited_key_comes_back_after_its_backoff() {
        let queue = Arc::new(WorkQueue::<ObjectKey>::new());
        queue.add_rate_limited(key("web"));
        queue.add_rate_limited(key("web"));
        assert!(queue.is_empty(), "not before the backoff");
        tokio::time::sleep(Duration::from_millis(11)).await;
        assert_eq!(queue.get().await, Some(key("web")));
        assert_eq!(queue.num_requeues(&key("web")), 2);
        queue.shut_down();
        queue.add_after(key("db"), Duration::from_secs(1));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(queue.is_empty(), "nothing is added after shutdown");
    }
}
