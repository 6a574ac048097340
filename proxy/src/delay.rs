//! The sync delay: a FIFO that releases each endpoint change a fixed time after it was observed.
//!
//! Kubernetes counterpart: none in kube-proxy itself. It stands for the slow consumers of seed 003
//! ("Making K8s shutdowns more graceful", docs/seeds.md)
//! (an external load balancer or an operator that batches its updates), and for kube-proxy's own
//! `minSyncPeriod`, where "each individual change may end up waiting up to the full minSyncPeriod".
//! With `--sync-delay 2s`, a pod removed from the Endpoints is still picked by the proxy for two
//! seconds, which is the window in which the deletion race drops requests.
//!
//! Every change waits the same delay, so release order is arrival order and a `VecDeque` is all
//! the queue needs. The loop that owns it keeps serving Service changes and shutdown while a change
//! waits: [`SyncDelayQueue::next`] is one branch of its `tokio::select!`, not a blocking sleep.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// A queue whose items come out `delay` after they went in, in the order they went in.
#[derive(Debug)]
pub struct SyncDelayQueue<T> {
    delay: Duration,
    items: VecDeque<(Instant, T)>,
}

impl<T> SyncDelayQueue<T> {
    /// An empty queue holding each item back for `delay` (zero releases at once).
    pub fn new(delay: Duration) -> Self {
        SyncDelayQueue {
            delay,
            items: VecDeque::new(),
        }
    }

    /// Queues an item observed now.
    pub fn push(&mut self, item: T) {
        self.push_observed_at(item, Instant::now());
    }

    /// Queues an item observed at `observed`; it is due at `observed + delay`.
    pub fn push_observed_at(&mut self, item: T, observed: Instant) {
        self.items.push_back((observed + self.delay, item));
    }

    /// How many items wait.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Waits until the oldest item is due and returns it; pending forever while the queue is empty.
    ///
    /// Cancel safe: the item is removed only after the wait completed, with no `.await` after it, so
    /// dropping this future in a `select!` loses nothing.
    pub async fn next(&mut self) -> T {
        let Some((due, _)) = self.items.front() else {
            return std::future::pending().await;
        };
        tokio::time::sleep_until(*due).await;
        match self.items.pop_front() {
            Some((_, item)) => item,
            // Unreachable: the front was present before the sleep and only `&mut self` can pop it.
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn items_come_out_after_the_delay_in_arrival_order() {
        let delay = Duration::from_secs(2);
        let mut queue = SyncDelayQueue::new(delay);
        let start = Instant::now();
        queue.push("a");
        tokio::time::advance(Duration::from_millis(500)).await;
        queue.push("b");
        queue.push("c");
        assert_eq!(queue.next().await, "a");
        assert_eq!(Instant::now() - start, delay);
        assert_eq!(queue.next().await, "b");
        assert_eq!(Instant::now() - start, delay + Duration::from_millis(500));
        assert_eq!(queue.next().await, "c");
        assert_eq!(Instant::now() - start, delay + Duration::from_millis(500));
        assert!(queue.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn zero_delay_releases_at_once() {
        let mut queue = SyncDelayQueue::new(Duration::ZERO);
        let start = Instant::now();
        queue.push(1);
        queue.push(2);
        assert_eq!(queue.next().await, 1);
        assert_eq!(queue.next().await, 2);
        assert_eq!(Instant::now(), start);
    }

    #[tokio::test(start_paused = true)]
    async fn empty_queue_waits_and_a_cancelled_wait_loses_nothing() {
        let mut queue = SyncDelayQueue::new(Duration::from_secs(1));
        let waited = tokio::time::timeout(Duration::from_secs(60), queue.next()).await;
        assert!(waited.is_err(), "an empty queue never yields");
        queue.push(7);
        let early = tokio::time::timeout(Duration::from_millis(10), queue.next()).await;
        assert!(early.is_err(), "not due yet");
        assert_eq!(queue.len(), 1, "the cancelled wait kept the item");
        assert_eq!(queue.next().await, 7);
    }
}
