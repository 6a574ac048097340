//! The root CA publisher: every namespace has a `kube-root-ca.crt` ConfigMap holding the cluster CA.
//!
//! Kubernetes counterpart: `pkg/controller/certificates/rootcacertpublisher/publisher.go`
//! (`Publisher.syncNamespace`): informers on namespaces and ConfigMaps; a namespace that appears,
//! or a `kube-root-ca.crt` that is deleted or edited, queues the namespace; the sync creates the
//! ConfigMap, or puts its `ca.crt` back, unless the namespace is terminating. Pods read it through
//! the projected `kube-api-access-…` volume the ServiceAccount admission mounts (its `ca.crt`), so
//! without it every such pod waits in ContainerCreating (docs/security.md#s16).
//!
//! What minik simplifies: the CA comes from `--root-ca-file` as upstream; a cluster started with
//! `--insecure` has no CA, and the published `ca.crt` is then empty (the API is plain http).
//!
//! The decision ([`wanted_change`]) is a pure function of the namespace and the ConfigMap store.

use std::collections::BTreeMap;
use std::sync::Arc;

use minik_api::core::{ConfigMap, Namespace};
use minik_api::meta::ObjectMeta;
use minik_api::serviceaccounts::ROOT_CA_CONFIG_MAP;
use minik_api::ObjectKey;
use minik_client::{Api, Client, Store, WorkQueue};
use tracing::{debug, info};

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};

/// The key of the CA in the ConfigMap's data.
pub const CA_KEY: &str = "ca.crt";

/// The controller: two stores, a queue of namespace names, the CA it publishes.
pub struct RootCaPublisher {
    namespaces: Store<Namespace>,
    config_maps: Store<ConfigMap>,
    queue: Arc<WorkQueue<String>>,
    client: Client,
    root_ca: String,
}

/// What a namespace's `kube-root-ca.crt` needs.
#[derive(Clone, Debug, PartialEq)]
pub enum Publish {
    /// Nothing: it is right, or the namespace is terminating.
    None,
    /// It is missing.
    Create,
    /// Its `ca.crt` differs: write it back, keeping the rest of the object.
    Update(Box<ConfigMap>),
}

/// What `namespace`'s ConfigMap needs so that it holds `root_ca`.
pub fn wanted_change(
    namespace: &Namespace,
    config_maps: &Store<ConfigMap>,
    root_ca: &str,
) -> Publish {
    if crate::serviceaccount::is_terminating(namespace) {
        return Publish::None;
    }
    let name = namespace.metadata.name.clone().unwrap_or_default();
    match config_maps.get(&ObjectKey::new(&name, ROOT_CA_CONFIG_MAP)) {
        None => Publish::Create,
        Some(found) => {
            let data = found.data.clone().unwrap_or_default();
            if data.len() == 1 && data.get(CA_KEY).map(String::as_str) == Some(root_ca) {
                Publish::None
            } else {
                let mut fixed = (*found).clone();
                fixed.data = Some(BTreeMap::from([(CA_KEY.to_string(), root_ca.to_string())]));
                Publish::Update(Box::new(fixed))
            }
        }
    }
}

impl RootCaPublisher {
    /// Registers the handlers on the shared Namespace and ConfigMap informers.
    pub fn new(informers: &SharedInformers, client: Client, root_ca: String) -> Arc<Self> {
        let namespace_informer = informers.informer::<Namespace>();
        let config_map_informer = informers.informer::<ConfigMap>();
        let controller = Arc::new(RootCaPublisher {
            namespaces: namespace_informer.store(),
            config_maps: config_map_informer.store(),
            queue: Arc::new(WorkQueue::new()),
            client,
            root_ca,
        });
        let queue = controller.queue.clone();
        namespace_informer.add_handler(move |change: &Change<Namespace>| {
            if let Change::Added(ns) | Change::Updated { new: ns, .. } = change {
                queue.add(ns.metadata.name.clone().unwrap_or_default());
            }
        });
        let queue = controller.queue.clone();
        config_map_informer.add_handler(move |change: &Change<ConfigMap>| {
            let config_map = match change {
                Change::Updated { new, .. } => new,
                Change::Deleted(old) => old,
                Change::Added(_) => return,
            };
            let meta = &config_map.metadata;
            if meta.name.as_deref() == Some(ROOT_CA_CONFIG_MAP) {
                queue.add(meta.namespace.clone().unwrap_or_default());
            }
        });
        controller
    }

    /// Creates or corrects `namespace`'s `kube-root-ca.crt` (`syncNamespace`).
    pub async fn sync_namespace(&self, namespace: &str) -> minik_client::Result<()> {
        let Some(found) = self.namespaces.get(&ObjectKey::cluster(namespace)) else {
            debug!(namespace, "namespace gone");
            return Ok(());
        };
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let written = match wanted_change(&found, &self.config_maps, &self.root_ca) {
            Publish::None => return Ok(()),
            Publish::Create => api
                .create(&self.config_map(namespace))
                .await
                .map(|_| "created"),
            Publish::Update(fixed) => api
                .replace(ROOT_CA_CONFIG_MAP, &fixed)
                .await
                .map(|_| "updated"),
        };
        match written {
            Ok(verb) => info!(
                namespace,
                config_map = ROOT_CA_CONFIG_MAP,
                "{verb} the root CA"
            ),
            // Our cache is behind (it exists, or changed): the informer's event queues us again.
            Err(e) if e.is_already_exists() || e.is_conflict() => {}
            // A namespace that began terminating after our cache saw it refuses new objects.
            Err(e) if e.status().and_then(|s| s.code) == Some(403) => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn config_map(&self, namespace: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(ROOT_CA_CONFIG_MAP.to_string()),
                namespace: Some(namespace.to_string()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(CA_KEY.to_string(), self.root_ca.clone())])),
            ..ConfigMap::default()
        }
    }
}

impl Controller for RootCaPublisher {
    type Key = String;

    fn name(&self) -> &'static str {
        "root-ca-cert-publisher"
    }

    fn queue(&self) -> &Arc<WorkQueue<String>> {
        &self.queue
    }

    async fn sync(&self, key: &String) -> minik_client::Result<()> {
        self.sync_namespace(key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serviceaccount::tests::namespace;
    use minik_client::store::store;
    use minik_client::Event;

    fn root_ca(namespace: &str, ca: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(ROOT_CA_CONFIG_MAP.into()),
                namespace: Some(namespace.into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(CA_KEY.into(), ca.into())])),
            ..ConfigMap::default()
        }
    }

    /// Missing → create; right → nothing; another CA → put ours back; terminating → nothing.
    #[test]
    fn each_active_namespace_gets_the_ca_and_keeps_it() {
        let (config_maps, mut writer) = store::<ConfigMap>();
        writer.apply_watcher_event(&Event::Restarted(vec![
            root_ca("right", "CA"),
            root_ca("edited", "forged"),
        ]));
        let change = |ns: &Namespace| wanted_change(ns, &config_maps, "CA");
        assert_eq!(change(&namespace("new", false)), Publish::Create);
        assert_eq!(change(&namespace("right", false)), Publish::None);
        assert_eq!(change(&namespace("new", true)), Publish::None);
        match change(&namespace("edited", false)) {
            Publish::Update(fixed) => assert_eq!(fixed.data.unwrap()[CA_KEY], "CA"),
            other => panic!("expected an update, got {other:?}"),
        }
    }
}
