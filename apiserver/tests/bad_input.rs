//! Inputs upstream refuses and minik used to take (issue 19): a mass delete through a trailing
//! slash, fields that fail `ValidatePod`, malformed resourceVersions, and metadata rules that hold
//! while an object is being deleted.

mod common;

use common::{pod, TestServer, PODS};
use serde_json::{json, Value};

fn causes(body: &Value) -> Vec<String> {
    body["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .filter_map(|c| c["field"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_delete_with_a_trailing_slash_deletes_nothing() {
    let server = TestServer::start().await;
    for name in ["a", "b"] {
        assert_eq!(server.post(PODS, &pod(name)).await.0, 201);
    }
    let (code, body) = server.delete(&format!("{PODS}/"), None).await;
    assert_eq!(code, 405, "{body}");
    assert_eq!(body["reason"], "MethodNotAllowed", "{body}");
    let (_, list) = server.get(PODS).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(2), "{list}");
    // A GET with the slash still lists, as upstream.
    assert_eq!(server.get(&format!("{PODS}/")).await.0, 200);
    server.stop().await;
}

/// A pod whose only container carries `extra` (merged into the container) and whose spec carries
/// `spec_extra`.
fn pod_with(container_extra: Value, spec_extra: Value) -> Value {
    let mut pod = pod("web");
    let container = pod["spec"]["containers"][0].as_object_mut().unwrap();
    for (k, v) in container_extra.as_object().unwrap() {
        container.insert(k.clone(), v.clone());
    }
    let spec = pod["spec"].as_object_mut().unwrap();
    for (k, v) in spec_extra.as_object().unwrap() {
        spec.insert(k.clone(), v.clone());
    }
    pod
}

/// Creates `pod` and expects a 422 whose causes are exactly `fields`.
async fn expect_invalid(server: &TestServer, pod: &Value, fields: &[&str]) {
    let (code, body) = server.post(PODS, pod).await;
    assert_eq!(code, 422, "{pod} → {body}");
    assert_eq!(body["reason"], "Invalid", "{body}");
    assert_eq!(causes(&body), fields, "{body}");
}

#[tokio::test]
async fn pod_fields_upstream_rejects_are_422_with_upstream_field_paths() {
    let server = TestServer::start().await;
    let none = json!({});
    let cases = [
        (
            none.clone(),
            json!({"volumes": [{"name": "../../etc", "emptyDir": {}}]}),
            vec!["spec.volumes[0].name"],
        ),
        (
            json!({"volumeMounts": [{"name": "data", "mountPath": "/data"}]}),
            none.clone(),
            vec!["spec.containers[0].volumeMounts[0].name"],
        ),
        (
            none.clone(),
            json!({"nodeName": "../../etc"}),
            vec!["spec.nodeName"],
        ),
        (
            json!({"resources": {"requests": {"cpu": "-1"}, "limits": {"memory": "-5Mi"}}}),
            none.clone(),
            vec![
                "spec.containers[0].resources.limits[memory]",
                "spec.containers[0].resources.requests[cpu]",
            ],
        ),
        (
            json!({"env": [{"name": "", "value": "x"}]}),
            none.clone(),
            vec!["spec.containers[0].env[0].name"],
        ),
        (
            none.clone(),
            json!({"activeDeadlineSeconds": -5}),
            vec!["spec.activeDeadlineSeconds"],
        ),
        (
            json!({"readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": -1}}),
            none.clone(),
            vec!["spec.containers[0].readinessProbe.periodSeconds"],
        ),
        (
            json!({"ports": [{"containerPort": -4}]}),
            none.clone(),
            vec!["spec.containers[0].ports[0].containerPort"],
        ),
        (
            json!({"ports": [{"containerPort": 80, "hostPort": -4}]}),
            none.clone(),
            vec!["spec.containers[0].ports[0].hostPort"],
        ),
    ];
    for (container, spec, fields) in cases {
        expect_invalid(&server, &pod_with(container, spec), &fields).await;
    }
    // Nothing was stored on the way.
    let (_, list) = server.get(PODS).await;
    assert_eq!(list["items"], json!([]), "{list}");
    server.stop().await;
}

#[tokio::test]
async fn a_probe_period_of_zero_is_defaulted_as_upstream_does() {
    let server = TestServer::start().await;
    let probe = json!({"readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 0}});
    let (code, body) = server.post(PODS, &pod_with(probe, json!({}))).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["spec"]["containers"][0]["readinessProbe"]["periodSeconds"],
        10
    );
    server.stop().await;
}

#[tokio::test]
async fn a_malformed_quantity_or_api_version_is_a_bad_request() {
    let server = TestServer::start().await;
    let lots = json!({"resources": {"requests": {"cpu": "lots"}}});
    let (code, body) = server.post(PODS, &pod_with(lots, json!({}))).await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("quantities must match the regular expression"),
        "{body}"
    );
    let mut listed = pod("web");
    listed["apiVersion"] = json!(["v1"]);
    let (code, body) = server.post(PODS, &listed).await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (400, Some("BadRequest")),
        "{body}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_object_over_etcds_request_limit_is_413_even_under_the_body_limit() {
    let server = TestServer::start().await;
    // 2,000 containers with long commands: about 2 MiB, under the 3 MiB body limit but over the
    // 1.5 MiB etcd would store.
    let containers: Vec<Value> = (0..2000)
        .map(|i| json!({"name": format!("c{i}"), "image": "minik/web", "command": ["x".repeat(1000)]}))
        .collect();
    let mut big = pod("big");
    big["spec"]["containers"] = json!(containers);
    let (code, body) = server.post(PODS, &big).await;
    assert_eq!(code, 413, "{body}");
    assert_eq!(body["reason"], "RequestEntityTooLarge", "{body}");
    assert_eq!(server.get(&format!("{PODS}/big")).await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn a_malformed_resource_version_is_a_bad_request_on_list_get_and_watch() {
    let server = TestServer::start().await;
    assert_eq!(server.post(PODS, &pod("web")).await.0, 201);
    for path in [
        format!("{PODS}?resourceVersion=abc"),
        format!("{PODS}/web?resourceVersion=abc"),
        format!("{PODS}?watch=1&resourceVersion=abc"),
    ] {
        let (code, body) = server.get(&path).await;
        assert_eq!(code, 400, "{path}: {body}");
        assert_eq!(
            body["message"],
            "invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax",
            "{path}"
        );
    }
    // The values real clients send still work.
    for rv in ["", "0", "1"] {
        assert_eq!(
            server.get(&format!("{PODS}?resourceVersion={rv}")).await.0,
            200
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn no_finalizer_may_be_added_once_deletion_has_started() {
    let server = TestServer::start().await;
    let services = "/api/v1/namespaces/default/services";
    let mut held = common::service("held");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(server.post(services, &held).await.0, 201);
    let (code, deleting) = server.delete(&format!("{services}/held"), None).await;
    assert_eq!(code, 200, "{deleting}");
    assert!(
        deleting["metadata"]["deletionTimestamp"].is_string(),
        "{deleting}"
    );
    let merge = "application/merge-patch+json";
    let added = json!({"metadata": {"finalizers": ["example.com/hold", "example.com/late"]}});
    let (code, body) = server
        .patch(&format!("{services}/held"), merge, &added)
        .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(causes(&body), ["metadata.finalizers"], "{body}");
    assert_eq!(
        body["details"]["causes"][0]["reason"],
        "FieldValueForbidden"
    );
    // Removing the last finalizer is still how the deletion completes.
    let emptied = json!({"metadata": {"finalizers": null}});
    let (code, body) = server
        .patch(&format!("{services}/held"), merge, &emptied)
        .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(server.get(&format!("{services}/held")).await.0, 404);
    // Before any deletion, finalizers may be added freely.
    let mut fresh = pod("fresh");
    fresh["metadata"]["generateName"] = json!("fresh-");
    fresh["metadata"].as_object_mut().unwrap().remove("name");
    let (code, created) = server.post(PODS, &fresh).await;
    assert_eq!(code, 201, "{created}");
    let name = created["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("fresh-"), "{name}");
    let (code, body) = server.patch(&format!("{PODS}/{name}"), merge, &added).await;
    assert_eq!(code, 200, "{body}");
    server.stop().await;
}
