//! What the kubelet reads besides its pods: ConfigMaps, Secrets and Services, by list + watch.
//!
//! Kubernetes counterpart: the kubelet's `configmap.Manager` and `secret.Manager` in their
//! watch-based mode (`pkg/kubelet/util/manager/watch_based_manager.go`) and its service lister
//! (`Kubelet.serviceLister`, used for service environment variables). Upstream watches each
//! referenced ConfigMap or Secret by name, as the Node authorizer only lets it read those;
//! minik keeps one cluster-wide watch per kind and filters in the kubelet (a documented
//! simplification: the Node authorizer lets a node read every ConfigMap and Secret).
//!
//! Every change bumps a generation number; each pod worker waits on it, so a pod held in
//! `CreateContainerConfigError` starts as soon as its ConfigMap appears, and a mounted
//! ConfigMap's files are rewritten right after a change — no polling.
//!
//! The pure code (`env.rs`, `projection.rs`) reads through the [`ObjectLookup`] trait, which
//! tests implement with [`StaticLookup`].

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use minik_api::ObjectKey;
use minik_client::{reflector, store, watcher, Api, Client, Event, ListParams, Store};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::warn;

/// Read access to the objects a pod's containers and volumes may reference.
pub trait ObjectLookup: Send + Sync {
    /// A ConfigMap; `Err` while the cache has not been filled once.
    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<Arc<ConfigMap>>, String>;
    /// A Secret; `Err` while the cache has not been filled once.
    fn secret(&self, namespace: &str, name: &str) -> Result<Option<Arc<Secret>>, String>;
    /// Every Service; `Err` while the cache has not been filled once (as upstream, no
    /// container starts before the kubelet has seen the services).
    fn services(&self) -> Result<Vec<Arc<Service>>, String>;
}

/// The kubelet's watched caches.
#[derive(Clone)]
pub struct WatchedSources {
    config_maps: Store<ConfigMap>,
    secrets: Store<Secret>,
    services: Store<Service>,
    generation: watch::Receiver<u64>,
}

fn ready<K>(store: &Store<K>, what: &str) -> Result<(), String> {
    if store.is_ready() {
        Ok(())
    } else {
        Err(format!("{what} have not yet been read at least once"))
    }
}

impl ObjectLookup for WatchedSources {
    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<Arc<ConfigMap>>, String> {
        ready(&self.config_maps, "configmaps")?;
        Ok(self.config_maps.get(&ObjectKey::new(namespace, name)))
    }

    fn secret(&self, namespace: &str, name: &str) -> Result<Option<Arc<Secret>>, String> {
        ready(&self.secrets, "secrets")?;
        Ok(self.secrets.get(&ObjectKey::new(namespace, name)))
    }

    fn services(&self) -> Result<Vec<Arc<Service>>, String> {
        ready(&self.services, "services").map_err(|e| format!("{e}, cannot construct envvars"))?;
        Ok(self.services.state())
    }
}

impl WatchedSources {
    /// Starts the three watches on `tracker`; they stop with `shutdown`.
    pub fn start(client: &Client, tracker: &TaskTracker, shutdown: &CancellationToken) -> Self {
        let (generation_tx, generation) = watch::channel(0u64);
        let generation_tx = Arc::new(generation_tx);
        WatchedSources {
            config_maps: spawn_watch::<ConfigMap>(client, tracker, shutdown, &generation_tx, true),
            secrets: spawn_watch::<Secret>(client, tracker, shutdown, &generation_tx, true),
            services: spawn_watch::<Service>(client, tracker, shutdown, &generation_tx, false),
            generation,
        }
    }

    /// A receiver that changes whenever a ConfigMap or Secret changes (or a cache fills).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation.clone()
    }
}

fn spawn_watch<K>(
    client: &Client,
    tracker: &TaskTracker,
    shutdown: &CancellationToken,
    generation: &Arc<watch::Sender<u64>>,
    every_change: bool,
) -> Store<K>
where
    K: minik_client::Object + k8s_openapi::ListableResource,
{
    let (reader, writer) = store::<K>();
    let api = Api::<K>::all(client.clone());
    let (shutdown, generation) = (shutdown.clone(), generation.clone());
    tracker.spawn(async move {
        let events = reflector(writer, watcher(api, ListParams::default()));
        tokio::pin!(events);
        loop {
            let event = tokio::select! {
                _ = shutdown.cancelled() => return,
                event = events.next() => event,
            };
            match event {
                None => return,
                Some(Err(error)) => warn!(kind = K::KIND, %error, "watch error"),
                Some(Ok(Event::Restarted(_))) => generation.send_modify(|g| *g += 1),
                Some(Ok(_)) if every_change => generation.send_modify(|g| *g += 1),
                Some(Ok(_)) => {}
            }
        }
    });
    reader
}

/// A fixed set of objects, for tests.
#[derive(Clone, Debug, Default)]
pub struct StaticLookup {
    /// `namespace/name` → ConfigMap.
    pub config_maps: BTreeMap<String, ConfigMap>,
    /// `namespace/name` → Secret.
    pub secrets: BTreeMap<String, Secret>,
    /// Every Service.
    pub services: Vec<Arc<Service>>,
}

impl ObjectLookup for StaticLookup {
    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<Arc<ConfigMap>>, String> {
        Ok(self
            .config_maps
            .get(&format!("{namespace}/{name}"))
            .cloned()
            .map(Arc::new))
    }

    fn secret(&self, namespace: &str, name: &str) -> Result<Option<Arc<Secret>>, String> {
        Ok(self
            .secrets
            .get(&format!("{namespace}/{name}"))
            .cloned()
            .map(Arc::new))
    }

    fn services(&self) -> Result<Vec<Arc<Service>>, String> {
        Ok(self.services.clone())
    }
}
