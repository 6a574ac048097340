//! Mirroring tests in the endpoints controller's style: fill the stores, call
//! `sync_endpoints("default/web")`, assert on what a fake writer recorded.

use std::sync::{Arc, Mutex};

use minik_api::core::{EndpointPort as CorePort, EndpointSubset};

use super::*;
use crate::testing::{filled, service};

/// One recorded write.
#[derive(Clone, Debug, PartialEq)]
enum Write {
    Create(EndpointSlice),
    Replace(EndpointSlice),
    Delete(String),
}

#[derive(Clone, Default)]
struct FakeWrites(Arc<Mutex<Vec<Write>>>);

impl FakeWrites {
    fn writes(&self) -> Vec<Write> {
        self.0.lock().unwrap().clone()
    }
}

impl SliceWrites for FakeWrites {
    async fn create_slice(&self, slice: &EndpointSlice) -> minik_client::Result<EndpointSlice> {
        self.0.lock().unwrap().push(Write::Create(slice.clone()));
        Ok(slice.clone())
    }

    async fn replace_slice(&self, slice: &EndpointSlice) -> minik_client::Result<EndpointSlice> {
        self.0.lock().unwrap().push(Write::Replace(slice.clone()));
        Ok(slice.clone())
    }

    async fn delete_slice(&self, namespace: &str, name: &str) -> minik_client::Result<()> {
        let key = format!("{namespace}/{name}");
        self.0.lock().unwrap().push(Write::Delete(key));
        Ok(())
    }

    async fn slice_event(&self, _: &Service, _: &str, _: &str) -> minik_client::Result<()> {
        unreachable!("the mirroring controller records no Events")
    }
}

fn address(ip: &str, pod: &str) -> EndpointAddress {
    EndpointAddress {
        ip: ip.into(),
        node_name: Some("node-1".into()),
        target_ref: Some(minik_api::core::ObjectReference {
            kind: Some("Pod".into()),
            name: Some(pod.into()),
            namespace: Some("default".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The Endpoints `default/web`: `ready` and `not_ready` addresses on port 8080 named http.
fn web_endpoints(ready: &[&str], not_ready: &[&str]) -> Endpoints {
    let addresses = |ips: &[&str]| {
        let list: Vec<EndpointAddress> = ips.iter().map(|ip| address(ip, "web-1")).collect();
        (!list.is_empty()).then_some(list)
    };
    Endpoints {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            labels: Some([("tier".to_string(), "frontend".to_string())].into()),
            ..ObjectMeta::default()
        },
        subsets: Some(vec![EndpointSubset {
            addresses: addresses(ready),
            not_ready_addresses: addresses(not_ready),
            ports: Some(vec![CorePort {
                name: Some("http".into()),
                port: 8080,
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
        }]),
    }
}

/// A controller whose `web` Service has no selector (so its Endpoints are mirrored).
fn controller(
    endpoints: Vec<Endpoints>,
    slices: Vec<EndpointSlice>,
) -> (MirroringController<FakeWrites>, FakeWrites) {
    let web = service("web").selector(None).build();
    controller_with(vec![web], endpoints, slices)
}

fn controller_with(
    services: Vec<Service>,
    endpoints: Vec<Endpoints>,
    slices: Vec<EndpointSlice>,
) -> (MirroringController<FakeWrites>, FakeWrites) {
    let writes = FakeWrites::default();
    let controller = MirroringController::new(
        filled(endpoints),
        filled(services),
        filled(slices),
        writes.clone(),
    );
    (controller, writes)
}

fn web_key() -> ObjectKey {
    ObjectKey::new("default", "web")
}

#[test]
fn a_slice_says_what_its_endpoints_say_with_readiness_as_conditions() {
    let slice = mirror(&web_endpoints(&["127.244.1.2"], &["127.244.1.3"]));
    assert_eq!(slice.metadata.name.as_deref(), Some("web"));
    let labels = slice.metadata.labels.clone().unwrap();
    assert_eq!(
        (
            labels[SERVICE_NAME_LABEL].as_str(),
            labels[MANAGED_BY_LABEL].as_str(),
            labels["tier"].as_str()
        ),
        ("web", MANAGED_BY, "frontend")
    );
    assert_eq!(slice.address_type, "IPv4");
    let seen: Vec<(&str, Option<bool>)> = slice
        .endpoints
        .iter()
        .map(|e| {
            (
                e.addresses[0].as_str(),
                e.conditions.as_ref().and_then(|c| c.ready),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("127.244.1.2", Some(true)), ("127.244.1.3", Some(false))]
    );
    assert_eq!(slice.endpoints[0].node_name.as_deref(), Some("node-1"));
    let port = &slice.ports.as_ref().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.port),
        (Some("http"), Some(8080))
    );

    // An unnamed port is named "", as upstream writes it: kubectl's describe dereferences it.
    let mut unnamed = web_endpoints(&["127.244.1.2"], &[]);
    unnamed.subsets.as_mut().unwrap()[0].ports.as_mut().unwrap()[0].name = None;
    assert_eq!(mirror(&unnamed).ports.unwrap()[0].name.as_deref(), Some(""));
}

#[tokio::test]
async fn a_missing_slice_is_created_and_a_current_one_left_alone() {
    let endpoints = web_endpoints(&["127.244.1.2"], &[]);
    let (ctl, writes) = controller(vec![endpoints.clone()], vec![]);
    ctl.sync_endpoints(&web_key()).await.unwrap();
    assert_eq!(writes.writes(), [Write::Create(mirror(&endpoints))]);

    let mut stored = mirror(&endpoints);
    stored.metadata.resource_version = Some("9".into());
    let (ctl, writes) = controller(vec![endpoints], vec![stored]);
    ctl.sync_endpoints(&web_key()).await.unwrap();
    assert_eq!(writes.writes(), []);
}

#[tokio::test]
async fn a_changed_endpoints_replaces_the_slice_under_its_resource_version() {
    let mut stored = mirror(&web_endpoints(&["127.244.1.2"], &[]));
    stored.metadata.resource_version = Some("9".into());
    let now = web_endpoints(&["127.244.1.2", "127.244.1.4"], &[]);
    let (ctl, writes) = controller(vec![now.clone()], vec![stored]);
    ctl.sync_endpoints(&web_key()).await.unwrap();
    let mut wanted = mirror(&now);
    wanted.metadata.resource_version = Some("9".into());
    assert_eq!(writes.writes(), [Write::Replace(wanted)]);
}

#[tokio::test]
async fn the_slice_goes_with_its_endpoints() {
    let stored = mirror(&web_endpoints(&["127.244.1.2"], &[]));
    let (ctl, writes) = controller(vec![], vec![stored]);
    ctl.sync_endpoints(&web_key()).await.unwrap();
    assert_eq!(writes.writes(), [Write::Delete("default/web".into())]);
    let (ctl, writes) = controller(vec![], vec![]);
    ctl.sync_endpoints(&web_key()).await.unwrap();
    assert_eq!(writes.writes(), []);
}

#[tokio::test]
async fn endpoints_of_a_service_with_a_selector_are_not_mirrored() {
    let endpoints = web_endpoints(&["127.244.1.2"], &[]);
    let with_selector = service("web").build();
    let (ctl, writes) =
        controller_with(vec![with_selector.clone()], vec![endpoints.clone()], vec![]);
    ctl.sync_endpoints(&web_key()).await.unwrap();
    assert_eq!(
        writes.writes(),
        [],
        "the EndpointSlice controller computes those"
    );

    // A slice mirrored before the Service gained its selector goes; no Service, no mirror either.
    let old = mirror(&endpoints);
    let (ctl, writes) = controller_with(
        vec![with_selector],
        vec![endpoints.clone()],
        vec![old.clone()],
    );
    ctl.sync_endpoints(&web_key()).await.unwrap();
    assert_eq!(writes.writes(), [Write::Delete("default/web".into())]);
    let (ctl, writes) = controller_with(vec![], vec![endpoints], vec![old]);
    ctl.sync_endpoints(&web_key()).await.unwrap();
    assert_eq!(writes.writes(), [Write::Delete("default/web".into())]);
}

#[test]
fn only_mirrored_slices_are_queued() {
    let mirrored = mirror(&web_endpoints(&["127.244.1.2"], &[]));
    let mut computed = mirrored.clone();
    computed.metadata.name = Some("web-x7k2p".into());
    computed.metadata.labels = Some(
        [(
            MANAGED_BY_LABEL.to_string(),
            "endpointslice-controller.k8s.io".to_string(),
        )]
        .into(),
    );
    let keys = slice_events_keys(&Event::Restarted(vec![mirrored, computed.clone()]));
    assert_eq!(keys, BTreeSet::from([web_key()]));
    assert!(slice_events_keys(&Event::Deleted(computed)).is_empty());
}
