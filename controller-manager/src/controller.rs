//! The [`Controller`] trait and the workers that drain a controller's work queue.
//!
//! Kubernetes counterpart: every controller's `Run(ctx, workers)`, `worker`, `processNextWorkItem`
//! and `handleErr` (e.g. `pkg/controller/deployment/deployment_controller.go`): wait for the
//! informers' caches to sync, then N workers take keys, call `sync(key)`, and on error put the key
//! back rate-limited (5 ms, 10 ms, 20 ms … per key) until [`MAX_RETRIES`], after which it is dropped
//! until its next event.
//!
//! A controller is a struct that registered its event handlers on the [`SharedInformers`] in its
//! constructor, owns a [`WorkQueue`], and knows how to sync one key. That is all a new controller
//! (Jobs, DaemonSets…) has to provide to run beside the others.

use std::fmt::Display;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use minik_client::WorkQueue;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::informers::SharedInformers;

/// A key that failed this many syncs in a row is dropped until its next event (upstream value).
pub const MAX_RETRIES: u32 = 15;

/// One controller: a work queue of keys and a `sync` that reconciles one key from the stores.
pub trait Controller: Send + Sync + 'static {
    /// What the queue holds: `namespace/name` for most controllers, a uid for the GC.
    type Key: Clone + Eq + Hash + Display + Send + Sync + 'static;

    /// The name in logs (`replicaset`, `deployment`, `garbagecollector`).
    fn name(&self) -> &'static str;

    /// The controller's queue, which its event handlers fill.
    fn queue(&self) -> &Arc<WorkQueue<Self::Key>>;

    /// Reconciles `key`; an error puts it back after a backoff.
    fn sync(&self, key: &Self::Key) -> impl Future<Output = minik_client::Result<()>> + Send;
}

/// Runs `controller`'s workers once the informers it registered on have synced; the future ends
/// after `shutdown`, once every worker stopped.
pub fn spawn<C: Controller>(
    controller: Arc<C>,
    informers: &SharedInformers,
    workers: usize,
    shutdown: CancellationToken,
) -> BoxFuture<'static, ()> {
    let synced = informers.wait_for_sync();
    async move {
        let tasks = TaskTracker::new();
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = synced => {
                info!(controller = controller.name(), workers, "caches synced; starting workers");
                for _ in 0..workers.max(1) {
                    tasks.spawn(worker(controller.clone(), shutdown.clone()));
                }
                shutdown.cancelled().await;
            }
        }
        controller.queue().shut_down();
        tasks.close();
        tasks.wait().await;
    }
    .boxed()
}

/// Takes keys off the queue and syncs them, one at a time, until shutdown.
async fn worker<C: Controller>(controller: Arc<C>, shutdown: CancellationToken) {
    let queue = controller.queue().clone();
    loop {
        let key = tokio::select! {
            _ = shutdown.cancelled() => break,
            key = queue.get() => match key {
                Some(key) => key,
                None => break,
            },
        };
        let result = tokio::select! {
            _ = shutdown.cancelled() => break,
            result = controller.sync(&key) => result,
        };
        match result {
            Ok(()) => queue.forget(&key),
            Err(error) if queue.num_requeues(&key) >= MAX_RETRIES => {
                warn!(controller = controller.name(), %key, %error, "dropping key out of the queue");
                queue.forget(&key);
            }
            Err(error) => {
                debug!(controller = controller.name(), %key, %error, "sync failed; retrying");
                queue.add_rate_limited(key.clone());
            }
        }
        queue.done(&key);
    }
}
