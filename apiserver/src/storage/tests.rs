//! The storage conformance suite: every backend must pass the same tests.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/storage/testing/store_tests.go` and
//! `watcher_tests.go`, which run one suite against etcd3 and the watch cache alike. The watch
//! tests check etcd's promises (docs/reliability.md#watch-properties): ordered, unique, no gaps,
//! resumable from a revision in the window, 410 (`Expired`) before it, slow watchers cut instead of
//! waited on.
//!
//! `conformance!(module, factory)` stamps out one `#[tokio::test]` per case for a backend.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use super::etcd::EtcdStorage;
use super::etcd_server::EtcdServer;
use super::memory::MemoryStorage;
use super::sled::SledStorage;
use super::{Error, EventType, Revision, Storage, WatchStream};

/// A backend under test plus whatever must outlive it (the sled directory, the etcd server and
/// the token that stops the etcd mirror's watch; fields drop in this order).
pub(super) struct Fixture {
    pub storage: Arc<dyn Storage>,
    pub _dir: Option<tempfile::TempDir>,
    pub _stop: Option<tokio_util::sync::DropGuard>,
    pub _etcd: Option<EtcdServer>,
}

impl Fixture {
    fn new(storage: Arc<dyn Storage>) -> Self {
        Fixture {
            storage,
            _dir: None,
            _stop: None,
            _etcd: None,
        }
    }
}

pub(super) async fn memory(_: &str, window: usize, buffer: usize) -> Option<Fixture> {
    let storage = MemoryStorage::with_watcher_buffer(window, buffer);
    Some(Fixture::new(Arc::new(storage)))
}

pub(super) async fn sled(_: &str, window: usize, buffer: usize) -> Option<Fixture> {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage = SledStorage::open_with(dir.path(), window, buffer).expect("open sled");
    Some(Fixture {
        _dir: Some(dir),
        ..Fixture::new(Arc::new(storage))
    })
}

/// A fresh etcd per test (`None`, after a SKIPPED line, where etcd is not installed), with the
/// keys under a prefix as `--storage etcd://HOST:PORT/conformance` would put them.
pub(super) async fn etcd(test: &str, window: usize, buffer: usize) -> Option<Fixture> {
    let server = EtcdServer::start(test).await?;
    let stop = tokio_util::sync::CancellationToken::new();
    let storage = EtcdStorage::connect_with(
        &server.endpoint,
        "/conformance",
        window,
        buffer,
        stop.clone(),
    )
    .await
    .expect("connect to etcd");
    Some(Fixture {
        _stop: Some(stop.drop_guard()),
        _etcd: Some(server),
        ..Fixture::new(Arc::new(storage))
    })
}

const WAIT: Duration = Duration::from_secs(10);

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}})
}

fn key(name: &str) -> String {
    format!("/registry/pods/default/{name}")
}

fn rv(value: &Value) -> &str {
    value["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("<none>")
}

/// The next `n` items of a watch, failing the test if they take longer than `WAIT`.
async fn take(stream: &mut WatchStream, n: usize) -> Vec<super::Result<super::Event>> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        match tokio::time::timeout(WAIT, stream.next()).await {
            Ok(Some(item)) => out.push(item),
            Ok(None) => panic!("watch ended after {} of {n} items", out.len()),
            Err(_) => panic!("timed out after {} of {n} watch items", out.len()),
        }
    }
    out
}

pub(super) async fn create_get_and_list_return_the_object_at_its_revision(f: Fixture) {
    let s = &f.storage;
    let a = s.create(&key("a"), pod("a")).await.expect("create a");
    let b = s.create(&key("b"), pod("b")).await.expect("create b");
    s.create("/registry/services/default/a", json!({"metadata": {}}))
        .await
        .expect("create svc");
    assert!(b.revision > a.revision);
    assert_eq!(rv(&a.value), a.revision.to_string());

    let got = s.get(&key("a")).expect("get").expect("a exists");
    assert_eq!(got, a);
    assert_eq!(s.get(&key("zzz")).expect("get missing"), None);

    let (items, revision) = s.list("/registry/pods/").expect("list");
    assert_eq!(
        items.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
        [key("a"), key("b")]
    );
    assert!(
        items.iter().all(|r| r.revision <= revision),
        "list revision {revision} below an item"
    );
    assert_eq!(revision, s.current_revision());
}

pub(super) async fn create_of_a_taken_key_fails_with_already_exists(f: Fixture) {
    let s = &f.storage;
    s.create(&key("a"), pod("a")).await.expect("create");
    let before = s.current_revision();
    let err = s
        .create(&key("a"), pod("a"))
        .await
        .expect_err("second create");
    assert!(matches!(err, Error::AlreadyExists(k) if k == key("a")));
    assert_eq!(
        s.current_revision(),
        before,
        "a failed write takes no revision"
    );
}

pub(super) async fn update_is_compare_and_swap_on_the_revision(f: Fixture) {
    let s = &f.storage;
    let created = s.create(&key("a"), pod("a")).await.expect("create");
    let updated = s
        .update(&key("a"), pod("a"), Some(created.revision))
        .await
        .expect("cas update");
    assert!(updated.revision > created.revision);
    let err = s
        .update(&key("a"), pod("a"), Some(created.revision))
        .await
        .expect_err("stale update");
    assert!(
        matches!(err, Error::Conflict { expected, actual, .. } if expected == created.revision && actual == updated.revision)
    );
    let forced = s
        .update(&key("a"), pod("a"), None)
        .await
        .expect("unconditional update");
    assert_eq!(s.get(&key("a")).expect("get"), Some(forced));
    let err = s
        .update(&key("nope"), pod("nope"), None)
        .await
        .expect_err("update missing");
    assert!(matches!(err, Error::NotFound(_)));
}

pub(super) async fn delete_checks_the_expected_revision_and_returns_the_last_state(f: Fixture) {
    let s = &f.storage;
    let created = s.create(&key("a"), pod("a")).await.expect("create");
    let err = s
        .delete(&key("a"), Some(created.revision + 100))
        .await
        .expect_err("stale delete");
    assert!(matches!(err, Error::Conflict { .. }));
    let deleted = s
        .delete(&key("a"), Some(created.revision))
        .await
        .expect("delete");
    assert!(deleted.revision > created.revision);
    assert_eq!(
        rv(&deleted.value),
        deleted.revision.to_string(),
        "carries the delete's revision"
    );
    assert_eq!(deleted.value["metadata"]["name"], "a");
    assert_eq!(s.get(&key("a")).expect("get"), None);
    assert!(matches!(
        s.delete(&key("a"), None).await,
        Err(Error::NotFound(_))
    ));
    let (items, revision) = s.list("/registry/").expect("list");
    assert!(items.is_empty());
    assert_eq!(revision, deleted.revision);
}

pub(super) async fn watch_from_a_revision_gets_exactly_the_later_events_in_order(f: Fixture) {
    let s = &f.storage;
    let a = s.create(&key("a"), pod("a")).await.expect("create a");
    let start = s.current_revision();
    s.update(&key("a"), pod("a"), None).await.expect("update a");
    s.create("/registry/services/default/x", json!({}))
        .await
        .expect("other prefix");
    let mut watch = s.watch("/registry/pods/", start).expect("watch");
    // Events after the watch started arrive live, after the replayed ones.
    s.create(&key("b"), pod("b")).await.expect("create b");
    s.delete(&key("a"), None).await.expect("delete a");

    let events: Vec<_> = take(&mut watch, 3)
        .await
        .into_iter()
        .map(|e| e.expect("event"))
        .collect();
    let kinds: Vec<_> = events
        .iter()
        .map(|e| (e.event_type, e.key.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (EventType::Modified, key("a")),
            (EventType::Added, key("b")),
            (EventType::Deleted, key("a"))
        ]
    );
    assert!(events.windows(2).all(|w| w[0].revision < w[1].revision));
    assert!(events
        .iter()
        .all(|e| e.revision > start && rv(&e.object) == e.revision.to_string()));
    assert_eq!(
        events[0].prev.as_deref().map(rv),
        Some(a.revision.to_string().as_str())
    );
    assert_eq!(events[1].prev, None);
    assert!(
        tokio::time::timeout(Duration::from_millis(50), watch.next())
            .await
            .is_err(),
        "no extra event"
    );
}

pub(super) async fn concurrent_writers_reach_a_resumed_watcher_complete_and_in_order(f: Fixture) {
    let s = &f.storage;
    for i in 0..10 {
        s.create(&key(&format!("seed-{i}")), pod("seed"))
            .await
            .expect("seed");
    }
    let resume_from = s.current_revision() - 5;
    let mut tasks = Vec::new();
    for w in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..125 {
                let name = format!("w{w}-{i}");
                s.create(&key(&name), pod(&name))
                    .await
                    .expect("concurrent create");
            }
        }));
    }
    // Resume while the writers run: the seam between replay and live events is under load.
    let mut watch = s
        .watch("/registry/pods/", resume_from)
        .expect("resume watch");
    let events = take(&mut watch, 1_005).await;
    for task in tasks {
        task.await.expect("writer");
    }
    let revisions: Vec<Revision> = events
        .into_iter()
        .map(|e| e.expect("event").revision)
        .collect();
    let expected: Vec<Revision> = (resume_from + 1..=resume_from + 1_005).collect();
    assert_eq!(revisions, expected, "every revision exactly once, in order");
}

pub(super) async fn watch_before_the_window_fails_with_expired(f: Fixture) {
    let s = &f.storage;
    // 0 for sled and memory; etcd starts at revision 1.
    let base = s.current_revision();
    assert!(
        s.watch("/", base).is_ok(),
        "watching from the current revision of an empty store"
    );
    for i in 0..10 {
        s.create(&key(&format!("p{i}")), pod("p"))
            .await
            .expect("create");
    }
    // Window of 5: events base+6..=base+10 are kept, so a watch may start from base+5, not base+4.
    assert!(s.watch("/", base + 5).is_ok());
    match s.watch("/", base + 4) {
        Err(Error::Expired { requested, oldest })
            if requested == base + 4 && oldest == base + 5 => {}
        other => panic!("expected Expired, got {:?}", other.map(|_| "a stream")),
    }
    assert!(
        s.watch("/", base + 10).is_ok(),
        "the current revision is always valid"
    );
}

pub(super) async fn lagging_watcher_is_closed_and_resumes_from_its_last_revision(f: Fixture) {
    let s = &f.storage;
    let base = s.current_revision();
    let mut slow = s.watch("/registry/pods/", base).expect("watch");
    for i in 0..20 {
        let write = s.create(&key(&format!("p{i}")), pod("p"));
        tokio::time::timeout(WAIT, write)
            .await
            .expect("a slow watcher blocked a writer")
            .expect("create");
    }
    // Buffer of 4: the first 4 events, then the end of the stream, with no error (upstream's
    // cacher closes an unresponsive watcher the same way).
    let items = take(&mut slow, 4).await;
    let revisions: Vec<_> = items
        .iter()
        .map(|e| e.as_ref().expect("event").revision)
        .collect();
    assert_eq!(revisions, [1, 2, 3, 4].map(|r| base + r));
    assert!(tokio::time::timeout(WAIT, slow.next())
        .await
        .expect("stream ends")
        .is_none());
    // The client watches again from the last revision it saw: the rest, once each, in order.
    let mut resumed = s.watch("/registry/pods/", base + 4).expect("resumed watch");
    let rest: Vec<_> = take(&mut resumed, 16)
        .await
        .into_iter()
        .map(|e| e.expect("event").revision)
        .collect();
    assert_eq!(rest, (5..=20).map(|r| base + r).collect::<Vec<_>>());
    // Everyone else is unaffected: a new watch from the start replays all 20.
    let mut fresh = s.watch("/registry/pods/", base).expect("fresh watch");
    assert_eq!(take(&mut fresh, 20).await.len(), 20);
}

/// One `#[tokio::test]` per conformance case for the backend made by `$make(test, window, buffer)`
/// (`None`: the backend is not installed here, the case is skipped).
macro_rules! conformance {
    ($module:ident, $make:path) => {
        mod $module {
            #[tokio::test]
            async fn create_get_and_list_return_the_object_at_its_revision() {
                if let Some(f) = $make(
                    "create_get_and_list_return_the_object_at_its_revision",
                    100,
                    100,
                )
                .await
                {
                    super::create_get_and_list_return_the_object_at_its_revision(f).await
                }
            }
            #[tokio::test]
            async fn create_of_a_taken_key_fails_with_already_exists() {
                if let Some(f) =
                    $make("create_of_a_taken_key_fails_with_already_exists", 100, 100).await
                {
                    super::create_of_a_taken_key_fails_with_already_exists(f).await
                }
            }
            #[tokio::test]
            async fn update_is_compare_and_swap_on_the_revision() {
                if let Some(f) = $make("update_is_compare_and_swap_on_the_revision", 100, 100).await
                {
                    super::update_is_compare_and_swap_on_the_revision(f).await
                }
            }
            #[tokio::test]
            async fn delete_checks_the_expected_revision_and_returns_the_last_state() {
                if let Some(f) = $make(
                    "delete_checks_the_expected_revision_and_returns_the_last_state",
                    100,
                    100,
                )
                .await
                {
                    super::delete_checks_the_expected_revision_and_returns_the_last_state(f).await
                }
            }
            #[tokio::test]
            async fn watch_from_a_revision_gets_exactly_the_later_events_in_order() {
                if let Some(f) = $make(
                    "watch_from_a_revision_gets_exactly_the_later_events_in_order",
                    100,
                    100,
                )
                .await
                {
                    super::watch_from_a_revision_gets_exactly_the_later_events_in_order(f).await
                }
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn concurrent_writers_reach_a_resumed_watcher_complete_and_in_order() {
                if let Some(f) = $make(
                    "concurrent_writers_reach_a_resumed_watcher_complete_and_in_order",
                    10_000,
                    2_000,
                )
                .await
                {
                    super::concurrent_writers_reach_a_resumed_watcher_complete_and_in_order(f).await
                }
            }
            #[tokio::test]
            async fn watch_before_the_window_fails_with_expired() {
                if let Some(f) = $make("watch_before_the_window_fails_with_expired", 5, 100).await {
                    super::watch_before_the_window_fails_with_expired(f).await
                }
            }
            #[tokio::test]
            async fn lagging_watcher_is_closed_and_resumes_from_its_last_revision() {
                if let Some(f) = $make(
                    "lagging_watcher_is_closed_and_resumes_from_its_last_revision",
                    100,
                    4,
                )
                .await
                {
                    super::lagging_watcher_is_closed_and_resumes_from_its_last_revision(f).await
                }
            }
        }
    };
}

conformance!(memory_backend, super::memory);
conformance!(sled_backend, super::sled);
conformance!(etcd_backend, super::etcd);
