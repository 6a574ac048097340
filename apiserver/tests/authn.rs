//! Authentication over TLS: certificates, tokens, anonymous, and the wrong CA.

mod secure;

use minik_client::{Client, ClientConfig, Method};
use minik_cluster::pki::{Identity, Pki};
use secure::{code, SecureServer, TIMEOUT};

/// No credential: only the health and version paths answer; the rest is 401 with a Status.
#[tokio::test]
async fn anonymous_gets_health_and_version_only() {
    let server = SecureServer::start().await;
    let http = server.anonymous_http();
    for path in ["/healthz", "/readyz", "/livez", "/version"] {
        let (status, _) = SecureServer::send(http.get(format!("{}{path}", server.url))).await;
        assert_eq!(status, 200, "{path}");
    }
    for path in [
        "/api/v1/pods",
        "/api",
        "/apis",
        "/api/v1/namespaces/default/pods",
    ] {
        let (status, body) = SecureServer::send(http.get(format!("{}{path}", server.url))).await;
        assert_eq!(status, 401, "{path}");
        assert_eq!(body["kind"], "Status");
        assert_eq!(body["reason"], "Unauthorized");
        assert_eq!(body["message"], "Unauthorized");
        assert_eq!(body["code"], 401);
    }
}

/// A certificate from the cluster CA authenticates; the admin can list and create.
#[tokio::test]
async fn client_certificate_authenticates() {
    let server = SecureServer::start().await;
    let admin = server.client(&Identity::admin());
    let pods = admin
        .request_json(Method::GET, "/api/v1/namespaces/default/pods", None)
        .await;
    assert_eq!(code(&pods), 200, "{pods:?}");
    let created = admin
        .request_json(
            Method::POST,
            "/api/v1/namespaces",
            Some(&serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})),
        )
        .await;
    assert_eq!(code(&created), 200, "{created:?}");
}

/// A known bearer token authenticates; an unknown one is 401, never anonymous.
#[tokio::test]
async fn bearer_tokens_authenticate_and_wrong_ones_are_401() {
    let server = SecureServer::start().await;
    let alice = server.token_client("alice-token");
    assert_eq!(
        code(&alice.request_json(Method::GET, "/api", None).await),
        200
    );
    let wrong = server.token_client("tampered");
    assert_eq!(
        code(&wrong.request_json(Method::GET, "/api", None).await),
        401
    );
    // Even a public path: a credential that is presented must be valid (docs/security.md#x3).
    assert_eq!(
        code(&wrong.request_json(Method::GET, "/version", None).await),
        401
    );
}

/// A server certificate from another CA fails the handshake: the client refuses it.
#[tokio::test]
async fn a_client_trusting_another_ca_fails_tls() {
    let server = SecureServer::start().await;
    let other = tempfile::tempdir().unwrap();
    let other_pki = Pki::ensure(other.path(), &[]).unwrap();
    let client = Client::from_config(&ClientConfig {
        server: server.url.clone(),
        ca_pem: Some(std::fs::read(other_pki.ca_file()).unwrap()),
        ..ClientConfig::default()
    })
    .unwrap();
    let result = tokio::time::timeout(TIMEOUT, client.request_json(Method::GET, "/healthz", None))
        .await
        .expect("in time");
    assert!(
        matches!(result, Err(minik_client::Error::Http(_))),
        "{result:?}"
    );
}

/// A client certificate signed by another CA is refused in the handshake, not downgraded.
#[tokio::test]
async fn a_client_certificate_from_another_ca_is_refused() {
    let server = SecureServer::start().await;
    let other = tempfile::tempdir().unwrap();
    let other_pki = Pki::ensure(other.path(), &[]).unwrap();
    let forged = other_pki.client(&Identity::admin()).unwrap();
    let client = Client::from_config(&ClientConfig {
        server: server.url.clone(),
        ca_pem: Some(server.ca_pem()),
        client_cert_pem: Some(forged.cert_pem.into_bytes()),
        client_key_pem: Some(forged.key_pem.into_bytes()),
        ..ClientConfig::default()
    })
    .unwrap();
    let result = tokio::time::timeout(
        TIMEOUT,
        client.request_json(Method::GET, "/api/v1/pods", None),
    )
    .await
    .expect("in time");
    assert!(
        matches!(result, Err(minik_client::Error::Http(_))),
        "{result:?}"
    );
}

/// Plain http to the TLS port gets Go's answer: a 400 saying so, and no API data.
#[tokio::test]
async fn plain_http_to_the_tls_port_gets_a_400_saying_so() {
    let server = SecureServer::start().await;
    let plain = server.url.replace("https://", "http://");
    let response = tokio::time::timeout(
        TIMEOUT,
        reqwest::Client::new()
            .get(format!("{plain}/api/v1/pods"))
            .send(),
    )
    .await
    .expect("in time")
    .expect("an HTTP answer");
    assert_eq!(response.status(), 400);
    let body = response.text().await.expect("body");
    assert_eq!(body, "Client sent an HTTP request to an HTTPS server.\n");
    // The port still speaks TLS to the next client.
    let admin = server.client(&Identity::admin());
    assert_eq!(
        code(&admin.request_json(Method::GET, "/api", None).await),
        200
    );
}

/// The cost of TLS, client-certificate authentication and RBAC on sequential creates and gets
/// (run with `--ignored --nocapture`; prints, asserts nothing about speed).
#[tokio::test]
#[ignore]
async fn tls_cost_on_creates_and_gets() {
    use std::time::Instant;
    const N: usize = 300;
    let pod = |name: String| {
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    };
    let plain_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plain_url = format!("http://{}", plain_listener.local_addr().unwrap());
    let shutdown = tokio_util::sync::CancellationToken::new();
    tokio::spawn(minik_apiserver::serve(
        plain_listener,
        minik_apiserver::StorageBackend::memory(10_000),
        shutdown.clone(),
    ));
    let secure = SecureServer::start().await;
    let clients = [
        ("plain http", Client::new(&plain_url).unwrap()),
        (
            "tls + x509 + rbac (admin)",
            secure.client(&Identity::admin()),
        ),
    ];
    for (label, client) in clients {
        let namespace = "/api/v1/namespaces/default/pods";
        let prefix = label
            .split(' ')
            .next()
            .unwrap()
            .replace(['+', '(', ')'], "");
        let started = Instant::now();
        for i in 0..N {
            let body = pod(format!("{prefix}-{}-{i}", label.len()));
            let created = client
                .request_json(Method::POST, namespace, Some(&body))
                .await;
            assert!(created.is_ok(), "{label}: {created:?}");
        }
        let creates = started.elapsed();
        let started = Instant::now();
        for _ in 0..N {
            let got = client
                .request_json(Method::GET, "/api/v1/namespaces/default", None)
                .await;
            assert!(got.is_ok(), "{label}: {got:?}");
        }
        let gets = started.elapsed();
        println!(
            "{label}: create {:.0} µs, get {:.0} µs (mean of {N})",
            creates.as_secs_f64() * 1e6 / N as f64,
            gets.as_secs_f64() * 1e6 / N as f64
        );
    }
    shutdown.cancel();
}
