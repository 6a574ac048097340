//! What only the etcd backend promises: two apiservers' stores on one etcd see each other's
//! writes, watches and compare-and-swap, and each keeps to its own key prefix.
//!
//! Kubernetes counterpart: the HA control plane, several kube-apiservers on one etcd cluster, each
//! with its own watch cache; `--etcd-prefix` separating clusters that share an etcd.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::etcd::EtcdStorage;
use super::etcd_server::EtcdServer;
use super::{Error, EventType, Storage};

const WAIT: Duration = Duration::from_secs(10);

async fn store(server: &EtcdServer, prefix: &str, stop: &CancellationToken) -> EtcdStorage {
    EtcdStorage::connect(&server.endpoint, prefix, 100, stop.clone())
        .await
        .expect("connect")
}

#[tokio::test]
async fn two_stores_on_one_etcd_share_objects_watches_and_revisions() {
    let Some(server) = EtcdServer::start("two_stores_on_one_etcd").await else {
        return;
    };
    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    let (a, b) = (
        store(&server, "", &stop).await,
        store(&server, "", &stop).await,
    );
    let mut watch_b = b
        .watch("/registry/", b.current_revision())
        .expect("watch on b");

    let key = "/registry/configmaps/default/shared";
    let created = a
        .create(key, json!({"metadata": {"name": "shared"}}))
        .await
        .expect("create on a");
    let event = tokio::time::timeout(WAIT, watch_b.next())
        .await
        .expect("b's watch sees a's write")
        .expect("event")
        .expect("ok");
    assert_eq!(
        (event.event_type, event.revision),
        (EventType::Added, created.revision)
    );
    assert_eq!(
        b.get(key).expect("get").map(|r| r.revision),
        Some(created.revision)
    );

    // b writes on a's revision; a's write on the same revision now conflicts.
    let updated = b.update(
        key,
        json!({"metadata": {"name": "shared"}}),
        Some(created.revision),
    );
    let updated = updated.await.expect("update on b");
    match a.update(key, json!({}), Some(created.revision)).await {
        Err(Error::Conflict { actual, .. }) => assert_eq!(actual, updated.revision),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert!(matches!(
        a.create(key, json!({})).await,
        Err(Error::AlreadyExists(_))
    ));
}

#[tokio::test]
async fn stores_with_different_prefixes_do_not_see_each_other() {
    let Some(server) = EtcdServer::start("stores_with_different_prefixes").await else {
        return;
    };
    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    let (a, b) = (
        store(&server, "/a", &stop).await,
        store(&server, "/b", &stop).await,
    );
    let key = "/registry/configmaps/default/x";
    a.create(key, json!({})).await.expect("create in a");
    b.create(key, json!({}))
        .await
        .expect("the same key in b is free");
    assert_eq!(a.list("/registry/").expect("list a").0.len(), 1);
    assert_eq!(b.list("/registry/").expect("list b").0.len(), 1);
}

/// A watch resumed on the other apiserver's store from the last revision seen on the first gets
/// exactly the later events, once each and in order, even those written before it resumed.
#[tokio::test]
async fn a_watch_resumed_on_another_store_misses_and_repeats_nothing() {
    let Some(server) = EtcdServer::start("a_watch_resumed_on_another_store").await else {
        return;
    };
    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    let (a, b) = (
        store(&server, "", &stop).await,
        store(&server, "", &stop).await,
    );
    let key = |i: usize| format!("/registry/configmaps/default/m{i}");
    let mut on_a = a
        .watch("/registry/", a.current_revision())
        .expect("watch a");
    let mut written = Vec::new();
    for i in 0..4 {
        written.push(a.create(&key(i), json!({})).await.expect("create").revision);
    }
    let mut last = 0;
    for _ in 0..2 {
        let event = tokio::time::timeout(WAIT, on_a.next())
            .await
            .expect("event");
        last = event.expect("some").expect("ok").revision;
    }
    drop(on_a); // its apiserver "died" after two events
    for i in 4..6 {
        written.push(b.create(&key(i), json!({})).await.expect("create").revision);
    }
    let mut on_b = b.watch("/registry/", last).expect("resume on b");
    let mut resumed = Vec::new();
    while resumed.len() < 4 {
        let event = tokio::time::timeout(WAIT, on_b.next())
            .await
            .expect("event");
        resumed.push(event.expect("some").expect("ok").revision);
    }
    assert_eq!(resumed, written[2..]);
}
