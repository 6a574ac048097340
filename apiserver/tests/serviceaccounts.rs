//! ServiceAccounts as a kind, the pod admission that reads them, and the `kubernetes` Service the
//! server keeps in `default` (plain http: none of this needs TLS).

mod common;

use common::{pod, TestServer, PODS};
use serde_json::{json, Value};

const ACCOUNTS: &str = "/api/v1/namespaces/default/serviceaccounts";
const KUBERNETES: &str = "/api/v1/namespaces/default/services/kubernetes";

/// ServiceAccounts are listed, created, read as Tables (NAME SECRETS AGE) and by short name in
/// discovery (`sa`).
#[tokio::test]
async fn service_accounts_are_served_like_every_kind() {
    let server = TestServer::start().await;
    let body = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"},
                      "automountServiceAccountToken": false});
    let (code, created) = server.post(ACCOUNTS, &body).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["automountServiceAccountToken"], false);
    assert!(created["metadata"]["uid"].is_string());
    let table = server
        .http
        .get(server.url(ACCOUNTS))
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Secrets", "Age"]);
    assert_eq!(table["rows"][0]["cells"][0], "robot");
    let (_, discovery) = server.get("/api/v1").await;
    let sa = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "serviceaccounts")
        .expect("in discovery")
        .clone();
    assert_eq!(sa["shortNames"], json!(["sa"]));
    assert_eq!(sa["namespaced"], true);
}

/// docs/security.md#s12 on a server with no token signer (plain http): the pod still runs as
/// `default`, but there is no token to mount, so no volume is added.
#[tokio::test]
async fn without_a_token_signer_pods_get_their_account_and_no_token_volume() {
    let server = TestServer::start().await;
    let (code, created) = server.post(PODS, &pod("web")).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["serviceAccountName"], "default");
    assert!(created["spec"].get("volumes").is_none(), "{created}");
}

/// docs/security.md#s14: the `kubernetes` Service holds the first address of the range, its
/// Endpoints the server's own address; deleted, both come back.
#[tokio::test]
async fn the_kubernetes_service_points_at_the_apiserver_and_comes_back() {
    let server = TestServer::start().await;
    let port: u16 = server.base.rsplit(':').next().unwrap().parse().unwrap();
    let service = wait_for(&server, KUBERNETES).await;
    assert_eq!(service["spec"]["clusterIP"], "127.96.0.1");
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    assert_eq!(service["spec"]["ports"][0]["name"], "https");
    assert_eq!(service["spec"]["ports"][0]["targetPort"], port);
    assert!(service["spec"].get("selector").is_none());
    let endpoints = wait_for(&server, "/api/v1/namespaces/default/endpoints/kubernetes").await;
    assert_eq!(endpoints["subsets"][0]["addresses"][0]["ip"], "127.0.0.1");
    assert_eq!(endpoints["subsets"][0]["ports"][0]["port"], port);

    let uid = service["metadata"]["uid"].clone();
    let (code, deleted) = server.delete(KUBERNETES, None).await;
    assert_eq!(code, 200);
    let rv = deleted["metadata"]["resourceVersion"].as_str().unwrap();
    let mut events = server
        .watch(&format!("/api/v1/namespaces/default/services?watch=1&fieldSelector=metadata.name=kubernetes&resourceVersion={rv}"))
        .await;
    let again = loop {
        let event = events.next().await.expect("an event");
        if event["type"] == "ADDED" {
            break event["object"].clone();
        }
    };
    assert_ne!(again["metadata"]["uid"], uid);
    assert_eq!(again["spec"]["clusterIP"], "127.96.0.1");
    // Another Service never gets that address at random.
    let (code, web) = server
        .post(
            "/api/v1/namespaces/default/services",
            &common::service("web"),
        )
        .await;
    assert_eq!(code, 201, "{web}");
    assert_ne!(web["spec"]["clusterIP"], "127.96.0.1");
}

/// The object at `path` (in `default`), seen by a watch on its name: its initial ADDED event.
async fn wait_for(server: &TestServer, path: &str) -> Value {
    let (collection, name) = path.rsplit_once('/').unwrap();
    let mut events = server
        .watch(&format!(
            "{collection}?watch=1&fieldSelector=metadata.name={name}"
        ))
        .await;
    let event = events
        .next()
        .await
        .unwrap_or_else(|| panic!("{path} never appeared"));
    assert_eq!(event["type"], "ADDED", "{event}");
    event["object"].clone()
}
