//! The journey matches `minik demo` (issue 23): `minik demo create` and `minik demo race` run
//! against a cluster with the dashboard, and every step the demo measured is on the dashboard's
//! journey of the same pod, at the same moment. A step read from an Event (`eventTime`, through
//! `minik_client::events::facts` in both) agrees to the millisecond; a step each saw on its own
//! watch (the demo's and the dashboard's) agrees within [`WATCH_TOLERANCE_MS`], the time two
//! watchers of one change are told apart. Then each consumer's apply time: with an Ingress and a
//! LoadBalancer Service, a deleted pod's journey shows when the proxy, the ingress controller and
//! the load balancer stopped routing to it, in that order (seed 003: the batched balancer last).

use std::time::Duration;

use minik_tests::fixtures::pod;
use minik_tests::wait::{eventually, pod as pod_is, wait_for};
use minik_tests::Cluster;
use serde_json::{json, Value};

use super::{http, split};
use crate::support::{stop_clean, RUNNING};

/// How far apart two watchers may see one change: the demo's client and the dashboard are
/// separate watch streams, each stamped on arrival, on a 2-core machine shared with the cluster.
const WATCH_TOLERANCE_MS: f64 = 150.0;

/// The demo's mark (a part of its text), the journey's step, and whether both read one Event.
const CREATE_PAIRS: [(&str, &str, bool); 7] = [
    ("stored pod", "created", false),
    ("reported IP", "IP assigned", false),
    ("reported Ready", "Ready", false),
    ("Successfully assigned", "scheduled", true),
    ("Started container", "container started", true),
    ("added to the Endpoints", "added to the Endpoints", true),
    ("Applied endpoints", "proxy: routing to it", true),
];
const RACE_PAIRS: [(&str, &str, bool); 9] = [
    ("delete answered", "deletionTimestamp", false),
    ("object removed", "gone", false),
    (
        "removed from the Endpoints",
        "removed from the Endpoints",
        true,
    ),
    ("slice: not ready", "not ready in the EndpointSlices", true),
    ("proxy applied the removal", "proxy: stopped routing", true),
    ("preStop started", "preStop started", true),
    ("preStop finished", "preStop finished", true),
    ("SIGTERM sent", "SIGTERM", true),
    ("process exited", "process exited", true),
];

/// The tables of the dashboard's first SSE message (the snapshot), once it answers.
async fn snapshot(url: &str) -> Option<Value> {
    let (base, _) = split(url);
    let page = http().get(url).send().await.ok()?;
    let cookie = page.headers().get("set-cookie")?.to_str().ok()?;
    let cookie = cookie.split(';').next()?.to_string();
    let request = http()
        .get(format!("{base}/updates"))
        .header("Cookie", cookie);
    let mut stream = request.send().await.ok()?;
    let mut text = String::new();
    while !text.contains("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(20), stream.chunk()).await;
        text.push_str(&String::from_utf8_lossy(&chunk.ok()?.ok()??));
    }
    let data = text.split("\n\n").next().unwrap();
    let json: String = data
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim_start)
        .collect();
    Some(serde_json::from_str::<Value>(&json).ok()?["tables"].clone())
}

/// The steps (name → ms since the epoch, the first of each name) of the last journey of `key`
/// once it holds every one of `wanted`.
async fn journey_steps(url: &str, key: &str, wanted: &[&str]) -> Vec<(String, i64)> {
    let found = eventually("the journey's steps", RUNNING, || async {
        let tables = snapshot(url).await?;
        let journeys = tables["journeys"]["upsert"].as_object()?.clone();
        // The newest pod of that name: the journey whose first step is the latest.
        let journey = journeys
            .values()
            .filter(|j| j["key"] == key)
            .max_by_key(|j| j["steps"][0]["at"].as_i64())?
            .clone();
        let steps: Vec<(String, i64)> = journey["steps"]
            .as_array()?
            .iter()
            .map(|s| {
                (
                    s["step"].as_str().unwrap_or("").to_string(),
                    s["at"].as_i64().unwrap_or(0),
                )
            })
            .collect();
        wanted
            .iter()
            .all(|w| steps.iter().any(|(s, _)| s == w))
            .then_some(steps)
    });
    found
        .await
        .unwrap_or_else(|_| panic!("{key}: no journey with {wanted:?}"))
}

/// Runs `minik demo PART -o json --quick` against the cluster; returns its JSON.
async fn demo(cluster: &Cluster, part: &str) -> Value {
    let binary = minik_tests::cluster::minik_binary().expect("minik");
    let output = tokio::process::Command::new(binary)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig())
        .args([
            "demo",
            part,
            "--server",
            cluster.server_url(),
            "-o",
            "json",
            "--quick",
        ])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(180), output)
        .await
        .expect("the demo within 3 minutes")
        .expect("minik demo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "minik demo {part}: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Value = serde_json::from_str(&stdout).expect("the demo's JSON");
    if let Some(report) = json["report"].as_str() {
        let _ = std::fs::remove_file(report);
    }
    json
}

/// Compares a demo timeline with a journey; returns one line per pair (name, demo, journey, Δ).
fn compare(timeline: &Value, steps: &[(String, i64)], pairs: &[(&str, &str, bool)]) -> Vec<String> {
    let origin = timeline["origin_ms"].as_f64().expect("origin_ms");
    let marks = timeline["marks"].as_array().expect("marks");
    let mut lines = Vec::new();
    for (mark, step, same_event) in pairs {
        let Some(at) = marks
            .iter()
            .find(|m| m["event"].as_str().is_some_and(|e| e.contains(mark)))
            .and_then(|m| m["t_ms"].as_f64())
        else {
            panic!("the demo has no mark {mark:?}: {marks:#?}");
        };
        let journey = steps
            .iter()
            .find(|(s, _)| s == step)
            .unwrap_or_else(|| panic!("the journey has no step {step:?}: {steps:?}"));
        let offset = journey.1 as f64 - origin;
        let delta = offset - at;
        // eventTime has microseconds; the journey keeps milliseconds (truncated).
        let tolerance = if *same_event { 1.5 } else { WATCH_TOLERANCE_MS };
        lines.push(format!(
            "{step:<32} demo {at:+9.1} ms  journey {offset:+7.0} ms  Δ {delta:+6.1} ms"
        ));
        assert!(delta.abs() <= tolerance, "{step}: {lines:#?}");
    }
    lines
}

#[tokio::test]
async fn the_journey_matches_minik_demo_for_the_same_run() {
    let (cluster, url) = super::cluster_with_dashboard().await;
    let created = demo(&cluster, "create").await;
    let wanted: Vec<&str> = CREATE_PAIRS.iter().map(|p| p.1).collect();
    let steps = journey_steps(&url, "default/demo-web", &wanted).await;
    let timeline = json!({"marks": created["create"]["timeline"], "origin_ms": created["create"]["origin_ms"]});
    let lines = compare(&timeline, &steps, &CREATE_PAIRS);
    eprintln!("dashboard vs demo create:\n  {}", lines.join("\n  "));

    let race = demo(&cluster, "race").await;
    for (variant, pod_name) in [(0, "race-plain-1"), (1, "race-prestop-1")] {
        let timeline = &race["race"]["variants"][variant]["timeline"];
        let pairs: Vec<(&str, &str, bool)> = RACE_PAIRS
            .iter()
            .copied()
            .filter(|(_, step, _)| variant == 1 || !step.starts_with("preStop"))
            .collect();
        let wanted: Vec<&str> = pairs.iter().map(|p| p.1).collect();
        let steps = journey_steps(&url, &format!("default/{pod_name}"), &wanted).await;
        let lines = compare(timeline, &steps, &pairs);
        eprintln!(
            "dashboard vs demo race ({pod_name}):\n  {}",
            lines.join("\n  ")
        );
    }
    // The demo's clean-up deletes its last pods without waiting: let them go before the cluster
    // stops (a kubelet stopped mid-termination leaves the pod to the next one).
    eventually("the demo's pods gone", RUNNING, || async {
        let shims = cluster
            .processes()
            .into_iter()
            .filter(|p| p.cmdline.contains(" shim "));
        (shims.count() == 0).then_some(())
    })
    .await
    .expect("the demo cleaned up");
    stop_clean(cluster).await;
}

/// An Ingress and a LoadBalancer Service in front of two pods; one deleted: its journey shows
/// each consumer stop routing to it, the load balancer last (it applies in batches).
#[tokio::test]
async fn the_journey_shows_each_consumer_s_apply_time_on_deletion() {
    let cluster = Cluster::builder()
        .dashboard()
        .ingress(&[])
        .loadbalancer(&["--batch-period", "1s"])
        .start()
        .await
        .expect("cluster");
    let url = cluster.dashboard_url().expect("the dashboard's URL");
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "shop", "namespace": "default"},
        "spec": {"type": "LoadBalancer", "selector": {"app": "shop"},
            "ports": [{"name": "http", "port": 8080, "targetPort": 8080}]}});
    let ingress = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "shop", "namespace": "default"},
        "spec": {"rules": [{"host": "shop.example", "http": {"paths": [{"path": "/",
            "pathType": "Prefix", "backend": {"service": {"name": "shop", "port": {"name": "http"}}}}]}}]}});
    cluster
        .services()
        .create(&serde_json::from_value(service).unwrap())
        .await
        .expect("service");
    minik_client::Api::<minik_api::networking_v1::Ingress>::namespaced(cluster.client(), "default")
        .create(&serde_json::from_value(ingress).unwrap())
        .await
        .expect("ingress");
    for name in ["shop-1", "shop-2"] {
        let fixture = pod(name).label("app", "shop").port(8080).build();
        cluster.pods().create(&fixture).await.expect("pod");
        wait_for(&cluster.pods(), name, pod_is::is_ready, RUNNING)
            .await
            .expect("Ready");
    }
    let routing = [
        "proxy: routing to it",
        "ingress: routing to it",
        "loadbalancer: routing to it",
    ];
    journey_steps(&url, "default/shop-1", &routing).await;
    cluster
        .pods()
        .delete("shop-1", &minik_client::DeleteParams::default())
        .await
        .expect("delete");
    let stopped = [
        "deletionTimestamp",
        "proxy: stopped routing",
        "ingress: stopped routing",
        "loadbalancer: stopped routing",
    ];
    let steps = journey_steps(&url, "default/shop-1", &stopped).await;
    let at = |name: &str| steps.iter().find(|(s, _)| s == name).unwrap().1;
    let deleted = at("deletionTimestamp");
    let lines: Vec<String> = stopped[1..]
        .iter()
        .map(|name| {
            format!(
                "{name:<32} +{} ms after deletionTimestamp",
                at(name) - deleted
            )
        })
        .collect();
    eprintln!(
        "dashboard: consumers' apply times for shop-1:\n  {}",
        lines.join("\n  ")
    );
    for name in &stopped[1..] {
        assert!(at(name) >= deleted, "{name} before the delete: {lines:#?}");
    }
    assert!(
        at("loadbalancer: stopped routing") >= at("ingress: stopped routing"),
        "the batched balancer applies last: {lines:#?}"
    );
    stop_clean(cluster).await;
}
