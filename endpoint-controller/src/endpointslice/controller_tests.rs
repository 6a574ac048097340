//! `sync_service` tests in the style of upstream's `endpointslice_controller_test.go`: fill the
//! stores, sync `default/web`, assert on what a fake writer recorded.

use std::sync::{Arc, Mutex};

use super::*;
use crate::testing::{filled, pod, service};

/// One recorded write.
#[derive(Clone, Debug, PartialEq)]
enum Write {
    Create(EndpointSlice),
    Replace(EndpointSlice),
    Delete(String),
    Event(String, String),
}

/// Records writes; a create is answered as the apiserver would: named and versioned.
#[derive(Clone, Default)]
struct FakeWrites(Arc<Mutex<Vec<Write>>>);

impl FakeWrites {
    fn writes(&self) -> Vec<Write> {
        self.0.lock().unwrap().clone()
    }

    fn push(&self, write: Write) -> usize {
        let mut writes = self.0.lock().unwrap();
        writes.push(write);
        writes.len()
    }
}

impl SliceWrites for FakeWrites {
    async fn create_slice(&self, slice: &EndpointSlice) -> minik_client::Result<EndpointSlice> {
        let count = self.push(Write::Create(slice.clone()));
        let mut created = slice.clone();
        created.metadata.name = Some(format!("web-{count}"));
        created.metadata.resource_version = Some(count.to_string());
        Ok(created)
    }

    async fn replace_slice(&self, slice: &EndpointSlice) -> minik_client::Result<EndpointSlice> {
        let count = self.push(Write::Replace(slice.clone()));
        let mut replaced = slice.clone();
        replaced.metadata.resource_version = Some((100 + count).to_string());
        Ok(replaced)
    }

    async fn delete_slice(&self, namespace: &str, name: &str) -> minik_client::Result<()> {
        self.push(Write::Delete(format!("{namespace}/{name}")));
        Ok(())
    }

    async fn slice_event(
        &self,
        _service: &Service,
        reason: &str,
        message: &str,
    ) -> minik_client::Result<()> {
        self.push(Write::Event(reason.into(), message.into()));
        Ok(())
    }
}

fn controller(
    services: Vec<Service>,
    pods: Vec<Pod>,
    slices: Vec<EndpointSlice>,
) -> (EndpointSliceController<FakeWrites>, FakeWrites) {
    let writes = FakeWrites::default();
    let controller = EndpointSliceController::new(
        filled(services),
        filled(pods),
        filled(slices),
        writes.clone(),
        100,
    );
    (controller, writes)
}

fn web() -> ObjectKey {
    ObjectKey::new("default", "web")
}

/// The slice the controller would have stored for these pods (named `web-abc`, version 5).
fn stored_slice(pods: &[Pod]) -> EndpointSlice {
    let svc = service("web").build();
    let desired = desired_endpoints(&svc, pods).unwrap();
    let mut plan = reconcile(&svc, desired, vec![], 100, jiff::Timestamp::now());
    let mut slice = plan.create.remove(0);
    slice.metadata.name = Some("web-abc".into());
    slice.metadata.namespace = Some("default".into());
    slice.metadata.resource_version = Some("5".into());
    slice
}

#[tokio::test]
async fn a_new_service_gets_a_slice_and_a_ready_event_per_pod() {
    let pods = vec![pod("web-1", "web", "127.244.1.2").build()];
    let (ctl, writes) = controller(vec![service("web").build()], pods, vec![]);
    ctl.sync_service(&web()).await.unwrap();
    let writes = writes.writes();
    assert!(matches!(&writes[0], Write::Create(s) if s.endpoints.len() == 1));
    assert_eq!(
        writes[1],
        Write::Event(
            REASON_READY.into(),
            "Pod web-1 (127.244.1.2) ready in the EndpointSlices".into()
        )
    );
}

#[tokio::test]
async fn a_sync_before_the_store_saw_our_create_retries_instead_of_creating_twice() {
    let pods = vec![pod("web-1", "web", "127.244.1.2").build()];
    let (ctl, writes) = controller(vec![service("web").build()], pods, vec![]);
    ctl.sync_service(&web()).await.unwrap();
    let again = ctl.sync_service(&web()).await;
    assert!(matches!(again, Err(SyncError::StaleSlices(_))), "{again:?}");
    let creates = writes
        .writes()
        .iter()
        .filter(|w| matches!(w, Write::Create(_)))
        .count();
    assert_eq!(creates, 1);
}

#[tokio::test]
async fn a_terminating_pod_is_updated_in_place_and_announced_not_ready() {
    let ready = pod("web-1", "web", "127.244.1.2").build();
    let slice = stored_slice(std::slice::from_ref(&ready));
    let terminating = pod("web-1", "web", "127.244.1.2").deleting().build();
    let (ctl, writes) = controller(vec![service("web").build()], vec![terminating], vec![slice]);
    ctl.sync_service(&web()).await.unwrap();
    let writes = writes.writes();
    let Write::Replace(updated) = &writes[0] else {
        panic!("expected a replace, got {writes:?}")
    };
    assert_eq!(updated.metadata.name.as_deref(), Some("web-abc"));
    assert_eq!(updated.metadata.resource_version.as_deref(), Some("5"));
    let conditions = updated.endpoints[0].conditions.clone().unwrap();
    assert_eq!(
        (conditions.ready, conditions.serving, conditions.terminating),
        (Some(false), Some(true), Some(true))
    );
    assert_eq!(
        writes[1],
        Write::Event(
            REASON_NOT_READY.into(),
            "Pod web-1 (127.244.1.2) no longer ready in the EndpointSlices".into()
        )
    );
}

#[tokio::test]
async fn a_deleted_service_takes_its_slices_and_other_managers_slices_are_left_alone() {
    let slice = stored_slice(&[pod("web-1", "web", "127.244.1.2").build()]);
    let mut foreign = slice.clone();
    foreign.metadata.name = Some("web".into());
    foreign.metadata.labels = Some(
        [
            (SERVICE_NAME_LABEL.to_string(), "web".to_string()),
            (MANAGED_BY_LABEL.to_string(), "someone-else".to_string()),
        ]
        .into(),
    );
    let (ctl, writes) = controller(vec![], vec![], vec![slice, foreign]);
    ctl.sync_service(&web()).await.unwrap();
    assert_eq!(writes.writes(), [Write::Delete("default/web-abc".into())]);
}

#[tokio::test]
async fn a_service_without_selector_is_not_managed() {
    let svc = service("web").selector(None).build();
    let (ctl, writes) = controller(
        vec![svc],
        vec![pod("web-1", "web", "127.244.1.2").build()],
        vec![],
    );
    ctl.sync_service(&web()).await.unwrap();
    assert_eq!(writes.writes(), []);
}
