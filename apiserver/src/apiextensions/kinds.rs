//! The custom kinds a server serves right now: one entry per version of each established CRD.
//!
//! Kubernetes counterpart: the `crdHandler`'s `customStorage` map
//! (`staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go`), rebuilt
//! whenever a CRD changes, which the handler consults on every request under `/apis/{group}/…`.
//! minik's request path names a kind by a `&'static ResourceInfo` (the built-in table in
//! `minik_api::resource` is static), so each custom version's `ResourceInfo` is made once and
//! kept for the life of the process ([`intern`]): equal definitions share one, and a CRD changed
//! or created again costs a few hundred bytes at most. Everything else about the kind (schema,
//! subresources, columns) lives in its [`CustomKind`], replaced on every change.
//!
//! minik simplifies: a request that raced a CRD change sees either the old or the new definition,
//! never a mix, but upstream's wait for in-flight requests before a definition is dropped is not
//! done.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use minik_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceSubresourceScale,
};
use minik_api::ResourceInfo;

use super::conversion_config::ConversionWebhook;
use super::schema::Schema;

/// One served version of a custom kind.
#[derive(Clone, Debug)]
pub struct CustomKind {
    /// Names, scope and `group/version`, as the request path resolves them.
    pub info: &'static ResourceInfo,
    /// The CRD's name: `crontabs.stable.example.com`.
    pub crd: String,
    /// `stable.example.com`.
    pub group: String,
    /// This version: `v1`.
    pub version: String,
    /// The version objects are stored in.
    pub storage_version: String,
    /// `served: true` (the storage version is kept even when not served, for cleanup).
    pub served: bool,
    /// The version's `openAPIV3Schema`.
    pub schema: Option<Schema>,
    /// Whether `/status` is a subresource.
    pub status: bool,
    /// The `/scale` subresource's paths, if it has one.
    pub scale: Option<CustomResourceSubresourceScale>,
    /// `additionalPrinterColumns`.
    pub columns: Vec<CustomResourceColumnDefinition>,
    /// `categories` (`all` puts the kind in `kubectl get all`).
    pub categories: Vec<String>,
    /// `CronTabList`.
    pub list_kind: String,
    /// The CRD is being deleted: reads and deletes are served, creates refused.
    pub terminating: bool,
    /// The conversion webhook (`strategy: Webhook`); `None` rewrites `apiVersion` only.
    pub conversion: Option<Arc<ConversionWebhook>>,
}

impl CustomKind {
    /// `stable.example.com/v1`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// The storage version's `group/version`.
    pub fn storage_api_version(&self) -> String {
        format!("{}/{}", self.group, self.storage_version)
    }
}

type Key = (String, String, String);

/// The custom kinds of one server, by group, version and plural.
#[derive(Default)]
pub struct Kinds {
    by_path: RwLock<HashMap<Key, Arc<CustomKind>>>,
    /// How many entries `by_path` has: requests for built-in kinds skip the lock when none.
    count: AtomicUsize,
}

fn key(group: &str, version: &str, plural: &str) -> Key {
    (group.to_string(), version.to_string(), plural.to_string())
}

impl Kinds {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Key, Arc<CustomKind>>> {
        self.by_path.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The kind `…/apis/{group}/{version}/{plural}` names, served or (for the storage version)
    /// kept for cleanup.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<CustomKind>> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.read().get(&key(group, version, plural)).cloned()
    }

    /// The served kind at that path, as the request path needs it.
    pub fn resolve(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&'static ResourceInfo> {
        self.get(group, version, plural)
            .filter(|kind| kind.served)
            .map(|kind| kind.info)
    }

    /// The custom kind behind a request's `ResourceInfo`; `None` for a built-in kind.
    pub fn kind(&self, info: &ResourceInfo) -> Option<Arc<CustomKind>> {
        if self.count.load(Ordering::Acquire) == 0 || minik_api::resource::is_builtin(info) {
            return None;
        }
        let version = info.api_version.rsplit('/').next().unwrap_or("");
        self.get(info.group(), version, info.plural)
    }

    /// Whether any CRD serves `group/version`.
    pub fn serves(&self, group: &str, version: &str) -> bool {
        self.read()
            .values()
            .any(|kind| kind.served && kind.group == group && kind.version == version)
    }

    /// Every served kind, sorted by group, version and plural.
    pub fn all(&self) -> Vec<Arc<CustomKind>> {
        let mut kinds: Vec<Arc<CustomKind>> =
            self.read().values().filter(|k| k.served).cloned().collect();
        kinds.sort_by(|a, b| {
            (&a.group, &a.version, a.info.plural).cmp(&(&b.group, &b.version, b.info.plural))
        });
        kinds
    }

    /// The storage-version kind of every CRD (what a namespace's deletion must empty).
    pub fn storage_kinds(&self) -> Vec<Arc<CustomKind>> {
        self.read()
            .values()
            .filter(|k| k.version == k.storage_version)
            .cloned()
            .collect()
    }

    /// Replaces everything CRD `crd` served by `kinds`.
    pub fn replace(&self, crd: &str, kinds: Vec<CustomKind>) {
        let mut map = self.by_path.write().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, kind| kind.crd != crd);
        for kind in kinds {
            let plural = kind.info.plural;
            map.insert(key(&kind.group, &kind.version, plural), Arc::new(kind));
        }
        self.count.store(map.len(), Ordering::Release);
    }

    /// Stops serving CRD `crd`.
    pub fn remove(&self, crd: &str) {
        self.replace(crd, Vec::new());
    }
}

/// Every custom `ResourceInfo` made so far (few: one per distinct definition).
static INTERNED: Mutex<Vec<&'static ResourceInfo>> = Mutex::new(Vec::new());

/// The names of one custom version, owned.
pub struct Names<'a> {
    pub kind: &'a str,
    pub plural: &'a str,
    pub singular: &'a str,
    pub short_names: &'a [String],
    pub namespaced: bool,
    pub api_version: &'a str,
}

/// The `&'static ResourceInfo` for these names: the one made before for equal names, or a new one.
pub fn intern(names: &Names) -> &'static ResourceInfo {
    let mut interned = INTERNED.lock().unwrap_or_else(|p| p.into_inner());
    let same = |info: &&&'static ResourceInfo| {
        info.kind == names.kind
            && info.plural == names.plural
            && info.singular == names.singular
            && info.namespaced == names.namespaced
            && info.api_version == names.api_version
            && info.short_names.iter().eq(names.short_names.iter())
    };
    if let Some(info) = interned.iter().find(same) {
        return info;
    }
    let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
    let short_names: Vec<&'static str> = names.short_names.iter().map(|s| leak(s)).collect();
    let info: &'static ResourceInfo = Box::leak(Box::new(ResourceInfo {
        kind: leak(names.kind),
        plural: leak(names.plural),
        singular: leak(names.singular),
        short_names: Box::leak(short_names.into_boxed_slice()),
        namespaced: names.namespaced,
        api_version: leak(names.api_version),
    }));
    interned.push(info);
    info
}

/// Upstream's version order (`version.CompareKubeAwareVersionStrings`): GA before beta before
/// alpha, higher numbers first, anything else after them alphabetically.
pub fn version_priority(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        let (level, number) = if tail.is_empty() {
            (2, 0)
        } else if let Some(n) = tail.strip_prefix("beta") {
            (1, n.parse().ok()?)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n.parse().ok()?)
        } else {
            return None;
        };
        Some((major, level, number))
    }
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => (y.1, y.0, y.2).cmp(&(x.1, x.0, x.2)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_ga_then_beta_then_alpha_highest_first() {
        let mut versions = vec![
            "v1alpha1", "foo", "v2beta1", "v1", "v10", "v2", "v1beta2", "bar",
        ];
        versions.sort_by(|a, b| version_priority(a, b));
        assert_eq!(
            versions,
            ["v10", "v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "bar", "foo"]
        );
    }

    #[test]
    fn equal_names_share_one_interned_info() {
        let short = vec!["ct".to_string()];
        let names = Names {
            kind: "CronTab",
            plural: "crontabs",
            singular: "crontab",
            short_names: &short,
            namespaced: true,
            api_version: "stable.example.com/v1",
        };
        let first = intern(&names);
        assert!(std::ptr::eq(first, intern(&names)));
        let other = intern(&Names {
            api_version: "stable.example.com/v2",
            ..names
        });
        assert!(!std::ptr::eq(first, other));
        assert_eq!(other.group(), "stable.example.com");
    }
}
