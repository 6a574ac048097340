//! A secure cluster end to end (components in-process): every component reaches the apiserver
//! over TLS with its own certificate and does its job under RBAC; anonymous requests get 401;
//! the data directory and its secrets are private.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use minik_api::core::{Endpoints, Pod, Service};
use minik_client::wait::await_condition;
use minik_client::{Api, Method};
use minik_cluster::{Cluster, ClusterConfig, Mode};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(60);

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_secure_cluster_runs_every_component_under_its_own_identity() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = ClusterConfig {
        data_dir: data.clone(),
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        nodes: 1,
        progress: false,
        mode: Mode::InProcess,
        reap_leftovers: false,
        drain_grace: Some(0),
        secure: true,
        ..ClusterConfig::default()
    };
    // Starting waits for node-1 to be Ready: the kubelet registered and heartbeats as its node.
    let cluster = tokio::time::timeout(TIMEOUT, Cluster::start(config))
        .await
        .expect("started in time")
        .expect("started");
    assert!(
        cluster.server_url.starts_with("https://"),
        "{}",
        cluster.server_url
    );
    let client = cluster.client().unwrap();

    // The endpoint controller writes Endpoints for a new Service (its service-account identity).
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }))
    .unwrap();
    Api::<Service>::namespaced(client.clone(), "default")
        .create(&service)
        .await
        .unwrap();
    let endpoints = Api::<Endpoints>::namespaced(client.clone(), "default");
    let found = tokio::time::timeout(TIMEOUT, await_condition(&endpoints, "web", |_| true)).await;
    assert!(matches!(found, Ok(Some(_))), "no Endpoints for web");

    // The scheduler binds a pod (system:kube-scheduler may create pods/binding).
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "sleeper"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap();
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    pods.create(&pod).await.unwrap();
    let bound = tokio::time::timeout(
        TIMEOUT,
        await_condition(&pods, "sleeper", |p| {
            p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some("node-1")
        }),
    )
    .await;
    assert!(matches!(bound, Ok(Some(_))), "the pod was not scheduled");

    // Without a certificate: 401.
    let ca = std::fs::read(data.join("pki").join("ca.crt")).unwrap();
    let anonymous = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&ca).unwrap()])
        .build()
        .unwrap();
    let response = anonymous
        .get(format!("{}/api/v1/pods", cluster.server_url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);

    // The admin kubeconfig works on its own, and every secret file is private.
    let kubeconfig = cluster.kubeconfig().unwrap();
    let admin = minik_client::Client::from_kubeconfig(&kubeconfig).unwrap();
    admin
        .request_json(Method::GET, "/api/v1/nodes", None)
        .await
        .unwrap();
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&kubeconfig), 0o600);
    for entry in std::fs::read_dir(data.join("pki")).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
    cluster.stop().await;
}
