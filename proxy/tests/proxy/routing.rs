//! Where the proxy sends connections, and what it does when it cannot.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use minik_proxy::proxier::ProxierConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::*;

/// Six connections to a service of three backends reach each backend exactly twice.
#[tokio::test]
async fn traffic_reaches_every_backend_round_robin() {
    let backends = [
        Backend::start("127.244.9.1").await,
        Backend::start("127.244.9.2").await,
        Backend::start("127.244.9.3").await,
    ];
    let addresses: Vec<_> = backends.iter().map(|b| b.address).collect();
    let mut harness = Harness::new();
    harness
        .proxier
        .on_service_update(&service("rr", "127.96.250.1", 18080));
    harness.proxier.on_slices_update(&slices("rr", &addresses));
    let listen = harness.state.wait_for_listener(&port_name("rr")).await;
    assert_eq!(
        listen,
        "127.96.250.1:18080".parse().unwrap(),
        "listens on clusterIP:port"
    );

    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..6 {
        let line = greeting(listen).await.expect("a backend answered");
        *seen.entry(line).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = addresses
        .iter()
        .map(|a| (format!("hello from {a}"), 2))
        .collect();
    assert_eq!(seen, expected);
    let counts = harness.state.metrics.snapshot()[&port_name("rr")];
    assert_eq!(counts.connections, 6);
}

/// A dial to a dead endpoint fails fast and the proxy moves on to a live one: no client notices.
#[tokio::test]
async fn a_dead_backend_is_skipped() {
    let live = Backend::start("127.244.9.11").await;
    let dead = dead_address("127.244.9.12").await;
    let mut harness = Harness::new();
    harness
        .proxier
        .on_service_update(&service("skip", "127.96.250.2", 18080));
    harness
        .proxier
        .on_slices_update(&slices("skip", &[live.address, dead]));
    let listen = harness.state.wait_for_listener(&port_name("skip")).await;

    for _ in 0..4 {
        let line = greeting(listen).await.expect("the live backend answered");
        assert_eq!(line, format!("hello from {}", live.address));
    }
    let counts = harness.state.metrics.snapshot()[&port_name("skip")];
    // A failed dial advances the rotation too, so after the first connection every connection
    // starts on the dead endpoint: 3 failures if the shuffle put the live one first, else 4.
    assert!(
        (3..=4).contains(&counts.dial_failures),
        "{} failures",
        counts.dial_failures
    );
}

/// With `dial_attempts = 1` (a consumer that does not retry) a pick of the dead endpoint fails.
#[tokio::test]
async fn a_single_dial_attempt_does_not_retry() {
    let live = Backend::start("127.244.9.13").await;
    let dead = dead_address("127.244.9.14").await;
    let config = ProxierConfig {
        dial_attempts: 1,
        ..ProxierConfig::default()
    };
    let mut harness = Harness::with_config(config);
    harness
        .proxier
        .on_service_update(&service("noretry", "127.96.250.3", 18080));
    harness
        .proxier
        .on_slices_update(&slices("noretry", &[live.address, dead]));
    let listen = harness.state.wait_for_listener(&port_name("noretry")).await;

    let mut outcomes = Vec::new();
    for _ in 0..4 {
        outcomes.push(greeting(listen).await.is_some());
    }
    assert_eq!(
        outcomes.iter().filter(|ok| **ok).count(),
        2,
        "outcomes: {outcomes:?}"
    );
}

/// A service port without endpoints closes each connection at once.
#[tokio::test]
async fn no_endpoints_closes_the_connection_at_once() {
    let mut harness = Harness::new();
    harness
        .proxier
        .on_service_update(&service("empty", "127.96.250.4", 18080));
    let listen = harness.state.wait_for_listener(&port_name("empty")).await;

    let started = Instant::now();
    let mut stream = TcpStream::connect(listen)
        .await
        .expect("the listener accepts");
    let mut buffer = [0u8; 16];
    let read = tokio::time::timeout(PATIENCE, stream.read(&mut buffer))
        .await
        .expect("closed");
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "closed without data: {read:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(
        harness.state.metrics.snapshot()[&port_name("empty")].no_endpoints,
        1
    );
}

/// New connections follow an endpoint change; an established connection to a removed endpoint
/// keeps working (it ends when its peers close it, as conntrack would have it).
#[tokio::test]
async fn endpoint_changes_move_new_connections_but_keep_established_ones() {
    let first = Backend::start("127.244.9.21").await;
    let second = Backend::start("127.244.9.22").await;
    let mut harness = Harness::new();
    harness
        .proxier
        .on_service_update(&service("move", "127.96.250.5", 18080));
    harness
        .proxier
        .on_slices_update(&slices("move", &[first.address]));
    let listen = harness.state.wait_for_listener(&port_name("move")).await;

    let mut established = TcpStream::connect(listen).await.expect("connect");
    let line = read_line(&mut established).await.expect("greeting");
    assert_eq!(line, format!("hello from {}", first.address));

    harness
        .proxier
        .on_slices_update(&slices("move", &[second.address]));
    for _ in 0..3 {
        let line = greeting(listen).await.expect("greeting");
        assert_eq!(line, format!("hello from {}", second.address));
    }
    established.write_all(b"still here\n").await.expect("write");
    assert_eq!(
        read_line(&mut established).await.as_deref(),
        Some("still here")
    );

    let applied = harness.state.applied();
    assert_eq!(applied.len(), 2);
    assert_eq!(applied[1].endpoints, vec![second.address]);
}

/// When `clusterIP:port` is taken, the proxy listens on 127.0.0.1 in the node-port range instead,
/// says so in its state, and traffic flows through the fallback.
#[tokio::test]
async fn a_taken_cluster_address_falls_back_to_a_loopback_node_port() {
    let squatter = TcpListener::bind("127.96.250.6:18080")
        .await
        .expect("occupy the address");
    let backend = Backend::start("127.244.9.31").await;
    let config = ProxierConfig {
        node_port_range: 41000..=41999,
        ..ProxierConfig::default()
    };
    let mut harness = Harness::with_config(config);
    harness
        .proxier
        .on_service_update(&service("taken", "127.96.250.6", 18080));
    harness
        .proxier
        .on_slices_update(&slices("taken", &[backend.address]));
    let listen = harness.state.wait_for_listener(&port_name("taken")).await;

    let info = &harness.state.proxies()["default/taken:http"];
    assert!(info.fallback);
    assert_eq!(info.cluster_address, squatter.local_addr().unwrap());
    assert_eq!(listen.ip().to_string(), "127.0.0.1");
    assert!(
        (41000..=41999).contains(&listen.port()),
        "port {}",
        listen.port()
    );
    assert_eq!(
        greeting(listen).await,
        Some(format!("hello from {}", backend.address))
    );
}

/// Headless services (`clusterIP: None`) are not proxied.
#[tokio::test]
async fn a_headless_service_gets_no_listener() {
    let mut harness = Harness::new();
    harness
        .proxier
        .on_service_update(&service("headless", "None", 18080));
    assert!(harness.state.proxies().is_empty());
}

/// Deleting the Service closes its listener.
#[tokio::test]
async fn deleting_a_service_closes_its_listener() {
    let mut harness = Harness::new();
    let svc = service("gone", "127.96.250.7", 18080);
    harness.proxier.on_service_update(&svc);
    let listen = harness.state.wait_for_listener(&port_name("gone")).await;
    harness
        .proxier
        .on_service_delete(&minik_api::ObjectKey::new("default", "gone"));
    assert!(harness.state.proxies().is_empty());
    // The accept loop stops on its token; once it has dropped the socket, connects are refused.
    let refused = tokio::time::timeout(PATIENCE, async {
        loop {
            match TcpStream::connect(listen).await {
                Err(_) => break,
                Ok(_) => tokio::task::yield_now().await,
            }
        }
    })
    .await;
    assert!(refused.is_ok(), "the listener was closed");
}

/// A relist that repeats unchanged slices applies nothing new (no log, no record, no Event), and
/// one that lacks the service's slices empties its ports.
#[tokio::test]
async fn a_relist_records_only_real_changes() {
    let backend = Backend::start("127.244.9.81").await;
    let mut harness = Harness::new();
    harness
        .proxier
        .on_service_update(&service("relist", "127.96.250.8", 18080));
    let objects = slices("relist", &[backend.address]);
    harness.proxier.on_slices_synced(&objects);
    harness.proxier.on_slices_synced(&objects);
    assert_eq!(
        harness.state.applied().len(),
        1,
        "the repeat changed nothing"
    );

    harness.proxier.on_slices_synced(&[]);
    let applied = harness.state.applied();
    assert_eq!(applied.len(), 2);
    assert!(
        applied[1].endpoints.is_empty(),
        "gone from the relist: no endpoints"
    );
    let listen = harness.state.wait_for_listener(&port_name("relist")).await;
    assert_eq!(greeting(listen).await, None);
}

/// Renaming a service port keeps its address: the socket is handed over to the new name, with no
/// fallback and no refused connection.
#[tokio::test]
async fn a_renamed_port_keeps_its_cluster_address() {
    let backend = Backend::start("127.244.9.91").await;
    let mut harness = Harness::new();
    harness
        .proxier
        .on_service_update(&service("rename", "127.96.250.9", 18080));
    harness.state.wait_for_listener(&port_name("rename")).await;

    let mut renamed = service("rename", "127.96.250.9", 18080);
    let ports = renamed
        .spec
        .as_mut()
        .and_then(|spec| spec.ports.as_mut())
        .expect("ports");
    ports[0].name = Some("web".into());
    harness.proxier.on_service_update(&renamed);
    let mut renamed_slice = slice("rename", backend.address);
    for port in renamed_slice.ports.iter_mut().flatten() {
        port.name = Some("web".into());
    }
    harness.proxier.on_slices_update(&[renamed_slice]);

    let proxies = harness.state.proxies();
    assert_eq!(proxies.keys().collect::<Vec<_>>(), ["default/rename:web"]);
    let info = &proxies["default/rename:web"];
    assert!(!info.fallback);
    assert_eq!(info.listen_address, "127.96.250.9:18080".parse().unwrap());
    let line = greeting(info.listen_address).await;
    assert_eq!(line, Some(format!("hello from {}", backend.address)));
}

/// A Service's slices are merged: deleting one slice leaves the endpoints of the others, and a
/// slice whose only endpoint is terminating but still serving keeps traffic while nothing is ready.
#[tokio::test]
async fn slices_of_one_service_are_merged_and_terminating_endpoints_are_the_last_resort() {
    let first = Backend::start("127.244.9.101").await;
    let second = Backend::start("127.244.9.102").await;
    let mut harness = Harness::new();
    harness
        .proxier
        .on_service_update(&service("merge", "127.96.250.10", 18080));
    let both = slices("merge", &[first.address, second.address]);
    harness.proxier.on_slices_update(&both);
    harness.proxier.on_slice_delete(&both[1]);
    let applied = harness.state.applied();
    assert_eq!(applied.last().unwrap().endpoints, vec![first.address]);

    let mut draining = both[0].clone();
    draining.endpoints[0].conditions = serde_json::from_value(
        serde_json::json!({"ready": false, "serving": true, "terminating": true}),
    )
    .unwrap();
    harness.proxier.on_slices_update(&[draining]);
    let listen = harness.state.wait_for_listener(&port_name("merge")).await;
    assert_eq!(
        greeting(listen).await,
        Some(format!("hello from {}", first.address)),
        "no ready endpoint left: the serving terminating one still answers"
    );
}
