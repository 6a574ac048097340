//! `minik demo rollout`: seed 002's rolling updates, on real processes, with load through the
//! Service the whole time.
//!
//! Kubernetes counterpart: `kubectl set image deployment/web web=nginx:1.19` and the Deployment
//! controller's rolling update (`pkg/controller/deployment/rolling.go`, default 25 % surge and
//! 25 % unavailable). The point, seed 002: the controller moves on as soon as a new pod is Ready,
//! it does not wait for the old pod to be gone, so while the old pods take their time to shut
//! down the Deployment runs old and new side by side. Two runs, each timed by `--speed`:
//!
//! 1. 10 replicas that take 2 s to be ready and keep serving 20 s after SIGTERM
//!    (`MINIK_ON_SIGTERM=drain:20000`, grace 30 s) → 10 Ready + 10 Terminating at the peak;
//! 2. 40 replicas with a 120 s preStop sleep (grace 180 s) → 80 pods at the peak.
//!
//! "Takes 2 s to be ready" is a postStart hook that sleeps 2 s: the kubelet starts the readiness
//! probe only once the container has started, postStart included. What it simplifies: the pods
//! all run `minik/web` (`nginx:1.18` and `nginx:1.19` are the same built-in program).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use minik_api::core::{Pod, Service};
use minik_client::{Api, Client, DeleteParams, ListParams, Patch};
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::census::{Census, Sample, State};
use super::consumers::{self, Path};
use super::live::LiveView;
use super::load::{self, Outcome, Tally};
use super::manifests::{self, WebPod};
use super::nodes;
use super::podwatch::ms_since;
pub use super::podwatch::PodWatch;

/// The knobs of the rollout demo.
#[derive(Clone, Debug)]
pub struct RolloutOptions {
    /// Every duration of the seed is divided by this.
    pub speed: f64,
    /// Replicas of the first run (the seed: 10).
    pub replicas: usize,
    /// Replicas of the second run (the seed: 40).
    pub large_replicas: usize,
    /// Requests per second through the Service.
    pub rate: u32,
    /// Small nodes and the cluster autoscaler (`--max-nodes`): pods ask for cpu, and the node
    /// count is followed (`nodes.rs`).
    pub small_nodes: bool,
}

/// How the old pods shut down in one run.
#[derive(Clone, Copy, Debug)]
enum Shutdown {
    /// The app keeps serving this long after SIGTERM.
    Drain(Duration),
    /// A preStop hook sleeps this long; the app exits at SIGTERM.
    PreStop(Duration),
}

/// The pods at the peak.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Peak {
    /// Every pod object at that moment.
    pub pods: usize,
    /// Pods of the old ReplicaSet(s).
    pub old: usize,
    /// Pods of the new ReplicaSet.
    pub new: usize,
    /// Pods Running and not Terminating (Ready or not).
    pub running: usize,
    /// Pods Ready.
    pub ready: usize,
    /// Pods Terminating.
    pub terminating: usize,
    /// When, in ms after the update.
    pub at_ms: f64,
}

/// One run's result.
#[derive(Clone, Debug, Serialize)]
pub struct RolloutRun {
    /// What was rolled (`10 replicas, 20 s shutdown`).
    pub name: String,
    /// Replicas of the Deployment.
    pub replicas: usize,
    /// The most pods at once.
    pub peak: Peak,
    /// When every new pod was Ready, ms after the update.
    pub rolled_ms: Option<f64>,
    /// When the last old pod was removed, ms after the update.
    pub finished_ms: f64,
    /// Requests sent through the Service.
    pub requests: usize,
    /// Requests that failed.
    pub failed: usize,
    /// Why they failed, and when (ms after the update), the first ten.
    pub failures: Vec<(f64, String)>,
    /// With small nodes: the most Nodes at once.
    pub node_peak: Option<usize>,
    /// With small nodes: the Nodes when the demo stopped looking.
    pub nodes_after: Option<usize>,
    /// With small nodes: when the count was back to the start, ms after the update.
    pub nodes_back_ms: Option<f64>,
    /// Node counts over time (ms after the update).
    #[serde(skip)]
    pub node_samples: Vec<(f64, usize)>,
    /// The ReplicaSets, old first.
    #[serde(skip)]
    pub groups: Vec<String>,
    /// Pod counts over time (ms after the update).
    #[serde(skip)]
    pub samples: Vec<Sample>,
    /// Every request, ms after the update.
    #[serde(skip)]
    pub outcomes: Vec<Outcome>,
}

/// Runs both rolling updates of seed 002.
pub async fn run(
    client: &Client,
    namespace: &str,
    options: &RolloutOptions,
    narrate: bool,
) -> crate::Result<Vec<RolloutRun>> {
    let scaled = |seconds: f64| Duration::from_secs_f64(seconds / options.speed);
    let runs = [
        (options.replicas, Shutdown::Drain(scaled(20.0)), 30.0),
        (
            options.large_replicas,
            Shutdown::PreStop(scaled(120.0)),
            180.0,
        ),
    ];
    let mut results = Vec::new();
    for (i, (replicas, shutdown, grace)) in runs.into_iter().enumerate() {
        let name = match shutdown {
            Shutdown::Drain(d) => format!("{replicas} replicas, {} shutdown", secs(d)),
            Shutdown::PreStop(d) => format!("{replicas} replicas, {} preStop", secs(d)),
        };
        if narrate {
            println!(
                "\n  run {}: {name}, {} to be ready",
                i + 1,
                secs(scaled(2.0))
            );
        }
        let app = format!("rollout-{}", i + 1);
        let spec = RunSpec {
            app: &app,
            replicas,
            ready_after: scaled(2.0),
            shutdown,
            grace_seconds: (grace / options.speed).ceil() as i64 + 1,
            // The autoscaler's unneeded time (`nodes::autoscaler`) and a margin for the drain.
            scale_down: options.small_nodes.then(|| {
                nodes::autoscaler(2, options.speed).scale_down_unneeded_time
                    + Duration::from_secs(30)
            }),
        };
        let run = run_one(client, namespace, &spec, options.rate, name, narrate).await?;
        if narrate {
            print_run(&run);
        }
        results.push(run);
    }
    Ok(results)
}

struct RunSpec<'a> {
    app: &'a str,
    replicas: usize,
    ready_after: Duration,
    shutdown: Shutdown,
    grace_seconds: i64,
    /// With small nodes: how long to wait for the added nodes to go after the rollout.
    scale_down: Option<Duration>,
}

impl RunSpec<'_> {
    fn template(&self) -> WebPod<'_> {
        let (on_sigterm, pre_stop) = match self.shutdown {
            Shutdown::Drain(d) => (format!("drain:{}", d.as_millis()), None),
            Shutdown::PreStop(d) => ("exit".to_string(), Some(d)),
        };
        WebPod {
            name: self.app,
            app: self.app,
            on_sigterm,
            post_start: Some(self.ready_after),
            pre_stop,
            grace_seconds: self.grace_seconds,
        }
    }
}

/// One run: a Deployment ready behind a Service, load, the image changed, until the last old pod
/// is gone.
async fn run_one(
    client: &Client,
    namespace: &str,
    spec: &RunSpec<'_>,
    rate: u32,
    name: String,
    narrate: bool,
) -> crate::Result<RolloutRun> {
    let app = spec.app;
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace);
    let services = Api::<Service>::namespaced(client.clone(), namespace);
    let mut watch = PodWatch::start(client, namespace, &format!("app={app}")).await?;
    let service = services.create(&manifests::service(app, app)).await?;
    let labels = [("app", app)];
    let mut deployment =
        manifests::deployment(app, &labels, spec.replicas, "nginx:1.18", &spec.template());
    if spec.scale_down.is_some() {
        ask_for_cpu(&mut deployment, nodes::POD_CPU);
    }
    deployments.create(&deployment).await?;
    let ready_timeout = Duration::from_secs(60) + spec.ready_after * spec.replicas as u32;
    watch
        .until(ready_timeout, "the first replicas to be Ready", |census| {
            census.current().count(0, State::Ready) == spec.replicas
        })
        .await?;
    let target = cluster_target(&service)?;
    // Ready pods are not yet routed pods: wait until the proxy has sent a request to each.
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let names: Vec<String> = pods
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await?
        .items
        .into_iter()
        .filter_map(|pod| pod.metadata.name)
        .collect();
    let path = Path {
        name: "proxy",
        target,
        host: "demo".into(),
    };
    consumers::wait_until_routed(&path, &names).await?;
    if narrate {
        println!(
            "  {} replicas Ready behind {target}; sending {rate} requests/s",
            spec.replicas
        );
    }

    let tally = Arc::new(Tally::default());
    let stop_load = CancellationToken::new();
    let started = Instant::now();
    watch.restart(started);
    let stop_nodes = CancellationToken::new();
    let node_samples = spec
        .scale_down
        .map(|_| nodes::sample(client, started, stop_nodes.clone()));
    let load = tokio::spawn(load::run_tallied(
        target,
        rate,
        started,
        stop_load.clone(),
        tally.clone(),
    ));
    tokio::time::sleep(Duration::from_millis(500)).await; // Steady load first: a duration, not a synchronization.

    let update_ms = ms_since(started);
    let patch = json!([{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1.19"}]);
    deployments.patch(app, &Patch::Json(patch)).await?;
    let old_groups = watch.census.groups.len();
    let mut live = LiveView::new(narrate);
    let mut rolled_ms = None;
    let bound = ready_timeout + Duration::from_secs(spec.grace_seconds as u64 + 60);
    watch
        .until_live(
            bound,
            "the rollout to finish",
            &mut live,
            &tally,
            |census, t_ms| {
                let now = census.current();
                let new_ready: usize = (old_groups..census.groups.len())
                    .map(|g| now.count(g, State::Ready))
                    .sum();
                if new_ready == spec.replicas && rolled_ms.is_none() {
                    rolled_ms = Some(t_ms);
                }
                let old_left: usize = census.groups[..old_groups]
                    .iter()
                    .map(|g| census.remaining(g))
                    .sum();
                rolled_ms.is_some() && old_left == 0
            },
        )
        .await?;
    let finished_ms = ms_since(started);
    tokio::time::sleep(Duration::from_millis(500)).await; // A last half second of load.
    stop_load.cancel();
    let (mut node_peak, mut nodes_after, mut nodes_back_ms, mut node_series) =
        (None, None, None, vec![]);
    if let (Some(samples), Some(bound)) = (&node_samples, spec.scale_down) {
        if narrate {
            println!(
                "  old pods gone; waiting up to {} for the added nodes to be removed",
                secs(bound)
            );
        }
        nodes_back_ms = nodes::wait_back(samples, nodes::START_NODES, bound)
            .await
            .map(|t| t - update_ms);
        stop_nodes.cancel();
        node_series = samples.lock().map(|s| s.clone()).unwrap_or_default();
        let (peak, last) = nodes::peak_and_last(&node_series);
        (node_peak, nodes_after) = (Some(peak), Some(last));
        for sample in &mut node_series {
            sample.0 -= update_ms;
        }
    }
    let outcomes = load.await?;
    live.finish(&watch.census, finished_ms, &tally.summary());
    cleanup(client, namespace, app).await?;

    let census = watch.census;
    let result = summarize(census, old_groups, update_ms, outcomes, name, spec.replicas);
    Ok(RolloutRun {
        rolled_ms: rolled_ms.map(|t| t - update_ms),
        finished_ms: finished_ms - update_ms,
        node_peak,
        nodes_after,
        nodes_back_ms,
        node_samples: node_series,
        ..result
    })
}

/// The run's figures from its census and requests, every time moved to "ms after the update".
fn summarize(
    census: Census,
    old_groups: usize,
    update_ms: f64,
    mut outcomes: Vec<Outcome>,
    name: String,
    replicas: usize,
) -> RolloutRun {
    let mut samples = census.samples.clone();
    for sample in &mut samples {
        sample.t_ms -= update_ms;
    }
    for outcome in &mut outcomes {
        outcome.t_ms -= update_ms;
    }
    let peak = census
        .peak()
        .map(|s| peak_of(s, old_groups, update_ms))
        .unwrap_or_default();
    let failed = outcomes.iter().filter(|o| !o.ok()).count();
    let failures = outcomes
        .iter()
        .filter_map(|o| Some((o.t_ms, o.error.clone()?)))
        .take(10)
        .collect();
    let mut groups = census.groups.clone();
    for (i, group) in groups.iter_mut().enumerate() {
        group.push_str(if i < old_groups { " (old)" } else { " (new)" });
    }
    RolloutRun {
        name,
        replicas,
        peak,
        rolled_ms: None,
        finished_ms: 0.0,
        requests: outcomes.len(),
        failed,
        failures,
        node_peak: None,
        nodes_after: None,
        nodes_back_ms: None,
        node_samples: Vec::new(),
        groups,
        samples,
        outcomes,
    }
}

/// The figures of the peak sample; groups before `old_groups` are the old ReplicaSets.
pub fn peak_of(sample: &Sample, old_groups: usize, origin_ms: f64) -> Peak {
    let mut peak = Peak {
        pods: sample.total(),
        at_ms: sample.t_ms - origin_ms,
        ..Peak::default()
    };
    for (&(group, state), &count) in &sample.counts {
        if group < old_groups {
            peak.old += count;
        } else {
            peak.new += count;
        }
        match state {
            State::Ready => {
                peak.ready += count;
                peak.running += count;
            }
            State::Running => peak.running += count,
            State::Terminating => peak.terminating += count,
            State::Pending => {}
        }
    }
    peak
}

/// Gives the Deployment's container a cpu request (the small nodes' runs).
fn ask_for_cpu(deployment: &mut Deployment, cpu: &str) {
    let containers = deployment
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
        .map(|s| &mut s.containers);
    for container in containers.into_iter().flatten() {
        let resources = container.resources.get_or_insert_with(Default::default);
        let requests = resources.requests.get_or_insert_with(Default::default);
        requests.insert(
            "cpu".into(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity(cpu.to_string()),
        );
    }
}

/// `clusterIP:PORT` of a created Service.
pub fn cluster_target(service: &Service) -> crate::Result<SocketAddr> {
    let ip = service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.clone())
        .unwrap_or_default();
    Ok(format!("{ip}:{}", manifests::PORT).parse()?)
}

/// Removes a run's Deployment and Service (both named `app`).
async fn cleanup(client: &Client, namespace: &str, app: &str) -> crate::Result<()> {
    cleanup_deployment(client, namespace, app, &format!("app={app}")).await?;
    let services = Api::<Service>::namespaced(client.clone(), namespace);
    services.delete(app, &DeleteParams::default()).await?;
    Ok(())
}

/// Removes a Deployment without waiting out its pods' shutdown: scaled to 0, its pods (those of
/// `selector`) deleted with grace 0, then the Deployment itself.
pub async fn cleanup_deployment(
    client: &Client,
    namespace: &str,
    name: &str,
    selector: &str,
) -> crate::Result<()> {
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace);
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    deployments
        .patch(name, &Patch::Merge(json!({"spec": {"replicas": 0}})))
        .await?;
    for pod in pods
        .list(&ListParams::default().labels(selector))
        .await?
        .items
    {
        let pod_name = pod.metadata.name.unwrap_or_default();
        // Already gone is fine: the ReplicaSet controller may have been first.
        let _ = pods.delete(&pod_name, &DeleteParams::grace(0)).await;
    }
    deployments.delete(name, &DeleteParams::default()).await?;
    Ok(())
}

fn secs(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

/// Prints a run's figures.
fn print_run(run: &RolloutRun) {
    let peak = &run.peak;
    println!(
        "  peak: {} pods at +{:.1} s ({} old, {} new; {} running, {} ready, {} terminating)",
        peak.pods,
        peak.at_ms / 1000.0,
        peak.old,
        peak.new,
        peak.running,
        peak.ready,
        peak.terminating
    );
    let rolled = run
        .rolled_ms
        .map_or("-".to_string(), |t| format!("+{:.1} s", t / 1000.0));
    println!(
        "  every new pod Ready at {rolled}, last old pod gone at +{:.1} s; {} requests, {} failed",
        run.finished_ms / 1000.0,
        run.requests,
        run.failed
    );
    if let Some(peak) = run.node_peak {
        let back = run.nodes_back_ms.map_or("not yet".to_string(), |t| {
            format!("at +{:.1} s", t / 1000.0)
        });
        println!(
            "  nodes: {} at the start, {peak} at the peak, {} at the end (back to {} {back})",
            nodes::START_NODES,
            run.nodes_after.unwrap_or(peak),
            nodes::START_NODES
        );
    }
}
