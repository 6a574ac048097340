//! The serving loop and the pod log proxy: header-read timeout, loopback-only binding, logs
//! forwarded from a (fake) kubelet.

mod common;

use std::time::Duration;

use axum::extract::{Path, Query};
use axum::routing::get;
use common::{pod, Options, TestServer, PODS, TIMEOUT};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let server = TestServer::start_with(Options {
        header_read_timeout: Duration::from_millis(300),
        ..Options::default()
    })
    .await;
    let address = server.base.trim_start_matches("http://").to_string();
    let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
    socket
        .write_all(b"GET /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut buffer = Vec::new();
    let read = tokio::time::timeout(TIMEOUT, socket.read_to_end(&mut buffer)).await;
    assert!(
        read.is_ok(),
        "the server closes the socket after the header timeout"
    );
    server.stop().await;
}

#[tokio::test]
async fn run_refuses_a_non_loopback_address() {
    let dir = tempfile::TempDir::new().unwrap();
    let config = minik_apiserver::Config {
        listen: "192.0.2.1:6443".parse().unwrap(),
        data_dir: dir.path().to_path_buf(),
        ..minik_apiserver::Config::default()
    };
    let error = minik_apiserver::run(config, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("loopback"), "{error}");
}

/// A stand-in kubelet answering `/containerLogs/{ns}/{pod}/{container}` with the query it got.
async fn fake_kubelet() -> (u16, CancellationToken) {
    let app = axum::Router::new().route(
        "/containerLogs/{ns}/{pod}/{container}",
        get(
            |Path((ns, pod, container)): Path<(String, String, String)>,
             Query(q): Query<Vec<(String, String)>>| async move {
                format!("log of {ns}/{pod}/{container} {q:?}\n")
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = CancellationToken::new();
    let token = stop.clone();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { token.cancelled().await })
            .await
            .unwrap();
    });
    (port, stop)
}

#[tokio::test]
async fn pod_logs_are_proxied_from_the_kubelet_of_the_pods_node() {
    let server = TestServer::start().await;
    let (port, kubelet) = fake_kubelet().await;
    let node = json!({"metadata": {"name": "node-1"}, "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}});
    assert_eq!(server.post("/api/v1/nodes", &node).await.0, 201);
    server.post(PODS, &pod("web")).await;
    let (code, status) = server.get(&format!("{PODS}/web/log")).await;
    assert_eq!(
        (code, status["message"].as_str()),
        (400, Some("pod web does not have a host assigned"))
    );
    server
        .post(
            &format!("{PODS}/web/binding"),
            &json!({"target": {"kind": "Node", "name": "node-1"}}),
        )
        .await;
    // Logs exist once the container has started (the kubelet reports it in the pod's status).
    let started = json!({"status": {"containerStatuses": [{"name": "main", "ready": true, "restartCount": 0,
        "image": "busybox", "imageID": "", "state": {"running": {}}}]}});
    let (code, _) = server
        .patch(
            &format!("{PODS}/web/status"),
            "application/merge-patch+json",
            &started,
        )
        .await;
    assert_eq!(code, 200);
    let response = server
        .http
        .get(server.url(&format!("{PODS}/web/log?tailLines=5&follow=true")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.unwrap();
    assert!(text.starts_with("log of default/web/main"), "{text}");
    assert!(
        text.contains("\"tailLines\", \"5\"") && text.contains("\"follow\", \"true\""),
        "{text}"
    );
    let (code, _) = server.get(&format!("{PODS}/web/log?container=nope")).await;
    assert_eq!(code, 400);
    kubelet.cancel();
    server.stop().await;
}
