//! Request hygiene: what a browser page or a DNS-rebinding name would send is refused and writes
//! nothing; open connections are capped.

mod common;

use std::time::Duration;

use common::{pod, TestServer, PODS, TIMEOUT};
use tokio::io::AsyncWriteExt;

async fn pod_count(server: &TestServer) -> usize {
    let (code, list) = server.get(PODS).await;
    assert_eq!(code, 200);
    list["items"].as_array().unwrap().len()
}

/// A "simple" cross-site POST (`text/plain`) is 415 and creates nothing.
#[tokio::test]
async fn text_plain_writes_are_415_and_write_nothing() {
    let server = TestServer::start().await;
    let body = pod("web").to_string();
    for content_type in [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let request = server
            .http
            .post(server.url(PODS))
            .header("content-type", content_type)
            .body(body.clone());
        let (code, status) = server.send(request).await;
        assert_eq!(code, 415, "{content_type}: {status}");
        assert_eq!(status["reason"], "UnsupportedMediaType");
    }
    assert_eq!(pod_count(&server).await, 0);
}

/// A request with any `Origin` is 403 and creates nothing (no CORS).
#[tokio::test]
async fn requests_with_an_origin_are_refused() {
    let server = TestServer::start().await;
    let request = server
        .http
        .post(server.url(PODS))
        .header("origin", "http://evil.example")
        .json(&pod("web"));
    let (code, status) = server.send(request).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(status["reason"], "Forbidden");
    let read = server.http.get(server.url(PODS)).header("origin", "null");
    assert_eq!(server.send(read).await.0, 403);
    assert_eq!(pod_count(&server).await, 0);
}

/// A foreign `Host` (DNS rebinding) is 403; loopback names pass.
#[tokio::test]
async fn only_loopback_hosts_are_served() {
    let server = TestServer::start().await;
    let request = server
        .http
        .post(server.url(PODS))
        .header("host", "evil.example:6443")
        .json(&pod("web"));
    let (code, status) = server.send(request).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(pod_count(&server).await, 0);
    let local = server
        .http
        .get(server.url(PODS))
        .header("host", "localhost");
    assert_eq!(server.send(local).await.0, 200);
}

/// The Python client sends no `Content-Type`; its creates still work (read as JSON).
#[tokio::test]
async fn a_missing_content_type_reads_as_json() {
    let server = TestServer::start().await;
    let request = server
        .http
        .post(server.url(PODS))
        .body(pod("web").to_string());
    let (code, body) = server.send(request).await;
    assert_eq!(code, 201, "{body}");
}

/// docs/security.md#h11: the Python client's DELETE with `DeleteOptions` in a body and no
/// `Content-Type` works; a PATCH without one is 415 and changes nothing.
#[tokio::test]
async fn a_body_without_content_type_is_json_but_a_patch_needs_its_type() {
    let server = TestServer::start().await;
    assert_eq!(server.post(PODS, &pod("web")).await.0, 201);
    let path = format!("{PODS}/web");
    let patch = server
        .http
        .patch(server.url(&path))
        .body(r#"{"metadata":{"labels":{"evil":"yes"}}}"#);
    let (code, status) = server.send(patch).await;
    assert_eq!(code, 415, "{status}");
    let (_, stored) = server.get(&path).await;
    assert!(stored["metadata"]["labels"].get("evil").is_none());
    let delete = server
        .http
        .delete(server.url(&path))
        .body(r#"{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0}"#);
    let (code, body) = server.send(delete).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        server.get(&path).await.0,
        404,
        "grace 0 from the body was applied"
    );
}

/// At the connection cap a new client waits until an open connection goes away.
#[tokio::test]
async fn open_connections_are_capped() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let options = minik_apiserver::ServeOptions {
        max_connections: 1,
        ..Default::default()
    };
    let backend = minik_apiserver::StorageBackend::memory(100);
    tokio::spawn(minik_apiserver::serve_with(
        listener,
        backend,
        options,
        shutdown.clone(),
    ));
    // Connected first, so accepted first: it takes the one slot and sends half a request.
    let mut idle = tokio::net::TcpStream::connect(address).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let waiting = tokio::spawn(async move {
        let response = http.get(format!("http://{address}/healthz")).send().await;
        response.map(|r| r.status().as_u16())
    });
    let early = tokio::time::timeout(Duration::from_millis(300), async {
        while !waiting.is_finished() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(
        early.is_err(),
        "a second connection was served past the cap"
    );
    drop(idle);
    let status = tokio::time::timeout(TIMEOUT, waiting)
        .await
        .expect("served once the slot freed");
    assert_eq!(status.unwrap().unwrap(), 200);
    shutdown.cancel();
}
