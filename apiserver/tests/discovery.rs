//! Aggregated discovery against a real apiserver: `/api` and `/apis` answer an
//! `APIGroupDiscoveryList` when `Accept` asks for it as kubectl does, with every built-in group's
//! resources, a new CRD's group within a second of its creation, an unreachable APIService's
//! group version marked `Stale`, and `If-None-Match` answered 304.
//!
//! Kubernetes counterpart: `test/integration/apiserver/discovery/discovery_test.go`.

mod common;

use std::time::{Duration, Instant};

use common::TestServer;
use serde_json::{json, Value};

const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
const V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// GETs `path` with kubectl's `Accept` (and `If-None-Match` if given): status, headers, body.
async fn aggregated(
    server: &TestServer,
    path: &str,
    etag: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request = server
        .http
        .get(server.url(path))
        .header("accept", KUBECTL_ACCEPT);
    if let Some(etag) = etag {
        request = request.header("if-none-match", etag);
    }
    let response = request.send().await.expect("discovery request");
    let (code, headers) = (response.status().as_u16(), response.headers().clone());
    let bytes = response.bytes().await.expect("body");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (code, headers, body)
}

fn group<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list["items"]
        .as_array()?
        .iter()
        .find(|g| g["metadata"]["name"] == name)
}

fn resource<'a>(version: &'a Value, name: &str) -> &'a Value {
    version["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["resource"] == name))
        .unwrap_or_else(|| panic!("{name} missing from {version:#?}"))
}

#[tokio::test]
async fn api_and_apis_answer_the_aggregated_document_with_etags() {
    let server = TestServer::start().await;
    let (code, headers, core) = aggregated(&server, "/api", None).await;
    assert_eq!(code, 200, "{core}");
    assert_eq!(headers["content-type"], V2);
    assert_eq!(headers["vary"], "Accept");
    assert_eq!(core["kind"], "APIGroupDiscoveryList");
    let v1 = &core["items"][0]["versions"][0];
    assert_eq!(
        (&v1["version"], &v1["freshness"]),
        (&json!("v1"), &json!("Current"))
    );
    let pods = resource(v1, "pods");
    assert_eq!(pods["scope"], "Namespaced");
    assert_eq!(pods["responseKind"]["kind"], "Pod");

    let (code, headers, apis) = aggregated(&server, "/apis", None).await;
    assert_eq!(code, 200, "{apis}");
    let apps = group(&apis, "apps").expect("apps");
    let deployments = resource(&apps["versions"][0], "deployments");
    assert_eq!(deployments["shortNames"], json!(["deploy"]));
    let scale = deployments["subresources"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["subresource"] == "scale"))
        .expect("deployments/scale");
    assert_eq!(scale["responseKind"]["kind"], "Scale");
    let autoscaling = group(&apis, "autoscaling").expect("autoscaling");
    let versions: Vec<&Value> = autoscaling["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["version"])
        .collect();
    assert_eq!(versions, [&json!("v2"), &json!("v1")], "preferred first");
    assert!(group(&apis, "events.k8s.io").is_some());

    // The same document again: 304 with no body.
    let etag = headers["etag"].to_str().unwrap().to_string();
    let (code, again, _) = aggregated(&server, "/apis", Some(&etag)).await;
    assert_eq!(code, 304);
    assert_eq!(again["etag"], etag.as_str());
    // Plain JSON still gets the legacy list.
    let (code, legacy) = server.get("/apis").await;
    assert_eq!((code, &legacy["kind"]), (200, &json!("APIGroupList")));
    server.stop().await;
}

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
                 "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

#[tokio::test]
async fn a_crd_is_listed_within_a_second_and_changes_the_etag() {
    let server = TestServer::start().await;
    let (_, headers, _) = aggregated(&server, "/apis", None).await;
    let before = headers["etag"].to_str().unwrap().to_string();
    let created = Instant::now();
    let (code, body) = server
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &widget_crd(),
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let listed = loop {
        let (_, headers, apis) = aggregated(&server, "/apis", Some(&before)).await;
        if let Some(group) = group(&apis, "example.com") {
            assert_ne!(headers["etag"], before.as_str());
            break group.clone();
        }
        assert!(
            created.elapsed() < Duration::from_secs(1),
            "the CRD's group was not listed within a second"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    eprintln!(
        "CRD listed in aggregated discovery after {:?}",
        created.elapsed()
    );
    let widgets = resource(&listed["versions"][0], "widgets");
    assert_eq!(
        (&widgets["scope"], &widgets["responseKind"]),
        (
            &json!("Cluster"),
            &json!({"group": "example.com", "version": "v1", "kind": "Widget"})
        )
    );
    assert_eq!(widgets["subresources"][0]["subresource"], "status");
    server.stop().await;
}

#[tokio::test]
async fn an_apiservice_whose_server_is_gone_is_listed_stale() {
    let server = TestServer::start().await;
    let api_service = json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                 "versionPriority": 100,
                 "service": {"name": "metrics-server", "namespace": "kube-system", "port": 443}}
    });
    let (code, body) = server
        .post("/apis/apiregistration.k8s.io/v1/apiservices", &api_service)
        .await;
    assert_eq!(code, 201, "{body}");
    let (code, _, apis) = aggregated(&server, "/apis", None).await;
    assert_eq!(code, 200);
    let metrics = group(&apis, "metrics.k8s.io").expect("metrics.k8s.io listed");
    assert_eq!(
        metrics["versions"],
        json!([{"version": "v1beta1", "freshness": "Stale"}])
    );
    server.stop().await;
}
