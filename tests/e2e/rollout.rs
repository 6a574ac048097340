//! Seed 002's rolling update, scaled down (issue 15): real pods, a real controller manager, the
//! counts sampled on a watch for the whole update.
//!
//! Seed 002 ("Graceful shutdown in Kubernetes") says that a Deployment of 10 replicas whose pods
//! are ready in 2 s and take 20 s to shut down ends its rolling update with 10 Running and 10
//! Terminating pods, and that a long preStop doubles the pods. Here readiness takes about a
//! second and the app drains for 4 s after SIGTERM; the default strategy (maxSurge 25% → 3,
//! maxUnavailable 25% → 2, `docs/workloads.md#rolling-update`) bounds what the watch may ever see:
//! at least 8 available and at most 13 pods not terminating.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use minik_api::core::Pod;
use minik_api::k8s_openapi::api::apps::v1::Deployment;
use minik_api::k8s_openapi::api::apps::v1::ReplicaSet;
use minik_client::watcher::{watcher, Event};
use minik_client::{Api, DeleteParams, ListParams};
use minik_tests::fixtures::pod;
use minik_tests::wait::{pod as pod_is, wait_for, wait_for_all};
use minik_tests::Cluster;
use serde_json::json;
use tokio::sync::watch;

use crate::support::stop_clean;

/// Bound for a whole rollout of real pods on a loaded 2-core machine.
pub const ROLLOUT: Duration = Duration::from_secs(90);

/// What the watch saw, at its extremes, while the update ran.
#[derive(Debug, Default, Clone)]
pub struct Peaks {
    pub min_available: usize,
    pub max_not_terminating: usize,
    pub max_terminating: usize,
    pub max_total: usize,
    /// The most pod templates (`pod-template-hash` values) seen at once among pods not finished.
    pub max_versions: usize,
}

/// The pods of the Deployment as the watch last saw them.
#[derive(Debug, Default, Clone)]
struct Counts {
    total: usize,
    terminating: usize,
    available: usize,
    versions: usize,
}

fn counts(pods: &BTreeMap<String, Pod>) -> Counts {
    let terminating = pods
        .values()
        .filter(|p| p.metadata.deletion_timestamp.is_some())
        .count();
    let available = pods
        .values()
        .filter(|p| p.metadata.deletion_timestamp.is_none() && pod_is::is_ready(p))
        .count();
    // Versions among pods whose processes may still run: a pod in a terminal phase has exited
    // (upstream's Recreate counts only those too, `oldPodsRunning`).
    let versions: std::collections::BTreeSet<&str> = pods
        .values()
        .filter(|p| !matches!(pod_is::phase(p), "Succeeded" | "Failed"))
        .filter_map(|p| p.metadata.labels.as_ref()?.get("pod-template-hash"))
        .map(String::as_str)
        .collect();
    Counts {
        total: pods.len(),
        terminating,
        available,
        versions: versions.len(),
    }
}

/// Follows the pods labelled `app=NAME` on a watch and keeps the extremes of their counts from
/// the moment it is started; `latest` shows the current map.
pub struct Sampler {
    peaks: watch::Receiver<Peaks>,
    latest: watch::Receiver<BTreeMap<String, Pod>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    pub async fn start(api: Api<Pod>, app: &str, baseline_available: usize) -> Sampler {
        let params = ListParams::default().labels(&format!("app={app}"));
        let (peaks_tx, peaks) = watch::channel(Peaks {
            min_available: baseline_available,
            ..Peaks::default()
        });
        let (latest_tx, latest) = watch::channel(BTreeMap::new());
        let (synced_tx, synced) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut pods = BTreeMap::new();
            let mut synced_tx = Some(synced_tx);
            let mut stream = Box::pin(watcher(api, params));
            while let Some(event) = stream.next().await {
                match event {
                    Ok(Event::Applied(p)) => {
                        pods.insert(p.metadata.name.clone().unwrap_or_default(), p);
                    }
                    Ok(Event::Deleted(p)) => {
                        pods.remove(p.metadata.name.as_deref().unwrap_or_default());
                    }
                    Ok(Event::Restarted(listed)) => {
                        pods = listed
                            .into_iter()
                            .map(|p| (p.metadata.name.clone().unwrap_or_default(), p))
                            .collect();
                        if let Some(tx) = synced_tx.take() {
                            let _ = tx.send(());
                        }
                    }
                    Err(_) => continue,
                }
                let now = counts(&pods);
                peaks_tx.send_modify(|peaks| {
                    peaks.min_available = peaks.min_available.min(now.available);
                    peaks.max_not_terminating =
                        peaks.max_not_terminating.max(now.total - now.terminating);
                    peaks.max_terminating = peaks.max_terminating.max(now.terminating);
                    peaks.max_total = peaks.max_total.max(now.total);
                    peaks.max_versions = peaks.max_versions.max(now.versions);
                });
                latest_tx.send_replace(pods.clone());
            }
        });
        let _ = tokio::time::timeout(Duration::from_secs(10), synced).await;
        Sampler {
            peaks,
            latest,
            task,
        }
    }

    pub fn peaks(&self) -> Peaks {
        self.peaks.borrow().clone()
    }

    pub fn pods(&self) -> BTreeMap<String, Pod> {
        self.latest.borrow().clone()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A Deployment of `replicas` web pods labelled `app=NAME`: ready once the app answers its
/// readiness probe, draining `drain_ms` after SIGTERM, with an optional preStop sleep.
pub fn deployment(
    name: &str,
    replicas: i32,
    drain_ms: u64,
    pre_stop: Option<Duration>,
) -> Deployment {
    let mut fixture = pod(name)
        .port(8080)
        .label("app", name)
        .on_sigterm(&format!("drain:{drain_ms}"))
        .readiness_http("/", 1)
        .grace(60);
    if let Some(pre_stop) = pre_stop {
        fixture = fixture.pre_stop_sleep(pre_stop);
    }
    let pod = fixture.to_json();
    let template = json!({"metadata": {"labels": {"app": name}}, "spec": pod["spec"]});
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template,
        }
    }))
    .expect("a valid Deployment")
}

/// True once the Deployment has rolled out its current generation completely.
pub fn rolled_out(replicas: i32) -> impl FnMut(&Deployment) -> bool {
    move |d: &Deployment| {
        let generation = d.metadata.generation.unwrap_or_default();
        let Some(status) = d.status.as_ref() else {
            return false;
        };
        status.observed_generation.unwrap_or_default() >= generation
            && status.updated_replicas.unwrap_or_default() == replicas
            && status.available_replicas.unwrap_or_default() == replicas
            && status.replicas.unwrap_or_default() == replicas
    }
}

/// Creates the Deployment, waits until it is available, then changes its template and samples
/// the pods until the new version is rolled out. Returns the peaks and the pods at the end.
pub async fn roll(cluster: &Cluster, fixture: Deployment) -> (Peaks, BTreeMap<String, Pod>) {
    let name = fixture.metadata.name.clone().unwrap_or_default();
    let replicas = fixture.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    deployments
        .create(&fixture)
        .await
        .expect("create deployment");
    wait_for(&deployments, &name, rolled_out(replicas), ROLLOUT)
        .await
        .expect("first version available");

    let sampler = Sampler::start(cluster.pods(), &name, replicas as usize).await;
    let mut next = deployments.get(&name).await.expect("get deployment");
    let template = &mut next.spec.as_mut().expect("spec").template;
    let container = &mut template.spec.as_mut().expect("pod spec").containers[0];
    container
        .env
        .get_or_insert_with(Vec::new)
        .push(serde_json::from_value(json!({"name": "VERSION", "value": "2"})).expect("an EnvVar"));
    deployments
        .replace(&name, &next)
        .await
        .expect("update the template");
    wait_for(&deployments, &name, rolled_out(replicas), ROLLOUT)
        .await
        .expect("second version rolled out");
    let peaks = sampler.peaks();
    let pods = sampler.pods();
    eprintln!(
        "rollout of {name}: {peaks:?}, at the end {:?}",
        counts(&pods)
    );
    (peaks, pods)
}

/// Deletes the Deployment and waits until the garbage collector has removed its ReplicaSets
/// (background propagation, the default); their pods are then terminating, and stopping the
/// cluster shortens their grace.
pub async fn remove_now(cluster: &Cluster, name: &str) {
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    deployments
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete deployment");
    let labelled = ListParams::default().labels(&format!("app={name}"));
    let replica_sets: Api<ReplicaSet> = Api::namespaced(cluster.client(), "default");
    wait_for_all(&replica_sets, labelled, |rs| rs.is_empty(), ROLLOUT)
        .await
        .expect("the garbage collector removes the ReplicaSets");
}

/// Seed 002 at 10 replicas: never fewer than 8 available, never more than 13 pods not
/// terminating, and at the end 10 new pods Running while the old ones are still Terminating.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seed_002_rolling_update_ends_with_old_pods_terminating() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let (peaks, pods) = roll(&cluster, deployment("seed2", 10, 4_000, None)).await;

    assert!(peaks.min_available >= 8, "availability fell: {peaks:?}");
    assert!(peaks.max_not_terminating <= 13, "surged too far: {peaks:?}");
    assert!(
        peaks.max_terminating >= 8,
        "old pods not seen Terminating: {peaks:?}"
    );
    let new_running = pods
        .values()
        .filter(|p| p.metadata.deletion_timestamp.is_none() && pod_is::is_running(p))
        .count();
    assert_eq!(new_running, 10, "10 new pods Running at the end");
    remove_now(&cluster, "seed2").await;
    stop_clean(cluster).await;
}

/// Seed 002's second case, scaled: a preStop longer than the update keeps every old pod
/// around, so the total peaks near twice the replicas.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pre_stop_longer_than_the_update_doubles_the_pods() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let fixture = deployment("prestop", 20, 0, Some(Duration::from_secs(20)));
    let (peaks, _) = roll(&cluster, fixture).await;
    remove_now(&cluster, "prestop").await;

    assert!(
        peaks.max_total >= 36,
        "total should peak near 40: {peaks:?}"
    );
    assert!(
        peaks.min_available >= 15,
        "maxUnavailable 25% of 20 is 5: {peaks:?}"
    );
    assert!(
        peaks.max_not_terminating <= 25,
        "maxSurge 25% of 20 is 5: {peaks:?}"
    );
    stop_clean(cluster).await;
}
