//! The RBAC objects the authorizer reads, kept in memory and reloaded after any of them changes.
//!
//! Kubernetes counterpart: the RBAC authorizer's listers over shared informers
//! (`plugin/pkg/auth/authorizer/rbac/rbac.go`, `RoleGetter` & co.): authorization never reads
//! etcd per request. minik's version: one snapshot ([`Policy`]), marked stale by a watch on the
//! four kinds' storage prefixes, and rebuilt by the next request that finds it stale.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::rbac::Policy;
use crate::storage::{self, Storage};

const PREFIXES: [&str; 4] = [
    "/registry/roles/",
    "/registry/clusterroles/",
    "/registry/rolebindings/",
    "/registry/clusterrolebindings/",
];

/// The current [`Policy`] and whether it is stale.
#[derive(Debug)]
pub struct PolicyCache {
    stale: AtomicBool,
    policy: RwLock<Arc<Policy>>,
}

impl Default for PolicyCache {
    fn default() -> Self {
        PolicyCache {
            stale: AtomicBool::new(true),
            policy: RwLock::new(Arc::new(Policy::default())),
        }
    }
}

impl PolicyCache {
    /// The policy, reloaded from `storage` first if a write made it stale.
    pub fn current(&self, storage: &dyn Storage) -> Result<Arc<Policy>, storage::Error> {
        // Cleared before loading: a write landing during the load marks it stale again.
        if self.stale.swap(false, Ordering::SeqCst) {
            match load(storage) {
                Ok(policy) => *self.policy.write().expect("policy lock") = Arc::new(policy),
                Err(e) => {
                    self.stale.store(true, Ordering::SeqCst);
                    return Err(e);
                }
            }
        }
        Ok(self.policy.read().expect("policy lock").clone())
    }

    /// Marks the policy stale: the next request reloads it.
    pub fn mark_stale(&self) {
        self.stale.store(true, Ordering::SeqCst);
    }

    /// Watches the four prefixes until `shutdown`, marking the policy stale on every event (and
    /// whenever a watch has to be reopened, since events may have been missed).
    pub async fn watch_writes(
        self: Arc<Self>,
        storage: Arc<dyn Storage>,
        shutdown: CancellationToken,
    ) {
        loop {
            let after = storage.current_revision();
            self.stale.store(true, Ordering::SeqCst);
            let streams: Result<Vec<_>, _> =
                PREFIXES.iter().map(|p| storage.watch(p, after)).collect();
            if let Ok(streams) = streams {
                let mut events = futures::stream::select_all(streams);
                loop {
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        event = events.next() => match event {
                            Some(Ok(_)) => self.stale.store(true, Ordering::SeqCst),
                            _ => break,
                        },
                    }
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    }
}

fn load(storage: &dyn Storage) -> Result<Policy, storage::Error> {
    let mut policy = Policy::default();
    for role in typed::<minik_api::k8s_openapi::api::rbac::v1::Role>(storage, PREFIXES[0])? {
        let key = (
            role.metadata.namespace.clone().unwrap_or_default(),
            role.metadata.name.clone().unwrap_or_default(),
        );
        policy.roles.insert(key, role);
    }
    for role in typed::<minik_api::k8s_openapi::api::rbac::v1::ClusterRole>(storage, PREFIXES[1])? {
        policy
            .cluster_roles
            .insert(role.metadata.name.clone().unwrap_or_default(), role);
    }
    policy.role_bindings = typed(storage, PREFIXES[2])?;
    policy.cluster_role_bindings = typed(storage, PREFIXES[3])?;
    Ok(policy)
}

/// Every stored object under `prefix` that decodes as `T` (the registry stored them typed, so all).
fn typed<T: DeserializeOwned>(
    storage: &dyn Storage,
    prefix: &str,
) -> Result<Vec<T>, storage::Error> {
    let (records, _) = storage.list(prefix)?;
    Ok(records
        .into_iter()
        .filter_map(|r| serde_json::from_value(Value::clone(&r.value)).ok())
        .collect())
}
