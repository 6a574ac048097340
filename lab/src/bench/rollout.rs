//! Measurement 9: a Deployment of 1 000 replicas on hollow nodes, create → Available, then a
//! full rolling update of it.
//!
//! Kubernetes counterpart: ClusterLoader2's load test (`testing/load/config.yaml`: create
//! Deployments, then `WaitForControlledPodsRunning`, then update them and wait again), run against
//! kwok nodes, and the controller manager's client throttling: `kube-controller-manager` talks to
//! the apiserver at `--kube-api-qps` 20 (burst 30), so upstream needs about 50 s for the 1 000 pod
//! creates alone and about 100 s for a rolling update (1 000 creates and 1 000 deletes). minik's
//! controller manager is not throttled; the goal is 1 000 replicas Available in 3 s on
//! 2 cores.
//!
//! The pods select the hollow nodes (`crate::hollow`, 100 of them, 10 with `--quick`), which
//! report every bound pod Running and Ready at once and finish the delete of every terminating
//! pod, as a kubelet would once its containers stopped. So the figures are the control plane's:
//! Deployment controller → ReplicaSet → ReplicaSet controller's creates → scheduler → "kubelet"
//! status → ReplicaSet and Deployment status, every write durable.
//!
//! Both clocks stop on a watch, as every figure of the bench:
//!
//! - create → Available: from just before the POST of the Deployment to the first Deployment
//!   event with `observedGeneration` = 1 and `availableReplicas == replicas`;
//! - rolling update: from just before the PATCH of the pod template (default strategy, 25 %
//!   surge, 25 % unavailable) to the later of the first Deployment event with
//!   `updatedReplicas == availableReplicas == replicas == status.replicas` at the new generation,
//!   and the DELETED event of the last pod of the old template.
//!
//! Beside each figure the row gives when the last pod was created, bound and Running (from the
//! same pod watch), and the share of a core each process used.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::error::Context;
use crate::hollow::{HollowConfig, HollowNodes, HOLLOW_LABEL};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use minik_api::core::Pod;
use minik_client::{Api, DeleteParams, Event, ListParams, Patch};
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::pods::{is_running, PodWatch, Want};
use super::report::{ms, Row};
use super::Bench;

/// The Deployment's name; its pods carry `bench=rollout`.
const NAME: &str = "bench-rollout";
/// The label of the Deployment, its ReplicaSets and its pods.
const LABEL: (&str, &str) = ("bench", "rollout");
/// The label upstream's Deployment controller adds to tell pod templates apart.
const HASH_LABEL: &str = "pod-template-hash";

/// The rows this measurement fills.
pub fn templates() -> Vec<Row> {
    vec![
        Row::new(
            "rollout_available",
            "9. Deployment create → all replicas Available (hollow nodes)",
            "≤ 3 s for 1,000 replicas",
            "kube-controller-manager at 20 writes/s (--kube-api-qps): ≈ 50 s for 1 000 pod creates",
        ),
        Row::new(
            "rollout_update",
            "9. rolling update of it (25 % / 25 %) → all updated and Available, no old pod left",
            "–",
            "kube-controller-manager at 20 writes/s: ≈ 100 s (1 000 creates + 1 000 deletes)",
        ),
    ]
}

/// Registers the hollow nodes, creates and rolls the Deployment, cleans up.
pub async fn measure(ctx: &Bench) -> crate::Result<Vec<Row>> {
    let replicas = ctx.size(50, 1_000);
    let node_count = ctx.size(10, 100);
    let config = HollowConfig {
        server: ctx.server.clone(),
        kubeconfig: ctx.kubeconfig.clone(),
        count: node_count,
        name_prefix: "hollow-rollout-".into(),
        concurrency: 64,
        ..HollowConfig::default()
    };
    let hollow = HollowNodes::register(config)
        .await
        .context("registering hollow nodes")?;
    let shutdown = ctx.shutdown.child_token();
    // Cut short by its time bound, the section still stops the hollow nodes and the watch.
    let _stop_on_drop = shutdown.clone().drop_guard();
    let hollow_task = tokio::spawn(hollow.run(shutdown.child_token()));
    let result = async {
        warm_up(ctx).await?;
        let mut progress = watch_rollout(ctx, shutdown.child_token()).await?;
        let rows = roll(ctx, &mut progress, replicas, node_count).await;
        cleanup(ctx, &mut progress).await;
        rows
    }
    .await;
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(60), hollow_task).await;
    result
}

/// One pod through the hollow nodes, untimed: once it is Running the scheduler has seen the
/// nodes and the hollow kubelet answers. Its label is not the Deployment's, so nothing adopts it.
async fn warm_up(ctx: &Bench) -> crate::Result<()> {
    let name = "bench-rollout-warmup";
    let watch = PodWatch::start(&ctx.client, "bench=rollout-warmup").await?;
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), "default");
    let running = watch.expect(name, Want::Running);
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"bench": "rollout-warmup"}},
        "spec": {
            "nodeSelector": {HOLLOW_LABEL: "true"},
            "containers": [{"name": "pause", "image": "minik/sleep"}],
        },
    });
    api.create(&serde_json::from_value(pod)?).await?;
    tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .context("the warm-up pod was not Running on a hollow node within 20s")??;
    super::pods::delete_and_wait(&api, &watch, &[name.to_string()]).await
}

/// Both timed phases; returns the two rows.
async fn roll(
    ctx: &Bench,
    progress: &mut watch::Receiver<Progress>,
    replicas: i32,
    nodes: usize,
) -> crate::Result<Vec<Row>> {
    let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), "default");
    let processes = super::footprint::with_bench(&ctx.components);
    let limit = ctx.size(Duration::from_secs(15), Duration::from_secs(100));

    let cpu_before = super::footprint::cpu_seconds(&processes);
    let started = Instant::now();
    let created = api.create(&deployment(replicas)).await?;
    let generation = created.metadata.generation.unwrap_or(1);
    let seen = wait_until(progress, limit, "create → Available", |p| {
        since(&p.available_at, generation).is_some()
    })
    .await?;
    let available = since(&seen.available_at, generation)
        .unwrap_or(started)
        .duration_since(started);
    let cpu = busy(&processes, &cpu_before, available);
    let first = seen.only_hash().context("one pod template after create")?;
    let pods = seen.hashes[&first].milestones(started);
    let mut rows = templates();
    let update_template = rows.pop().unwrap_or_else(|| templates().remove(1));
    let mut available_row = rows
        .pop()
        .unwrap_or_else(|| templates().remove(0))
        .result(format!(
            "{} ({replicas} replicas on {nodes} hollow nodes: {pods}; CPU {cpu})",
            ms(available.as_secs_f64() * 1e3),
        ))
        .value("available_ms", available.as_secs_f64() * 1e3)
        .value("replicas", f64::from(replicas));
    if !ctx.quick {
        // The target is for 1 000 replicas; a quick run's 50 say nothing about it.
        available_row = available_row.met(available <= Duration::from_secs(3));
    }

    let cpu_before = super::footprint::cpu_seconds(&processes);
    let started = Instant::now();
    let template =
        json!({"spec": {"template": {"metadata": {"annotations": {"bench/revision": "2"}}}}});
    let patched = api.patch(NAME, &Patch::Merge(template)).await?;
    let generation = patched.metadata.generation.unwrap_or(2);
    let seen = wait_until(progress, limit, "rolling update", |p| {
        since(&p.complete_at, generation).is_some()
            && p.hashes.get(&first).is_none_or(|old| old.existing == 0)
    })
    .await?;
    let old = &seen.hashes[&first];
    let done = since(&seen.complete_at, generation)
        .unwrap_or(started)
        .max(old.existing_at)
        .duration_since(started);
    let cpu = busy(&processes, &cpu_before, done);
    let new = seen
        .hashes
        .iter()
        .find(|(hash, _)| **hash != first)
        .map(|(_, new)| new.milestones(started))
        .unwrap_or_default();
    let update_row = update_template
        .result(format!(
            "{} (new pods: {new}; last old pod gone {}; CPU {cpu})",
            ms(done.as_secs_f64() * 1e3),
            ms(old.existing_at.duration_since(started).as_secs_f64() * 1e3),
        ))
        .value("update_ms", done.as_secs_f64() * 1e3)
        .value("replicas", f64::from(replicas));
    Ok(vec![available_row, update_row])
}

/// The first time a generation from `generation` on reached a milestone. Later generations count:
/// the controller's own `deployment.kubernetes.io/revision` annotation bumps a Deployment's
/// generation (annotations are desired state for Deployments, `PrepareForUpdate`).
fn since(at: &BTreeMap<i64, Instant>, generation: i64) -> Option<Instant> {
    at.range(generation..).map(|(_, t)| *t).min()
}

/// `name N %` of a core for each process that used at least 1 % over `elapsed`.
fn busy(processes: &[(String, u32)], before: &[f64], elapsed: Duration) -> String {
    let after = super::footprint::cpu_seconds(processes);
    processes
        .iter()
        .zip(after.iter().zip(before))
        .map(|((name, _), (a, b))| (name, (a - b) / elapsed.as_secs_f64().max(1e-3) * 100.0))
        .filter(|(_, percent)| *percent >= 1.0)
        .map(|(name, percent)| format!("{name} {percent:.0} %"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Waits until `done` holds for the progress seen on the watches; on timeout says how far it got.
async fn wait_until(
    progress: &mut watch::Receiver<Progress>,
    limit: Duration,
    what: &str,
    done: impl FnMut(&Progress) -> bool,
) -> crate::Result<Progress> {
    let outcome = tokio::time::timeout(limit, progress.wait_for(done))
        .await
        .map(|seen| seen.map(|seen| seen.clone()));
    match outcome {
        Ok(Ok(seen)) => Ok(seen),
        Ok(Err(_)) => crate::error::bail!("{what}: the watch ended"),
        Err(_) => crate::error::bail!(
            "{what}: not done within {limit:?} ({})",
            progress.borrow().describe()
        ),
    }
}

/// The Deployment: `replicas` pods for the hollow nodes, default RollingUpdate strategy.
fn deployment(replicas: i32) -> Deployment {
    let (key, value) = LABEL;
    let value = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": NAME, "labels": {key: value}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {key: value}},
            "template": {
                "metadata": {"labels": {key: value}},
                "spec": {
                    "nodeSelector": {HOLLOW_LABEL: "true"},
                    "containers": [{
                        "name": "pause", "image": "minik/sleep",
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                    }],
                },
            },
        },
    });
    // Invariant: the literal above is a valid Deployment.
    serde_json::from_value(value).expect("a valid deployment literal")
}

/// Deletes the Deployment, its ReplicaSets and its pods (grace 0), and waits (bounded) until the
/// pod watch saw them all go; best effort.
async fn cleanup(ctx: &Bench, progress: &mut watch::Receiver<Progress>) {
    let selector = format!("{}={}", LABEL.0, LABEL.1);
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), "default");
    let _ = deployments.delete(NAME, &DeleteParams::default()).await;
    let sets: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), "default");
    if let Ok(list) = sets.list(&ListParams::default().labels(&selector)).await {
        for name in list.items.into_iter().filter_map(|rs| rs.metadata.name) {
            let _ = sets.delete(&name, &DeleteParams::default()).await;
        }
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), "default");
    if let Ok(list) = pods.list(&ListParams::default().labels(&selector)).await {
        futures::stream::iter(list.items.into_iter().filter_map(|p| p.metadata.name))
            .for_each_concurrent(64, |name| {
                let pods = pods.clone();
                async move {
                    let _ = pods.delete(&name, &DeleteParams::grace(0)).await;
                }
            })
            .await;
    }
    let limit = ctx.size(Duration::from_secs(10), Duration::from_secs(30));
    if let Err(err) = wait_until(progress, limit, "cleanup", |p| p.existing() == 0).await {
        super::say(&format!("  cleanup: {err}"));
    }
}

/// What the Deployment's status showed last.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    generation: i64,
    observed: i64,
    spec_replicas: i32,
    replicas: i32,
    updated: i32,
    available: i32,
}

impl Seen {
    /// The counts of a Deployment event.
    pub fn of(d: &Deployment) -> Seen {
        let status = d.status.clone().unwrap_or_default();
        Seen {
            generation: d.metadata.generation.unwrap_or(0),
            observed: status.observed_generation.unwrap_or(0),
            spec_replicas: d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            replicas: status.replicas.unwrap_or(0),
            updated: status.updated_replicas.unwrap_or(0),
            available: status.available_replicas.unwrap_or(0),
        }
    }

    /// The controller saw this generation and every wanted replica is available.
    pub fn available(&self) -> bool {
        self.observed == self.generation && self.available == self.spec_replicas
    }

    /// `kubectl rollout status`'s "successfully rolled out": available, every replica updated,
    /// no extra (old) replica counted.
    pub fn complete(&self) -> bool {
        self.available()
            && self.updated == self.spec_replicas
            && self.replicas == self.spec_replicas
    }
}

/// The pods of one pod template (one `pod-template-hash`), as seen on the pod watch.
#[derive(Clone, Debug)]
pub struct HashPods {
    /// Pods that exist now (terminating ones too).
    pub existing: usize,
    /// When `existing` last changed.
    pub existing_at: Instant,
    created: (usize, Instant),
    bound: (usize, Instant),
    running: (usize, Instant),
}

impl HashPods {
    fn new(now: Instant) -> HashPods {
        HashPods {
            existing: 0,
            existing_at: now,
            created: (0, now),
            bound: (0, now),
            running: (0, now),
        }
    }

    /// `1000 created by 410 ms, bound by 820 ms, Running by 900 ms` (times since `started`).
    fn milestones(&self, started: Instant) -> String {
        let at = |(n, t): (usize, Instant)| {
            let elapsed = t.saturating_duration_since(started).as_secs_f64() * 1e3;
            (n, ms(elapsed))
        };
        let (created, created_at) = at(self.created);
        let (bound, bound_at) = at(self.bound);
        let (running, running_at) = at(self.running);
        format!(
            "{created} created by {created_at}, {bound} bound by {bound_at}, {running} Running by {running_at}"
        )
    }
}

/// What the watches showed so far; every time is the moment an event was decoded.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// The Deployment's last status.
    pub deployment: Seen,
    /// Generation → first event showing it [`Seen::available`].
    pub available_at: BTreeMap<i64, Instant>,
    /// Generation → first event showing it [`Seen::complete`].
    pub complete_at: BTreeMap<i64, Instant>,
    /// `pod-template-hash` → its pods.
    pub hashes: HashMap<String, HashPods>,
    /// Pod name → (hash, bound, Running) as last seen.
    pods: HashMap<String, (String, bool, bool)>,
}

impl Progress {
    /// Records a Deployment event.
    pub fn deployment(&mut self, d: &Deployment, now: Instant) {
        let seen = Seen::of(d);
        if seen.available() {
            self.available_at.entry(seen.generation).or_insert(now);
        }
        if seen.complete() {
            self.complete_at.entry(seen.generation).or_insert(now);
        }
        self.deployment = seen;
    }

    /// Records a pod's current state (an ADDED or MODIFIED event, or a pod of a relist).
    pub fn pod(&mut self, pod: &Pod, now: Instant) {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let hash = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HASH_LABEL))
            .cloned()
            .unwrap_or_default();
        let bound = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_some();
        let running = is_running(pod);
        let stats = self
            .hashes
            .entry(hash.clone())
            .or_insert_with(|| HashPods::new(now));
        let before = self.pods.get(&name).map(|(_, b, r)| (*b, *r));
        if before.is_none() {
            stats.existing += 1;
            stats.existing_at = now;
            stats.created = (stats.created.0 + 1, now);
        }
        let (was_bound, was_running) = before.unwrap_or_default();
        if bound && !was_bound {
            stats.bound = (stats.bound.0 + 1, now);
        }
        if running && !was_running {
            stats.running = (stats.running.0 + 1, now);
        }
        self.pods
            .insert(name, (hash, bound || was_bound, running || was_running));
    }

    /// Records a DELETED event.
    pub fn pod_gone(&mut self, name: &str, now: Instant) {
        if let Some((hash, _, _)) = self.pods.remove(name) {
            if let Some(stats) = self.hashes.get_mut(&hash) {
                stats.existing -= 1;
                stats.existing_at = now;
            }
        }
    }

    /// A relist: pods missing from it are gone, the others are recorded.
    pub fn relist(&mut self, pods: &[Pod], now: Instant) {
        let listed: std::collections::HashSet<&str> = pods
            .iter()
            .filter_map(|p| p.metadata.name.as_deref())
            .collect();
        let gone: Vec<String> = self
            .pods
            .keys()
            .filter(|name| !listed.contains(name.as_str()))
            .cloned()
            .collect();
        gone.iter().for_each(|name| self.pod_gone(name, now));
        pods.iter().for_each(|pod| self.pod(pod, now));
    }

    /// The one pod-template-hash whose pods exist, if there is exactly one.
    fn only_hash(&self) -> Option<String> {
        let mut live = self.hashes.iter().filter(|(_, h)| h.existing > 0);
        match (live.next(), live.next()) {
            (Some((hash, _)), None) => Some(hash.clone()),
            _ => None,
        }
    }

    /// Pods of the Deployment that exist now.
    fn existing(&self) -> usize {
        self.pods.len()
    }

    /// How far things got, for a timeout's message.
    fn describe(&self) -> String {
        let d = &self.deployment;
        let pods: Vec<String> = self
            .hashes
            .iter()
            .map(|(hash, h)| format!("{hash}: {} exist, {} Running", h.existing, h.running.0))
            .collect();
        format!(
            "deployment generation {} observed {}: replicas {}, updated {}, available {} of {}; pods {}",
            d.generation, d.observed, d.replicas, d.updated, d.available, d.spec_replicas,
            pods.join("; ")
        )
    }
}

/// Watches the bench's Deployment and its pods into a [`Progress`]; returns once both initial
/// lists are in.
async fn watch_rollout(
    ctx: &Bench,
    stop: CancellationToken,
) -> crate::Result<watch::Receiver<Progress>> {
    let selector = format!("{}={}", LABEL.0, LABEL.1);
    let (tx, rx) = watch::channel(Progress::default());
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let deployments = minik_client::watcher(
        Api::<Deployment>::namespaced(ctx.client.clone(), "default"),
        ListParams::default().labels(&selector),
    );
    let pods = minik_client::watcher(
        Api::<Pod>::namespaced(ctx.client.clone(), "default"),
        ListParams::default().labels(&selector),
    );
    tokio::spawn(async move {
        let mut deployments = std::pin::pin!(deployments);
        let mut pods = std::pin::pin!(pods);
        let (mut listed, mut ready) = (0, Some(ready_tx));
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                Some(event) = deployments.next() => {
                    let now = Instant::now();
                    match event {
                        Ok(Event::Applied(d)) => tx.send_modify(|p| p.deployment(&d, now)),
                        Ok(Event::Restarted(list)) => {
                            listed += 1;
                            list.iter().for_each(|d| tx.send_modify(|p| p.deployment(d, now)));
                        }
                        _ => {}
                    }
                }
                Some(event) = pods.next() => {
                    let now = Instant::now();
                    match event {
                        Ok(Event::Applied(pod)) => tx.send_modify(|p| p.pod(&pod, now)),
                        Ok(Event::Deleted(pod)) => {
                            let name = pod.metadata.name.unwrap_or_default();
                            tx.send_modify(|p| p.pod_gone(&name, now));
                        }
                        Ok(Event::Restarted(list)) => {
                            listed += 1;
                            tx.send_modify(|p| p.relist(&list, now));
                        }
                        Err(_) => {}
                    }
                }
                else => break,
            }
            if listed >= 2 {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(());
                }
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), ready_rx)
        .await
        .context("rollout watches did not start")??;
    Ok(rx)
}

#[cfg(test)]
#[path = "rollout_tests.rs"]
mod tests;
