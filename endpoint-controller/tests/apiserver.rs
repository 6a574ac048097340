//! The endpoint controller against a real minik apiserver (in memory, on 127.0.0.1:0): a Service's
//! Endpoints follow its pods as they become ready, start terminating, and as the Service goes.

use std::time::Duration;

use futures::StreamExt;
use minik_api::core::{
    Container, ContainerPort, Endpoints, Event as CoreEvent, Pod, PodSpec, Service, ServicePort,
    ServiceSpec,
};
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use minik_api::meta::ObjectMeta;
use minik_client::{watcher, Api, Client, DeleteParams, ListParams, Object, Patch};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const PATIENCE: Duration = Duration::from_secs(20);

/// An apiserver and the controller, stopped when dropped.
struct Cluster {
    client: Client,
    shutdown: CancellationToken,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn start() -> Cluster {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    tokio::spawn(minik_apiserver::serve(
        listener,
        minik_apiserver::StorageBackend::memory(100_000),
        shutdown.child_token(),
    ));
    let config = minik_endpoint_controller::Config {
        server: url.clone(),
        ..Default::default()
    };
    tokio::spawn(minik_endpoint_controller::run(
        config,
        shutdown.child_token(),
    ));
    Cluster {
        client: Client::new(&url).unwrap(),
        shutdown,
    }
}

fn service() -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some("web".into()),
            labels: Some([("app".into(), "web".into())].into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            selector: Some([("app".into(), "web".into())].into()),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: 80,
                target_port: Some(IntOrString::String("http".into())),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    }
}

/// Creates a pod, binds it to node-1 and reports it Running and Ready at `ip`, as a kubelet would.
async fn running_pod(pods: &Api<Pod>, name: &str, ip: &str) {
    let container = Container {
        name: "web".into(),
        image: Some("minik/web".into()),
        ports: Some(vec![ContainerPort {
            name: Some("http".into()),
            container_port: 8080,
            ..Default::default()
        }]),
        ..Default::default()
    };
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("app".into(), "web".into())].into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![container],
            ..Default::default()
        }),
        status: None,
    };
    pods.create(&pod).await.unwrap();
    pods.bind(name, "node-1").await.unwrap();
    let status = json!({ "status": {
        "phase": "Running", "podIP": ip, "podIPs": [{ "ip": ip }],
        "conditions": [{ "type": "Ready", "status": "True" }]
    }});
    pods.patch_status(name, &Patch::Merge(status))
        .await
        .unwrap();
}

/// Waits (on a watch, with a timeout) until `condition` holds for the listed objects.
async fn wait_until<K: Object + minik_api::k8s_openapi::ListableResource>(
    api: &Api<K>,
    condition: impl FnMut(&[K]) -> bool,
) -> Vec<K> {
    let found = minik_client::wait::await_all(api, ListParams::default(), condition);
    tokio::time::timeout(PATIENCE, found)
        .await
        .expect("condition not reached in time")
        .expect("watch ended")
}

fn ready_ips(endpoints: &Endpoints) -> Vec<String> {
    let subsets = endpoints.subsets.iter().flatten();
    let mut ips: Vec<String> = subsets
        .flat_map(|s| s.addresses.iter().flatten().map(|a| a.ip.clone()))
        .collect();
    ips.sort();
    ips
}

fn web(all: &[Endpoints]) -> Option<&Endpoints> {
    all.iter()
        .find(|e| e.metadata.name.as_deref() == Some("web"))
}

#[tokio::test]
async fn endpoints_follow_ready_and_terminating_pods_and_go_with_the_service() {
    let cluster = start().await;
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), "default");
    let services = Api::<Service>::namespaced(cluster.client.clone(), "default");
    let endpoints = Api::<Endpoints>::namespaced(cluster.client.clone(), "default");
    services.create(&service()).await.unwrap();
    running_pod(&pods, "web-1", "127.244.1.2").await;
    running_pod(&pods, "web-2", "127.244.1.3").await;

    let all = wait_until(&endpoints, |all| {
        web(all).is_some_and(|e| ready_ips(e) == ["127.244.1.2", "127.244.1.3"])
    })
    .await;
    let current = web(&all).unwrap();
    assert_eq!(
        current.subsets.as_ref().unwrap()[0].ports.as_ref().unwrap()[0].port,
        8080,
        "named targetPort resolved"
    );
    assert_eq!(current.metadata.labels.as_ref().unwrap()["app"], "web");
    assert!(current
        .metadata
        .annotations
        .as_ref()
        .unwrap()
        .contains_key("endpoints.kubernetes.io/last-change-trigger-time"));

    // A graceful delete only sets deletionTimestamp (the process would still be running): the pod
    // leaves the Endpoints at once anyway.
    pods.delete("web-1", &DeleteParams::grace(30))
        .await
        .unwrap();
    wait_until(&endpoints, |all| {
        web(all).is_some_and(|e| ready_ips(e) == ["127.244.1.3"])
    })
    .await;
    assert!(
        pods.get_opt("web-1").await.unwrap().is_some(),
        "the pod object is still there, terminating"
    );
    let events = Api::<CoreEvent>::namespaced(cluster.client.clone(), "default");
    let removed = wait_until(&events, |all| {
        all.iter()
            .any(|e| e.reason.as_deref() == Some("EndpointRemoved"))
    })
    .await;
    let event = removed
        .iter()
        .find(|e| e.reason.as_deref() == Some("EndpointRemoved"))
        .unwrap();
    assert_eq!(
        event.message.as_deref(),
        Some("Pod web-1 (127.244.1.2) removed from the Endpoints")
    );
    assert_eq!(event.involved_object.kind.as_deref(), Some("Service"));
    assert_eq!(
        event.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("endpoint-controller")
    );

    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    wait_until(&endpoints, |all| web(all).is_none()).await;
}

/// Latency from a pod's DELETE (graceful) to the watch showing it gone from the Endpoints, over 50
/// pods. Run with `--ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore]
async fn delete_to_endpoint_removed_latency() {
    let cluster = start().await;
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), "default");
    let services = Api::<Service>::namespaced(cluster.client.clone(), "default");
    let endpoints = Api::<Endpoints>::namespaced(cluster.client.clone(), "default");
    services.create(&service()).await.unwrap();
    let count = 50;
    for i in 0..count {
        running_pod(&pods, &format!("web-{i}"), &format!("127.244.1.{}", i + 2)).await;
    }
    wait_until(&endpoints, |all| {
        web(all).is_some_and(|e| ready_ips(e).len() == count)
    })
    .await;
    // One watch, opened before the first delete, timestamps each change as it arrives.
    let (store, writer) = minik_client::store::store::<Endpoints>();
    let mut events = Box::pin(minik_client::reflector(
        writer,
        watcher(endpoints.clone(), ListParams::default()),
    ));
    let mut latencies = Vec::new();
    for i in 0..count {
        let ip = format!("127.244.1.{}", i + 2);
        let start = std::time::Instant::now();
        pods.delete(&format!("web-{i}"), &DeleteParams::grace(30))
            .await
            .unwrap();
        let removed = async {
            while let Some(event) = events.next().await {
                let gone = store
                    .get(&minik_api::ObjectKey::new("default", "web"))
                    .is_some_and(|e| !ready_ips(&e).contains(&ip));
                if event.is_ok() && gone {
                    return;
                }
            }
        };
        tokio::time::timeout(PATIENCE, removed)
            .await
            .expect("endpoint not removed in time");
        latencies.push(start.elapsed());
    }
    latencies.sort();
    println!(
        "delete → endpoint removed, seen on a watch: p50 {:?}, p99 {:?}",
        latencies[count / 2],
        latencies[count * 99 / 100]
    );
}

/// The endpoints of the slices the EndpointSlice controller manages for `service`: (IP, ready,
/// serving, terminating), sorted; `None` when it has no slice.
fn slice_endpoints(
    all: &[EndpointSlice],
    service: &str,
) -> Option<Vec<(String, bool, bool, bool)>> {
    let mine: Vec<&EndpointSlice> = all.iter().filter(|s| managed_for(s, service)).collect();
    if mine.is_empty() {
        return None;
    }
    let mut endpoints: Vec<(String, bool, bool, bool)> = mine
        .iter()
        .flat_map(|s| &s.endpoints)
        .map(|e| {
            let c = e.conditions.clone().unwrap_or_default();
            let flag = |value: Option<bool>| value == Some(true);
            (
                e.addresses[0].clone(),
                flag(c.ready),
                flag(c.serving),
                flag(c.terminating),
            )
        })
        .collect();
    endpoints.sort();
    Some(endpoints)
}

fn managed_for(slice: &EndpointSlice, service: &str) -> bool {
    let labels = slice.metadata.labels.clone().unwrap_or_default();
    labels.get("kubernetes.io/service-name").map(String::as_str) == Some(service)
        && labels
            .get("endpointslice.kubernetes.io/managed-by")
            .map(String::as_str)
            == Some("endpointslice-controller.k8s.io")
}

/// The slices follow the pods: a pod being deleted stays with `ready: false, serving: true,
/// terminating: true` until its object is gone, a slice that says the right thing is not written
/// again, and the slices go with their Service.
#[tokio::test]
async fn endpoint_slices_follow_pods_keep_terminating_ones_and_settle() {
    let cluster = start().await;
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), "default");
    let services = Api::<Service>::namespaced(cluster.client.clone(), "default");
    let slices = Api::<EndpointSlice>::namespaced(cluster.client.clone(), "default");
    services.create(&service()).await.unwrap();
    running_pod(&pods, "web-1", "127.244.1.2").await;
    running_pod(&pods, "web-2", "127.244.1.3").await;
    let ready = |ip: &str| (ip.to_string(), true, true, false);
    let both = vec![ready("127.244.1.2"), ready("127.244.1.3")];
    let all = wait_until(&slices, |all| {
        slice_endpoints(all, "web") == Some(both.clone())
    })
    .await;
    let slice = all.iter().find(|s| managed_for(s, "web")).unwrap();
    assert!(slice.metadata.name.as_deref().unwrap().starts_with("web-"));
    assert_eq!(
        slice.ports.as_ref().unwrap()[0].port,
        Some(8080),
        "named targetPort resolved"
    );
    let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Service", "web")
    );
    let annotations = slice.metadata.annotations.as_ref().unwrap();
    assert!(annotations.contains_key("endpoints.kubernetes.io/last-change-trigger-time"));

    pods.delete("web-1", &DeleteParams::grace(30))
        .await
        .unwrap();
    let terminating = vec![
        ("127.244.1.2".to_string(), false, true, true),
        ready("127.244.1.3"),
    ];
    let all = wait_until(&slices, |all| {
        slice_endpoints(all, "web") == Some(terminating.clone())
    })
    .await;
    let versions = |all: &[EndpointSlice]| {
        let mut v: Vec<_> = all
            .iter()
            .filter(|s| managed_for(s, "web"))
            .map(|s| s.metadata.resource_version.clone())
            .collect();
        v.sort();
        v
    };
    let revision = versions(&all);
    // Another Service's slice is written after web's last change: if web's slice were rewritten
    // in a loop, its resourceVersion would have moved by then.
    let mut other = service();
    other.metadata.name = Some("other".into());
    services.create(&other).await.unwrap();
    let all = wait_until(&slices, |all| slice_endpoints(all, "other").is_some()).await;
    assert_eq!(
        versions(&all),
        revision,
        "web's slice was not written again"
    );

    // The object goes (the kubelet's final delete): so does its endpoint.
    pods.delete("web-1", &DeleteParams::grace(0)).await.unwrap();
    let one = vec![ready("127.244.1.3")];
    wait_until(&slices, |all| {
        slice_endpoints(all, "web") == Some(one.clone())
    })
    .await;

    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    wait_until(&slices, |all| slice_endpoints(all, "web").is_none()).await;
}

/// More pods than fit in one slice: 150 pods make a slice of 100 and one of 50.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_than_100_pods_are_split_over_slices_of_at_most_100() {
    let cluster = start().await;
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), "default");
    let services = Api::<Service>::namespaced(cluster.client.clone(), "default");
    let slices = Api::<EndpointSlice>::namespaced(cluster.client.clone(), "default");
    services.create(&service()).await.unwrap();
    let count = 150;
    for i in 0..count {
        let ip = format!("127.244.{}.{}", i / 100 + 1, i % 100 + 2);
        running_pod(&pods, &format!("web-{i}"), &ip).await;
    }
    let all = wait_until(&slices, |all| {
        slice_endpoints(all, "web").is_some_and(|e| e.len() == count)
    })
    .await;
    let mut sizes: Vec<usize> = all
        .iter()
        .filter(|s| managed_for(s, "web"))
        .map(|s| s.endpoints.len())
        .collect();
    sizes.sort();
    assert_eq!(sizes, [50, 100]);
}

/// A Service without selector gets its hand-written Endpoints mirrored into a slice.
#[tokio::test]
async fn endpoints_of_a_service_without_selector_are_mirrored() {
    let cluster = start().await;
    let services = Api::<Service>::namespaced(cluster.client.clone(), "default");
    let endpoints = Api::<Endpoints>::namespaced(cluster.client.clone(), "default");
    let slices = Api::<EndpointSlice>::namespaced(cluster.client.clone(), "default");
    let mut external = service();
    external.metadata.name = Some("external".into());
    external.spec.as_mut().unwrap().selector = None;
    services.create(&external).await.unwrap();
    let written: Endpoints = serde_json::from_value(json!({
        "metadata": {"name": "external"},
        "subsets": [{"addresses": [{"ip": "127.0.0.53"}], "ports": [{"name": "http", "port": 8053}]}]
    }))
    .unwrap();
    endpoints.create(&written).await.unwrap();
    let all = wait_until(&slices, |all| {
        all.iter()
            .any(|s| s.metadata.name.as_deref() == Some("external"))
    })
    .await;
    let slice = all
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some("external"))
        .unwrap();
    assert_eq!(slice.endpoints[0].addresses, ["127.0.0.53"]);
    let labels = slice.metadata.labels.as_ref().unwrap();
    assert_eq!(
        labels["endpointslice.kubernetes.io/managed-by"],
        "endpointslicemirroring-controller.k8s.io"
    );
}
