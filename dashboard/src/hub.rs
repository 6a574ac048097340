//! The hub: everything the dashboard knows, as views keyed by object, and the changes not yet
//! sent to the pages.
//!
//! Kubernetes counterpart: an informer's store (`client-go/tools/cache`), but holding the page's
//! views instead of objects, plus a dirty set per table so that changes are sent in batches: every
//! `--batch-period` [`flush_loop`] turns the dirty keys into one patch (`{"tables": {"pods":
//! {"upsert": {…}, "remove": […]}}, "events": […], "samples": […]}`) and broadcasts it. A key
//! changed a hundred times between two flushes is sent once, which is what keeps the page
//! responsive when a thousand pods change at once. A new page gets a full [`Hub::snapshot`] first.
//!
//! It also keeps what only history shows: each pod's journey ([`crate::journey`]) and, per
//! ReplicaSet, samples of its pods Running/Ready/Terminating for the rollout chart.
//! minik simplifies: bounded history (200 journeys of deleted pods, 500 events, 600 samples per
//! ReplicaSet); the oldest go first.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::journey::{self, Step};
use crate::views::SliceEndpoint;

/// How many steps one journey keeps.
const STEPS_PER_JOURNEY: usize = 64;
/// How many journeys of deleted pods are kept.
const GONE_JOURNEYS: usize = 200;
/// How many events the feed keeps.
const EVENTS: usize = 500;
/// How many chart samples each ReplicaSet keeps.
const SAMPLES: usize = 600;

/// One kind of view, keyed, with the keys changed since the last flush.
#[derive(Default)]
pub struct Table {
    items: BTreeMap<String, Value>,
    dirty: BTreeSet<String>,
}

impl Table {
    /// Sets `key` to `value`; marks it dirty only if it changed.
    pub fn upsert(&mut self, key: String, value: Value) {
        if self.items.get(&key) != Some(&value) {
            self.items.insert(key.clone(), value);
            self.dirty.insert(key);
        }
    }

    /// Removes `key`.
    pub fn remove(&mut self, key: &str) {
        if self.items.remove(key).is_some() {
            self.dirty.insert(key.to_string());
        }
    }

    /// Keeps only the keys in `keep` (after a relist).
    pub fn retain(&mut self, keep: &BTreeSet<String>) {
        let gone: Vec<String> = self
            .items
            .keys()
            .filter(|k| !keep.contains(*k))
            .cloned()
            .collect();
        for key in gone {
            self.remove(&key);
        }
    }

    /// The items.
    pub fn items(&self) -> &BTreeMap<String, Value> {
        &self.items
    }

    fn take_patch(&mut self) -> Option<Value> {
        if self.dirty.is_empty() {
            return None;
        }
        let (mut upsert, mut remove) = (Map::new(), Vec::new());
        for key in std::mem::take(&mut self.dirty) {
            match self.items.get(&key) {
                Some(value) => drop(upsert.insert(key, value.clone())),
                None => remove.push(Value::String(key)),
            }
        }
        Some(json!({"upsert": upsert, "remove": remove}))
    }
}

/// The names of the tables, as the page knows them.
pub const TABLES: [&str; 7] = [
    "pods",
    "nodes",
    "services",
    "slices",
    "deployments",
    "replicasets",
    "journeys",
];

/// One chart sample of a ReplicaSet's pods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Pods Running (ready or not), not terminating.
    pub running: u32,
    /// Pods Ready, not terminating.
    pub ready: u32,
    /// Pods terminating.
    pub terminating: u32,
}

/// Everything the dashboard knows.
#[derive(Default)]
pub struct Hub {
    /// The views, by table name.
    pub tables: BTreeMap<&'static str, Table>,
    /// The last pod object per key (the journey compares against it).
    pub pods: HashMap<String, k8s_openapi::api::core::v1::Pod>,
    /// Each pod's uid by key, and the journeys' steps by uid.
    pub uids: HashMap<String, String>,
    steps: HashMap<String, Vec<Step>>,
    gone: VecDeque<String>,
    /// The endpoints of each slice, last seen.
    pub slices: HashMap<String, Vec<SliceEndpoint>>,
    /// The addresses each consumer last applied, by `source service-port`.
    pub applied: HashMap<String, Vec<String>>,
    /// Which pod (uid, key) had each address last.
    pub ips: HashMap<String, (String, String)>,
    events: VecDeque<Value>,
    event_ids: HashSet<String>,
    new_events: Vec<Value>,
    samples: BTreeMap<String, Vec<Value>>,
    last_counts: HashMap<String, Counts>,
    new_samples: Vec<Value>,
    /// Pods changed since the chart was last sampled.
    pub pods_changed: bool,
}

impl Hub {
    /// The table called `name`.
    pub fn table(&mut self, name: &'static str) -> &mut Table {
        self.tables.entry(name).or_default()
    }

    /// Adds a step to the journey of the pod with `uid` (known by `key`).
    pub fn add_step(&mut self, uid: &str, key: &str, step: Step) {
        let steps = self.steps.entry(uid.to_string()).or_default();
        journey::insert(steps, step, STEPS_PER_JOURNEY);
        let value = json!({"uid": uid, "key": key, "steps": steps});
        self.table("journeys").upsert(uid.to_string(), value);
    }

    /// Adds a step to the journey of the pod now called `ns/name`, if the hub knows it.
    pub fn add_step_by_key(&mut self, key: &str, step: Step) {
        if let Some(uid) = self.uids.get(key).cloned() {
            self.add_step(&uid, key, step);
        }
    }

    /// Records that the pod `uid` is gone; the oldest journeys of gone pods are dropped.
    pub fn forget_later(&mut self, uid: &str) {
        self.gone.push_back(uid.to_string());
        while self.gone.len() > GONE_JOURNEYS {
            if let Some(old) = self.gone.pop_front() {
                self.steps.remove(&old);
                self.table("journeys").remove(&old);
            }
        }
    }

    /// True the first time an Event's `uid:count` is noted (a relist shows every Event again).
    pub fn note_event(&mut self, id: String) -> bool {
        if self.event_ids.len() > 10 * EVENTS {
            self.event_ids.clear(); // bounded: an old Event may then show twice, once
        }
        self.event_ids.insert(id)
    }

    /// Adds a line to the events feed.
    pub fn add_event(&mut self, event: Value) {
        self.events.push_back(event.clone());
        if self.events.len() > EVENTS {
            self.events.pop_front();
        }
        self.new_events.push(event);
    }

    /// Samples each ReplicaSet's pod counts at `now` (ms), if they changed since the last sample.
    pub fn sample(&mut self, now: i64) {
        if !std::mem::take(&mut self.pods_changed) {
            return;
        }
        let mut counts = count_by_owner(self.tables.get("pods").map(Table::items));
        for key in self
            .tables
            .get("replicasets")
            .into_iter()
            .flat_map(|t| t.items.keys())
        {
            counts.entry(key.clone()).or_default();
        }
        for (rs, now_counts) in counts {
            if self.last_counts.get(&rs) == Some(&now_counts) {
                continue;
            }
            self.last_counts.insert(rs.clone(), now_counts);
            let sample = json!({"rs": rs, "t": now, "running": now_counts.running,
                "ready": now_counts.ready, "terminating": now_counts.terminating});
            let series = self.samples.entry(rs).or_default();
            series.push(sample.clone());
            if series.len() > SAMPLES {
                series.remove(0);
            }
            self.new_samples.push(sample);
        }
    }

    /// The changes since the last flush, or `None` if there are none.
    pub fn take_patch(&mut self) -> Option<Value> {
        let mut tables = Map::new();
        for (name, table) in &mut self.tables {
            if let Some(patch) = table.take_patch() {
                tables.insert(name.to_string(), patch);
            }
        }
        let events = std::mem::take(&mut self.new_events);
        let samples = std::mem::take(&mut self.new_samples);
        if tables.is_empty() && events.is_empty() && samples.is_empty() {
            return None;
        }
        Some(json!({"tables": tables, "events": events, "samples": samples}))
    }

    /// Everything, for a page that just connected.
    pub fn snapshot(&self) -> Value {
        let tables: Map<String, Value> = TABLES
            .iter()
            .map(|name| {
                let items = self
                    .tables
                    .get(name)
                    .map(|t| t.items.clone())
                    .unwrap_or_default();
                (name.to_string(), json!({"upsert": items, "remove": []}))
            })
            .collect();
        let samples: Vec<&Value> = self.samples.values().flatten().collect();
        json!({"snapshot": true, "tables": tables, "events": self.events, "samples": samples})
    }
}

/// Pod counts per owning ReplicaSet key (`ns/name`), from the pod views.
pub fn count_by_owner(pods: Option<&BTreeMap<String, Value>>) -> BTreeMap<String, Counts> {
    let mut counts: BTreeMap<String, Counts> = BTreeMap::new();
    for pod in pods.into_iter().flat_map(|p| p.values()) {
        let (Some(ns), Some(owner)) = (pod["ns"].as_str(), pod["owner"].as_str()) else {
            continue;
        };
        let entry = counts.entry(format!("{ns}/{owner}")).or_default();
        match pod["state"].as_str() {
            Some("Terminating") => entry.terminating += 1,
            Some("Ready") => {
                entry.ready += 1;
                entry.running += 1;
            }
            Some("Running") => entry.running += 1,
            _ => {}
        }
    }
    counts
}

/// The hub shared by the watches, the flush loop and the server, with the broadcast of patches.
#[derive(Clone)]
pub struct Shared {
    hub: Arc<Mutex<Hub>>,
    patches: broadcast::Sender<Arc<str>>,
}

impl Default for Shared {
    fn default() -> Self {
        Shared::new()
    }
}

impl Shared {
    /// An empty hub.
    pub fn new() -> Shared {
        let (patches, _) = broadcast::channel(64);
        Shared {
            hub: Arc::new(Mutex::new(Hub::default())),
            patches,
        }
    }

    /// Locks the hub (a poisoned lock is taken over: the hub holds only views).
    pub fn lock(&self) -> MutexGuard<'_, Hub> {
        self.hub.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A snapshot and a receiver of every patch after it (taken under one lock: no gap).
    pub fn subscribe(&self) -> (String, broadcast::Receiver<Arc<str>>) {
        let hub = self.lock();
        (hub.snapshot().to_string(), self.patches.subscribe())
    }

    /// Samples the charts and broadcasts the pending changes, if any.
    pub fn flush(&self) {
        let mut hub = self.lock();
        hub.sample(jiff::Timestamp::now().as_millisecond());
        if let Some(patch) = hub.take_patch() {
            // No page open: nobody to send to, which is fine.
            let _ = self.patches.send(Arc::from(patch.to_string()));
        }
    }
}

/// Flushes every `period` until `shutdown`.
pub async fn flush_loop(hub: Shared, period: Duration, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => hub.flush(),
        }
    }
}

#[cfg(test)]
#[path = "hub_tests.rs"]
mod tests;
