//! The client library against a real apiserver: the watcher and store every component relies on.

use std::time::Duration;

use futures::StreamExt;
use minik_api::core::Pod;
use minik_api::ObjectKey;
use minik_client::store::store;
use minik_client::{reflector, watcher, Api, DeleteParams, Event, ListParams};

use crate::Server;

fn pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"app": "w"}},
        "spec": {"containers": [{"name": "main", "image": "nginx"}]},
    }))
    .unwrap()
}

/// A reflector's store holds what exists after the first list, then follows creates and deletes.
#[tokio::test(flavor = "multi_thread")]
async fn reflector_store_follows_creates_and_deletes() {
    let server = Server::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client.clone(), "default");
    pods.create(&pod("before")).await.unwrap();
    let (reader, writer) = store::<Pod>();
    let mut events = Box::pin(reflector(
        writer,
        watcher(pods.clone(), ListParams::default().labels("app=w")),
    ));
    assert!(matches!(next(&mut events).await, Event::Restarted(pods) if pods.len() == 1));
    reader.wait_until_ready().await;
    assert!(reader.get(&ObjectKey::new("default", "before")).is_some());
    pods.create(&pod("after")).await.unwrap();
    assert!(
        matches!(next(&mut events).await, Event::Applied(p) if p.metadata.name.as_deref() == Some("after"))
    );
    assert!(reader.get(&ObjectKey::new("default", "after")).is_some());
    pods.delete("before", &DeleteParams::default())
        .await
        .unwrap();
    // As upstream, a pod deleted without grace is first marked (deletionTimestamp), then removed.
    assert!(
        matches!(next(&mut events).await, Event::Applied(p) if p.metadata.deletion_timestamp.is_some())
    );
    assert!(
        matches!(next(&mut events).await, Event::Deleted(p) if p.metadata.name.as_deref() == Some("before"))
    );
    assert!(reader.get(&ObjectKey::new("default", "before")).is_none());
    assert_eq!(reader.len(), 1);
}

/// The watcher's next event, within 10 s.
async fn next(
    events: &mut (impl futures::Stream<Item = minik_client::Result<Event<Pod>>> + Unpin),
) -> Event<Pod> {
    tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("an event in time")
        .expect("stream not ended")
        .expect("no error")
}

/// Typed errors: get_opt maps 404 to None, a duplicate create is AlreadyExists, a stale replace is Conflict.
#[tokio::test(flavor = "multi_thread")]
async fn api_errors_are_typed() {
    let server = Server::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client.clone(), "default");
    assert!(pods.get_opt("nope").await.unwrap().is_none());
    assert!(pods.get("nope").await.unwrap_err().is_not_found());
    let created = pods.create(&pod("web")).await.unwrap();
    assert!(pods
        .create(&pod("web"))
        .await
        .unwrap_err()
        .is_already_exists());
    let mut changed = created.clone();
    changed.metadata.labels = Some([("app".to_string(), "x".to_string())].into());
    pods.replace("web", &changed).await.unwrap();
    assert!(
        pods.replace("web", &changed)
            .await
            .unwrap_err()
            .is_conflict(),
        "the second replace carries a stale resourceVersion"
    );
}

/// A watch from a resourceVersion older than the server's history is refused with 410 Gone,
/// which is what makes a watcher relist.
#[tokio::test(flavor = "multi_thread")]
async fn watch_from_a_compacted_version_is_gone() {
    let server = Server::start_with_window(5).await;
    let pods: Api<Pod> = Api::namespaced(server.client.clone(), "default");
    for index in 0..20 {
        pods.create(&pod(&format!("p{index}"))).await.unwrap();
    }
    let gone = match pods.watch(&ListParams::default(), "1").await {
        Err(error) => error.is_gone(),
        Ok(mut events) => {
            match tokio::time::timeout(Duration::from_secs(10), events.next()).await {
                Ok(Some(Ok(minik_api::WatchEvent::Error(status)))) => status.code == Some(410),
                other => panic!("expected a 410 ERROR event, got {other:?}"),
            }
        }
    };
    assert!(gone);
}
