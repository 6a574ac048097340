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

fn slice_ips(all: &[EndpointSlice], name: &str) -> Option<Vec<(String, bool)>> {
    let slice = all
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some(name))?;
    let mut ips: Vec<(String, bool)> = slice
        .endpoints
        .iter()
        .map(|e| {
            let ready = e.conditions.as_ref().and_then(|c| c.ready) == Some(true);
            (e.addresses[0].clone(), ready)
        })
        .collect();
    ips.sort();
    Some(ips)
}

/// The EndpointSlice `kubectl describe service` reads follows the Endpoints, and a slice that
/// says the right thing is not written again (no write loop between the two controllers' views).
#[tokio::test]
async fn endpoint_slices_mirror_the_endpoints_and_settle() {
    let cluster = start().await;
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), "default");
    let services = Api::<Service>::namespaced(cluster.client.clone(), "default");
    let slices = Api::<EndpointSlice>::namespaced(cluster.client.clone(), "default");
    services.create(&service()).await.unwrap();
    running_pod(&pods, "web-1", "127.244.1.2").await;
    running_pod(&pods, "web-2", "127.244.1.3").await;
    let both = [
        ("127.244.1.2".to_string(), true),
        ("127.244.1.3".to_string(), true),
    ];
    let all = wait_until(&slices, |all| {
        slice_ips(all, "web").as_deref() == Some(&both[..])
    })
    .await;
    let slice = all
        .iter()
        .find(|s| s.metadata.name.as_deref() == Some("web"))
        .unwrap();
    let labels = slice.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["kubernetes.io/service-name"], "web");
    assert_eq!(slice.ports.as_ref().unwrap()[0].port, Some(8080));

    pods.delete("web-1", &DeleteParams::grace(30))
        .await
        .unwrap();
    let one = [("127.244.1.3".to_string(), true)];
    let all = wait_until(&slices, |all| {
        slice_ips(all, "web").as_deref() == Some(&one[..])
    })
    .await;
    let settled = |all: &[EndpointSlice]| {
        all.iter()
            .find(|s| s.metadata.name.as_deref() == Some("web"))
            .and_then(|s| s.metadata.resource_version.clone())
    };
    let revision = settled(&all);
    // Another Service's slice is written after web's last change: if web's slice were rewritten
    // in a loop, its resourceVersion would have moved by then.
    let mut other = service();
    other.metadata.name = Some("other".into());
    services.create(&other).await.unwrap();
    let all = wait_until(&slices, |all| slice_ips(all, "other").is_some()).await;
    assert_eq!(settled(&all), revision, "web's slice was not written again");

    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    wait_until(&slices, |all| slice_ips(all, "web").is_none()).await;
}
