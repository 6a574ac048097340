//! Controller sync tests in the style of upstream's `endpoints_controller_test.go`: fill the informer
//! stores, call `sync_service("default/web")`, assert on the writes a fake writer recorded.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc as stream_channel;
use minik_client::Event;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::testing::{filled, pod, service};

/// One recorded write.
#[derive(Clone, Debug, PartialEq)]
enum Write {
    Create(Endpoints),
    Replace(Endpoints),
    Delete(String),
    Event(String, String),
}

#[derive(Clone, Default)]
struct FakeWrites {
    writes: Arc<Mutex<Vec<Write>>>,
    /// Every write is also announced here (the `run_controller` test waits on it).
    announce: Option<mpsc::UnboundedSender<Write>>,
    /// Deletes answer 404, as for a Service that never had Endpoints.
    delete_not_found: bool,
}

impl FakeWrites {
    fn record(&self, write: Write) {
        if let Some(announce) = &self.announce {
            let _ = announce.send(write.clone());
        }
        self.writes.lock().unwrap().push(write);
    }

    fn writes(&self) -> Vec<Write> {
        self.writes.lock().unwrap().clone()
    }
}

impl EndpointsWrites for FakeWrites {
    async fn create(&self, endpoints: &Endpoints) -> minik_client::Result<Endpoints> {
        self.record(Write::Create(endpoints.clone()));
        Ok(endpoints.clone())
    }

    async fn replace(&self, endpoints: &Endpoints) -> minik_client::Result<Endpoints> {
        self.record(Write::Replace(endpoints.clone()));
        Ok(endpoints.clone())
    }

    async fn delete(&self, namespace: &str, name: &str) -> minik_client::Result<()> {
        if self.delete_not_found {
            return Err(minik_client::Error::Api(minik_api::status::not_found(
                "endpoints",
                name,
            )));
        }
        self.record(Write::Delete(format!("{namespace}/{name}")));
        Ok(())
    }

    async fn event(
        &self,
        _service: &Service,
        reason: &str,
        message: &str,
    ) -> minik_client::Result<()> {
        self.record(Write::Event(reason.to_string(), message.to_string()));
        Ok(())
    }
}

fn controller(
    services: Vec<Service>,
    pods: Vec<Pod>,
    endpoints: Vec<Endpoints>,
    writes: FakeWrites,
) -> EndpointsController<FakeWrites> {
    EndpointsController::new(filled(services), filled(pods), filled(endpoints), writes)
}

fn web_key() -> ObjectKey {
    ObjectKey::new("default", "web")
}

/// The Endpoints the controller would write for `pods`, stored with resourceVersion 7.
fn stored_endpoints(pods: &[Pod]) -> Endpoints {
    let svc = service("web").build();
    let subsets = compute(&svc, pods).unwrap();
    let mut endpoints = desired_endpoints(&svc, subsets, None, jiff::Timestamp::UNIX_EPOCH);
    endpoints.metadata.resource_version = Some("7".into());
    endpoints
}

#[tokio::test]
async fn sync_creates_endpoints_with_the_services_labels_and_trigger_time() {
    let writes = FakeWrites::default();
    let pods = vec![pod("web-1", "web", "127.244.1.2").build()];
    let ctl = controller(vec![service("web").build()], pods, vec![], writes.clone());
    ctl.sync_service(&web_key()).await.unwrap();
    let recorded = writes.writes();
    let Write::Create(created) = &recorded[0] else {
        panic!("expected a create, got {recorded:?}")
    };
    assert_eq!(created.metadata.name.as_deref(), Some("web"));
    assert_eq!(
        created.metadata.labels.as_ref().unwrap()["tier"],
        "frontend"
    );
    assert!(created
        .metadata
        .annotations
        .as_ref()
        .unwrap()
        .contains_key(LAST_CHANGE_TRIGGER_TIME));
    assert_eq!(
        created.subsets.as_ref().unwrap()[0]
            .addresses
            .as_ref()
            .unwrap()[0]
            .ip,
        "127.244.1.2"
    );
    assert_eq!(
        recorded[1],
        Write::Event(
            REASON_ADDED.into(),
            "Pod web-1 (127.244.1.2) added to the Endpoints".into()
        )
    );
}

#[tokio::test]
async fn sync_writes_nothing_when_the_endpoints_are_current() {
    let writes = FakeWrites::default();
    let pods = vec![
        pod("web-1", "web", "127.244.1.2").build(),
        pod("web-2", "web", "127.244.1.3").not_ready().build(),
    ];
    let current = stored_endpoints(&pods);
    let ctl = controller(
        vec![service("web").build()],
        pods,
        vec![current],
        writes.clone(),
    );
    ctl.sync_service(&web_key()).await.unwrap();
    assert_eq!(writes.writes(), []);
}

#[tokio::test]
async fn terminating_pod_is_removed_with_an_update_carrying_the_resource_version() {
    let writes = FakeWrites::default();
    let before = vec![
        pod("web-1", "web", "127.244.1.2").build(),
        pod("web-2", "web", "127.244.1.3").build(),
    ];
    let current = stored_endpoints(&before);
    let now = vec![
        pod("web-1", "web", "127.244.1.2").deleting().build(),
        pod("web-2", "web", "127.244.1.3").build(),
    ];
    let ctl = controller(
        vec![service("web").build()],
        now,
        vec![current],
        writes.clone(),
    );
    ctl.sync_service(&web_key()).await.unwrap();
    let recorded = writes.writes();
    let Write::Replace(replaced) = &recorded[0] else {
        panic!("expected a replace, got {recorded:?}")
    };
    assert_eq!(replaced.metadata.resource_version.as_deref(), Some("7"));
    let ips: Vec<_> = replaced.subsets.as_ref().unwrap()[0]
        .addresses
        .iter()
        .flatten()
        .map(|a| a.ip.as_str())
        .collect();
    assert_eq!(ips, ["127.244.1.3"]);
    assert_eq!(
        recorded[1],
        Write::Event(
            REASON_REMOVED.into(),
            "Pod web-1 (127.244.1.2) removed from the Endpoints".into()
        )
    );
    assert_eq!(recorded.len(), 2);
}

#[tokio::test]
async fn last_pod_leaving_empties_the_subsets() {
    let writes = FakeWrites::default();
    let current = stored_endpoints(&[pod("web-1", "web", "127.244.1.2").build()]);
    let ctl = controller(
        vec![service("web").build()],
        vec![],
        vec![current],
        writes.clone(),
    );
    ctl.sync_service(&web_key()).await.unwrap();
    let Write::Replace(replaced) = &writes.writes()[0] else {
        panic!("expected a replace")
    };
    assert_eq!(replaced.subsets, None);
}

#[tokio::test]
async fn deleted_service_has_its_endpoints_deleted_and_not_found_is_fine() {
    let writes = FakeWrites::default();
    let current = stored_endpoints(&[]);
    let ctl = controller(vec![], vec![], vec![current], writes.clone());
    ctl.sync_service(&web_key()).await.unwrap();
    assert_eq!(writes.writes(), [Write::Delete("default/web".into())]);

    let already_gone = FakeWrites {
        delete_not_found: true,
        ..FakeWrites::default()
    };
    let ctl = controller(vec![], vec![], vec![], already_gone.clone());
    ctl.sync_service(&web_key()).await.unwrap();
    assert_eq!(already_gone.writes(), []);
}

#[tokio::test]
async fn service_without_selector_keeps_its_hand_written_endpoints() {
    let writes = FakeWrites::default();
    let svc = service("web").selector(None).build();
    let hand_written = stored_endpoints(&[pod("x", "web", "127.244.0.99").build()]);
    let ctl = controller(
        vec![svc],
        vec![pod("web-1", "web", "127.244.1.2").build()],
        vec![hand_written],
        writes.clone(),
    );
    ctl.sync_service(&web_key()).await.unwrap();
    assert_eq!(writes.writes(), []);
}

#[test]
fn changed_labels_alone_need_an_update_and_headless_services_are_marked() {
    let current = stored_endpoints(&[]);
    let mut relabelled = service("web").build();
    relabelled.metadata.labels = Some([("tier".to_string(), "backend".to_string())].into());
    let now = jiff::Timestamp::now();
    assert!(needs_update(
        &current,
        &desired_endpoints(&relabelled, vec![], Some(&current), now)
    ));
    assert!(!needs_update(
        &current,
        &desired_endpoints(&service("web").build(), vec![], Some(&current), now)
    ));
    let headless = service("web").headless_without_ports().build();
    assert_eq!(desired_labels(&headless).unwrap()[HEADLESS_LABEL], "");
}

#[test]
fn over_capacity_endpoints_are_truncated_and_annotated_then_stable() {
    let pods: Vec<Pod> = (0..1100)
        .map(|i| {
            pod(
                &format!("p{i}"),
                "web",
                &format!("127.244.{}.{}", i / 250, i % 250 + 1),
            )
            .build()
        })
        .collect();
    let svc = service("web").build();
    let wanted = desired_endpoints(
        &svc,
        compute(&svc, &pods).unwrap(),
        None,
        jiff::Timestamp::now(),
    );
    assert_eq!(counts(wanted.subsets.as_deref().unwrap()), (1000, 0));
    assert_eq!(
        wanted.metadata.annotations.as_ref().unwrap()[OVER_CAPACITY],
        "truncated"
    );
    let again = desired_endpoints(
        &svc,
        compute(&svc, &pods).unwrap(),
        Some(&wanted),
        jiff::Timestamp::now(),
    );
    assert!(
        !needs_update(&wanted, &again),
        "a truncated object is not rewritten on every sync"
    );
    let fewer = desired_endpoints(
        &svc,
        compute(&svc, &pods[..10]).unwrap(),
        Some(&wanted),
        jiff::Timestamp::now(),
    );
    assert!(fewer
        .metadata
        .annotations
        .as_ref()
        .unwrap()
        .get(OVER_CAPACITY)
        .is_none());
}

#[test]
fn trigger_time_is_rfc3339_with_nanoseconds_and_no_trailing_zeros() {
    let time: jiff::Timestamp = "2026-11-22T02:30:00.123456789Z".parse().unwrap();
    assert_eq!(rfc3339_nano(time), "2026-11-22T02:30:00.123456789Z");
    let round: jiff::Timestamp = "2026-11-22T02:30:00.5Z".parse().unwrap();
    assert_eq!(rfc3339_nano(round), "2026-11-22T02:30:00.5Z");
}

/// The next announced write, failing the test after 5 s.
async fn next(announced: &mut mpsc::UnboundedReceiver<Write>) -> Write {
    tokio::time::timeout(Duration::from_secs(5), announced.recv())
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn run_controller_follows_pods_from_the_watch_streams() {
    let (announce, mut announced) = mpsc::unbounded_channel();
    let writes = FakeWrites {
        announce: Some(announce),
        ..FakeWrites::default()
    };
    let (pods_tx, pods_rx) = stream_channel::unbounded();
    let (services_tx, services_rx) = stream_channel::unbounded();
    let (endpoints_tx, endpoints_rx) = stream_channel::unbounded();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(crate::workers::run_controller(
        writes,
        pods_rx,
        services_rx,
        endpoints_rx,
        2,
        shutdown.clone(),
    ));
    let ready_pod = pod("web-1", "web", "127.244.1.2").build();
    services_tx
        .unbounded_send(Ok(Event::Restarted(vec![
            service("web").build(),
            service("db").build(),
        ])))
        .unwrap();
    pods_tx
        .unbounded_send(Ok(Event::Restarted(vec![
            ready_pod.clone(),
            pod("db-1", "db", "127.244.1.9").build(),
        ])))
        .unwrap();
    endpoints_tx
        .unbounded_send(Ok(Event::Restarted(vec![stored_endpoints(&[ready_pod])])))
        .unwrap();
    // "db" has no Endpoints yet: it is created; "web" is current: no write.
    let Write::Create(created) = next(&mut announced).await else {
        panic!("expected a create")
    };
    assert_eq!(created.metadata.name.as_deref(), Some("db"));
    assert!(
        matches!(next(&mut announced).await, Write::Event(reason, _) if reason == REASON_ADDED)
    );
    // The pod starts terminating: it leaves web's Endpoints at once.
    pods_tx
        .unbounded_send(Ok(Event::Applied(
            pod("web-1", "web", "127.244.1.2").deleting().build(),
        )))
        .unwrap();
    let Write::Replace(replaced) = next(&mut announced).await else {
        panic!("expected a replace")
    };
    assert_eq!(
        (replaced.metadata.name.as_deref(), replaced.subsets),
        (Some("web"), None)
    );
    assert_eq!(
        next(&mut announced).await,
        Write::Event(
            REASON_REMOVED.into(),
            "Pod web-1 (127.244.1.2) removed from the Endpoints".into()
        )
    );
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
}
