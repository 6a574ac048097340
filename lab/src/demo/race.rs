//! `minik demo race`: deleting a pod races endpoint removal against SIGTERM, and a preStop wait
//! decides who wins.
//!
//! Kubernetes counterpart: the heart of the seeds ("What happens when a Pod is deleted", "Graceful
//! shutdown in Kubernetes", "Making K8s shutdowns more graceful"). After `kubectl delete pod`, two
//! branches run in parallel: the endpoint controller drops the pod from the Endpoints (and every
//! consumer of the Endpoints catches up, some of them late), while the kubelet runs preStop, then
//! sends SIGTERM. If the process exits before the slowest consumer has stopped sending it traffic,
//! requests fail. A preStop sleep longer than that lag makes the failures disappear.
//!
//! Only what followed the delete is drawn: Events from before it (the replicas being set up) are
//! left out, and a proxy update applied after the delete is named for what it did: the removal
//! of the deleted pod, or an older change still routing to it.
//!
//! Seed 003's consumers each get the same steady load (`consumers.rs`): the proxy, which applies
//! endpoint changes `--sync-delay` late and does not retry a failed dial (`--dial-attempts 1`);
//! the ingress controller, quick and retrying another pod when a dial fails, as nginx does; and
//! the external load balancer, programmed in batches on a grid of `--batch-period` (the delete is
//! sent just after a tick, so it is the slowest). The demo deletes one replica and counts what
//! failed through each, once per variant. On a cluster given by `--server` only the proxy is used.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use minik_api::core::{Event, Pod, Service};
use minik_api::WatchEvent;
use minik_client::events::facts;
use minik_client::{Api, Client, DeleteParams, ListParams};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::consumers::{self, Addresses, ConsumerResult, Path};
use super::load::{self, Outcome};
use super::manifests::{self, WebPod};
use super::observe::{self, Observer, Seen};
use super::timeline::{self, Lane, Timeline};

/// The knobs of the race.
#[derive(Clone, Debug)]
pub struct RaceOptions {
    /// Replicas behind the Service.
    pub replicas: usize,
    /// Requests per second through the proxy.
    pub rate: u32,
    /// How long the load runs before the delete.
    pub warmup: Duration,
    /// The proxy's sync delay (how late the slow consumer is); the cluster must run with it.
    pub sync_delay: Duration,
    /// The preStop sleep of the second variant (should be longer than the slowest lag).
    pub pre_stop: Duration,
    /// The load balancer's batch period (the cluster must run with it).
    pub batch_period: Duration,
    /// The ingress controller and load balancer, on a private cluster.
    pub consumers: Option<Addresses>,
}

/// One variant's result.
#[derive(Clone, Debug, Serialize)]
pub struct Variant {
    /// `no preStop` or `preStop sleep 3s`.
    pub name: String,
    /// Requests sent, through every consumer.
    pub requests: usize,
    /// Requests that failed, through every consumer.
    pub failed: usize,
    /// Each consumer's requests, failures and lag.
    pub consumers: Vec<ConsumerResult>,
    /// When the failed requests were sent, in ms after the delete (first, last).
    pub failure_window_ms: Option<(f64, f64)>,
    /// The deletion timeline, relative to the delete.
    pub timeline: Timeline,
    /// Every request's outcome per consumer, `t_ms` relative to the delete.
    #[serde(skip)]
    pub outcomes: Vec<(String, Vec<Outcome>)>,
}

/// Runs both variants on a Service reachable at `target` (clusterIP:port, or the proxy's fallback).
pub async fn run(
    client: &Client,
    namespace: &str,
    options: &RaceOptions,
    narrate: bool,
) -> crate::Result<Vec<Variant>> {
    let mut variants = Vec::new();
    for pre_stop in [None, Some(options.pre_stop)] {
        let name = match pre_stop {
            None => "no preStop".to_string(),
            Some(duration) => format!("preStop sleep {}", humantime::format_duration(duration)),
        };
        if narrate {
            println!("\n  variant: {name}");
        }
        let variant = run_variant(client, namespace, options, pre_stop, name, narrate).await?;
        if narrate {
            variant.timeline.print();
        }
        variants.push(variant);
    }
    Ok(variants)
}

/// One variant: fresh pods and Service, load, delete one replica, gather the timeline.
async fn run_variant(
    client: &Client,
    namespace: &str,
    options: &RaceOptions,
    pre_stop: Option<Duration>,
    name: String,
    narrate: bool,
) -> crate::Result<Variant> {
    let app = if pre_stop.is_some() {
        "race-prestop"
    } else {
        "race-plain"
    };
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let services = Api::<Service>::namespaced(client.clone(), namespace);
    let mut observer = Observer::start(client, namespace).await?;
    let service = services.create(&manifests::service(app, app)).await?;
    let cluster_ip = service
        .spec
        .and_then(|spec| spec.cluster_ip)
        .unwrap_or_default();
    let target: SocketAddr = format!("{cluster_ip}:{}", manifests::PORT).parse()?;
    let names: Vec<String> = (1..=options.replicas)
        .map(|i| format!("{app}-{i}"))
        .collect();
    for pod_name in &names {
        let pod = WebPod {
            name: pod_name,
            app,
            on_sigterm: "exit".into(),
            post_start: None,
            pre_stop,
            grace_seconds: 30,
        };
        pods.create(&pod.build()).await?;
    }
    wait_until_routed(&mut observer, options.replicas).await?;
    let mut paths = vec![Path {
        name: "proxy",
        target,
        host: "demo".into(),
    }];
    if let Some(addresses) = &options.consumers {
        paths.extend(consumers::expose(client, namespace, app, addresses).await?);
        for path in &paths[1..] {
            consumers::wait_until_routed(path, &names).await?;
        }
    }
    if narrate {
        let via: Vec<&str> = paths.iter().map(|p| p.name).collect();
        println!(
            "  {} replicas ready; sending {} requests/s through each of: {}",
            options.replicas,
            options.rate,
            via.join(", ")
        );
    }

    // The app's own account of its shutdown, read from its log as it is written.
    let victim = names[0].clone();
    let victim_ip = pods
        .get(&victim)
        .await?
        .status
        .and_then(|status| status.pod_ip)
        .unwrap_or_default();
    let app_log = observe::follow_log(&pods, &victim).await?;

    let started = Instant::now();
    let stop_load = CancellationToken::new();
    let loads: Vec<_> = paths
        .iter()
        .map(|path| {
            let run = load::run_to_host(
                path.target,
                path.host.clone(),
                options.rate,
                started,
                stop_load.clone(),
                Default::default(),
            );
            tokio::spawn(run)
        })
        .collect();
    tokio::time::sleep(options.warmup).await; // Steady load before the delete: a duration, not a synchronization.
    if options.consumers.is_some() {
        // Just after the load balancer's batch, so its removal waits a whole period.
        tokio::time::sleep(consumers::after_next_tick(
            options.batch_period,
            Duration::from_millis(100),
        ))
        .await;
    }
    let stop_watch = CancellationToken::new();
    let applies = match options.consumers {
        Some(addresses) => Some(consumers::watch_applies(addresses, stop_watch.clone()).await?),
        None => None,
    };

    let delete_sent = Timestamp::now();
    let delete_offset_ms = started.elapsed().as_secs_f64() * 1000.0;
    pods.delete(&victim, &DeleteParams::default()).await?;
    let mut timeline = Timeline::new(delete_sent);
    timeline.add(Lane::Client, "delete sent", delete_sent);
    timeline.add(
        Lane::Apiserver,
        "delete answered (deletionTimestamp set)",
        Timestamp::now(),
    );

    let removed_at = wait_until_removed(&mut observer, &victim).await?;
    // Keep the load on until the slowest consumer has surely caught up, and half a second more:
    // this is how long the experiment measures, not a synchronization.
    let slowest = if options.consumers.is_some() {
        options.sync_delay.max(options.batch_period)
    } else {
        options.sync_delay
    };
    let settle = slowest.saturating_sub(elapsed_since(delete_sent)) + Duration::from_millis(500);
    tokio::time::sleep(settle).await;
    stop_load.cancel();
    stop_watch.cancel();
    let mut outcomes = Vec::new();
    for (path, load) in paths.iter().zip(loads) {
        let mut list = load.await?;
        for outcome in &mut list {
            outcome.t_ms -= delete_offset_ms;
        }
        outcomes.push((path.name.to_string(), list));
    }
    let applied = match applies {
        Some(task) => task.await?,
        None => [None, None],
    };
    for ((lane, what), at) in [
        (Lane::Ingress, "ingress"),
        (Lane::LoadBalancer, "load balancer"),
    ]
    .into_iter()
    .zip(applied)
    {
        if let Some(at) = at {
            timeline.add(lane, format!("{what} applied the removal"), at);
        }
    }

    let victim_pod = (victim.as_str(), victim_ip.as_str());
    add_cluster_events(
        client,
        namespace,
        victim_pod,
        app,
        delete_sent,
        &mut timeline,
    )
    .await?;
    for (event, at) in timeline::app_marks(&app_log.await.unwrap_or_default()) {
        if event != "started" {
            timeline.add(Lane::Process, format!("app: {event}"), at);
        }
    }
    timeline.add(Lane::Apiserver, "object removed", removed_at);
    if options.consumers.is_some() {
        consumers::unexpose(client, namespace, app).await?;
    }
    cleanup(&pods, &services, &names[1..], app).await?;
    Ok(summarize(name, timeline, outcomes))
}

/// The variant's figures: totals, and per consumer its failures and when it applied the removal.
fn summarize(name: String, timeline: Timeline, outcomes: Vec<(String, Vec<Outcome>)>) -> Variant {
    let applied = |consumer: &str| {
        let wanted = match consumer {
            "proxy" => Lane::Proxy,
            "ingress" => Lane::Ingress,
            _ => Lane::LoadBalancer,
        };
        timeline
            .marks
            .iter()
            .find(|m| m.component == wanted && m.event.ends_with("applied the removal"))
            .map(|m| m.t_ms)
    };
    let results: Vec<ConsumerResult> = outcomes
        .iter()
        .map(|(consumer, list)| consumers::result(consumer, list, applied(consumer)))
        .collect();
    let all: Vec<Outcome> = outcomes
        .iter()
        .flat_map(|(_, list)| list.iter().cloned())
        .collect();
    Variant {
        name,
        requests: all.len(),
        failed: all.iter().filter(|o| !o.ok()).count(),
        consumers: results,
        failure_window_ms: load::failure_window(&all),
        timeline,
        outcomes,
    }
}

/// Waits until the proxy has applied an endpoint set with every replica, so no change from the
/// setup is still waiting out the sync delay when the pod is deleted.
async fn wait_until_routed(observer: &mut Observer, replicas: usize) -> crate::Result<()> {
    loop {
        if let Seen::Event(event) = observer
            .next(Duration::from_secs(60), "the replicas to be routed")
            .await?
        {
            let message = event.message.as_deref().unwrap_or_default();
            // The ingress controller and the load balancer write the same reason: the proxy's.
            if event.reason.as_deref() == Some("EndpointsApplied")
                && timeline::event_component(&event) == Some("proxy")
                && applied_endpoints(message).len() == replicas
            {
                return Ok(());
            }
        }
    }
}

/// The endpoints (`ip:port`) listed in an `EndpointsApplied` message, read as the dashboard reads
/// them (`minik_client::events::facts`).
fn applied_endpoints(message: &str) -> Vec<&str> {
    facts::applied_endpoints(message)
        .map(|(_, endpoints)| endpoints)
        .unwrap_or_default()
}

/// Waits until the pod object is gone; returns when the watch saw it go.
async fn wait_until_removed(observer: &mut Observer, pod_name: &str) -> crate::Result<Timestamp> {
    loop {
        match observer
            .next(Duration::from_secs(90), "the deleted pod to be removed")
            .await?
        {
            Seen::Pod(WatchEvent::Deleted(pod), at)
                if pod.metadata.name.as_deref() == Some(pod_name) =>
            {
                return Ok(at)
            }
            _ => {}
        }
    }
}

/// The Events of the deleted pod (`victim`: name and IP) and of the Service since the delete,
/// turned into marks.
async fn add_cluster_events(
    client: &Client,
    namespace: &str,
    victim: (&str, &str),
    service: &str,
    since: Timestamp,
    timeline: &mut Timeline,
) -> crate::Result<()> {
    let events = Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?
        .items;
    let (pod_name, _) = victim;
    let relevant: Vec<Event> = events
        .into_iter()
        .filter(|event| {
            let about = event.involved_object.name.as_deref().unwrap_or_default();
            (about == pod_name || about == service)
                && timeline::event_time(event).is_some_and(|at| at >= since)
        })
        .collect();
    timeline.add_events(&relevant, |reason, message| {
        describe(reason, message, victim)
    });
    Ok(())
}

/// The mark text of an Event that followed the delete of `victim` (name, IP).
fn describe(reason: &str, message: &str, victim: (&str, &str)) -> Option<String> {
    let (pod_name, ip) = victim;
    let about_victim = || facts::endpoint_pod(message).is_some_and(|(pod, _)| pod == pod_name);
    let routes_to_victim = || {
        applied_endpoints(message)
            .iter()
            .any(|entry| facts::endpoint_ip(entry) == ip)
    };
    match reason {
        "EndpointRemoved" if about_victim() => Some("removed from the Endpoints".to_string()),
        "EndpointNotReady" if about_victim() => Some("slice: not ready, terminating".to_string()),
        "EndpointsApplied" if routes_to_victim() => {
            Some("proxy applied an older change (still routing to the pod)".to_string())
        }
        "EndpointsApplied" => Some("proxy applied the removal".to_string()),
        "PreStopHookStarted" => Some("preStop started".to_string()),
        "PreStopHookCompleted" => Some(
            if message.contains("cut short") {
                "preStop cut short"
            } else {
                "preStop finished"
            }
            .to_string(),
        ),
        "Killing" => Some("SIGTERM sent".to_string()),
        "Killed" => Some("SIGKILL sent".to_string()),
        "Exited" => Some(format!(
            "process exited, code {}",
            message.rsplit(' ').next().unwrap_or_default()
        )),
        _ => None,
    }
}

async fn cleanup(
    pods: &Api<Pod>,
    services: &Api<Service>,
    names: &[String],
    service: &str,
) -> crate::Result<()> {
    for pod_name in names {
        pods.delete(pod_name, &DeleteParams::grace(0)).await?;
    }
    services.delete(service, &DeleteParams::default()).await?;
    Ok(())
}

fn elapsed_since(at: Timestamp) -> Duration {
    Duration::from_nanos((Timestamp::now().as_nanosecond() - at.as_nanosecond()).max(0) as u64)
}

/// Prints the table of variants.
pub fn print_table(variants: &[Variant]) {
    println!(
        "\n  {:<22} {:>9} {:>7}   failures sent between",
        "VARIANT", "REQUESTS", "FAILED"
    );
    for variant in variants {
        let window = match variant.failure_window_ms {
            Some((first, last)) => format!("{first:+.0} ms and {last:+.0} ms after the delete"),
            None => "-".to_string(),
        };
        println!(
            "  {:<22} {:>9} {:>7}   {}",
            variant.name, variant.requests, variant.failed, window
        );
        if variant.consumers.len() > 1 {
            for consumer in &variant.consumers {
                let applied = consumer
                    .applied_ms
                    .map_or("-".to_string(), |t| format!("{t:+.0} ms"));
                println!(
                    "    via {:<16} {:>9} {:>7}   removal applied at {applied}",
                    consumer.name, consumer.requests, consumer.failed
                );
            }
        }
    }
}
