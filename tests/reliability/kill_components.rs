//! Every component of `minik up` killed with -9 while traffic flows (issue 19): `minik up` starts it
//! again, and the cluster reconciles a change made while it was down. A Deployment behind a
//! NodePort Service is scaled each time a component dies; once the component is back, the
//! Deployment has exactly that many Ready pods, the EndpointSlices list them, and the node port
//! answers.

use std::time::{Duration, Instant};

use minik_client::{Client, Method, Patch};
use minik_tests::procs;
use minik_tests::up::Up;
use minik_tests::wait::eventually;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

/// How long a killed component may take to come back and the cluster to reconcile.
const RECONCILED_WITHIN: Duration = Duration::from_secs(40);

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"terminationGracePeriodSeconds": 1, "containers": [{"name": "app",
                    "image": "minik/web", "env": [{"name": "PORT", "value": "8080"}],
                    "ports": [{"name": "http", "containerPort": 8080}],
                    "readinessProbe": {"httpGet": {"path": "/", "port": 8080},
                        "periodSeconds": 1}}]}}}})
}

fn node_port_service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"type": "NodePort", "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})
}

/// Retries a write until the apiserver answers (it may be the component that is down).
async fn scale(client: &Client, replicas: i64) {
    let patch = Patch::Merge(json!({"spec": {"replicas": replicas}}));
    let path = format!("{DEPLOYMENTS}/web");
    eventually("the scale is accepted", RECONCILED_WITHIN, || async {
        client.patch_json(&path, &patch).await.ok()
    })
    .await
    .expect("scaled");
}

/// Ready pods of the Deployment and ready endpoints of its Service.
async fn counts(client: &Client) -> Option<(usize, usize)> {
    let pods = client
        .request_json(
            Method::GET,
            "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb",
            None,
        )
        .await
        .ok()?;
    let ready = pods["items"]
        .as_array()?
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| {
            let conditions = p["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .count();
    let slices = client
        .request_json(
            Method::GET,
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dweb",
            None,
        )
        .await
        .ok()?;
    let endpoints = slices["items"]
        .as_array()?
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .filter(|e| e["conditions"]["ready"] == json!(true))
        .count();
    Some((ready, endpoints))
}

/// `GET http://127.0.0.1:PORT/`: the pod name that answered.
async fn through_node_port(port: u16) -> Option<String> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .ok()?;
    let response = http
        .get(format!("http://127.0.0.1:{port}/"))
        .send()
        .await
        .ok()?;
    response.text().await.ok()
}

/// What the cluster looks like, for a failure message.
async fn diagnose(client: &Client, node_port: u16) -> String {
    let pods = client
        .request_json(Method::GET, "/api/v1/namespaces/default/pods", None)
        .await
        .unwrap_or_default();
    let lines: Vec<String> = pods["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|p| {
            let deleting = !p["metadata"]["deletionTimestamp"].is_null();
            format!(
                "{} {} node={} deleting={deleting} conditions={}",
                p["metadata"]["name"],
                p["status"]["phase"],
                p["spec"]["nodeName"],
                p["status"]["conditions"]
            )
        })
        .collect();
    let answer = through_node_port(node_port).await;
    let counts = counts(client).await;
    format!(
        "counts {counts:?}, node port {answer:?}\n{}",
        lines.join("\n")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_component_killed_comes_back_and_reconciles_a_change_made_meanwhile() {
    let up = Up::start(1).await;
    let client = up.client();
    client
        .request_json(Method::POST, DEPLOYMENTS, Some(&deployment()))
        .await
        .expect("create the deployment");
    let service = client
        .request_json(
            Method::POST,
            "/api/v1/namespaces/default/services",
            Some(&node_port_service()),
        )
        .await
        .expect("create the service");
    let node_port = service["spec"]["ports"][0]["nodePort"]
        .as_u64()
        .expect("a node port") as u16;
    eventually(
        "2 ready pods behind the node port",
        RECONCILED_WITHIN,
        || async {
            let answered = through_node_port(node_port).await?;
            (counts(&client).await == Some((2, 2)) && answered.starts_with("web-")).then_some(())
        },
    )
    .await
    .expect("the deployment serves");

    let components = [
        "kubelet-node-1",
        "scheduler",
        "controller-manager",
        "endpoint-controller",
        "proxy",
        "apiserver",
    ];
    for (round, component) in components.into_iter().enumerate() {
        let replicas = if round % 2 == 0 { 3 } else { 2 };
        let old = up.pid_of(component);
        let started = Instant::now();
        kill(Pid::from_raw(old as i32), Signal::SIGKILL).expect("kill -9");
        scale(&client, replicas).await;
        let reached = eventually(
            &format!("{component} back, {replicas} pods serving"),
            RECONCILED_WITHIN,
            || async {
                let pid = up.pid_of(component);
                let back = pid != old && procs::is_alive(pid);
                let serving = through_node_port(node_port)
                    .await
                    .is_some_and(|a| a.starts_with("web-"));
                let want = replicas as usize;
                (back && serving && counts(&client).await == Some((want, want))).then_some(())
            },
        )
        .await;
        if reached.is_err() {
            panic!(
                "{component}: not reconciled:\n{}",
                diagnose(&client, node_port).await
            );
        }
        eprintln!(
            "{component}: back and {replicas} pods serving after {:?}",
            started.elapsed()
        );
    }
    up.down().await;
}
