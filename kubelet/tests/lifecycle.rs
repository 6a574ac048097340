//! End to end through a real apiserver: a pod bound by hand to an in-process kubelet reaches
//! Running with its own IP, answers HTTP with its name, and is deleted gracefully (the kubelet
//! stops its process, writes the final status and removes the object).
//!
//! The kubelet runs real processes: its `minik_binary` is this package's `minik-kubelet`
//! executable, which also serves as `shim` and as the built-in `web` image.

mod cluster;

use k8s_openapi::api::core::v1::{
    EnvVar, Event as CoreEvent, Lifecycle, LifecycleHandler, Pod, SleepAction,
};
use minik_client::{Api, Client, DeleteParams, ListParams, LogParams};
use tokio_util::sync::CancellationToken;

use cluster::{is_running, kubelet_config, pod_event_reasons, start_apiserver, wait_for, web_pod};

/// A pod bound by hand reaches Running, serves HTTP on its IP, and a graceful delete ends with
/// the object removed by the kubelet after the process stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bound_pod_runs_serves_and_is_deleted_gracefully() {
    let dir = cluster::TestDir::new();
    let shutdown = CancellationToken::new();
    let (server, apiserver) = start_apiserver(&shutdown).await;

    let config = kubelet_config(&server, dir.path(), "node-e2e", "127.244.213.0/24");
    let kubelet_token = shutdown.child_token();
    let kubelet = tokio::spawn(minik_kubelet::run(config, kubelet_token.clone()));

    let client = Client::new(&server).expect("client");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = pods
        .create(&web_pod("web", 18_080))
        .await
        .expect("create pod");
    let uid = created.metadata.uid.clone().expect("uid");
    let binding = std::time::Instant::now();
    pods.bind("web", "node-e2e").await.expect("bind");

    let running = wait_for(&pods, "web", false, is_running)
        .await
        .expect("pod running");
    eprintln!("bind to Ready took {:?}", binding.elapsed());
    let status = running.status.expect("status");
    let ip = status.pod_ip.expect("pod ip");
    assert!(ip.starts_with("127.244.213."), "{ip}");
    let answer = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("http")
        .get(format!("http://{ip}:18080/"))
        .send()
        .await
        .expect("pod answers")
        .text()
        .await
        .expect("body");
    assert!(answer.contains("web"), "{answer}");
    let logs = pods
        .logs("web", &LogParams::default())
        .await
        .expect("logs through the apiserver");
    assert!(logs.contains("event=started"), "{logs}");

    let deleting = std::time::Instant::now();
    pods.delete("web", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(wait_for(&pods, "web", true, |_| false).await.is_none());
    eprintln!("graceful delete took {:?}", deleting.elapsed());
    assert!(
        pods.get_opt("web").await.expect("get").is_none(),
        "the kubelet removed the object"
    );

    let events: Api<CoreEvent> = Api::namespaced(client, "default");
    let list = events.list(&ListParams::default()).await.expect("events");
    let reasons: Vec<String> = list
        .items
        .iter()
        .filter(|e| e.involved_object.uid.as_deref() == Some(uid.as_str()))
        .filter_map(|e| e.reason.clone())
        .collect();
    for reason in ["Pulled", "Created", "Started", "Killing", "Exited"] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "missing {reason} in {reasons:?}"
        );
    }

    for e in list
        .items
        .iter()
        .filter(|e| e.involved_object.uid.as_deref() == Some(uid.as_str()))
    {
        eprintln!(
            "{:?} {:?} {:?}",
            e.event_time.as_ref().map(|t| t.0),
            e.reason,
            e.message
        );
    }
    assert!(
        !reasons.iter().any(|r| r == "Killed"),
        "the web image exits on SIGTERM: {reasons:?}"
    );

    kubelet_token.cancel();
    kubelet.await.expect("kubelet task").expect("kubelet ran");
    shutdown.cancel();
    let _ = apiserver.await;
}

/// A kubelet that stops and starts again adopts the running container: same container id, no
/// second start, and the pod is still stopped gracefully (SIGTERM, exit 0) by the new kubelet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_kubelet_adopts_its_running_pod() {
    let dir = cluster::TestDir::new();
    let shutdown = CancellationToken::new();
    let (server, apiserver) = start_apiserver(&shutdown).await;
    let client = Client::new(&server).expect("client");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");

    let first_token = shutdown.child_token();
    let config = kubelet_config(&server, dir.path(), "node-restart", "127.244.214.0/24");
    let first = tokio::spawn(minik_kubelet::run(config.clone(), first_token.clone()));
    let created = pods
        .create(&web_pod("adopted", 18_081))
        .await
        .expect("create pod");
    let uid = created.metadata.uid.clone().expect("uid");
    pods.bind("adopted", "node-restart").await.expect("bind");
    let before = wait_for(&pods, "adopted", false, is_running)
        .await
        .expect("running");
    let container_id = |pod: &Pod| {
        pod.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .map(|c| c[0].container_id.clone())
    };

    first_token.cancel();
    first
        .await
        .expect("first kubelet task")
        .expect("first kubelet ran");
    let second_token = shutdown.child_token();
    let second = tokio::spawn(minik_kubelet::run(config, second_token.clone()));

    pods.delete("adopted", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(wait_for(&pods, "adopted", true, |_| false).await.is_none());
    let reasons = pod_event_reasons(&client, &uid).await;
    let starts = reasons.iter().filter(|(r, _)| r == "Started").count();
    assert_eq!(starts, 1, "nothing started twice: {reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|(r, m)| r == "Exited" && m.ends_with("code 0")),
        "the adopted process got SIGTERM and exited cleanly: {reasons:?}"
    );
    assert!(container_id(&before).flatten().is_some());

    second_token.cancel();
    second
        .await
        .expect("second kubelet task")
        .expect("second kubelet ran");
    shutdown.cancel();
    let _ = apiserver.await;
}

/// Seed 001 ("What Happens When Deleting a Pod"), scenario 2 on real processes: a preStop (2 s)
/// longer than the grace (1 s) is cut at the deadline, SIGTERM follows, and an app that ignores
/// SIGTERM is SIGKILLed 2 s later. The timeline is read back from the Events' `eventTime`, as the
/// demo does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prestop_longer_than_grace_gets_sigterm_at_the_deadline_and_sigkill_two_seconds_later() {
    let dir = cluster::TestDir::new();
    let shutdown = CancellationToken::new();
    let (server, apiserver) = start_apiserver(&shutdown).await;
    let client = Client::new(&server).expect("client");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let config = kubelet_config(&server, dir.path(), "node-grace", "127.244.215.0/24");
    let token = shutdown.child_token();
    let kubelet = tokio::spawn(minik_kubelet::run(config, token.clone()));

    let mut pod = web_pod("slow", 18_082);
    let spec = pod.spec.as_mut().expect("spec");
    spec.termination_grace_period_seconds = Some(1);
    let container = &mut spec.containers[0];
    container.image = Some("minik/sleep".into());
    container.readiness_probe = None;
    container.env = Some(vec![EnvVar {
        name: "MINIK_ON_SIGTERM".into(),
        value: Some("ignore".into()),
        ..Default::default()
    }]);
    let pre_stop = LifecycleHandler {
        sleep: Some(SleepAction { seconds: 2 }),
        ..Default::default()
    };
    container.lifecycle = Some(Lifecycle {
        pre_stop: Some(pre_stop),
        ..Default::default()
    });
    let uid = pods
        .create(&pod)
        .await
        .expect("create")
        .metadata
        .uid
        .expect("uid");
    pods.bind("slow", "node-grace").await.expect("bind");
    wait_for(&pods, "slow", false, is_running)
        .await
        .expect("running");

    pods.delete("slow", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(wait_for(&pods, "slow", true, |_| false).await.is_none());

    let events: Api<CoreEvent> = Api::namespaced(client, "default");
    let list = events.list(&ListParams::default()).await.expect("events");
    let at = |reason: &str| {
        list.items
            .iter()
            .filter(|e| e.involved_object.uid.as_deref() == Some(uid.as_str()))
            .find(|e| e.reason.as_deref() == Some(reason))
            .and_then(|e| e.event_time.as_ref().map(|t| t.0))
            .unwrap_or_else(|| panic!("no {reason} event"))
    };
    let start = at("PreStopHookStarted");
    let offset = |reason: &str| at(reason).duration_since(start).as_secs_f64();
    let (term, kill) = (offset("Killing"), offset("Killed"));
    eprintln!("preStop cut + SIGTERM at {term:.3}s, SIGKILL at {kill:.3}s");
    assert!(
        (term - 1.0).abs() < 0.3,
        "SIGTERM at the 1 s deadline, got {term:.3}"
    );
    assert!(
        (kill - 3.0).abs() < 0.3,
        "SIGKILL 2 s after SIGTERM, got {kill:.3}"
    );
    let exited = list
        .items
        .iter()
        .find(|e| {
            e.reason.as_deref() == Some("Exited")
                && e.involved_object.uid.as_deref() == Some(uid.as_str())
        })
        .and_then(|e| e.message.clone());
    assert_eq!(
        exited.as_deref(),
        Some("Container web exited with code 137")
    );

    token.cancel();
    kubelet.await.expect("kubelet task").expect("kubelet ran");
    shutdown.cancel();
    let _ = apiserver.await;
}
