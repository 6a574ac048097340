//! Tests of the scheduling loop in Kubernetes' controller style: feed watch events, call
//! `schedule_one`, let the spawned writes finish, and assert on what a fake writer recorded.

use std::collections::VecDeque;
use std::sync::Mutex;

use futures::channel::mpsc as stream_channel;

use super::*;
use crate::testing::{node, pod};

/// Records every write; binds fail with the queued errors first.
#[derive(Clone, Default)]
struct FakeWrites {
    log: Arc<Mutex<Vec<String>>>,
    bind_errors: Arc<Mutex<VecDeque<minik_client::Error>>>,
    /// Each bind is also announced here (the `run` test waits on it).
    bound: Option<mpsc::UnboundedSender<String>>,
}

impl FakeWrites {
    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    fn record(&self, line: String) {
        self.log.lock().unwrap().push(line);
    }
}

impl SchedulerWrites for FakeWrites {
    async fn bind(&self, pod: &Pod, node: &str) -> minik_client::Result<()> {
        if let Some(error) = self.bind_errors.lock().unwrap().pop_front() {
            return Err(error);
        }
        let line = format!("bind {} {node}", ObjectKey::of(&pod.metadata));
        if let Some(bound) = &self.bound {
            let _ = bound.send(line.clone());
        }
        self.record(line);
        Ok(())
    }

    async fn set_unschedulable(&self, pod: &Pod, message: &str) -> minik_client::Result<()> {
        self.record(format!(
            "condition {} {message}",
            ObjectKey::of(&pod.metadata)
        ));
        Ok(())
    }

    async fn event(
        &self,
        _pod: &Pod,
        type_: &str,
        reason: &str,
        message: &str,
    ) -> minik_client::Result<()> {
        self.record(format!("event {type_} {reason} {message}"));
        Ok(())
    }
}

fn scheduler(writes: &FakeWrites, nodes: Vec<Node>) -> Scheduler<FakeWrites> {
    let mut scheduler = Scheduler::new(Config::default(), writes.clone());
    scheduler.handle_node_event(Event::Restarted(nodes));
    scheduler.handle_pod_event(Event::Restarted(vec![]));
    scheduler
}

impl Scheduler<FakeWrites> {
    /// Waits for every spawned write, then feeds the bind results back, as the loop would.
    async fn settle(&mut self) {
        self.tasks.close();
        self.tasks.wait().await;
        self.tasks.reopen();
        while let Ok(result) = self.results_rx.try_recv() {
            self.handle_bind_result(result);
        }
    }

    async fn schedule_all(&mut self) {
        while self.queue.has_active() {
            self.schedule_one();
        }
        self.settle().await;
    }
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("default", name)
}

#[tokio::test]
async fn pending_pod_is_bound_and_a_scheduled_event_recorded() {
    let writes = FakeWrites::default();
    let mut scheduler = scheduler(&writes, vec![node("node-1").build()]);
    scheduler.handle_pod_event(Event::Applied(pod("web").build()));
    scheduler.schedule_all().await;
    assert_eq!(
        writes.log(),
        [
            "bind default/web node-1",
            "event Normal Scheduled Successfully assigned default/web to node-1"
        ]
    );
}

#[tokio::test]
async fn assumed_pods_count_before_the_watch_confirms_them() {
    let writes = FakeWrites::default();
    let nodes = vec![
        node("node-1").cpu("1").build(),
        node("node-2").cpu("1").build(),
    ];
    let mut scheduler = scheduler(&writes, nodes);
    for name in ["a", "b"] {
        scheduler.handle_pod_event(Event::Applied(pod(name).cpu("600m").build()));
    }
    scheduler.schedule_all().await;
    let binds: Vec<_> = writes
        .log()
        .into_iter()
        .filter(|l| l.starts_with("bind"))
        .collect();
    assert_eq!(binds, ["bind default/a node-1", "bind default/b node-2"]);
}

#[tokio::test]
async fn pods_not_ours_are_ignored() {
    let writes = FakeWrites::default();
    let mut scheduler = scheduler(&writes, vec![node("node-1").build()]);
    let mut other = pod("other").build();
    other.spec.as_mut().unwrap().scheduler_name = Some("my-scheduler".into());
    let mut deleting = pod("deleting").build();
    deleting.metadata.deletion_timestamp = Some(minik_api::now());
    for p in [other, deleting, pod("bound").node_name("node-1").build()] {
        scheduler.handle_pod_event(Event::Applied(p));
    }
    assert!(scheduler.queue().is_empty());
}

#[tokio::test]
async fn unschedulable_pod_gets_condition_and_event_then_waits_for_a_node() {
    let writes = FakeWrites::default();
    let mut scheduler = scheduler(&writes, vec![node("node-1").cpu("1").build()]);
    scheduler.handle_pod_event(Event::Applied(pod("big").cpu("2").build()));
    scheduler.schedule_all().await;
    let message = "0/1 nodes are available: 1 Insufficient cpu.";
    assert_eq!(
        writes.log(),
        [
            format!("condition default/big {message}"),
            format!("event Warning FailedScheduling {message}")
        ]
    );
    assert_eq!(
        scheduler.queue().state(&key("big")),
        Some(crate::queue::PodQueueState::Unschedulable)
    );
    // A heartbeat (same properties) does not retry it …
    scheduler.handle_node_event(Event::Applied(node("node-1").cpu("1").build()));
    assert!(!scheduler.queue.has_active());
    // … a node with room does.
    scheduler.handle_node_event(Event::Applied(node("node-2").cpu("4").build()));
    scheduler.schedule_all().await;
    assert!(writes
        .log()
        .contains(&"bind default/big node-2".to_string()));
}

#[tokio::test]
async fn deleted_pod_frees_room_for_a_parked_pod() {
    let writes = FakeWrites::default();
    let mut scheduler = scheduler(&writes, vec![node("node-1").cpu("1").build()]);
    scheduler.handle_pod_event(Event::Applied(
        pod("old").cpu("1").node_name("node-1").build(),
    ));
    scheduler.handle_pod_event(Event::Applied(pod("new").cpu("1").build()));
    scheduler.schedule_all().await;
    assert_eq!(
        scheduler.queue().state(&key("new")),
        Some(crate::queue::PodQueueState::Unschedulable)
    );
    scheduler.handle_pod_event(Event::Deleted(
        pod("old").cpu("1").node_name("node-1").build(),
    ));
    scheduler.schedule_all().await;
    assert!(writes
        .log()
        .contains(&"bind default/new node-1".to_string()));
}

#[tokio::test]
async fn bind_conflict_drops_the_pod_and_forgets_the_assumption() {
    let writes = FakeWrites::default();
    let conflict = minik_api::status::conflict("pods", "web", "already bound");
    writes
        .bind_errors
        .lock()
        .unwrap()
        .push_back(minik_client::Error::Api(conflict));
    let mut scheduler = scheduler(&writes, vec![node("node-1").cpu("1").build()]);
    scheduler.handle_pod_event(Event::Applied(pod("web").cpu("1").build()));
    scheduler.schedule_all().await;
    assert!(scheduler.queue().is_empty());
    assert_eq!(
        scheduler
            .cache()
            .node("node-1")
            .unwrap()
            .requested
            .milli_cpu,
        0
    );
}

#[tokio::test]
async fn bind_error_retries_after_backoff() {
    let writes = FakeWrites::default();
    let unavailable = minik_api::status::failure(503, "ServiceUnavailable", "try later");
    writes
        .bind_errors
        .lock()
        .unwrap()
        .push_back(minik_client::Error::Api(unavailable));
    let mut scheduler = scheduler(&writes, vec![node("node-1").build()]);
    scheduler.handle_pod_event(Event::Applied(pod("web").build()));
    scheduler.schedule_all().await;
    assert_eq!(
        scheduler.queue().state(&key("web")),
        Some(crate::queue::PodQueueState::Backoff)
    );
    let deadline = scheduler.queue.next_backoff().unwrap();
    scheduler.queue.flush_backoff(deadline);
    scheduler.schedule_all().await;
    assert!(writes
        .log()
        .contains(&"bind default/web node-1".to_string()));
}

#[test]
fn heartbeats_are_not_scheduling_changes_but_taints_are() {
    let mut beat = node("n").build();
    beat.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_heartbeat_time =
        Some(minik_api::now());
    assert!(!scheduling_properties_changed(&node("n").build(), &beat));
    assert!(scheduling_properties_changed(
        &node("n").build(),
        &node("n").taint("k", "v", "NoSchedule").build()
    ));
    assert!(scheduling_properties_changed(
        &node("n").build(),
        &node("n").ready("False").build()
    ));
}

#[tokio::test]
async fn run_waits_for_both_lists_then_binds_from_the_watch() {
    let (bound_tx, mut bound_rx) = mpsc::unbounded_channel();
    let writes = FakeWrites {
        bound: Some(bound_tx),
        ..FakeWrites::default()
    };
    let (pods_tx, pods_rx) = stream_channel::unbounded();
    let (nodes_tx, nodes_rx) = stream_channel::unbounded();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(Scheduler::new(Config::default(), writes.clone()).run(
        pods_rx,
        nodes_rx,
        shutdown.clone(),
    ));
    pods_tx
        .unbounded_send(Ok(Event::Restarted(vec![pod("web").build()])))
        .unwrap();
    let wait = tokio::time::timeout(Duration::from_millis(200), bound_rx.recv()).await;
    assert!(wait.is_err(), "no decision before the node list arrived");
    nodes_tx
        .unbounded_send(Ok(Event::Restarted(vec![node("node-1").build()])))
        .unwrap();
    let bound = tokio::time::timeout(Duration::from_secs(5), bound_rx.recv())
        .await
        .unwrap();
    assert_eq!(bound.as_deref(), Some("bind default/web node-1"));
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
}

/// Scheduling throughput of the decision loop alone (no HTTP): 5 000 pods onto 1 000 nodes.
/// Run with `cargo test -p minik-scheduler --release -- --ignored --nocapture throughput`.
#[tokio::test]
#[ignore]
async fn throughput_of_decisions() {
    let writes = FakeWrites::default();
    let nodes: Vec<_> = (0..1000)
        .map(|i| node(&format!("node-{i}")).build())
        .collect();
    let mut scheduler = scheduler(&writes, nodes);
    for i in 0..5000 {
        scheduler.handle_pod_event(Event::Applied(pod(&format!("p{i}")).cpu("10m").build()));
    }
    let start = std::time::Instant::now();
    while scheduler.queue.has_active() {
        scheduler.schedule_one();
        scheduler.binds_in_flight = 0;
    }
    let elapsed = start.elapsed();
    println!(
        "5000 decisions over 1000 nodes in {elapsed:?}: {:.0} pods/s",
        5000.0 / elapsed.as_secs_f64()
    );
    scheduler.settle().await;
}
