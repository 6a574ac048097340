//! The scheduler against a real minik apiserver (in memory, on 127.0.0.1:0): pods created over HTTP
//! get bound, an unschedulable pod reports why and is placed once a node with room registers.

use std::time::{Duration, Instant};

use futures::StreamExt;
use minik_api::core::{Container, Event as CoreEvent, Node, Pod, PodSpec, ResourceRequirements};
use minik_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use minik_api::meta::ObjectMeta;
use minik_client::{Api, Client, ListParams, Object};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const PATIENCE: Duration = Duration::from_secs(20);

/// An apiserver and a scheduler, stopped when dropped.
struct Cluster {
    client: Client,
    url: String,
    shutdown: CancellationToken,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn start() -> Cluster {
    let cluster = start_apiserver().await;
    start_scheduler(&cluster);
    cluster
}

async fn start_apiserver() -> Cluster {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let backend = minik_apiserver::StorageBackend::memory(100_000);
    tokio::spawn(minik_apiserver::serve(
        listener,
        backend,
        shutdown.child_token(),
    ));
    Cluster {
        client: Client::new(&url).unwrap(),
        url,
        shutdown,
    }
}

fn start_scheduler(cluster: &Cluster) {
    let config = minik_scheduler::Config {
        server: cluster.url.clone(),
        ..minik_scheduler::Config::default()
    };
    tokio::spawn(minik_scheduler::run(config, cluster.shutdown.child_token()));
}

fn quantities(cpu: &str, memory: &str) -> std::collections::BTreeMap<String, Quantity> {
    [
        ("cpu".to_string(), Quantity(cpu.into())),
        ("memory".to_string(), Quantity(memory.into())),
    ]
    .into()
}

async fn add_node(client: &Client, name: &str, cpu: &str) {
    let mut node: Node = serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "status": { "conditions": [{ "type": "Ready", "status": "True" }] }
    }))
    .unwrap();
    let mut allocatable = quantities(cpu, "8Gi");
    allocatable.insert("pods".into(), Quantity("110".into()));
    let status = node.status.get_or_insert_with(Default::default);
    status.allocatable = Some(allocatable.clone());
    status.capacity = Some(allocatable);
    let api = Api::<Node>::all(client.clone());
    let created = api.create(&node).await.unwrap();
    if created
        .status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .is_none()
    {
        node.metadata = created.metadata;
        api.replace_status(name, &node).await.unwrap();
    }
}

fn pod(name: &str, cpu: &str) -> Pod {
    let container = Container {
        name: "web".into(),
        image: Some("minik/web".into()),
        resources: Some(ResourceRequirements {
            requests: Some(quantities(cpu, "64Mi")),
            ..Default::default()
        }),
        ..Container::default()
    };
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![container],
            ..PodSpec::default()
        }),
        status: None,
    }
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

fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
}

#[tokio::test]
async fn pods_are_bound_spread_and_get_a_scheduled_event() {
    let cluster = start().await;
    for node in ["node-1", "node-2"] {
        add_node(&cluster.client, node, "4").await;
    }
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), "default");
    for i in 0..4 {
        pods.create(&pod(&format!("web-{i}"), "100m"))
            .await
            .unwrap();
    }
    let bound = wait_until(&pods, |all| {
        all.len() == 4 && all.iter().all(|p| node_of(p).is_some())
    })
    .await;
    let on_node_1 = bound
        .iter()
        .filter(|p| node_of(p) == Some("node-1"))
        .count();
    assert_eq!(on_node_1, 2, "4 equal pods on 2 equal nodes spread 2/2");
    let events = Api::<CoreEvent>::namespaced(cluster.client.clone(), "default");
    let scheduled = wait_until(&events, |all| {
        all.iter()
            .filter(|e| e.reason.as_deref() == Some("Scheduled"))
            .count()
            == 4
    })
    .await;
    let message = scheduled
        .iter()
        .find_map(|e| e.message.clone().filter(|m| m.contains("web-0")))
        .unwrap();
    assert!(
        message.starts_with("Successfully assigned default/web-0 to node-"),
        "{message}"
    );
}

#[tokio::test]
async fn unschedulable_pod_reports_why_and_is_placed_when_a_node_with_room_registers() {
    let cluster = start().await;
    add_node(&cluster.client, "node-1", "1").await;
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), "default");
    pods.create(&pod("big", "2")).await.unwrap();
    let message = "0/1 nodes are available: 1 Insufficient cpu.";
    wait_until(&pods, |all| {
        let conditions = all
            .first()
            .and_then(|p| p.status.as_ref())
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        conditions.iter().any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
                && c.message.as_deref() == Some(message)
        })
    })
    .await;
    let events = Api::<CoreEvent>::namespaced(cluster.client.clone(), "default");
    wait_until(&events, |all| {
        all.iter().any(|e| {
            e.reason.as_deref() == Some("FailedScheduling") && e.type_.as_deref() == Some("Warning")
        })
    })
    .await;
    add_node(&cluster.client, "node-2", "4").await;
    let bound = wait_until(&pods, |all| {
        all.first().is_some_and(|p| node_of(p).is_some())
    })
    .await;
    assert_eq!(node_of(&bound[0]), Some("node-2"));
}

/// Scheduler throughput through the apiserver: 2 000 pending pods, 100 nodes; the scheduler starts
/// after the pods exist and the clock runs until the watch shows every pod bound (each pod costs a
/// bind and a Scheduled event over HTTP). Run with `--ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore]
async fn throughput_through_the_apiserver() {
    let cluster = start_apiserver().await;
    for i in 0..100 {
        add_node(&cluster.client, &format!("node-{i}"), "64").await;
    }
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), "default");
    let count = 2000;
    futures::stream::iter(0..count)
        .for_each_concurrent(32, |i| {
            let pods = pods.clone();
            async move {
                pods.create(&pod(&format!("p{i}"), "10m")).await.unwrap();
            }
        })
        .await;
    let start = Instant::now();
    start_scheduler(&cluster);
    let bound = wait_until(&pods, |all| {
        all.len() == count && all.iter().all(|p| node_of(p).is_some())
    })
    .await;
    let elapsed = start.elapsed();
    println!(
        "{} pods bound in {elapsed:?}: {:.0} pods/s",
        bound.len(),
        count as f64 / elapsed.as_secs_f64()
    );
}
