//! Unit tests of the watcher's state machine against a scripted list/watch source (no I/O, paused clock).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use tokio::time::Instant;

use minik_api::core::Pod;
use minik_api::meta::{ListMeta, ObjectMeta};
use minik_api::WatchEvent;

use super::*;

type WatchScript = Result<Vec<Result<WatchEvent<Pod>>>>;

/// Answers lists and watches from queues; an exhausted queue never answers (a pending future or
/// an endless stream), and every watch's resourceVersion is recorded.
#[derive(Clone, Default)]
struct Script {
    lists: Arc<Mutex<VecDeque<Result<k8s_openapi::List<Pod>>>>>,
    watches: Arc<Mutex<VecDeque<WatchScript>>>,
    watched_from: Arc<Mutex<Vec<String>>>,
}

impl Script {
    fn list(self, list: Result<k8s_openapi::List<Pod>>) -> Self {
        self.lists.lock().unwrap().push_back(list);
        self
    }

    fn watch(self, watch: WatchScript) -> Self {
        self.watches.lock().unwrap().push_back(watch);
        self
    }

    fn watched_from(&self) -> Vec<String> {
        self.watched_from.lock().unwrap().clone()
    }
}

impl ListWatch<Pod> for Script {
    fn list<'a>(&'a self, _lp: &'a ListParams) -> BoxFuture<'a, Result<k8s_openapi::List<Pod>>> {
        let next = self.lists.lock().unwrap().pop_front();
        Box::pin(async move {
            match next {
                Some(list) => list,
                None => futures::future::pending().await,
            }
        })
    }

    fn watch<'a>(
        &'a self,
        _lp: &'a ListParams,
        rv: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchEvent<Pod>>>>> {
        self.watched_from.lock().unwrap().push(rv.to_string());
        let next = self.watches.lock().unwrap().pop_front();
        Box::pin(async move {
            match next {
                Some(Ok(events)) => Ok(stream::iter(events).boxed()),
                Some(Err(error)) => Err(error),
                None => Ok(stream::pending().boxed()),
            }
        })
    }
}

fn pod(name: &str, rv: &str) -> Pod {
    let metadata = ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        resource_version: Some(rv.into()),
        ..ObjectMeta::default()
    };
    Pod {
        metadata,
        ..Pod::default()
    }
}

fn list(rv: &str, names: &[&str]) -> Result<k8s_openapi::List<Pod>> {
    Ok(k8s_openapi::List {
        items: names.iter().map(|name| pod(name, rv)).collect(),
        metadata: ListMeta {
            resource_version: Some(rv.into()),
            ..ListMeta::default()
        },
    })
}

fn expired() -> minik_api::meta::Status {
    minik_api::status::expired("too old resource version: 10 (50)")
}

fn names(event: &Event<Pod>) -> Vec<String> {
    match event {
        Event::Restarted(pods) => pods
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect(),
        Event::Applied(pod) | Event::Deleted(pod) => {
            vec![pod.metadata.name.clone().unwrap_or_default()]
        }
    }
}

/// The watcher's next item, or `None` when it has nothing more within a (virtual) minute.
async fn next(
    watch: &mut (impl Stream<Item = Result<Event<Pod>>> + Unpin),
) -> Option<Result<Event<Pod>>> {
    tokio::time::timeout(Duration::from_secs(60), watch.next())
        .await
        .ok()
        .flatten()
}

/// A list is emitted as Restarted, then each watch resumes from the last resourceVersion seen,
/// bookmarks included.
#[tokio::test(start_paused = true)]
async fn watches_resume_from_the_last_resource_version_seen() {
    let script = Script::default()
        .list(list("10", &["a"]))
        .watch(Ok(vec![
            Ok(WatchEvent::Added(pod("b", "11"))),
            Ok(WatchEvent::Bookmark(pod("", "20"))),
        ]))
        .watch(Ok(vec![Ok(WatchEvent::Deleted(pod("b", "21")))]));
    let mut watch = Box::pin(watcher_from(script.clone(), ListParams::default()));
    let restarted = next(&mut watch).await.unwrap().unwrap();
    assert!(matches!(restarted, Event::Restarted(_)));
    assert_eq!(names(&restarted), ["a"]);
    assert!(
        matches!(next(&mut watch).await, Some(Ok(Event::Applied(p))) if p.metadata.name.as_deref() == Some("b"))
    );
    assert!(
        matches!(next(&mut watch).await, Some(Ok(Event::Deleted(p))) if p.metadata.name.as_deref() == Some("b"))
    );
    assert!(
        next(&mut watch).await.is_none(),
        "the third watch stays open and quiet"
    );
    assert_eq!(script.watched_from(), ["10", "20", "21"]);
}

/// An ERROR event with 410 Expired makes the watcher list again and restart from the new list.
#[tokio::test(start_paused = true)]
async fn expired_error_event_relists() {
    let script = Script::default()
        .list(list("10", &["a"]))
        .watch(Ok(vec![Ok(WatchEvent::Error(expired()))]))
        .list(list("50", &["b"]));
    let mut watch = Box::pin(watcher_from(script.clone(), ListParams::default()));
    assert_eq!(names(&next(&mut watch).await.unwrap().unwrap()), ["a"]);
    assert!(next(&mut watch).await.unwrap().unwrap_err().is_gone());
    let relisted = next(&mut watch).await.unwrap().unwrap();
    assert!(matches!(relisted, Event::Restarted(_)));
    assert_eq!(names(&relisted), ["b"]);
    assert!(next(&mut watch).await.is_none());
    assert_eq!(script.watched_from(), ["10", "50"]);
}

/// A watch refused with HTTP 410 (before the stream started) also relists.
#[tokio::test(start_paused = true)]
async fn watch_refused_with_410_relists() {
    let script = Script::default()
        .list(list("10", &[]))
        .watch(Err(Error::Api(expired())))
        .list(list("60", &["c"]));
    let mut watch = Box::pin(watcher_from(script.clone(), ListParams::default()));
    assert!(next(&mut watch).await.unwrap().is_ok());
    assert!(next(&mut watch).await.unwrap().unwrap_err().is_gone());
    assert_eq!(names(&next(&mut watch).await.unwrap().unwrap()), ["c"]);
}

/// Other failures are yielded, and the same watch is retried after 100 ms, then 200 ms.
#[tokio::test(start_paused = true)]
async fn failed_watch_is_retried_from_the_same_version_with_backoff() {
    let boom = || Err(Error::Api(minik_api::status::internal("boom")));
    let script = Script::default()
        .list(list("10", &[]))
        .watch(boom())
        .watch(boom())
        .watch(Ok(vec![Ok(WatchEvent::Added(pod("a", "11")))]));
    let mut watch = Box::pin(watcher_from(script.clone(), ListParams::default()));
    assert!(next(&mut watch).await.unwrap().is_ok());
    let started = Instant::now();
    assert!(next(&mut watch).await.unwrap().is_err());
    assert!(next(&mut watch).await.unwrap().is_err());
    assert!(matches!(
        next(&mut watch).await,
        Some(Ok(Event::Applied(_)))
    ));
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_millis(400),
        "{waited:?}"
    );
    assert_eq!(script.watched_from(), ["10", "10", "10"]);
}

/// A server that closes every watch at once is not hammered: idle re-watches back off too.
#[tokio::test(start_paused = true)]
async fn watches_that_end_at_once_back_off() {
    let script = Script::default()
        .list(list("10", &[]))
        .watch(Ok(vec![]))
        .watch(Ok(vec![]))
        .watch(Ok(vec![Ok(WatchEvent::Added(pod("a", "11")))]));
    let mut watch = Box::pin(watcher_from(script.clone(), ListParams::default()));
    assert!(next(&mut watch).await.unwrap().is_ok());
    let started = Instant::now();
    assert!(matches!(
        next(&mut watch).await,
        Some(Ok(Event::Applied(_)))
    ));
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
}

/// A failed list is yielded and retried; a list without resourceVersion counts as failed.
#[tokio::test(start_paused = true)]
async fn failed_list_is_retried() {
    let mut no_rv = list("10", &["a"]);
    if let Ok(list) = &mut no_rv {
        list.metadata.resource_version = None;
    }
    let script = Script::default().list(no_rv).list(list("11", &["b"]));
    let mut watch = Box::pin(watcher_from(script, ListParams::default()));
    assert!(matches!(
        next(&mut watch).await,
        Some(Err(Error::NoResourceVersion))
    ));
    assert_eq!(names(&next(&mut watch).await.unwrap().unwrap()), ["b"]);
}

/// Every page of a paged list ends up in one Restarted.
#[tokio::test(start_paused = true)]
async fn paged_list_is_gathered_into_one_restart() {
    let mut first = list("10", &["a"]);
    if let Ok(list) = &mut first {
        list.metadata.continue_ = Some("next".into());
    }
    let script = Script::default().list(first).list(list("10", &["b"]));
    let mut watch = Box::pin(watcher_from(script, ListParams::default()));
    assert_eq!(names(&next(&mut watch).await.unwrap().unwrap()), ["a", "b"]);
}

#[test]
fn backoff_doubles_up_to_five_seconds_and_resets() {
    let mut backoff = Backoff::new();
    let delays: Vec<u128> = (0..8).map(|_| backoff.next_delay().as_millis()).collect();
    assert_eq!(delays, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
    backoff.reset();
    assert_eq!(backoff.next_delay(), Duration::from_millis(100));
}
