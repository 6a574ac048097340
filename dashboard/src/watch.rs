//! The watches: one per kind, each folding what it sees into the hub.
//!
//! Kubernetes counterpart: the informers of any controller (`client-go/tools/cache`), here
//! `minik_client::watcher` (list, then watch, relist on 410). Each kind says how an object
//! changes the hub ([`Fold`]): its view, and for pods, slices and Events the journey's steps.
//! Every change is stamped with the moment the watch delivered it, which is what the journey's
//! watch steps measure.
//! minik simplifies: all namespaces, no field selectors; the page filters by namespace.

use std::collections::{BTreeSet, HashSet};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Event, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::ListableResource;
use minik_client::{watcher, Api, Client, ListParams, Object};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use crate::hub::{Hub, Shared};
use crate::journey;
use crate::views;

/// How a kind's objects change the hub.
pub trait Fold: Object + ListableResource + Send + Sync + 'static {
    /// The kind's name in logs.
    const NAME: &'static str;
    /// The object's key (`ns/name`, or the name of a node).
    fn key_of(&self) -> String {
        views::key(self.metadata())
    }
    /// The object was seen (`listed`: in a list rather than a watch), at `seen` (ms).
    fn apply(&self, hub: &mut Hub, seen: i64, listed: bool);
    /// The object with `key` is gone.
    fn remove(hub: &mut Hub, key: &str, seen: i64);
}

fn now() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

/// Starts one watch task per kind.
pub fn spawn_all(
    tasks: &mut JoinSet<()>,
    client: &Client,
    hub: &Shared,
    shutdown: &CancellationToken,
) {
    tasks.spawn(follow::<Pod>(client.clone(), hub.clone(), shutdown.clone()));
    tasks.spawn(follow::<Node>(
        client.clone(),
        hub.clone(),
        shutdown.clone(),
    ));
    tasks.spawn(follow::<Service>(
        client.clone(),
        hub.clone(),
        shutdown.clone(),
    ));
    tasks.spawn(follow::<EndpointSlice>(
        client.clone(),
        hub.clone(),
        shutdown.clone(),
    ));
    tasks.spawn(follow::<Deployment>(
        client.clone(),
        hub.clone(),
        shutdown.clone(),
    ));
    tasks.spawn(follow::<ReplicaSet>(
        client.clone(),
        hub.clone(),
        shutdown.clone(),
    ));
    tasks.spawn(follow::<Event>(
        client.clone(),
        hub.clone(),
        shutdown.clone(),
    ));
}

/// Watches every `K` until `shutdown`, folding each change into the hub.
async fn follow<K: Fold>(client: Client, hub: Shared, shutdown: CancellationToken) {
    let mut stream = Box::pin(watcher(Api::<K>::all(client), ListParams::default()));
    let mut known: HashSet<String> = HashSet::new();
    loop {
        let item = tokio::select! {
            _ = shutdown.cancelled() => return,
            item = stream.next() => item,
        };
        let event = match item {
            Some(Ok(event)) => event,
            Some(Err(error)) => {
                debug!(kind = K::NAME, %error, "watch error; the watcher retries");
                continue;
            }
            None => return,
        };
        let seen = now();
        let mut hub = hub.lock();
        match event {
            watcher::Event::Applied(object) => {
                known.insert(object.key_of());
                object.apply(&mut hub, seen, false);
            }
            watcher::Event::Deleted(object) => {
                let key = object.key_of();
                known.remove(&key);
                K::remove(&mut hub, &key, seen);
            }
            watcher::Event::Restarted(objects) => {
                info!(kind = K::NAME, count = objects.len(), "listed");
                let keys: BTreeSet<String> = objects.iter().map(Fold::key_of).collect();
                for object in &objects {
                    object.apply(&mut hub, seen, true);
                }
                for key in known.iter().filter(|k| !keys.contains(*k)) {
                    K::remove(&mut hub, key, seen);
                }
                known = keys.into_iter().collect();
            }
        }
    }
}

impl Fold for Pod {
    const NAME: &'static str = "pods";
    fn apply(&self, hub: &mut Hub, seen: i64, listed: bool) {
        let key = self.key_of();
        let uid = self.metadata.uid.clone().unwrap_or_default();
        hub.uids.insert(key.clone(), uid.clone());
        let before = hub
            .pods
            .get(&key)
            .filter(|p| p.metadata.uid == self.metadata.uid);
        let steps = journey::pod_steps(before, self, seen, listed);
        for step in steps {
            hub.add_step(&uid, &key, step);
        }
        if let Some(ip) = self.status.as_ref().and_then(|s| s.pod_ip.clone()) {
            hub.ips.insert(ip, (uid.clone(), key.clone()));
        }
        hub.pods.insert(key.clone(), self.clone());
        hub.table("pods").upsert(key, views::pod(self));
        hub.pods_changed = true;
    }
    fn remove(hub: &mut Hub, key: &str, seen: i64) {
        hub.table("pods").remove(key);
        hub.pods.remove(key);
        // The uid stays known by key: the slice still lists the pod a moment after it is gone.
        if let Some(uid) = hub.uids.get(key).cloned() {
            hub.add_step(&uid, key, journey::gone(seen));
            hub.forget_later(&uid);
        }
        hub.pods_changed = true;
    }
}

impl Fold for Node {
    const NAME: &'static str = "nodes";
    fn key_of(&self) -> String {
        self.metadata.name.clone().unwrap_or_default()
    }
    fn apply(&self, hub: &mut Hub, _seen: i64, _listed: bool) {
        hub.table("nodes").upsert(self.key_of(), views::node(self));
    }
    fn remove(hub: &mut Hub, key: &str, _seen: i64) {
        hub.table("nodes").remove(key);
    }
}

impl Fold for Service {
    const NAME: &'static str = "services";
    fn apply(&self, hub: &mut Hub, _seen: i64, _listed: bool) {
        hub.table("services")
            .upsert(self.key_of(), views::service(self));
    }
    fn remove(hub: &mut Hub, key: &str, _seen: i64) {
        hub.table("services").remove(key);
    }
}

/// Adds a slice's per-pod steps to the journeys of the pods of namespace `ns`.
fn slice_journeys(
    hub: &mut Hub,
    ns: &str,
    before: &[views::SliceEndpoint],
    after: &[views::SliceEndpoint],
    seen: i64,
) {
    for (pod, step) in journey::slice_steps(before, after, seen) {
        hub.add_step_by_key(&format!("{ns}/{pod}"), step);
    }
}

impl Fold for EndpointSlice {
    const NAME: &'static str = "endpointslices";
    fn apply(&self, hub: &mut Hub, seen: i64, _listed: bool) {
        let key = self.key_of();
        let after = views::slice_endpoints(self);
        let before = hub
            .slices
            .insert(key.clone(), after.clone())
            .unwrap_or_default();
        let ns = self.metadata.namespace.clone().unwrap_or_default();
        slice_journeys(hub, &ns, &before, &after, seen);
        hub.table("slices").upsert(key, views::slice(self));
    }
    fn remove(hub: &mut Hub, key: &str, seen: i64) {
        let before = hub.slices.remove(key).unwrap_or_default();
        let ns = key
            .split_once('/')
            .map(|(ns, _)| ns)
            .unwrap_or_default()
            .to_string();
        slice_journeys(hub, &ns, &before, &[], seen);
        hub.table("slices").remove(key);
    }
}

impl Fold for Deployment {
    const NAME: &'static str = "deployments";
    fn apply(&self, hub: &mut Hub, _seen: i64, _listed: bool) {
        hub.table("deployments")
            .upsert(self.key_of(), views::deployment(self));
    }
    fn remove(hub: &mut Hub, key: &str, _seen: i64) {
        hub.table("deployments").remove(key);
    }
}

impl Fold for ReplicaSet {
    const NAME: &'static str = "replicasets";
    fn apply(&self, hub: &mut Hub, _seen: i64, _listed: bool) {
        hub.table("replicasets")
            .upsert(self.key_of(), views::replica_set(self));
        hub.pods_changed = true; // a new ReplicaSet starts its chart series at zero
    }
    fn remove(hub: &mut Hub, key: &str, _seen: i64) {
        hub.table("replicasets").remove(key);
    }
}

/// A consumer's `EndpointsApplied` Event: steps for the pods whose addresses it added or dropped.
fn consumer_journeys(hub: &mut Hub, event: &Event) {
    if event.reason.as_deref() != Some("EndpointsApplied") {
        return;
    }
    let message = event.message.as_deref().unwrap_or_default();
    let (Some((port, after)), Some(at)) = (
        journey::applied_endpoints(message),
        views::event_time(event),
    ) else {
        return;
    };
    let who = views::event_source(event);
    let before = hub
        .applied
        .insert(format!("{who} {port}"), after.clone())
        .unwrap_or_default();
    for (ip, step) in journey::consumer_steps(&who, &before, &after, at.as_millisecond()) {
        if let Some((uid, key)) = hub.ips.get(&ip).cloned() {
            hub.add_step(&uid, &key, step);
        }
    }
}

impl Fold for Event {
    const NAME: &'static str = "events";
    fn apply(&self, hub: &mut Hub, _seen: i64, _listed: bool) {
        // A relist or a count bump shows an Event again: each (uid, count) is shown once.
        let id = format!(
            "{}:{}",
            self.metadata.uid.as_deref().unwrap_or_default(),
            self.count.unwrap_or(1)
        );
        if !hub.note_event(id) {
            return;
        }
        hub.add_event(views::event(self));
        consumer_journeys(hub, self);
        if let Some((pod, step)) = journey::endpoint_event_step(self) {
            let ns = self.involved_object.namespace.clone().unwrap_or_default();
            hub.add_step_by_key(&format!("{ns}/{pod}"), step);
        }
        let object = &self.involved_object;
        if object.kind.as_deref() != Some("Pod") {
            return;
        }
        let Some(step) = journey::event_step(self) else {
            return;
        };
        let ns = object
            .namespace
            .clone()
            .or_else(|| self.metadata.namespace.clone())
            .unwrap_or_default();
        let key = format!("{ns}/{}", object.name.as_deref().unwrap_or_default());
        match object.uid.as_deref().filter(|u| !u.is_empty()) {
            Some(uid) => hub.add_step(uid, &key, step),
            None => hub.add_step_by_key(&key, step),
        }
    }
    fn remove(_hub: &mut Hub, _key: &str, _seen: i64) {
        // An Event's expiry is not news: the feed keeps its line.
    }
}
