//! `--sync-delay`: each EndpointSlice change is applied that long after it was observed, while Service
//! changes go through at once.

use std::time::{Duration, Instant};

use futures::channel::mpsc;
use minik_api::core::Service;
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_proxy::state::ProxyState;
use minik_proxy::sync::{sync_loop, Change};
use tokio_util::sync::CancellationToken;

use crate::support::*;

/// A slice change sent at t0 is applied at t0 + delay (within scheduling noise), and a Service
/// change sent after it is applied before it: the delay queues, it does not block the loop.
#[tokio::test]
async fn the_sync_delay_holds_an_endpoints_change_back_by_the_delay() {
    let delay = Duration::from_millis(400);
    let backend = Backend::start("127.244.9.41").await;
    let mut harness = Harness::new();
    let state = harness.state.clone();
    let shutdown = harness.shutdown.clone();
    let stop_token = harness.shutdown.clone();
    let (services_tx, services_rx) = mpsc::unbounded::<Change<Service>>();
    let (endpoints_tx, endpoints_rx) = mpsc::unbounded::<Change<EndpointSlice>>();
    let mut applied = state.subscribe_applied();
    let sync = tokio::spawn(async move {
        sync_loop(
            &mut harness.proxier,
            services_rx,
            endpoints_rx,
            delay,
            shutdown,
        )
        .await;
        harness
    });

    let sent = Instant::now();
    endpoints_tx
        .unbounded_send(Change::Applied(slice("slow", backend.address)))
        .unwrap();
    services_tx
        .unbounded_send(Change::Applied(service("slow", "127.96.250.11", 18080)))
        .unwrap();

    let listen = tokio::time::timeout(PATIENCE, state.wait_for_listener(&port_name("slow")))
        .await
        .expect("the listener opened");
    let listener_opened = sent.elapsed();
    assert!(
        listener_opened < delay,
        "the Service waited behind the slice: {listener_opened:?}"
    );
    // Until the delay has passed the port has no endpoint: connections are closed at once.
    assert_eq!(greeting(listen).await, None);

    let change = tokio::time::timeout(PATIENCE, applied.recv())
        .await
        .expect("applied")
        .unwrap();
    let waited = sent.elapsed();
    assert_eq!(change.endpoints, vec![backend.address]);
    assert!(
        waited >= delay,
        "applied after {waited:?}, before the delay"
    );
    assert!(
        waited < delay + Duration::from_millis(200),
        "applied late: {waited:?}"
    );
    assert_eq!(
        greeting(listen).await,
        Some(format!("hello from {}", backend.address))
    );

    stop(sync, stop_token, &state).await;
}

/// Two changes in a row come out in order, each after its own delay.
#[tokio::test]
async fn delayed_endpoints_changes_are_applied_in_order() {
    let delay = Duration::from_millis(200);
    let a = Backend::start("127.244.9.42").await;
    let b = Backend::start("127.244.9.43").await;
    let mut harness = Harness::new();
    let state = harness.state.clone();
    let shutdown = harness.shutdown.clone();
    let stop_token = harness.shutdown.clone();
    let (_services_tx, services_rx) = mpsc::unbounded::<Change<Service>>();
    let (endpoints_tx, endpoints_rx) = mpsc::unbounded::<Change<EndpointSlice>>();
    let mut applied = state.subscribe_applied();
    let sync = tokio::spawn(async move {
        sync_loop(
            &mut harness.proxier,
            services_rx,
            endpoints_rx,
            delay,
            shutdown,
        )
        .await;
        harness
    });

    endpoints_tx
        .unbounded_send(Change::Applied(slice("order", a.address)))
        .unwrap();
    endpoints_tx
        .unbounded_send(Change::Applied(slice("order", b.address)))
        .unwrap();
    endpoints_tx
        .unbounded_send(Change::Deleted(slice("order", b.address)))
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let change = tokio::time::timeout(PATIENCE, applied.recv())
            .await
            .expect("applied");
        seen.push(change.unwrap().endpoints);
    }
    assert_eq!(seen, vec![vec![a.address], vec![b.address], vec![]]);

    stop(sync, stop_token, &state).await;
}

/// Cancels the loop and checks that it returned, having closed every listener.
async fn stop(
    sync: tokio::task::JoinHandle<Harness>,
    shutdown: CancellationToken,
    state: &ProxyState,
) {
    shutdown.cancel();
    let harness = tokio::time::timeout(PATIENCE, sync)
        .await
        .expect("the loop stopped")
        .unwrap();
    assert!(state.proxies().is_empty(), "listeners closed on shutdown");
    drop(harness);
}
