//! The service-account controller: every namespace has a `default` ServiceAccount.
//!
//! Kubernetes counterpart: `pkg/controller/serviceaccount/serviceaccounts_controller.go`
//! (`ServiceAccountsController`, `syncNamespace`): informers on namespaces and ServiceAccounts; a
//! namespace that appears or changes, or a managed account that is deleted, queues the namespace;
//! `sync_namespace` creates each missing managed account unless the namespace is terminating
//! (docs/security.md#s13). An account that exists is never touched, so a user's edits stay.
//!
//! The decision ([`missing_accounts`]) is a pure function of the namespace and the account store.
//!
//! What minik simplifies: the managed list is fixed (`default`, upstream's `--service-account-…`
//! has no flag for it either).

use std::sync::Arc;

use minik_api::core::{Namespace, ServiceAccount};
use minik_api::meta::ObjectMeta;
use minik_api::serviceaccounts::DEFAULT_SERVICE_ACCOUNT;
use minik_api::ObjectKey;
use minik_client::{Api, Client, Store, WorkQueue};
use tracing::{debug, info};

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};

/// The accounts every namespace gets (`DefaultServiceAccountsControllerOptions`).
pub const MANAGED_ACCOUNTS: &[&str] = &[DEFAULT_SERVICE_ACCOUNT];

/// The controller: two stores, a queue of namespace names, the client it writes through.
pub struct ServiceAccountsController {
    namespaces: Store<Namespace>,
    accounts: Store<ServiceAccount>,
    queue: Arc<WorkQueue<String>>,
    client: Client,
}

/// A namespace being deleted takes no new objects (the namespace lifecycle admission refuses them).
pub fn is_terminating(namespace: &Namespace) -> bool {
    namespace.metadata.deletion_timestamp.is_some()
        || namespace.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Terminating")
}

/// The managed accounts `namespace` lacks; none while it is being deleted.
pub fn missing_accounts(
    namespace: &Namespace,
    accounts: &Store<ServiceAccount>,
) -> Vec<&'static str> {
    if is_terminating(namespace) {
        return Vec::new();
    }
    let name = namespace.metadata.name.clone().unwrap_or_default();
    MANAGED_ACCOUNTS
        .iter()
        .copied()
        .filter(|account| accounts.get(&ObjectKey::new(&name, *account)).is_none())
        .collect()
}

impl ServiceAccountsController {
    /// Registers the handlers on the shared Namespace and ServiceAccount informers.
    pub fn new(informers: &SharedInformers, client: Client) -> Arc<Self> {
        let namespace_informer = informers.informer::<Namespace>();
        let account_informer = informers.informer::<ServiceAccount>();
        let controller = Arc::new(ServiceAccountsController {
            namespaces: namespace_informer.store(),
            accounts: account_informer.store(),
            queue: Arc::new(WorkQueue::new()),
            client,
        });
        let queue = controller.queue.clone();
        namespace_informer.add_handler(move |change: &Change<Namespace>| {
            if let Change::Added(ns) | Change::Updated { new: ns, .. } = change {
                queue.add(ns.metadata.name.clone().unwrap_or_default());
            }
        });
        let queue = controller.queue.clone();
        account_informer.add_handler(move |change: &Change<ServiceAccount>| {
            let Change::Deleted(account) = change else {
                return;
            };
            let meta = &account.metadata;
            if MANAGED_ACCOUNTS.contains(&meta.name.as_deref().unwrap_or("")) {
                queue.add(meta.namespace.clone().unwrap_or_default());
            }
        });
        controller
    }

    /// Creates the managed accounts `namespace` lacks (`syncNamespace`).
    pub async fn sync_namespace(&self, namespace: &str) -> minik_client::Result<()> {
        let Some(found) = self.namespaces.get(&ObjectKey::cluster(namespace)) else {
            debug!(namespace, "namespace gone");
            return Ok(());
        };
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), namespace);
        for name in missing_accounts(&found, &self.accounts) {
            let account = ServiceAccount {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    namespace: Some(namespace.to_string()),
                    ..ObjectMeta::default()
                },
                ..ServiceAccount::default()
            };
            match api.create(&account).await {
                Ok(_) => info!(namespace, account = name, "created service account"),
                Err(e) if e.is_already_exists() => {}
                // A namespace that began terminating after our cache saw it refuses new objects.
                Err(e) if e.status().and_then(|s| s.code) == Some(403) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl Controller for ServiceAccountsController {
    type Key = String;

    fn name(&self) -> &'static str {
        "serviceaccount"
    }

    fn queue(&self) -> &Arc<WorkQueue<String>> {
        &self.queue
    }

    async fn sync(&self, key: &String) -> minik_client::Result<()> {
        self.sync_namespace(key).await
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use minik_client::store::store;
    use minik_client::Event;

    pub(crate) fn namespace(name: &str, terminating: bool) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                deletion_timestamp: terminating.then(minik_api::now),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        }
    }

    fn account(namespace: &str, name: &str) -> ServiceAccount {
        ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        }
    }

    /// A namespace without `default` gets it; one with it, or terminating, gets nothing.
    #[test]
    fn only_active_namespaces_lacking_default_need_it() {
        let (accounts, mut writer) = store::<ServiceAccount>();
        writer.apply_watcher_event(&Event::Restarted(vec![
            account("team", "default"),
            account("other", "robot"),
        ]));
        assert!(missing_accounts(&namespace("team", false), &accounts).is_empty());
        assert_eq!(
            missing_accounts(&namespace("other", false), &accounts),
            ["default"]
        );
        assert!(missing_accounts(&namespace("other", true), &accounts).is_empty());
    }
}
