//! The watcher: list, then watch from the list's resourceVersion, forever, surviving every failure.
//!
//! Kubernetes counterpart: client-go's `Reflector.ListAndWatch`
//! (`staging/src/k8s.io/client-go/tools/cache/reflector.go`) and kube-rs's `watcher`
//! (`kube-runtime/src/watcher.rs`), whose shape this copies: an explicit state machine written as
//! data, and one [`step`] function that performs one transition.
//!
//! ```text
//!            list ok: emit Restarted(objects)          watch opened
//!   Empty ───────────────────────────────► InitListed{rv} ───────────► Watching{rv, stream}
//!     ▲                                        ▲                          │ ADDED/MODIFIED → Applied
//!     │ 410 Expired (ERROR event or HTTP 410)  │ stream ended             │ DELETED        → Deleted
//!     └────────────────────────────────────────┴──────────────────────────┘ BOOKMARK       → rv only
//! ```
//!
//! Every event moves `rv` forward, so a watch that ends (the server's `timeoutSeconds`, a dropped
//! connection) resumes exactly where it stopped and misses nothing. Only when the server no longer
//! has that history (410) does the watcher list again and hand the full state over as `Restarted`.
//! Errors are yielded (so callers can log them) and the next step waits: 100 ms, doubling to 5 s,
//! reset by the next event.
//!
//! minik simplifies: the older kube-rs vocabulary `Applied / Deleted / Restarted(Vec<K>)` (one
//! event for a whole relist instead of `Init / InitApply / InitDone`), and no streaming lists.

use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, Stream, StreamExt};
use k8s_openapi::ListableResource;
use tracing::debug;

use minik_api::WatchEvent;

use crate::api::{list_resource_version, Api, Object};
use crate::error::{Error, Result};
use crate::params::ListParams;

/// What the watcher tells its consumer.
#[derive(Clone, Debug, PartialEq)]
pub enum Event<K> {
    /// The object was created or changed.
    Applied(K),
    /// The object was deleted (or stopped matching the selector); it carries the last state.
    Deleted(K),
    /// A (re)list completed: these are all the objects now; anything else is gone.
    Restarted(Vec<K>),
}

/// Where the watcher lists and watches from: an [`Api`], or a scripted source in tests.
pub trait ListWatch<K: Object + ListableResource>: Send + Sync + 'static {
    /// One page of a list.
    fn list<'a>(&'a self, lp: &'a ListParams) -> BoxFuture<'a, Result<k8s_openapi::List<K>>>;
    /// A watch after `resource_version`.
    fn watch<'a>(
        &'a self,
        lp: &'a ListParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchEvent<K>>>>>;
}

impl<K: Object + ListableResource> ListWatch<K> for Api<K> {
    fn list<'a>(&'a self, lp: &'a ListParams) -> BoxFuture<'a, Result<k8s_openapi::List<K>>> {
        Box::pin(Api::list(self, lp))
    }

    fn watch<'a>(
        &'a self,
        lp: &'a ListParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Result<WatchEvent<K>>>>> {
        Box::pin(Api::watch(self, lp, resource_version))
    }
}

/// The watcher's state; see the diagram in the module doc.
enum State<K> {
    /// Nothing known: the next step lists.
    Empty,
    /// Listed (or a watch ended): the next step opens a watch from `resource_version`.
    InitListed { resource_version: String },
    /// A watch is open; `resource_version` is the last one seen on it.
    Watching {
        resource_version: String,
        stream: BoxStream<'static, Result<WatchEvent<K>>>,
    },
}

/// How long a watch may stay open before the client starts a fresh one (kube-rs uses 290 s), so a
/// connection that silently died is noticed.
const DEFAULT_WATCH_TIMEOUT_SECONDS: u32 = 290;

/// Watches the objects of `api` matching `lp` and yields [`Event`]s forever (drop the stream to stop).
pub fn watcher<K: Object + ListableResource>(
    api: Api<K>,
    lp: ListParams,
) -> impl Stream<Item = Result<Event<K>>> + Send {
    watcher_from(api, lp)
}

/// [`watcher`] over any [`ListWatch`] source.
pub fn watcher_from<K, S>(
    source: S,
    mut lp: ListParams,
) -> impl Stream<Item = Result<Event<K>>> + Send
where
    K: Object + ListableResource,
    S: ListWatch<K>,
{
    lp.timeout_seconds
        .get_or_insert(DEFAULT_WATCH_TIMEOUT_SECONDS);
    lp.bookmarks = true;
    let driver = Driver {
        source,
        lp,
        state: State::Empty,
        backoff: Backoff::new(),
        delay: None,
        watch_idle: false,
    };
    stream::unfold(driver, |mut driver| async move {
        let event = driver.next_event().await;
        Some((event, driver))
    })
}

/// Runs [`step`] until it produces something to yield, applying the backoff between failures.
struct Driver<K, S> {
    source: S,
    lp: ListParams,
    state: State<K>,
    backoff: Backoff,
    /// Wait this long before the next step (set after an error).
    delay: Option<Duration>,
    /// The open watch has delivered nothing yet: if it ends like that, back off before re-watching
    /// rather than spinning against a server that closes every watch at once.
    watch_idle: bool,
}

impl<K: Object + ListableResource, S: ListWatch<K>> Driver<K, S> {
    async fn next_event(&mut self) -> Result<Event<K>> {
        loop {
            if let Some(delay) = self.delay.take() {
                tokio::time::sleep(delay).await;
            }
            let state = std::mem::replace(&mut self.state, State::Empty);
            let was_listed = matches!(state, State::InitListed { .. });
            let was_watching = matches!(state, State::Watching { .. });
            let (output, next) = step(&self.source, &self.lp, state).await;
            if was_listed && matches!(next, State::Watching { .. }) {
                self.watch_idle = true;
            }
            if was_watching && matches!(next, State::InitListed { .. }) && self.watch_idle {
                self.delay = Some(self.backoff.next_delay());
            }
            self.state = next;
            match output {
                Some(Ok(event)) => {
                    self.backoff.reset();
                    self.watch_idle = false;
                    return Ok(event);
                }
                Some(Err(error)) => {
                    debug!(%error, "watcher step failed");
                    self.delay = Some(self.backoff.next_delay());
                    return Err(error);
                }
                None => continue,
            }
        }
    }
}

/// One transition of the state machine: what to yield (if anything) and the next state.
async fn step<K, S>(
    source: &S,
    lp: &ListParams,
    state: State<K>,
) -> (Option<Result<Event<K>>>, State<K>)
where
    K: Object + ListableResource,
    S: ListWatch<K>,
{
    match state {
        State::Empty => match list_all(source, lp).await {
            Ok((objects, resource_version)) => (
                Some(Ok(Event::Restarted(objects))),
                State::InitListed { resource_version },
            ),
            Err(error) => (Some(Err(error)), State::Empty),
        },
        State::InitListed { resource_version } => match source.watch(lp, &resource_version).await {
            Ok(stream) => (
                None,
                State::Watching {
                    resource_version,
                    stream,
                },
            ),
            Err(error) if error.is_gone() => (Some(Err(error)), State::Empty),
            Err(error) => (Some(Err(error)), State::InitListed { resource_version }),
        },
        State::Watching {
            resource_version,
            mut stream,
        } => match stream.next().await {
            Some(Ok(WatchEvent::Added(object) | WatchEvent::Modified(object))) => {
                moved_to(object, Event::Applied, stream)
            }
            Some(Ok(WatchEvent::Deleted(object))) => moved_to(object, Event::Deleted, stream),
            Some(Ok(WatchEvent::Bookmark(object))) => {
                match object.metadata().resource_version.clone() {
                    Some(resource_version) => (
                        None,
                        State::Watching {
                            resource_version,
                            stream,
                        },
                    ),
                    None => (Some(Err(Error::NoResourceVersion)), State::Empty),
                }
            }
            Some(Ok(WatchEvent::Error(status))) if status.code == Some(410) => {
                (Some(Err(Error::Api(status))), State::Empty)
            }
            Some(Ok(WatchEvent::Error(status))) => (
                Some(Err(Error::Api(status))),
                State::Watching {
                    resource_version,
                    stream,
                },
            ),
            Some(Err(error)) => (
                Some(Err(error)),
                State::Watching {
                    resource_version,
                    stream,
                },
            ),
            None => (None, State::InitListed { resource_version }),
        },
    }
}

/// An ADDED/MODIFIED/DELETED event: yield it and remember its resourceVersion.
fn moved_to<K: Object>(
    object: K,
    event: fn(K) -> Event<K>,
    stream: BoxStream<'static, Result<WatchEvent<K>>>,
) -> (Option<Result<Event<K>>>, State<K>) {
    match object.metadata().resource_version.clone() {
        Some(resource_version) => (
            Some(Ok(event(object))),
            State::Watching {
                resource_version,
                stream,
            },
        ),
        None => (Some(Err(Error::NoResourceVersion)), State::Empty),
    }
}

/// Lists every page (following `continue`) and returns the objects and the list's resourceVersion.
async fn list_all<K: Object + ListableResource, S: ListWatch<K>>(
    source: &S,
    lp: &ListParams,
) -> Result<(Vec<K>, String)> {
    let mut page_params = lp.clone();
    let mut objects = Vec::new();
    loop {
        let page = source.list(&page_params).await?;
        let resource_version = list_resource_version(&page)?;
        objects.extend(page.items);
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => page_params.continue_token = Some(token),
            None => return Ok((objects, resource_version)),
        }
    }
}

/// Exponential backoff: 100 ms, 200 ms, … capped at 5 s; reset after a success.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    const INITIAL: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(5);

    pub(crate) fn new() -> Self {
        Backoff {
            next: Self::INITIAL,
        }
    }

    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        delay
    }

    pub(crate) fn reset(&mut self) {
        self.next = Self::INITIAL;
    }
}

#[cfg(test)]
#[path = "watcher_tests.rs"]
mod tests;
