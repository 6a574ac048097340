//! The store: an in-memory copy of the objects a watcher sees, readable by any task.
//!
//! Kubernetes counterpart: client-go's `cache.Store`/`Indexer` filled by a `Reflector`
//! (`staging/src/k8s.io/client-go/tools/cache/{store.go,reflector.go}`), and kube-rs's
//! `reflector::{store, Store, Writer}` (`kube-runtime/src/reflector/{mod,store}.rs`), whose split
//! this copies: one [`Writer`] (not cloneable) applies watcher events, any number of cheap [`Store`]
//! clones read. This is how every minik component "sees the cluster" without polling: the
//! scheduler's node list, the kubelet's pods, the endpoint controller's services are all stores.
//!
//! minik simplifies: no indexes beyond the `namespace/name` key (filter `state()` instead).

use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use futures::stream::{Stream, TryStreamExt};
use k8s_openapi::Metadata;
use tokio::sync::watch;

use minik_api::meta::ObjectMeta;
use minik_api::ObjectKey;

use crate::error::Result;
use crate::watcher::Event;

type Objects<K> = Arc<RwLock<HashMap<ObjectKey, Arc<K>>>>;

/// A read handle on the cached objects. Cloning is cheap; all clones see the same data.
pub struct Store<K> {
    objects: Objects<K>,
    /// Becomes `true` after the first complete list.
    ready: watch::Receiver<bool>,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Store {
            objects: self.objects.clone(),
            ready: self.ready.clone(),
        }
    }
}

/// The one write handle, moved into the [`reflector`] that feeds it.
pub struct Writer<K> {
    objects: Objects<K>,
    ready: watch::Sender<bool>,
}

/// A new, empty store and its writer.
pub fn store<K>() -> (Store<K>, Writer<K>) {
    let objects: Objects<K> = Arc::default();
    let (ready_tx, ready_rx) = watch::channel(false);
    (
        Store {
            objects: objects.clone(),
            ready: ready_rx,
        },
        Writer {
            objects,
            ready: ready_tx,
        },
    )
}

/// A lock poisoned by a panicking writer still holds consistent data (every write is one map
/// operation), so readers carry on with it.
fn read<K>(objects: &Objects<K>) -> RwLockReadGuard<'_, HashMap<ObjectKey, Arc<K>>> {
    objects
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<K>(objects: &Objects<K>) -> RwLockWriteGuard<'_, HashMap<ObjectKey, Arc<K>>> {
    objects
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<K> Store<K> {
    /// The cached object with this key (`ObjectKey::new("default", "web")`, `ObjectKey::cluster("node-1")`).
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        read(&self.objects).get(key).cloned()
    }

    /// Every cached object, in no particular order.
    pub fn state(&self) -> Vec<Arc<K>> {
        read(&self.objects).values().cloned().collect()
    }

    /// How many objects are cached.
    pub fn len(&self) -> usize {
        read(&self.objects).len()
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the first list has been applied.
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Waits until the first list has been applied, so the store reflects the cluster. Returns at
    /// once if it already has; returns too if the writer is dropped before (the store stays empty).
    pub async fn wait_until_ready(&self) {
        let mut ready = self.ready.clone();
        let _ = ready.wait_for(|ready| *ready).await;
    }
}

impl<K: Metadata<Ty = ObjectMeta> + Clone> Writer<K> {
    /// Applies one watcher event: upsert, remove, or replace everything after a (re)list.
    pub fn apply_watcher_event(&mut self, event: &Event<K>) {
        match event {
            Event::Applied(object) => {
                write(&self.objects)
                    .insert(ObjectKey::of(object.metadata()), Arc::new(object.clone()));
            }
            Event::Deleted(object) => {
                write(&self.objects).remove(&ObjectKey::of(object.metadata()));
            }
            Event::Restarted(objects) => {
                let fresh = objects
                    .iter()
                    .map(|object| (ObjectKey::of(object.metadata()), Arc::new(object.clone())))
                    .collect();
                *write(&self.objects) = fresh;
                self.ready.send_replace(true);
            }
        }
    }

    /// A reader on this writer's store.
    pub fn as_reader(&self) -> Store<K> {
        Store {
            objects: self.objects.clone(),
            ready: self.ready.subscribe(),
        }
    }
}

/// Feeds a watcher stream into `writer` and passes every event on, after it was applied, so a
/// consumer reacting to an event finds the store already up to date.
pub fn reflector<K, S>(mut writer: Writer<K>, stream: S) -> impl Stream<Item = Result<Event<K>>>
where
    K: Metadata<Ty = ObjectMeta> + Clone,
    S: Stream<Item = Result<Event<K>>>,
{
    stream.inspect_ok(move |event| writer.apply_watcher_event(event))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{stream, StreamExt};
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

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("default", name)
    }

    #[test]
    fn applied_upserts_and_deleted_removes() {
        let (reader, mut writer) = store::<Pod>();
        writer.apply_watcher_event(&Event::Applied(pod("a", "1")));
        writer.apply_watcher_event(&Event::Applied(pod("a", "2")));
        assert_eq!(
            reader
                .get(&key("a"))
                .unwrap()
                .metadata
                .resource_version
                .as_deref(),
            Some("2")
        );
        writer.apply_watcher_event(&Event::Deleted(pod("a", "3")));
        assert!(reader.get(&key("a")).is_none());
        assert!(reader.is_empty());
    }

    #[test]
    fn restarted_replaces_everything_and_marks_ready() {
        let (reader, mut writer) = store::<Pod>();
        writer.apply_watcher_event(&Event::Applied(pod("stale", "1")));
        assert!(!reader.is_ready());
        writer.apply_watcher_event(&Event::Restarted(vec![pod("a", "5"), pod("b", "5")]));
        assert!(reader.is_ready());
        assert!(
            reader.get(&key("stale")).is_none(),
            "objects missing from a relist are gone"
        );
        let mut names: Vec<String> = reader
            .state()
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        names.sort();
        assert_eq!(names, ["a", "b"]);
    }

    #[tokio::test]
    async fn reflector_applies_before_passing_the_event_on() {
        let (reader, writer) = store::<Pod>();
        let events = stream::iter(vec![
            Ok(Event::Restarted(vec![pod("a", "1")])),
            Ok(Event::Applied(pod("b", "2"))),
        ]);
        let mut reflected = Box::pin(reflector(writer, events));
        reflected.next().await.unwrap().unwrap();
        reader.wait_until_ready().await;
        assert!(reader.get(&key("a")).is_some() && reader.get(&key("b")).is_none());
        reflected.next().await.unwrap().unwrap();
        assert!(reader.get(&key("b")).is_some());
    }

    #[tokio::test]
    async fn wait_until_ready_returns_when_the_writer_goes_away() {
        let (reader, writer) = store::<Pod>();
        drop(writer);
        tokio::time::timeout(std::time::Duration::from_secs(1), reader.wait_until_ready())
            .await
            .unwrap();
    }
}
