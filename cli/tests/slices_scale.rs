//! EndpointSlices at scale, end to end: a Deployment of 150 pods on hollow nodes behind one
//! Service gets its endpoints split into slices of at most 100, from the real control plane (apiserver,
//! scheduler, controller manager, endpoint controllers as processes of the `minik` binary).
//!
//! Hollow nodes (`minik_lab::hollow`) report pods Running and Ready without starting them, so
//! 150 pods cost only their API traffic.

use std::time::Duration;

use minik_api::core::Service;
use minik_api::k8s_openapi::api::apps::v1::Deployment;
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_client::{Api, Client, DeleteParams, ListParams};
use minik_cluster::{Cluster, ClusterConfig};
use minik_lab::hollow::{run_hollow_nodes, HollowConfig, HOLLOW_LABEL};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const PODS: usize = 150;

/// The sizes of the ready slices of `service`, sorted, once they hold `PODS` ready endpoints.
fn ready_sizes(all: &[EndpointSlice]) -> Option<Vec<usize>> {
    let ready = |s: &EndpointSlice| {
        s.endpoints
            .iter()
            .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
            .count()
    };
    let mut sizes: Vec<usize> = all.iter().map(ready).filter(|n| *n > 0).collect();
    sizes.sort();
    (sizes.iter().sum::<usize>() == PODS).then_some(sizes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_of_150_hollow_pods_is_split_into_slices_of_at_most_100() {
    let dir = tempfile::tempdir().unwrap();
    let listen = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let config = ClusterConfig {
        data_dir: dir.path().to_path_buf(),
        listen,
        nodes: 0,
        binary: env!("CARGO_BIN_EXE_minik").into(),
        progress: false,
        // Plain http: the hollow nodes and this client speak it; slices, not security, are tested.
        secure: false,
        ..ClusterConfig::default()
    };
    let cluster = Cluster::start(config).await.expect("cluster");
    let client = Client::new(&cluster.server_url).unwrap();
    let hollow = CancellationToken::new();
    let nodes = HollowConfig {
        server: cluster.server_url.clone(),
        count: 2,
        name_prefix: "hollow-slices-".into(),
        ..HollowConfig::default()
    };
    let hollow_task = tokio::spawn(run_hollow_nodes(nodes, hollow.clone()));

    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "many"},
        "spec": {"selector": {"app": "many"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    }))
    .unwrap();
    Api::<Service>::namespaced(client.clone(), "default")
        .create(&service)
        .await
        .unwrap();
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "many"},
        "spec": {
            "replicas": PODS,
            "selector": {"matchLabels": {"app": "many"}},
            "template": {
                "metadata": {"labels": {"app": "many"}},
                "spec": {
                    "nodeSelector": {HOLLOW_LABEL: "true"},
                    "containers": [{"name": "web", "image": "minik/web"}]
                }
            }
        }
    }))
    .unwrap();
    let deployments = Api::<Deployment>::namespaced(client.clone(), "default");
    deployments.create(&deployment).await.unwrap();

    let slices = Api::<EndpointSlice>::namespaced(client.clone(), "default");
    let lp = ListParams::default().labels("kubernetes.io/service-name=many");
    let split = minik_client::wait::await_all(&slices, lp, |all| ready_sizes(all).is_some());
    let all = tokio::time::timeout(Duration::from_secs(120), split)
        .await
        .expect("150 ready endpoints in time")
        .expect("watch");
    // Upstream fills slices in the order endpoints arrive and never rebalances them, so 150 pods
    // becoming ready in batches may end as 50 + 100 or 58 + 92: what holds is the cap of 100
    // (maxEndpointsPerSlice) and that two slices suffice.
    let sizes = ready_sizes(&all).unwrap();
    assert_eq!(sizes.len(), 2, "two slices for 150 endpoints: {sizes:?}");
    for slice in &all {
        assert!(slice.endpoints.len() <= 100, "at most 100 a slice");
    }

    deployments
        .delete("many", &DeleteParams::default())
        .await
        .unwrap();
    hollow.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(30), hollow_task).await;
    cluster.stop().await;
}
