//! `minik demo rainbow`: long-lived connections through the ingress, first across a rolling
//! update, then across a rainbow deployment.
//!
//! Kubernetes counterpart: seed 002's last section. A rolling update deletes old pods as soon as
//! new ones are Ready; an old pod then has its shutdown time (here 20 s of draining after
//! SIGTERM) and whatever stream it still holds is cut when it exits. A **rainbow deployment**
//! creates a new Deployment per release (`release=blue`, `release=green`), switches the Service's
//! selector to the new one, leaves the old one running until its connections have drained, then
//! has it scaled to 0: nothing is cut, at the price of both releases running side by side for a
//! while. Both runs keep `--connections` streams of 120 s open through the ingress controller
//! (which reads the EndpointSlices), every duration divided by `--speed`.
//!
//! The old release is scaled to 0 by the controller manager's idle rule (issue 24): at the switch
//! it is annotated `minik.dev/scale-to-zero-after` (30 s, scaled), and once the ingress's
//! connection report shows none of its pods with a stream open for that long, it goes to 0 —
//! the KEDA-style clean-up seed 002 suggests. The demo still reads which pod serves each stream,
//! to say how long after the last one ended that happened.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use minik_api::core::Service;
use minik_api::networking_v1::Ingress;
use minik_client::{Api, Client, DeleteParams, Patch};
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::census::{Sample, State};
use super::live::LiveView;
use super::load::{self, Tally};
use super::manifests::{self, WebPod};
use super::rollout::{self, Peak, PodWatch};
use super::streams::{self, Clients, StreamEnd};

/// The knobs of the rainbow demo.
#[derive(Clone, Debug)]
pub struct RainbowOptions {
    /// Every duration is divided by this.
    pub speed: f64,
    /// Replicas of each release.
    pub replicas: usize,
    /// Streams held open.
    pub connections: usize,
    /// The ingress controller's HTTP address (a private cluster has one).
    pub ingress: Option<SocketAddr>,
}

/// One strategy's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// `rolling update` or `rainbow deployment`.
    pub strategy: String,
    /// Streams opened (every client, every reconnect).
    pub streams: usize,
    /// Streams that ran to the end.
    pub completed: usize,
    /// Streams cut by a pod's exit.
    pub connections_cut: usize,
    /// The most pods at once.
    pub peak: Peak,
    /// From the update (or the switch) to the last old pod gone, ms.
    pub finished_ms: f64,
    /// The idle rule's time on the old release (`minik.dev/scale-to-zero-after`), ms.
    pub idle_ms: Option<f64>,
    /// From the old release's last stream ending to its Deployment scaled to 0, ms.
    pub idle_scaled_ms: Option<f64>,
    #[serde(skip)]
    pub(super) groups: Vec<String>,
    #[serde(skip)]
    pub(super) samples: Vec<Sample>,
    #[serde(skip)]
    pub(super) ends: Vec<StreamEnd>,
}

/// Both outcomes.
#[derive(Clone, Debug, Serialize)]
pub struct RainbowResult {
    /// How long each stream lasts, ms.
    pub stream_ms: f64,
    /// How long an old pod keeps serving after SIGTERM, ms.
    pub shutdown_ms: f64,
    /// The rolling update.
    pub rolling: Outcome,
    /// The rainbow deployment.
    pub rainbow: Outcome,
}

/// The durations of one run, scaled.
struct Timing {
    stream: Duration,
    shutdown: Duration,
    ready_after: Duration,
    grace_seconds: i64,
    idle: Duration,
}

/// The controller manager's idle rule (`controller-manager/src/idle`).
const IDLE_ANNOTATION: &str = "minik.dev/scale-to-zero-after";

/// Runs the rolling update, then the rainbow deployment.
pub async fn run(
    client: &Client,
    namespace: &str,
    options: &RainbowOptions,
    narrate: bool,
) -> crate::Result<RainbowResult> {
    let Some(ingress) = options.ingress else {
        crate::error::bail!("the rainbow demo needs the ingress controller of a private cluster (leave out --server)");
    };
    let scaled = |seconds: f64| Duration::from_secs_f64(seconds / options.speed);
    let timing = Timing {
        stream: scaled(120.0),
        shutdown: scaled(20.0),
        ready_after: scaled(2.0),
        grace_seconds: (30.0 / options.speed).ceil() as i64 + 1,
        // The reports are written once a second at most: below 2 s the rule would be all slack.
        idle: scaled(30.0).max(Duration::from_secs(2)),
    };
    let ctx = Ctx {
        client,
        namespace,
        options,
        timing: &timing,
        ingress,
        narrate,
    };
    if narrate {
        println!(
            "\n  rolling update: streams of {:.1} s, old pods serve {:.1} s after SIGTERM",
            timing.stream.as_secs_f64(),
            timing.shutdown.as_secs_f64()
        );
    }
    let rolling = ctx.rolling().await?;
    if narrate {
        print_outcome(&rolling);
        println!("\n  rainbow deployment: a Deployment per release, the Service switched, the old one drained then scaled to 0");
    }
    let rainbow = ctx.rainbow().await?;
    if narrate {
        print_outcome(&rainbow);
    }
    Ok(RainbowResult {
        stream_ms: ms(timing.stream),
        shutdown_ms: ms(timing.shutdown),
        rolling,
        rainbow,
    })
}

struct Ctx<'a> {
    client: &'a Client,
    namespace: &'a str,
    options: &'a RainbowOptions,
    timing: &'a Timing,
    ingress: SocketAddr,
    narrate: bool,
}

impl Ctx<'_> {
    fn template<'a>(&self, app: &'a str) -> WebPod<'a> {
        WebPod {
            name: app,
            app,
            on_sigterm: format!("drain:{}", self.timing.shutdown.as_millis()),
            post_start: Some(self.timing.ready_after),
            pre_stop: None,
            grace_seconds: self.timing.grace_seconds,
        }
    }

    fn deployments(&self) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), self.namespace)
    }

    /// A Service and an Ingress for host `APP.demo` selecting `selector`.
    async fn expose(&self, app: &str, selector: &[(&str, &str)]) -> crate::Result<String> {
        let services = Api::<Service>::namespaced(self.client.clone(), self.namespace);
        services
            .create(&manifests::service_of_type(app, selector, "ClusterIP"))
            .await?;
        let host = format!("{app}.demo");
        let ingress = json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": app},
            "spec": {"rules": [{"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": app, "port": {"number": manifests::PORT}}}}]}}]},
        });
        Api::<Ingress>::namespaced(self.client.clone(), self.namespace)
            .create(&serde_json::from_value(ingress)?)
            .await?;
        Ok(host)
    }

    async fn unexpose(&self, app: &str) -> crate::Result<()> {
        Api::<Ingress>::namespaced(self.client.clone(), self.namespace)
            .delete(app, &DeleteParams::default())
            .await?;
        Api::<Service>::namespaced(self.client.clone(), self.namespace)
            .delete(app, &DeleteParams::default())
            .await?;
        Ok(())
    }

    /// Starts the clients once the ingress answers for `host`, and waits until every one holds a
    /// stream open.
    async fn connect(
        &self,
        host: &str,
        started: Instant,
        stop: CancellationToken,
    ) -> crate::Result<(streams::Open, tokio::task::JoinHandle<Vec<StreamEnd>>)> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while load::run_once_to(self.ingress, host).await.is_err() {
            crate::error::ensure!(
                tokio::time::Instant::now() < deadline,
                "the ingress did not route {host} within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await; // A poll interval.
        }
        let clients = Clients {
            target: self.ingress,
            host: host.to_string(),
            count: self.options.connections,
            duration: self.timing.stream,
        };
        let (open, ends) = streams::start(&clients, started, stop);
        while open.lock().unwrap_or_else(|p| p.into_inner()).len() < self.options.connections {
            crate::error::ensure!(
                tokio::time::Instant::now() < deadline,
                "the streams did not open within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await; // A poll interval.
        }
        Ok((open, ends))
    }

    /// The rolling update: one Deployment, its image changed under the open streams.
    async fn rolling(&self) -> crate::Result<Outcome> {
        let app = "rolling";
        let replicas = self.options.replicas;
        let mut watch = PodWatch::start(self.client, self.namespace, &format!("app={app}")).await?;
        let host = self.expose(app, &[("app", app)]).await?;
        let deployment = manifests::deployment(
            app,
            &[("app", app)],
            replicas,
            "nginx:1.18",
            &self.template(app),
        );
        self.deployments().create(&deployment).await?;
        watch
            .until(Duration::from_secs(90), "the replicas to be Ready", |c| {
                c.current().count(0, State::Ready) == replicas
            })
            .await?;
        let started = Instant::now();
        let stop = CancellationToken::new();
        let (_open, ends) = self.connect(&host, started, stop.clone()).await?;
        watch.restart(started);
        let update_ms = ms(started.elapsed());
        let patch = json!([{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1.19"}]);
        self.deployments().patch(app, &Patch::Json(patch)).await?;
        let mut live = LiveView::new(self.narrate);
        let tally = Tally::default();
        let bound = Duration::from_secs(120) + self.timing.shutdown * 2;
        watch
            .until_live(
                bound,
                "the rolling update to finish",
                &mut live,
                &tally,
                |census, _| {
                    let now = census.current();
                    let new_ready: usize = (1..census.groups.len())
                        .map(|g| now.count(g, State::Ready))
                        .sum();
                    new_ready == replicas && census.remaining(&census.groups[0]) == 0
                },
            )
            .await?;
        let finished_ms = ms(started.elapsed()) - update_ms;
        stop.cancel();
        let ends = ends.await?;
        live.finish(&watch.census, ms(started.elapsed()), "");
        self.unexpose(app).await?;
        rollout::cleanup_deployment(self.client, self.namespace, app, "app=rolling").await?;
        Ok(outcome(
            "rolling update",
            &watch,
            1,
            update_ms,
            finished_ms,
            ends,
        ))
    }

    /// The rainbow deployment: blue, then green beside it, the Service switched, blue drained
    /// and scaled to 0.
    async fn rainbow(&self) -> crate::Result<Outcome> {
        let app = "rainbow";
        let replicas = self.options.replicas;
        let mut watch = PodWatch::start(self.client, self.namespace, &format!("app={app}")).await?;
        let host = self
            .expose(app, &[("app", app), ("release", "blue")])
            .await?;
        let blue = manifests::deployment(
            "rainbow-blue",
            &[("app", app), ("release", "blue")],
            replicas,
            "nginx:1.18",
            &self.template(app),
        );
        self.deployments().create(&blue).await?;
        watch
            .until(Duration::from_secs(90), "blue to be Ready", |c| {
                c.current().count(0, State::Ready) == replicas
            })
            .await?;
        let started = Instant::now();
        let stop = CancellationToken::new();
        let (open, ends) = self.connect(&host, started, stop.clone()).await?;
        watch.restart(started);
        let update_ms = ms(started.elapsed());
        let green = manifests::deployment(
            "rainbow-green",
            &[("app", app), ("release", "green")],
            replicas,
            "nginx:1.19",
            &self.template(app),
        );
        self.deployments().create(&green).await?;
        let mut live = LiveView::new(self.narrate);
        let tally = Tally::default();
        watch
            .until_live(
                Duration::from_secs(90),
                "green to be Ready",
                &mut live,
                &tally,
                |c, _| c.groups.len() > 1 && c.current().count(1, State::Ready) == replicas,
            )
            .await?;
        // Blue is left to the controller manager's idle rule (issue 24): scaled to 0 once its
        // last connection through the ingress has been closed for `idle`.
        let idle = format!("{}ms", self.timing.idle.as_millis());
        let annotation = json!({"metadata": {"annotations": {IDLE_ANNOTATION: idle}}});
        self.deployments()
            .patch("rainbow-blue", &Patch::Merge(annotation))
            .await?;
        let services = Api::<Service>::namespaced(self.client.clone(), self.namespace);
        services
            .patch(
                app,
                &Patch::Merge(json!({"spec": {"selector": {"release": "green"}}})),
            )
            .await?;
        if self.narrate {
            println!(
                "    switched the Service to release=green; blue is scaled to 0 by the idle rule {:.1} s after its last stream ends",
                self.timing.idle.as_secs_f64()
            );
        }
        let drain_bound = self.timing.stream + self.timing.idle + Duration::from_secs(30);
        let deadline = tokio::time::Instant::now() + drain_bound;
        let mut last_closed = None;
        loop {
            if last_closed.is_none() && streams::open_on(&open, "rainbow-blue-") == 0 {
                last_closed = Some(Instant::now());
            }
            let blue = self.deployments().get("rainbow-blue").await?;
            if blue.spec.and_then(|s| s.replicas) == Some(0) {
                break;
            }
            crate::error::ensure!(
                tokio::time::Instant::now() < deadline,
                "blue was not scaled to 0 by the idle rule within {drain_bound:?}"
            );
            // Follow the pods for 200 ms (the wait ends by its bound), then look again.
            let bound = Duration::from_millis(200);
            let _ = watch
                .until_live(bound, "", &mut live, &tally, |_, _| false)
                .await;
        }
        let idle_scaled_ms = last_closed.map(|t| ms(t.elapsed()));
        if self.narrate {
            let after = idle_scaled_ms.map_or(-1.0, |m| m / 1000.0);
            println!(
                "    blue scaled to 0 by the idle rule {after:.1} s after its last stream ended"
            );
        }
        let bound = Duration::from_secs(60) + self.timing.shutdown * 2;
        watch
            .until_live(
                bound,
                "blue's pods to be gone",
                &mut live,
                &tally,
                |c, _| c.remaining(&c.groups[0]) == 0,
            )
            .await?;
        let finished_ms = ms(started.elapsed()) - update_ms;
        stop.cancel();
        let ends = ends.await?;
        live.finish(&watch.census, ms(started.elapsed()), "");
        self.unexpose(app).await?;
        for release in ["blue", "green"] {
            let selector = format!("app={app},release={release}");
            rollout::cleanup_deployment(
                self.client,
                self.namespace,
                &format!("{app}-{release}"),
                &selector,
            )
            .await?;
        }
        let mut outcome = outcome(
            "rainbow deployment",
            &watch,
            1,
            update_ms,
            finished_ms,
            ends,
        );
        outcome.idle_scaled_ms = idle_scaled_ms;
        outcome.idle_ms = Some(ms(self.timing.idle));
        Ok(outcome)
    }
}

/// The figures of one strategy; times moved to "ms after the update".
fn outcome(
    strategy: &str,
    watch: &PodWatch,
    old_groups: usize,
    update_ms: f64,
    finished_ms: f64,
    mut ends: Vec<StreamEnd>,
) -> Outcome {
    for end in &mut ends {
        end.opened_ms -= update_ms;
        end.ended_ms -= update_ms;
    }
    let mut samples = watch.census.samples.clone();
    for sample in &mut samples {
        sample.t_ms -= update_ms;
    }
    let peak = watch
        .census
        .peak()
        .map(|s| rollout::peak_of(s, old_groups, update_ms))
        .unwrap_or_default();
    Outcome {
        strategy: strategy.to_string(),
        streams: ends.len(),
        completed: ends.iter().filter(|e| e.completed).count(),
        connections_cut: ends.iter().filter(|e| e.cut()).count(),
        peak,
        finished_ms,
        idle_ms: None,
        idle_scaled_ms: None,
        groups: watch.census.groups.clone(),
        samples,
        ends,
    }
}

fn print_outcome(outcome: &Outcome) {
    println!(
        "  {}: {} streams ended, {} ran to the end, {} cut; peak {} pods; old pods gone +{:.1} s after the update",
        outcome.strategy, outcome.streams, outcome.completed, outcome.connections_cut, outcome.peak.pods, outcome.finished_ms / 1000.0
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
