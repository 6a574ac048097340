//! Shared informers: one list+watch per kind, fanned out to every controller that cares.
//!
//! Kubernetes counterpart: client-go's `SharedInformerFactory` and `sharedIndexInformer`
//! (`staging/src/k8s.io/client-go/informers/factory.go`, `tools/cache/shared_informer.go`), and the
//! garbage collector's metadata informers (`metadatainformer`). The ReplicaSet and Deployment
//! controllers both watch ReplicaSets and Pods, and the garbage collector watches every kind: the
//! factory makes sure each kind is listed and watched once. Each [`Informer`]
//!
//! - runs the client's `watcher` into a client `Store` (what `sync(key)` reads), and
//! - hands every change, with the object's previous state, to the handlers registered on it
//!   ([`Change`]: client-go's `OnAdd` / `OnUpdate(old, new)` / `OnDelete`). After a relist the
//!   handlers get the difference between the old and the new state, as a `Replace` does upstream.
//!
//! Handlers run on the informer's task after the store was updated, so they must be quick: they
//! turn an object into queue keys (and count expectations), nothing more.
//!
//! minik simplifies: handlers are registered before [`SharedInformers::start`] only; no resync.

mod metadata;

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::{ListableResource, Metadata};
use minik_api::meta::ObjectMeta;
use minik_api::{ObjectKey, ResourceInfo};
use minik_client::store::store;
use minik_client::{watcher, Api, Client, Event, ListParams, Object, Store, Writer};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

pub use metadata::{MetadataSource, PartialObjectMetadata};

/// One change an informer saw, with the object's state before it where there was one.
#[derive(Debug)]
pub enum Change<K> {
    /// A new object (or one first seen by a relist).
    Added(Arc<K>),
    /// An object changed.
    Updated {
        /// Its state before.
        old: Arc<K>,
        /// Its state now.
        new: Arc<K>,
    },
    /// An object was deleted; this is its last state.
    Deleted(Arc<K>),
}

impl<K> Change<K> {
    /// The object's current (or last) state.
    pub fn object(&self) -> &Arc<K> {
        match self {
            Change::Added(object) | Change::Deleted(object) => object,
            Change::Updated { new, .. } => new,
        }
    }
}

impl<K: Metadata<Ty = ObjectMeta>> Change<K> {
    /// The same change, seen through the objects' metadata only.
    pub fn metadata(&self) -> Change<ObjectMeta> {
        let meta = |object: &Arc<K>| Arc::new(object.metadata().clone());
        match self {
            Change::Added(object) => Change::Added(meta(object)),
            Change::Updated { old, new } => Change::Updated {
                old: meta(old),
                new: meta(new),
            },
            Change::Deleted(object) => Change::Deleted(meta(object)),
        }
    }
}

/// What an event handler is: a function of each change.
pub type Handler<K> = Box<dyn Fn(&Change<K>) + Send + Sync>;

type Source<K> = (
    BoxStream<'static, minik_client::Result<Event<K>>>,
    Writer<K>,
);

/// One kind's store and handlers, fed by one watch.
pub struct Informer<K> {
    store: Store<K>,
    handlers: RwLock<Vec<Handler<K>>>,
    /// Taken by `run` (an informer runs once).
    source: Mutex<Option<Source<K>>>,
}

impl<K: Metadata<Ty = ObjectMeta> + Clone + Send + Sync + 'static> Informer<K> {
    /// An informer over a watcher stream (tests give a scripted one).
    pub fn new(events: BoxStream<'static, minik_client::Result<Event<K>>>) -> Arc<Self> {
        let (reader, writer) = store();
        Arc::new(Informer {
            store: reader,
            handlers: RwLock::default(),
            source: Mutex::new(Some((events, writer))),
        })
    }

    /// The store every sync reads.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// Registers an event handler (client-go `AddEventHandler`).
    pub fn add_handler(&self, handler: impl Fn(&Change<K>) + Send + Sync + 'static) {
        self.handlers
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(Box::new(handler));
    }

    /// Applies each watcher event to the store, then tells the handlers, until `shutdown`.
    async fn run_informer(self: Arc<Self>, shutdown: CancellationToken) {
        let taken = self
            .source
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let Some((mut events, mut writer)) = taken else {
            return;
        };
        loop {
            let event = tokio::select! {
                _ = shutdown.cancelled() => break,
                event = events.next() => event,
            };
            match event {
                Some(Ok(event)) => {
                    let changes = changes(&self.store, &event);
                    writer.apply_watcher_event(&event);
                    let handlers = self
                        .handlers
                        .read()
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    for change in &changes {
                        handlers.iter().for_each(|handler| handler(change));
                    }
                }
                Some(Err(error)) => warn!(%error, "watch failed; retrying"),
                None => break,
            }
        }
    }
}

/// What a watcher event changes in `store` (read before the event is applied).
pub fn changes<K: Metadata<Ty = ObjectMeta> + Clone>(
    store: &Store<K>,
    event: &Event<K>,
) -> Vec<Change<K>> {
    let applied = |object: &K| {
        let new = Arc::new(object.clone());
        match store.get(&ObjectKey::of(object.metadata())) {
            Some(old) => Change::Updated { old, new },
            None => Change::Added(new),
        }
    };
    match event {
        Event::Applied(object) => vec![applied(object)],
        Event::Deleted(object) => vec![Change::Deleted(Arc::new(object.clone()))],
        Event::Restarted(objects) => {
            let fresh: HashSet<ObjectKey> = objects
                .iter()
                .map(|object| ObjectKey::of(object.metadata()))
                .collect();
            let gone = store
                .state()
                .into_iter()
                .filter(|old| !fresh.contains(&ObjectKey::of(old.metadata())))
                .map(Change::Deleted);
            let unchanged = |object: &K| {
                store
                    .get(&ObjectKey::of(object.metadata()))
                    .is_some_and(|old| {
                        old.metadata().resource_version == object.metadata().resource_version
                    })
            };
            let changed = objects
                .iter()
                .filter(|object| !unchanged(object))
                .map(applied);
            gone.chain(changed).collect()
        }
    }
}

/// What the factory needs of an informer of any kind.
pub trait AnyInformer: Send + Sync {
    /// Runs the informer until `shutdown`.
    fn run(self: Arc<Self>, shutdown: CancellationToken) -> BoxFuture<'static, ()>;
    /// Resolves once the first list is in the store.
    fn synced(&self) -> BoxFuture<'static, ()>;
    /// Registers a handler that sees only the objects' metadata (the garbage collector's view).
    fn add_metadata_handler(&self, handler: Handler<ObjectMeta>);
    /// For the typed lookup of [`SharedInformers::informer`].
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<K: Metadata<Ty = ObjectMeta> + Clone + Send + Sync + 'static> AnyInformer for Informer<K> {
    fn run(self: Arc<Self>, shutdown: CancellationToken) -> BoxFuture<'static, ()> {
        self.run_informer(shutdown).boxed()
    }

    fn synced(&self) -> BoxFuture<'static, ()> {
        let store = self.store.clone();
        async move { store.wait_until_ready().await }.boxed()
    }

    fn add_metadata_handler(&self, handler: Handler<ObjectMeta>) {
        self.add_handler(move |change: &Change<K>| handler(&change.metadata()));
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// The factory: at most one informer per (apiVersion, kind).
pub struct SharedInformers {
    client: Client,
    informers: Mutex<HashMap<(String, String), Arc<dyn AnyInformer>>>,
}

impl SharedInformers {
    /// A factory whose informers list and watch through `client`.
    pub fn new(client: Client) -> Self {
        SharedInformers {
            client,
            informers: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Arc<dyn AnyInformer>>> {
        self.informers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The typed informer of `K` (every namespace), created on first use.
    pub fn informer<K: Object + ListableResource>(&self) -> Arc<Informer<K>> {
        let key = (K::API_VERSION.to_string(), K::KIND.to_string());
        let mut informers = self.lock();
        if let Some(existing) = informers.get(&key) {
            if let Ok(typed) = existing.clone().into_any().downcast::<Informer<K>>() {
                return typed;
            }
        }
        let events = watcher(Api::<K>::all(self.client.clone()), ListParams::default()).boxed();
        let informer = Informer::new(events);
        informers.insert(key, informer.clone());
        informer
    }

    /// The informer of a kind known only by its [`ResourceInfo`]: the typed one if a controller
    /// already asked for it, else a metadata-only one. Register handlers with
    /// [`AnyInformer::add_metadata_handler`].
    pub fn metadata_informer(&self, info: &ResourceInfo) -> Arc<dyn AnyInformer> {
        let key = (info.api_version.to_string(), info.kind.to_string());
        let mut informers = self.lock();
        if let Some(existing) = informers.get(&key) {
            return existing.clone();
        }
        let source = MetadataSource::new(self.client.clone(), info);
        let events = minik_client::watcher::watcher_from(source, ListParams::default()).boxed();
        let informer: Arc<dyn AnyInformer> = Informer::<PartialObjectMetadata>::new(events);
        informers.insert(key, informer.clone());
        informer
    }

    /// Resolves once every informer created so far has listed (client-go `WaitForCacheSync`).
    pub fn wait_for_sync(&self) -> BoxFuture<'static, ()> {
        let synced: Vec<_> = self
            .lock()
            .values()
            .map(|informer| informer.synced())
            .collect();
        futures::future::join_all(synced).map(|_| ()).boxed()
    }

    /// Starts every informer; the future ends once all stopped after `shutdown`.
    pub fn start(&self, shutdown: CancellationToken) -> BoxFuture<'static, ()> {
        let informers: Vec<_> = self.lock().values().cloned().collect();
        debug!(kinds = informers.len(), "starting informers");
        let tasks: Vec<_> = informers
            .into_iter()
            .map(|informer| tokio::spawn(informer.run(shutdown.clone())))
            .collect();
        futures::future::join_all(tasks).map(|_| ()).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_api::core::Pod;

    fn pod(name: &str, rv: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn names(changes: &[Change<Pod>]) -> Vec<String> {
        let mut names: Vec<String> = changes
            .iter()
            .map(|change| {
                let kind = match change {
                    Change::Added(_) => "added",
                    Change::Updated { .. } => "updated",
                    Change::Deleted(_) => "deleted",
                };
                let name = change.object().metadata.name.clone().unwrap_or_default();
                format!("{kind} {name}")
            })
            .collect();
        names.sort();
        names
    }

    /// A relist tells the handlers what changed while the watch was down, and nothing else.
    #[test]
    fn a_relist_becomes_the_difference_with_the_store() {
        let (reader, mut writer) = store::<Pod>();
        writer.apply_watcher_event(&Event::Restarted(vec![
            pod("same", "1"),
            pod("gone", "1"),
            pod("moved", "1"),
        ]));
        let relist = Event::Restarted(vec![pod("same", "1"), pod("moved", "2"), pod("new", "3")]);
        assert_eq!(
            names(&changes(&reader, &relist)),
            ["added new", "deleted gone", "updated moved"]
        );
        let update = Event::Applied(pod("same", "4"));
        assert_eq!(names(&changes(&reader, &update)), ["updated same"]);
    }

    /// Two controllers asking for the same kind share one informer (one list+watch).
    #[tokio::test]
    async fn one_informer_per_kind() {
        let informers = SharedInformers::new(Client::new("http://127.0.0.1:1").unwrap());
        let first = informers.informer::<Pod>();
        let second = informers.informer::<Pod>();
        assert!(Arc::ptr_eq(&first, &second));
        let pods = minik_api::resource::lookup("pods").unwrap();
        let untyped = informers.metadata_informer(pods).into_any();
        assert!(
            untyped.downcast::<Informer<Pod>>().is_ok(),
            "the GC reuses the typed pod informer"
        );
        assert_eq!(informers.lock().len(), 1);
    }
}
