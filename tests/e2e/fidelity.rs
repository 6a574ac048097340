//! Issue 19's remaining upstream differences, each reproduced on real processes: readiness probed
//! while a pod terminates, `initialDelaySeconds` from the container's start, `activeDeadlineSeconds`,
//! `readinessGates`, a shim stopped without its kubelet, and `minik up` stopping with a dead kubelet.

use std::time::{Duration, Instant};

use minik_api::core::{Event, Pod};
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_client::{Api, DeleteParams, ListParams, Patch};
use minik_tests::fixtures::{pod, service};
use minik_tests::procs;
use minik_tests::up::Up;
use minik_tests::wait::{eventually, pod as p, wait_for, wait_for_all};
use minik_tests::Cluster;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::json;

use crate::support::{one_node, run_pod, stop_clean, RUNNING};

/// The reasons of the Events about the pod `name`.
async fn event_reasons(cluster: &Cluster, name: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(cluster.client(), "default");
    let list = events.list(&ListParams::default()).await.expect("events");
    list.items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .filter_map(|e| e.reason)
        .collect()
}

fn condition_message<'a>(pod: &'a Pod, type_: &str) -> Option<&'a str> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    let condition = conditions.iter().find(|c| c.type_ == type_)?;
    condition.message.as_deref()
}

/// The container is running (its process has not exited yet).
fn container_running(pod: &Pod) -> bool {
    p::container(pod).is_some_and(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
}

/// The pod's app stops passing readiness when its preStop starts: the kubelet keeps probing during
/// termination, so Ready turns False while the container still runs and the EndpointSlice says
/// `serving: false, terminating: true` (before the fix, probes stopped at the delete and Ready
/// stayed True until the containers had exited).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readiness_is_probed_while_the_pod_terminates() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder().start().await.expect("cluster");
    let dir = tempfile::tempdir().expect("tempdir");
    let ready_file = dir.path().join("ready");
    std::fs::write(&ready_file, "").expect("ready file");
    let ready_file = ready_file.display().to_string();
    cluster
        .services()
        .create(&service("gone").build())
        .await
        .expect("service");
    let probe = json!({"exec": {"command": ["test", "-f", ready_file]}, "periodSeconds": 1, "failureThreshold": 1});
    let stop_serving = format!("rm -f {ready_file}; sleep 8");
    let fixture = pod("gone-0")
        .label("app", "gone")
        .port(8080)
        .grace(15)
        .container_field("readinessProbe", probe)
        .pre_stop_exec(&["sh", "-c", &stop_serving]);
    cluster
        .pods()
        .create(&fixture.build())
        .await
        .expect("create");
    let running = wait_for(&cluster.pods(), "gone-0", p::is_ready, RUNNING)
        .await
        .expect("Ready");
    let ip = p::ip(&running).expect("IP").to_string();
    let deleted = Instant::now();
    cluster
        .pods()
        .delete("gone-0", &DeleteParams::default())
        .await
        .expect("delete");
    let unready_while_running = |pod: &Pod| {
        pod.metadata.deletion_timestamp.is_some()
            && p::condition(pod, "Ready") == Some("False")
            && container_running(pod)
    };
    wait_for(
        &cluster.pods(),
        "gone-0",
        unready_while_running,
        Duration::from_secs(6),
    )
    .await
    .expect("Ready False while the container still runs its preStop");
    let after = deleted.elapsed().as_secs_f64();
    eprintln!("terminating pod reported unready {after:.2}s after the delete");
    let slices: Api<EndpointSlice> = Api::namespaced(cluster.client(), "default");
    let lp = ListParams::default().labels("kubernetes.io/service-name=gone");
    let not_serving = |all: &[EndpointSlice]| {
        all.iter().flat_map(|s| &s.endpoints).any(|e| {
            let c = e.conditions.clone().unwrap_or_default();
            e.addresses.contains(&ip) && c.serving == Some(false) && c.terminating == Some(true)
        })
    };
    wait_for_all(&slices, lp, not_serving, Duration::from_secs(5))
        .await
        .expect("serving: false, terminating: true in the slice");
    stop_clean(cluster).await;
}

/// postStart takes 4 s and the readiness probe's initialDelaySeconds is 4: upstream counts the
/// delay from the container's start, so the first probe goes as soon as postStart has finished
/// (before the fix: 4 s later).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn initial_delay_counts_from_the_container_start() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    let probe =
        json!({"exec": {"command": ["true"]}, "initialDelaySeconds": 4, "periodSeconds": 1});
    let fixture = pod("delayed")
        .post_start_sleep(Duration::from_secs(4))
        .container_field("readinessProbe", probe);
    run_pod(&cluster, &fixture.build()).await;
    let running = Instant::now();
    wait_for(
        &cluster.pods(),
        "delayed",
        p::is_ready,
        Duration::from_secs(10),
    )
    .await
    .expect("Ready");
    let gap = running.elapsed().as_secs_f64();
    eprintln!("Ready {gap:.2}s after Running (postStart 4s, initialDelaySeconds 4)");
    assert!(
        gap < 2.5,
        "the first probe waited for the delay again: {gap:.2}s"
    );
    stop_clean(cluster).await;
}

/// `activeDeadlineSeconds: 2`: the kubelet fails the pod with upstream's reason and message, kills
/// its container, records a `DeadlineExceeded` event, and leaves the object (phase Failed).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn active_deadline_fails_the_pod_and_kills_its_containers() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    let mut fixture = pod("deadline").port(8080).grace(1).to_json();
    fixture["spec"]["activeDeadlineSeconds"] = json!(2);
    let fixture: Pod = serde_json::from_value(fixture).expect("pod");
    run_pod(&cluster, &fixture).await;
    let failed = |pod: &Pod| p::phase(pod) == "Failed";
    let pod = wait_for(&cluster.pods(), "deadline", failed, Duration::from_secs(15))
        .await
        .expect("Failed");
    let status = pod.status.clone().expect("status");
    assert_eq!(status.reason.as_deref(), Some("DeadlineExceeded"));
    assert_eq!(
        status.message.as_deref(),
        Some("Pod was active on the node longer than the specified deadline")
    );
    let start = status.start_time.expect("startTime").0;
    let finished = p::container(&pod)
        .and_then(|c| c.state.clone()?.terminated?.finished_at)
        .expect("the container terminated")
        .0;
    let took = finished.duration_since(start).as_secs_f64();
    eprintln!("activeDeadlineSeconds 2: container ended {took:.2}s after startTime");
    assert!((2.0..6.0).contains(&took), "{took:.2}s");
    assert!(event_reasons(&cluster, "deadline")
        .await
        .iter()
        .any(|r| r == "DeadlineExceeded"));
    assert!(
        cluster.pod_processes("deadline").is_empty(),
        "the container was killed"
    );
    assert_eq!(p::condition(&pod, "Ready"), Some("False"));
    stop_clean(cluster).await;
}

/// A readiness gate holds Ready back until another writer sets its condition True, with
/// upstream's reason and messages; the kubelet keeps that condition when it writes its status.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readiness_gates_hold_ready_until_their_condition_is_true() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    let mut fixture = pod("gated").to_json();
    fixture["spec"]["readinessGates"] = json!([{"conditionType": "example.com/lb"}]);
    let fixture: Pod = serde_json::from_value(fixture).expect("pod");
    cluster.pods().create(&fixture).await.expect("create");
    let containers_ready = |pod: &Pod| p::condition(pod, "ContainersReady") == Some("True");
    let pod = wait_for(&cluster.pods(), "gated", containers_ready, RUNNING)
        .await
        .expect("containers ready");
    assert_eq!(p::condition(&pod, "Ready"), Some("False"));
    assert_eq!(
        p::condition_reason(&pod, "Ready"),
        Some("ReadinessGatesNotReady")
    );
    assert_eq!(
        condition_message(&pod, "Ready"),
        Some("corresponding condition of pod readiness gate \"example.com/lb\" does not exist.")
    );
    let set_gate = |status: &str| {
        Patch::Strategic(
            json!({"status": {"conditions": [{"type": "example.com/lb", "status": status}]}}),
        )
    };
    let pods = cluster.pods();
    pods.patch_status("gated", &set_gate("False"))
        .await
        .expect("gate False");
    let message = "the status of pod readiness gate \"example.com/lb\" is not \"True\", but False";
    let says_false = |pod: &Pod| condition_message(pod, "Ready") == Some(message);
    wait_for(&pods, "gated", says_false, Duration::from_secs(10))
        .await
        .expect("Ready names the False gate");
    pods.patch_status("gated", &set_gate("True"))
        .await
        .expect("gate True");
    let pod = wait_for(&pods, "gated", p::is_ready, Duration::from_secs(10))
        .await
        .expect("Ready once the gate is True");
    assert_eq!(
        p::condition(&pod, "example.com/lb"),
        Some("True"),
        "the gate is kept"
    );
    stop_clean(cluster).await;
}

/// The kubelet is killed with -9, then the container's shim gets SIGTERM: the shim stops its
/// container (SIGTERM, which the web image exits on) and ends, leaving nothing running.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shim_told_to_stop_stops_its_container_without_its_kubelet() {
    let _machine = crate::support::shared().await;
    let mut cluster = Cluster::builder()
        .processes(true)
        .without_services()
        .start()
        .await
        .expect("cluster");
    run_pod(&cluster, &pod("shimmed").port(8080).build()).await;
    let container = cluster.pod_processes("shimmed").pop().expect("container");
    let shim = container.ppid;
    cluster
        .kill("kubelet-node-1", Signal::SIGKILL)
        .await
        .expect("kill the kubelet");
    kill(Pid::from_raw(shim as i32), Signal::SIGTERM).expect("SIGTERM the shim");
    let stopped = Instant::now();
    eventually(
        "the container and its shim to end",
        Duration::from_secs(8),
        || async { (!procs::is_alive(container.pid) && !procs::is_alive(shim)).then_some(()) },
    )
    .await
    .expect("the shim stopped its container");
    eprintln!(
        "shim stopped its container in {:.2}s",
        stopped.elapsed().as_secs_f64()
    );
    cluster.restart("kubelet-node-1").await.expect("restart");
    stop_clean(cluster).await;
}

/// `minik up` with a kubelet killed with -9 and a pod that ignores SIGTERM (grace 30 s): the stop
/// force deletes the pods nobody would finish and takes seconds, not the grace period + 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn up_stops_within_seconds_when_a_kubelet_is_dead() {
    let _machine = crate::support::shared().await;
    let up = Up::start(1).await;
    let fixture = pod("stuck")
        .port(8080)
        .grace(30)
        .on_sigterm("ignore")
        .build();
    up.pods().create(&fixture).await.expect("create");
    wait_for(&up.pods(), "stuck", p::is_running, RUNNING)
        .await
        .expect("Running");
    let kubelet = up.pid_of("kubelet-node-1");
    kill(Pid::from_raw(kubelet as i32), Signal::SIGKILL).expect("kill the kubelet");
    eventually("the kubelet to die", Duration::from_secs(5), || async {
        (!procs::is_alive(kubelet)).then_some(())
    })
    .await
    .expect("kubelet dead");
    let started = Instant::now();
    up.down().await;
    let took = started.elapsed().as_secs_f64();
    eprintln!("minik down with a dead kubelet took {took:.1}s");
    assert!(
        took < 12.0,
        "stopping waited for the grace period: {took:.1}s"
    );
}
