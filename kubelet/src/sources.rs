//! What the kubelet reads besides its pods: ConfigMaps, Secrets and Services, by list + watch.
//!
//! Kubernetes counterpart: the kubelet's `configmap.Manager` and `secret.Manager` in their
//! watch-based mode (`pkg/kubelet/util/manager/watch_based_manager.go`) and its service lister
//! (`Kubelet.serviceLister`, used for service environment variables). As upstream, each
//! ConfigMap or Secret a pod of this node references gets its own list + watch with
//! `fieldSelector=metadata.name=NAME`, started when the first pod references it and stopped when
//! none does ([`ObjectLookup::register_pods`]): the Node authorizer lets a node read only those
//! (docs/kubernetes-rules.md#c11). Services are watched cluster-wide (nodes may read them all).
//!
//! Every change bumps a generation number; each pod worker waits on it, so a pod held in
//! `CreateContainerConfigError` starts as soon as its ConfigMap appears, and a mounted
//! ConfigMap's files are rewritten right after a change — no polling.
//!
//! The pure code (`env.rs`, `projection.rs`) reads through the [`ObjectLookup`] trait, which
//! tests implement with [`StaticLookup`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use minik_api::ObjectKey;
use minik_client::{reflector, store, watcher, Api, Client, Event, ListParams, Store};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

/// Read access to the objects a pod's containers and volumes may reference.
pub trait ObjectLookup: Send + Sync {
    /// A ConfigMap; `Err` while its cache has not been filled once.
    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<Arc<ConfigMap>>, String>;
    /// A Secret; `Err` while its cache has not been filled once.
    fn secret(&self, namespace: &str, name: &str) -> Result<Option<Arc<Secret>>, String>;
    /// Every Service; `Err` while the cache has not been filled once (as upstream, no
    /// container starts before the kubelet has seen the services).
    fn services(&self) -> Result<Vec<Arc<Service>>, String>;
    /// The pods bound to this node now: watch what they reference, stop watching the rest
    /// (upstream's `RegisterPod`/`UnregisterPod`). A fixed lookup ignores it.
    fn register_pods(&self, _pods: &[Arc<Pod>]) {}
}

/// The kubelet's watched caches.
#[derive(Clone)]
pub struct WatchedSources {
    config_maps: PerObject<ConfigMap>,
    secrets: PerObject<Secret>,
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
        self.config_maps.get(namespace, name)
    }

    fn secret(&self, namespace: &str, name: &str) -> Result<Option<Arc<Secret>>, String> {
        self.secrets.get(namespace, name)
    }

    fn services(&self) -> Result<Vec<Arc<Service>>, String> {
        ready(&self.services, "services").map_err(|e| format!("{e}, cannot construct envvars"))?;
        Ok(self.services.state())
    }

    fn register_pods(&self, pods: &[Arc<Pod>]) {
        let (mut config_maps, mut secrets) = (BTreeSet::new(), BTreeSet::new());
        for pod in pods.iter().filter(|pod| !terminated(pod)) {
            references(pod, &mut config_maps, &mut secrets);
        }
        self.config_maps.watch_only(config_maps);
        self.secrets.watch_only(secrets);
    }
}

impl WatchedSources {
    /// Starts the Service watch on `tracker`; per-object watches start as pods register. All
    /// stop with `shutdown`.
    pub fn start(client: &Client, tracker: &TaskTracker, shutdown: &CancellationToken) -> Self {
        let (generation_tx, generation) = watch::channel(0u64);
        let generation_tx = Arc::new(generation_tx);
        let api = Api::<Service>::all(client.clone());
        let watcher = Watcher {
            client: client.clone(),
            tracker: tracker.clone(),
            shutdown: shutdown.clone(),
            generation: generation_tx,
        };
        WatchedSources {
            services: watcher.spawn(api, ListParams::default(), shutdown.clone(), false),
            config_maps: PerObject::new(watcher.clone()),
            secrets: PerObject::new(watcher),
            generation,
        }
    }

    /// A receiver that changes whenever a ConfigMap or Secret changes (or a cache fills).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation.clone()
    }
}

/// Succeeded and Failed pods need nothing more (upstream unregisters them too).
fn terminated(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed"))
}

/// The ConfigMaps and Secrets a pod's volumes (also projected), `env` and `envFrom` name.
fn references(pod: &Pod, config_maps: &mut BTreeSet<ObjectKey>, secrets: &mut BTreeSet<ObjectKey>) {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let key = |name: &str| ObjectKey::new(namespace, name);
    let Some(spec) = &pod.spec else { return };
    for volume in spec.volumes.iter().flatten() {
        if let Some(name) = volume.config_map.as_ref().map(|c| &c.name) {
            config_maps.insert(key(name));
        }
        if let Some(name) = volume.secret.as_ref().and_then(|s| s.secret_name.as_ref()) {
            secrets.insert(key(name));
        }
        let sources = volume.projected.as_ref().and_then(|p| p.sources.as_ref());
        for source in sources.into_iter().flatten() {
            if let Some(c) = &source.config_map {
                config_maps.insert(key(&c.name));
            }
            if let Some(s) = &source.secret {
                secrets.insert(key(&s.name));
            }
        }
    }
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers);
    for container in containers {
        for env in container.env.iter().flatten() {
            let from = env.value_from.as_ref();
            if let Some(c) = from.and_then(|f| f.config_map_key_ref.as_ref()) {
                config_maps.insert(key(&c.name));
            }
            if let Some(s) = from.and_then(|f| f.secret_key_ref.as_ref()) {
                secrets.insert(key(&s.name));
            }
        }
        for from in container.env_from.iter().flatten() {
            if let Some(c) = &from.config_map_ref {
                config_maps.insert(key(&c.name));
            }
            if let Some(s) = &from.secret_ref {
                secrets.insert(key(&s.name));
            }
        }
    }
}

/// A watched object's cache and the token that stops its watch.
type Watched<K> = BTreeMap<ObjectKey, (Store<K>, CancellationToken)>;

/// One list + watch per referenced object of kind `K`, each with its own cache.
#[derive(Clone)]
struct PerObject<K> {
    watcher: Watcher,
    watches: Arc<Mutex<Watched<K>>>,
}

impl<K> PerObject<K>
where
    K: minik_client::Object + k8s_openapi::ListableResource,
{
    fn new(watcher: Watcher) -> Self {
        PerObject {
            watcher,
            watches: Arc::default(),
        }
    }

    fn get(&self, namespace: &str, name: &str) -> Result<Option<Arc<K>>, String> {
        let key = ObjectKey::new(namespace, name);
        let watches = self.watches.lock().expect("sources lock");
        let what = K::KIND.to_lowercase();
        let Some((store, _)) = watches.get(&key) else {
            return Err(format!("{what} {key} not registered"));
        };
        ready(store, &format!("{what} {key}"))?;
        Ok(store.get(&key))
    }

    /// Starts a watch for each key in `wanted` not yet watched; stops the others.
    fn watch_only(&self, wanted: BTreeSet<ObjectKey>) {
        let mut watches = self.watches.lock().expect("sources lock");
        watches.retain(|key, (_, stop)| {
            let keep = wanted.contains(key);
            if !keep {
                info!(kind = K::KIND, object = %key, "stopping watch: no pod references it");
                stop.cancel();
            }
            keep
        });
        for key in wanted {
            if watches.contains_key(&key) {
                continue;
            }
            info!(kind = K::KIND, object = %key, "watching referenced object");
            let namespace = key.namespace.as_deref().unwrap_or_default();
            let api = Api::<K>::namespaced(self.watcher.client.clone(), namespace);
            let params = ListParams::default().fields(&format!("metadata.name={}", key.name));
            let stop = self.watcher.shutdown.child_token();
            let store = self.watcher.spawn(api, params, stop.clone(), true);
            watches.insert(key, (store, stop));
        }
    }
}

/// What a watch task needs: the client, where to spawn, and the generation to bump.
#[derive(Clone)]
struct Watcher {
    client: Client,
    tracker: TaskTracker,
    shutdown: CancellationToken,
    generation: Arc<watch::Sender<u64>>,
}

impl Watcher {
    /// Spawns a list + watch of `api` with `params` into a new cache, until `stop`.
    fn spawn<K>(
        &self,
        api: Api<K>,
        params: ListParams,
        stop: CancellationToken,
        every_change: bool,
    ) -> Store<K>
    where
        K: minik_client::Object + k8s_openapi::ListableResource,
    {
        let (reader, writer) = store::<K>();
        let generation = self.generation.clone();
        self.tracker.spawn(async move {
            let events = reflector(writer, watcher(api, params));
            tokio::pin!(events);
            loop {
                let event = tokio::select! {
                    _ = stop.cancelled() => return,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Volumes (also projected), `env` and `envFrom` of every container are what the kubelet
    /// watches, in the pod's namespace.
    #[test]
    fn a_pod_references_what_its_volumes_and_env_name() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "team"},
            "spec": {
                "volumes": [
                    {"name": "a", "configMap": {"name": "vol-cm"}},
                    {"name": "b", "secret": {"secretName": "vol-secret"}},
                    {"name": "c", "projected": {"sources": [{"secret": {"name": "proj"}}]}}
                ],
                "initContainers": [{"name": "i", "envFrom": [{"configMapRef": {"name": "init"}}]}],
                "containers": [{"name": "c", "env": [
                    {"name": "X", "valueFrom": {"secretKeyRef": {"name": "env", "key": "k"}}}
                ]}]
            }
        }))
        .expect("pod");
        let (mut config_maps, mut secrets) = (BTreeSet::new(), BTreeSet::new());
        references(&pod, &mut config_maps, &mut secrets);
        let keys = |names: &[&str]| names.iter().map(|n| ObjectKey::new("team", *n)).collect();
        assert_eq!(config_maps, keys(&["init", "vol-cm"]));
        assert_eq!(secrets, keys(&["env", "proj", "vol-secret"]));
    }
}
