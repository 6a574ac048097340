//! The whole proxy against a real apiserver (in-process, in-memory storage): Services and
//! EndpointSlices arrive through list + watch, and each applied change becomes an `EndpointsApplied`
//! Event on the Service.

use std::sync::Arc;

use futures::StreamExt;
use minik_api::core::{Event, Service};
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_client::{Api, Client, DeleteParams, ListParams};
use minik_proxy::state::ProxyState;
use minik_proxy::Config;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::support::*;

/// Starts an apiserver on 127.0.0.1:0 and returns its URL; it stops with `shutdown`.
async fn start_apiserver(shutdown: CancellationToken) -> String {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind apiserver");
    let url = format!("http://{}", listener.local_addr().unwrap());
    let backend = minik_apiserver::StorageBackend::memory(1000);
    tokio::spawn(minik_apiserver::serve(listener, backend, shutdown));
    url
}

/// Waits (on a watch) for the first Event with `reason` and returns it.
async fn wait_for_event(client: &Client, reason: &str) -> Event {
    let events = Api::<Event>::namespaced(client.clone(), "default");
    let stream = minik_client::watcher(events, ListParams::default());
    let found = stream.filter_map(|event| async move {
        let objects = match event.ok()? {
            minik_client::Event::Applied(event) => vec![event],
            minik_client::Event::Restarted(all) => all,
            minik_client::Event::Deleted(_) => vec![],
        };
        objects
            .into_iter()
            .find(|e| e.reason.as_deref() == Some(reason))
    });
    let mut found = Box::pin(found);
    tokio::time::timeout(PATIENCE, found.next())
        .await
        .expect("the event came")
        .expect("stream")
}

/// A Service and its EndpointSlice created through the API get a listener on `clusterIP:port`,
/// traffic flows to the endpoint, the change is published as an Event, and deleting the slice
/// empties the port. `serve` returns once shut down.
#[tokio::test]
async fn the_proxy_follows_services_and_endpoints_through_the_apiserver() {
    let shutdown = CancellationToken::new();
    let server = start_apiserver(shutdown.child_token()).await;
    let client = Client::new(&server).expect("client");
    let backend = Backend::start("127.244.9.71").await;

    let state = Arc::new(ProxyState::default());
    let metrics = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind metrics");
    let config = Config {
        server: server.clone(),
        ..Config::default()
    };
    let proxy = tokio::spawn(minik_proxy::serve(
        config,
        metrics,
        state.clone(),
        shutdown.clone(),
    ));

    let mut applied = state.subscribe_applied();
    let services = Api::<Service>::namespaced(client.clone(), "default");
    services
        .create(&service("api", "127.96.250.41", 18080))
        .await
        .expect("create service");
    let slices = Api::<EndpointSlice>::namespaced(client.clone(), "default");
    slices
        .create(&slice("api", backend.address))
        .await
        .expect("create endpointslice");

    let listen = tokio::time::timeout(PATIENCE, state.wait_for_listener(&port_name("api")))
        .await
        .expect("the proxy opened the service port");
    assert_eq!(listen, "127.96.250.41:18080".parse().unwrap());
    let change = tokio::time::timeout(PATIENCE, applied.recv())
        .await
        .expect("applied")
        .unwrap();
    assert_eq!(change.endpoints, vec![backend.address]);
    assert_eq!(
        greeting(listen).await,
        Some(format!("hello from {}", backend.address))
    );

    let event = wait_for_event(&client, "EndpointsApplied").await;
    let expected = format!(
        "Applied endpoints for default/api:http: {}",
        backend.address
    );
    assert_eq!(event.message.as_deref(), Some(expected.as_str()));
    assert_eq!(event.involved_object.kind.as_deref(), Some("Service"));
    assert_eq!(event.involved_object.name.as_deref(), Some("api"));
    assert_eq!(event.reporting_component.as_deref(), Some("proxy"));
    assert!(event.event_time.is_some(), "sub-second eventTime");

    slices
        .delete("api-0", &DeleteParams::default())
        .await
        .expect("delete endpointslice");
    let change = tokio::time::timeout(PATIENCE, applied.recv())
        .await
        .expect("applied")
        .unwrap();
    assert!(change.endpoints.is_empty());
    assert_eq!(greeting(listen).await, None, "no endpoints: closed at once");

    shutdown.cancel();
    let stopped = tokio::time::timeout(PATIENCE, proxy)
        .await
        .expect("serve returned");
    stopped.expect("proxy task").expect("proxy result");
    assert!(state.proxies().is_empty());
}
