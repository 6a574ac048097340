//! Pod worker tests: a real worker on the fake runtime, a fake sandbox and a recording reporter
//! (no API server). Timing tests run on tokio's paused clock.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    ExecAction, Lifecycle, LifecycleHandler, Pod, PodStatus, Probe, SleepAction,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::cri::fake::{Behavior, FakeRuntime, OnTerm};
use crate::cri::{ContainerConfig, ContainerState, Runtime, StopSignal};
use crate::plan::BackoffPolicy;
use crate::pod_worker::{PodUpdate, PodWorker, WorkerContext};
use crate::reporter::RecordingReporter;
use crate::sandbox::FakeSandbox;
use crate::testing::{pod, pod_with_init};

/// One worker under test and everything it talks to.
struct Harness {
    runtime: FakeRuntime,
    reporter: Arc<RecordingReporter>,
    sandbox: Arc<FakeSandbox>,
    updates: watch::Sender<PodUpdate>,
    token: CancellationToken,
    worker: tokio::task::JoinHandle<()>,
    /// The kubelet's root dir (the containers' logs), removed with the harness.
    _root: tempfile::TempDir,
}

impl Harness {
    fn start(pod: Pod, runtime: FakeRuntime) -> Self {
        let reporter = Arc::new(RecordingReporter::default());
        let sandbox = Arc::new(FakeSandbox::default());
        let root = tempfile::tempdir().expect("a temp dir");
        let ctx = Arc::new(WorkerContext {
            runtime: Arc::new(runtime.clone()),
            reporter: reporter.clone(),
            sandbox: sandbox.clone(),
            node_name: "node-1".into(),
            host_ip: "127.0.0.1".into(),
            root_dir: root.path().to_path_buf(),
            minik_binary: "/usr/bin/minik".into(),
            api_host: "127.0.0.1".into(),
            api_port: "6443".into(),
            backoff: BackoffPolicy {
                base: Duration::from_millis(200),
                max: Duration::from_secs(1),
            },
            tracker: TaskTracker::new(),
            sources: Arc::new(crate::sources::StaticLookup::default()),
            source_changes: watch::channel(0).1,
            allocatable: Default::default(),
        });
        let (updates, receiver) = watch::channel(PodUpdate::Present(Arc::new(pod)));
        let token = CancellationToken::new();
        let worker = tokio::spawn(PodWorker::new(ctx, receiver, token.clone()).run());
        Harness {
            runtime,
            reporter,
            sandbox,
            updates,
            token,
            worker,
            _root: root,
        }
    }

    /// Waits (bounded) until `check` holds on the reporter.
    async fn until(&self, what: &str, check: impl Fn(&RecordingReporter) -> bool) {
        let wait = async {
            loop {
                let notified = self.reporter.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if check(&self.reporter) {
                    return;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(Duration::from_secs(60), wait)
            .await
            .is_err()
        {
            panic!(
                "timed out waiting for {what}; events: {:?}",
                self.reporter.reasons()
            );
        }
    }

    fn delete(&self, grace: i64) {
        let mut pod = (**self.updates.borrow().pod()).clone();
        pod.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
        pod.metadata.deletion_grace_period_seconds = Some(grace);
        let _ = self.updates.send(PodUpdate::Present(Arc::new(pod)));
    }
}

fn phase(status: &PodStatus) -> &str {
    status.phase.as_deref().unwrap_or_default()
}

fn first_container(status: &PodStatus) -> k8s_openapi::api::core::v1::ContainerStatus {
    status
        .container_statuses
        .clone()
        .unwrap_or_default()
        .into_iter()
        .next()
        .expect("a container status")
}

fn is_running(reporter: &RecordingReporter) -> bool {
    reporter
        .last_status()
        .is_some_and(|s| phase(&s) == "Running" && first_container(&s).ready)
}

#[tokio::test(start_paused = true)]
async fn new_pod_gets_an_ip_starts_its_container_and_reports_running() {
    let h = Harness::start(pod(&["web"], "Always"), FakeRuntime::new());
    h.until("running", is_running).await;
    let status = h.reporter.last_status().expect("status");
    assert_eq!(status.pod_ip.as_deref(), Some("127.244.1.2"));
    assert_eq!(h.reporter.reasons()[..3], ["Pulled", "Created", "Started"]);
    let started = h.runtime.starts();
    assert_eq!(started.len(), 1);
    let env = &started[0].env;
    assert_eq!(env.get("POD_IP").map(String::as_str), Some("127.244.1.2"));
    assert_eq!(env.get("NODE_NAME").map(String::as_str), Some("node-1"));
    assert_eq!(started[0].argv, ["/usr/bin/minik", "image", "web"]);
    h.token.cancel();
    h.worker.await.expect("worker ends");
}

#[tokio::test(start_paused = true)]
async fn graceful_delete_stops_the_container_writes_final_status_and_deletes_the_pod() {
    let runtime = FakeRuntime::new();
    runtime.set_behavior(
        "web",
        Behavior {
            on_term: OnTerm::Exit {
                after: Duration::from_secs(1),
                exit_code: 0,
            },
            ..Default::default()
        },
    );
    let h = Harness::start(pod(&["web"], "Always"), runtime);
    h.until("running", is_running).await;
    h.delete(10);
    h.worker.await.expect("worker finishes after termination");
    assert_eq!(h.reporter.deleted.lock().expect("lock").clone(), ["uid-1"]);
    let last = h.reporter.last_status().expect("final status");
    assert_eq!(phase(&last), "Succeeded", "exit 0 after SIGTERM");
    let terminated = first_container(&last)
        .state
        .and_then(|s| s.terminated)
        .expect("terminated");
    assert_eq!(
        (terminated.exit_code, terminated.reason.as_deref()),
        (0, Some("Completed"))
    );
    assert!(h.sandbox.released().contains("uid-1"), "IP released");
    assert!(h.runtime.list_containers().is_empty(), "containers removed");
    let reasons = h.reporter.reasons();
    let killing = reasons
        .iter()
        .position(|r| r == "Killing")
        .expect("Killing");
    assert!(reasons[killing..].contains(&"Exited".to_string()));
}

#[tokio::test(start_paused = true)]
async fn force_deleted_pod_is_stopped_with_one_second_and_not_deleted_again() {
    let runtime = FakeRuntime::new();
    runtime.set_behavior(
        "web",
        Behavior {
            on_term: OnTerm::Ignore,
            ..Default::default()
        },
    );
    let h = Harness::start(pod(&["web"], "Always"), runtime);
    h.until("running", is_running).await;
    let gone = h.updates.borrow().pod().clone();
    let start = tokio::time::Instant::now();
    let _ = h.updates.send(PodUpdate::Removed(gone));
    h.worker.await.expect("worker ends");
    let signals = h.runtime.signals_for("web");
    assert_eq!(
        signals.iter().map(|s| s.signal).collect::<Vec<_>>(),
        [StopSignal::Term, StopSignal::Kill]
    );
    assert_eq!(
        signals[1].at - start,
        Duration::from_secs(2),
        "KILL 2 s after TERM (grace floored to 1)"
    );
    assert!(
        h.reporter.deleted.lock().expect("lock").is_empty(),
        "the object is already gone"
    );
    assert!(h.sandbox.released().contains("uid-1"));
}

#[tokio::test(start_paused = true)]
async fn container_is_reported_running_only_after_post_start() {
    let mut p = pod(&["web"], "Always");
    let hook = LifecycleHandler {
        sleep: Some(SleepAction { seconds: 3 }),
        ..Default::default()
    };
    p.spec.as_mut().expect("spec").containers[0].lifecycle = Some(Lifecycle {
        post_start: Some(hook),
        ..Default::default()
    });
    let h = Harness::start(p, FakeRuntime::new());
    h.until("postStart started", |r| {
        r.find("PostStartHookStarted").is_some()
    })
    .await;
    let early = h
        .reporter
        .last_status()
        .expect("status before the hook ends");
    let waiting = first_container(&early)
        .state
        .and_then(|s| s.waiting)
        .expect("waiting while postStart runs");
    assert_eq!(waiting.reason.as_deref(), Some("ContainerCreating"));
    h.until("running", is_running).await;
    let started = h.reporter.find("Started").expect("Started").at;
    let done = h
        .reporter
        .find("PostStartHookCompleted")
        .expect("hook completed")
        .at;
    assert_eq!(done - started, Duration::from_secs(3));
    h.token.cancel();
}

#[tokio::test]
async fn crashing_container_restarts_with_crash_loop_back_off() {
    let runtime = FakeRuntime::new();
    runtime.set_behavior(
        "web",
        Behavior {
            exit_after: Some((Duration::from_millis(10), 1)),
            ..Default::default()
        },
    );
    let h = Harness::start(pod(&["web"], "Always"), runtime);
    h.until("CrashLoopBackOff", |r| {
        r.last_status().is_some_and(|s| {
            let waiting = first_container(&s).state.and_then(|s| s.waiting);
            waiting.and_then(|w| w.reason).as_deref() == Some("CrashLoopBackOff")
        })
    })
    .await;
    let status = h.reporter.last_status().expect("status");
    let container = first_container(&status);
    assert!(container.restart_count >= 1);
    assert_eq!(phase(&status), "Running", "CrashLoopBackOff is not a phase");
    let message = container
        .state
        .and_then(|s| s.waiting)
        .and_then(|w| w.message)
        .expect("message");
    assert!(
        message
            .starts_with("back-off 200ms restarting failed container=web pod=web_default(uid-1)")
            || message.starts_with("back-off "),
        "{message}"
    );
    assert!(h.reporter.reasons().contains(&"BackOff".to_string()));
    h.until("third start", |_| h.runtime.starts().len() >= 3)
        .await;
    h.token.cancel();
}

#[tokio::test(start_paused = true)]
async fn never_pod_ends_with_its_exit_code_and_is_not_restarted() {
    let runtime = FakeRuntime::new();
    runtime.set_behavior(
        "web",
        Behavior {
            exit_after: Some((Duration::from_secs(1), 3)),
            ..Default::default()
        },
    );
    let h = Harness::start(pod(&["web"], "Never"), runtime);
    h.until("Failed", |r| {
        r.last_status().is_some_and(|s| phase(&s) == "Failed")
    })
    .await;
    let status = h.reporter.last_status().expect("status");
    let terminated = first_container(&status)
        .state
        .and_then(|s| s.terminated)
        .expect("terminated");
    assert_eq!(terminated.exit_code, 3);
    assert_eq!(h.runtime.starts().len(), 1);
    h.token.cancel();
}

#[tokio::test(start_paused = true)]
async fn init_containers_run_in_order_before_the_app() {
    let runtime = FakeRuntime::new();
    for name in ["first", "second"] {
        runtime.set_behavior(
            name,
            Behavior {
                exit_after: Some((Duration::from_secs(1), 0)),
                ..Default::default()
            },
        );
    }
    let h = Harness::start(
        pod_with_init(&["first", "second"], &["web"], "Always"),
        runtime,
    );
    h.until("running", is_running).await;
    let order: Vec<String> = h.runtime.starts().into_iter().map(|c| c.name).collect();
    assert_eq!(order, ["first", "second", "web"]);
    let status = h.reporter.last_status().expect("status");
    assert_eq!(status.init_container_statuses.map(|s| s.len()), Some(2));
    h.token.cancel();
}

#[tokio::test(start_paused = true)]
async fn liveness_failure_kills_and_restarts_the_container() {
    let runtime = FakeRuntime::new();
    let failing = crate::cri::ExecResult {
        exit_code: 1,
        output: "unhealthy".into(),
    };
    runtime.set_behavior(
        "web",
        Behavior {
            exec_result: failing,
            ..Default::default()
        },
    );
    let mut p = pod(&["web"], "Always");
    let probe = Probe {
        exec: Some(ExecAction {
            command: Some(vec!["check".into()]),
        }),
        period_seconds: Some(1),
        failure_threshold: Some(2),
        ..Default::default()
    };
    p.spec.as_mut().expect("spec").containers[0].liveness_probe = Some(probe);
    let h = Harness::start(p, runtime);
    h.until("restart", |_| h.runtime.starts().len() >= 2).await;
    let reasons = h.reporter.reasons();
    assert!(reasons.contains(&"Unhealthy".to_string()));
    let killing = h.reporter.find("Killing").expect("Killing");
    assert_eq!(
        killing.message,
        "Container web failed liveness probe, will be restarted"
    );
    h.token.cancel();
}

#[tokio::test(start_paused = true)]
async fn restarted_kubelet_adopts_running_containers_without_starting_them_again() {
    let runtime = FakeRuntime::new();
    let config = ContainerConfig {
        pod_uid: "uid-1".into(),
        pod_key: "default/web".into(),
        name: "web".into(),
        ..Default::default()
    };
    let existing = runtime
        .start_container(config)
        .await
        .expect("started by the previous kubelet");
    let h = Harness::start(pod(&["web"], "Always"), runtime);
    h.until("running", is_running).await;
    assert_eq!(h.runtime.starts().len(), 1, "nothing started twice");
    assert!(matches!(
        h.runtime.container_status(&existing.id).map(|c| c.state),
        Some(ContainerState::Running { .. })
    ));
    assert!(h.runtime.signals().is_empty(), "nothing killed");
    h.token.cancel();
}

#[tokio::test]
async fn unknown_image_waits_with_err_image_pull_and_a_failed_event() {
    let mut p = pod(&["db"], "Always");
    p.spec.as_mut().expect("spec").containers[0].image = Some("postgres".into());
    let h = Harness::start(p, FakeRuntime::new());
    h.until("ErrImagePull", |r| {
        r.last_status().is_some_and(|s| {
            first_container(&s)
                .state
                .and_then(|s| s.waiting)
                .and_then(|w| w.reason)
                .as_deref()
                == Some("ErrImagePull")
        })
    })
    .await;
    let failed = h.reporter.find("Failed").expect("Failed event");
    assert!(
        failed.message.contains("minik runs no container images"),
        "{}",
        failed.message
    );
    h.until("ImagePullBackOff", |r| {
        r.last_status().is_some_and(|s| {
            first_container(&s)
                .state
                .and_then(|s| s.waiting)
                .and_then(|w| w.reason)
                .as_deref()
                == Some("ImagePullBackOff")
        })
    })
    .await;
    assert!(h.runtime.starts().is_empty());
    h.token.cancel();
}
