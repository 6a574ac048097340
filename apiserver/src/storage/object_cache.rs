//! The decoded objects kept beside sled's bytes, so reads never parse stored JSON.
//!
//! Kubernetes counterpart: the apiserver's watch cache (`k8s.io/apiserver/pkg/storage/cacher`,
//! `watch_cache.go`'s `store`), which serves GETs and LISTs from decoded objects instead of
//! etcd's bytes. minik's version is simpler and exact: only the apiserver writes to its sled
//! directory, and every write updates this map under the storage's write lock, so the map always
//! holds what sled holds (a write shows here the moment it is written, before its flush, as sled
//! itself shows it). It keeps every object, not a window; memory grows with the objects stored,
//! as upstream's cache does.

use std::collections::BTreeMap;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::Record;

/// Storage key → the object as last written. Reads take a shared lock; writers hold the storage's
/// write lock as well, so two writes never race here.
#[derive(Debug, Default)]
pub struct ObjectCache {
    objects: RwLock<BTreeMap<String, Record>>,
}

impl ObjectCache {
    /// A cache holding `records` (the database's contents when it is opened).
    pub fn new(records: impl IntoIterator<Item = Record>) -> ObjectCache {
        let objects = records.into_iter().map(|r| (r.key.clone(), r)).collect();
        ObjectCache {
            objects: RwLock::new(objects),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Record>> {
        self.objects.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<String, Record>> {
        self.objects.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The object at `key`: a clone of the record, sharing its value.
    pub fn get(&self, key: &str) -> Option<Record> {
        self.read().get(key).cloned()
    }

    /// Every object whose key starts with `prefix`, in key order (as sled's `scan_prefix`).
    pub fn scan_prefix(&self, prefix: &str) -> Vec<Record> {
        self.read()
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(_, record)| record.clone())
            .collect()
    }

    /// Records a write: the new state, or `None` for a removal.
    pub fn set(&self, key: &str, record: Option<Record>) {
        let mut objects = self.write();
        match record {
            Some(record) => {
                objects.insert(key.to_string(), record);
            }
            None => {
                objects.remove(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn record(key: &str, revision: u64) -> Record {
        Record {
            key: key.to_string(),
            value: Arc::new(json!({"metadata": {"name": key}})),
            revision,
        }
    }

    #[test]
    fn a_prefix_scan_stays_inside_the_prefix_and_in_key_order() {
        let cache = ObjectCache::new([
            record("/registry/pods/b/x", 3),
            record("/registry/pods/a/y", 2),
            record("/registry/podsx/a/z", 4),
            record("/registry/pod", 1),
        ]);
        let keys: Vec<String> = cache
            .scan_prefix("/registry/pods/")
            .into_iter()
            .map(|r| r.key)
            .collect();
        assert_eq!(keys, ["/registry/pods/a/y", "/registry/pods/b/x"]);
        assert!(cache.scan_prefix("/registry/services/").is_empty());
    }

    #[test]
    fn set_replaces_and_removes() {
        let cache = ObjectCache::new([record("/k", 1)]);
        cache.set("/k", Some(record("/k", 5)));
        assert_eq!(cache.get("/k").map(|r| r.revision), Some(5));
        cache.set("/k", None);
        assert_eq!(cache.get("/k"), None);
    }
}
