//! The sync loop: Service changes go to the proxier at once, EndpointSlice changes after the sync
//! delay.
//!
//! Kubernetes counterpart: `pkg/proxy/config/config.go` (`ServiceConfig` / `EndpointSliceConfig`,
//! the informer handlers that call the proxier's `OnServiceUpdate` / `OnEndpointSliceUpdate`) and
//! the proxier's `syncRunner`, which batched changes no more often than `minSyncPeriod`.
//!
//! The loop is one `tokio::select!` over four sources: shutdown, the Service watch, the
//! EndpointSlice watch, and the [`SyncDelayQueue`] of slice changes waiting for their turn. Because
//! the queue is just another branch, a change that waits for its delay blocks nothing else:
//! Services keep being applied and newer slice changes keep being queued behind it, in order.
//!
//! The streams carry [`Change`]s, the watcher's vocabulary (`Applied`, `Deleted`, `Restarted` after
//! a relist), so tests can feed the loop from plain channels without an apiserver.

use std::time::Duration;

use futures::{Stream, StreamExt};
use minik_api::core::Service;
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::ObjectKey;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::delay::SyncDelayQueue;
use crate::proxier::Proxier;

/// One change observed by a watch (the shape of `minik_client::watcher::Event`).
#[derive(Clone, Debug)]
pub enum Change<K> {
    /// The object was added or modified.
    Applied(K),
    /// The object was deleted (its last known state).
    Deleted(K),
    /// The watch (re)listed: this is now the whole set.
    Restarted(Vec<K>),
}

/// Runs until `shutdown` fires, feeding `proxier` from the two streams. Slice changes are held
/// back `sync_delay` each (zero: applied as soon as they arrive). Returns after closing every
/// listener; established connections are the caller's to wait for.
pub async fn sync_loop<S, E>(
    proxier: &mut Proxier,
    services: S,
    endpoints: E,
    sync_delay: Duration,
    shutdown: CancellationToken,
) where
    S: Stream<Item = Change<Service>> + Unpin,
    E: Stream<Item = Change<EndpointSlice>> + Unpin,
{
    // Fused, so a stream that has ended keeps answering `None` (its branch is then skipped).
    let mut services = services.fuse();
    let mut endpoints = endpoints.fuse();
    let mut delayed = SyncDelayQueue::new(sync_delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            Some(change) = services.next() => sync_service(proxier, change),
            Some(change) = endpoints.next() => {
                debug!(waiting = delayed.len(), ?sync_delay, "queued endpointslice change");
                delayed.push(change);
            }
            change = delayed.next() => sync_endpoints(proxier, change),
        }
    }
    proxier.close_all();
}

/// Applies one Service change.
fn sync_service(proxier: &mut Proxier, change: Change<Service>) {
    match change {
        Change::Applied(service) => proxier.on_service_update(&service),
        Change::Deleted(service) => proxier.on_service_delete(&ObjectKey::of(&service.metadata)),
        Change::Restarted(services) => proxier.on_services_synced(&services),
    }
}

/// Applies one EndpointSlice change whose delay has passed.
fn sync_endpoints(proxier: &mut Proxier, change: Change<EndpointSlice>) {
    match change {
        Change::Applied(slice) => proxier.on_slices_update(std::slice::from_ref(&slice)),
        Change::Deleted(slice) => proxier.on_slice_delete(&slice),
        Change::Restarted(all) => proxier.on_slices_synced(&all),
    }
}
