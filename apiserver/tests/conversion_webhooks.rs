//! CRD conversion webhooks against a real apiserver and a real HTTPS webhook on loopback: a
//! `Foo` whose v1 `spec.colour` is v2's (the storage version's) `spec.color`, written and read in
//! both versions, listed (one review for the list), watched in v1, scaled in v1 (whose
//! `spec.size` is v2's `spec.replicas`), applied and listed by kubectl; and the failures: a webhook that is down, one that renames the object, and a CRD
//! whose conversion settings are invalid.

mod common;
mod webhook_server;

use std::sync::Arc;

use common::{kubectl, TestServer, TIMEOUT};
use serde_json::{json, Value};
use webhook_server::WebhookServer;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn base64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// `{plural}.example.com` with v1 (a `Colour` column) and v2 (storage), converted by `hook`
/// with the given review versions.
fn crd(plural: &str, kind: &str, hook: &WebhookServer, review_versions: &[&str]) -> Value {
    let version = |name: &str, field: &str, storage: bool| {
        let count = if name == "v1" { "size" } else { "replicas" };
        json!({"name": name, "served": true, "storage": storage,
            "additionalPrinterColumns": [{"name": "Colour", "type": "string", "jsonPath": format!(".spec.{field}")}],
            "subresources": {"scale": {"specReplicasPath": format!(".spec.{count}"),
                "statusReplicasPath": ".status.replicas"}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {field: {"type": "string"},
                    count: {"type": "integer"}}}}}}})
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": [version("v1", "colour", false), version("v2", "color", true)],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": review_versions,
                "clientConfig": {"url": hook.url("/convert"), "caBundle": base64(&hook.ca_pem)}}}}})
}

/// One object: v1 calls the fields `colour` and `size`, v2 `color` and `replicas`.
fn convert(object: &Value, desired: &str) -> Value {
    let mut out = object.clone();
    let spec = out["spec"].as_object_mut().expect("spec");
    let (from, to) = if desired.ends_with("/v1") {
        ("color", "colour")
    } else {
        ("colour", "color")
    };
    if let Some(value) = spec.remove(from) {
        spec.insert(to.to_string(), value);
    }
    let (from, to) = if desired.ends_with("/v1") {
        ("replicas", "size")
    } else {
        ("size", "replicas")
    };
    if let Some(value) = spec.remove(from) {
        spec.insert(to.to_string(), value);
    }
    out["apiVersion"] = json!(desired);
    out
}

/// A ConversionReview reply of the review's own version, with `change` applied to each object.
fn reply(review: &Value, change: impl Fn(Value) -> Value) -> Value {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let objects: Vec<Value> = request["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| change(convert(o, desired)))
        .collect();
    json!({"apiVersion": review["apiVersion"], "kind": "ConversionReview",
        "response": {"uid": request["uid"], "result": {"status": "Success"},
            "convertedObjects": objects}})
}

/// A server converting between v1 and v2.
async fn converter() -> WebhookServer {
    WebhookServer::start_raw(Arc::new(|review: &Value| reply(review, |o| o))).await
}

async fn create_crd(api: &TestServer, crd: &Value, plural: &str) {
    let (code, body) = api.post(CRDS, crd).await;
    assert_eq!(code, 201, "{body}");
    for version in ["v1", "v2"] {
        let path = format!("/apis/example.com/{version}/namespaces/default/{plural}");
        tokio::time::timeout(TIMEOUT, async {
            while api.get(&path).await.0 != 200 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the CRD is served");
    }
}

fn foo(version: &str, name: &str, field: &str, colour: &str) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Foo",
        "metadata": {"name": name}, "spec": {field: colour}})
}

const V1: &str = "/apis/example.com/v1/namespaces/default/foos";
const V2: &str = "/apis/example.com/v2/namespaces/default/foos";

#[tokio::test]
async fn objects_are_converted_by_the_webhook_on_reads_writes_lists_and_watches() {
    let api = TestServer::start().await;
    let hook = converter().await;
    create_crd(&api, &crd("foos", "Foo", &hook, &["v1"]), "foos").await;

    // Written in v1: stored in v2 (the webhook renamed the field), answered in v1.
    let (code, created) = api.post(V1, &foo("v1", "red", "colour", "red")).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "example.com/v1");
    assert_eq!(created["spec"], json!({"colour": "red"}));
    let (_, stored) = api.get(&format!("{V2}/red")).await;
    assert_eq!(stored["spec"], json!({"color": "red"}));
    let reviews = hook.received();
    assert_eq!(reviews[0]["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(reviews[0]["request"]["desiredAPIVersion"], "example.com/v2");

    // Listed in v1: the items stored in v2 go in one review.
    assert_eq!(
        api.post(V2, &foo("v2", "green", "color", "green")).await.0,
        201
    );
    let before = hook.received().len();
    let (code, list) = api.get(V1).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(
        (list["apiVersion"].as_str(), list["kind"].as_str()),
        (Some("example.com/v1"), Some("FooList"))
    );
    let colours: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["spec"]["colour"])
        .collect();
    assert_eq!(colours, [&json!("green"), &json!("red")]);
    let reviews = hook.received();
    assert_eq!(reviews.len(), before + 1, "one review for the list");
    assert_eq!(
        reviews[before]["request"]["objects"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Watched in v1, changed by a v1 merge patch (the stored object is converted to v1, patched,
    // converted back).
    let version = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut events = api
        .watch(&format!("{V1}?watch=true&resourceVersion={version}"))
        .await;
    let patch = json!({"spec": {"colour": "blue"}});
    let (code, patched) = api
        .patch(&format!("{V1}/red"), "application/merge-patch+json", &patch)
        .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"], json!({"colour": "blue"}));
    let event = events.next().await.expect("an event");
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(event["object"]["apiVersion"], "example.com/v1");
    assert_eq!(event["object"]["spec"], json!({"colour": "blue"}));
    assert_eq!(
        api.get(&format!("{V2}/red")).await.1["spec"],
        json!({"color": "blue"})
    );
}

#[tokio::test]
async fn kubectl_applies_and_lists_in_the_version_it_names() {
    let api = TestServer::start().await;
    let hook = converter().await;
    create_crd(&api, &crd("foos", "Foo", &hook, &["v1"]), "foos").await;
    let home = tempfile::tempdir().unwrap();
    let manifest = home.path().join("foo.json");
    std::fs::write(&manifest, foo("v1", "sky", "colour", "azure").to_string()).unwrap();
    let path = manifest.to_str().unwrap();
    let Some((ok, stdout, stderr)) =
        kubectl(&api, home.path(), &["apply", "-n", "default", "-f", path]).await
    else {
        return;
    };
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "foo.example.com/sky created");
    std::fs::write(&manifest, foo("v1", "sky", "colour", "navy").to_string()).unwrap();
    let (ok, stdout, stderr) = kubectl(&api, home.path(), &["apply", "-n", "default", "-f", path])
        .await
        .unwrap();
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "foo.example.com/sky configured");
    assert_eq!(
        api.get(&format!("{V2}/sky")).await.1["spec"],
        json!({"color": "navy"})
    );
    for (resource, column) in [
        ("foos.v1.example.com", "navy"),
        ("foos.v2.example.com", "navy"),
    ] {
        let (ok, stdout, stderr) = kubectl(&api, home.path(), &["get", "-n", "default", resource])
            .await
            .unwrap();
        assert!(ok, "{stderr}");
        let rows: Vec<Vec<&str>> = stdout
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows[0][..2], ["NAME", "COLOUR"]);
        assert_eq!(rows[1][..2], ["sky", column], "{resource}");
    }
}

#[tokio::test]
async fn a_webhook_down_or_renaming_objects_fails_the_request_as_upstream() {
    let api = TestServer::start().await;
    let down = converter().await;
    let address = down.addr;
    create_crd(&api, &crd("foos", "Foo", &down, &["v1"]), "foos").await;
    drop(down);
    // In the storage version nothing is converted.
    assert_eq!(api.post(V2, &foo("v2", "a", "color", "red")).await.0, 201);
    let (code, status) = api.get(&format!("{V1}/a")).await;
    assert_eq!(code, 500, "{status}");
    let message = status["message"].as_str().unwrap();
    let expected = format!("conversion webhook for example.com/v2, Kind=Foo failed: Post \"https://{address}/convert?timeout=30s\": ");
    assert!(message.starts_with(&expected), "{message}");
    assert_eq!(status["reason"], Value::Null);
    let (code, _) = api.post(V1, &foo("v1", "b", "colour", "red")).await;
    assert_eq!(code, 500, "a write in v1 cannot be stored");

    let renaming = WebhookServer::start_raw(Arc::new(|review: &Value| {
        reply(review, |mut object| {
            object["metadata"]["name"] = json!("renamed");
            object
        })
    }))
    .await;
    let mut bars = crd("bars", "Bar", &renaming, &["v1beta1"]);
    bars["spec"]["names"]["kind"] = json!("Bar");
    create_crd(&api, &bars, "bars").await;
    let bar = json!({"apiVersion": "example.com/v2", "kind": "Bar", "metadata": {"name": "x"}, "spec": {"color": "red"}});
    assert_eq!(
        api.post("/apis/example.com/v2/namespaces/default/bars", &bar)
            .await
            .0,
        201
    );
    let (code, status) = api
        .get("/apis/example.com/v1/namespaces/default/bars/x")
        .await;
    assert_eq!((code, status["message"].as_str()), (500, Some("conversion webhook for example.com/v2, Kind=Bar returned invalid object: must have the same name: x != renamed")));
    let (code, status) = api
        .get("/apis/example.com/v1/namespaces/default/bars")
        .await;
    assert_eq!((code, status["message"].as_str()), (500, Some("conversion webhook for example.com/v2, Kind=BarList returned invalid converted object at index 0: must have the same name: x != renamed")));
    assert_eq!(
        renaming.received()[0]["apiVersion"],
        "apiextensions.k8s.io/v1beta1",
        "the only version the CRD lists"
    );
}

#[tokio::test]
async fn invalid_conversion_settings_are_refused_with_their_fields() {
    let api = TestServer::start().await;
    let hook = converter().await;
    let mut bad = crd("foos", "Foo", &hook, &["v9"]);
    bad["spec"]["conversion"]["webhook"]["clientConfig"]["url"] = json!("http://127.0.0.1/convert");
    let (code, status) = api.post(CRDS, &bad).await;
    assert_eq!(code, 422, "{status}");
    let fields = common::cause_fields(&status);
    assert_eq!(
        fields,
        [
            "spec.conversion.webhookClientConfig.url",
            "spec.conversion.conversionReviewVersions"
        ]
    );
    bad["spec"]["conversion"] = json!({"strategy": "Webhook"});
    let (code, status) = api.post(CRDS, &bad).await;
    assert_eq!(code, 422, "{status}");
    assert!(status["message"].as_str().unwrap().contains("spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"), "{status}");
}

#[tokio::test]
async fn an_object_from_an_earlier_storage_version_is_converted_before_an_update() {
    let api = TestServer::start().await;
    let hook = converter().await;
    create_crd(&api, &crd("foos", "Foo", &hook, &["v1"]), "foos").await;
    assert_eq!(api.post(V2, &foo("v2", "old", "color", "red")).await.0, 201);
    let swap = json!([{"op": "replace", "path": "/spec/versions/0/storage", "value": true},
        {"op": "replace", "path": "/spec/versions/1/storage", "value": false}]);
    let (code, body) = api
        .patch(
            &format!("{CRDS}/foos.example.com"),
            "application/json-patch+json",
            &swap,
        )
        .await;
    assert_eq!(code, 200, "{body}");
    // v1 is the storage version once a create in v1 needs no conversion.
    tokio::time::timeout(TIMEOUT, async {
        for probe in 0.. {
            let before = hook.received().len();
            let name = format!("probe-{probe}");
            assert_eq!(api.post(V1, &foo("v1", &name, "colour", "x")).await.0, 201);
            if hook.received().len() == before {
                return;
            }
        }
    })
    .await
    .expect("v1 becomes the storage version");

    // Stored in v2, patched in v1 (the storage version): converted to v1 first (else v2's
    // `color` would be pruned by v1's schema), stored in v1.
    let patch = json!({"metadata": {"labels": {"patched": "yes"}}});
    let (code, patched) = api
        .patch(&format!("{V1}/old"), "application/merge-patch+json", &patch)
        .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"], json!({"colour": "red"}));
    let before = hook.received().len();
    assert_eq!(
        api.get(&format!("{V1}/old")).await.1["spec"],
        json!({"colour": "red"})
    );
    assert_eq!(hook.received().len(), before, "now stored in v1");
}

#[tokio::test]
async fn the_scale_of_another_version_reads_and_writes_that_versions_path() {
    let api = TestServer::start().await;
    let hook = converter().await;
    create_crd(&api, &crd("foos", "Foo", &hook, &["v1"]), "foos").await;
    let mut three = foo("v2", "three", "color", "red");
    three["spec"]["replicas"] = json!(3);
    assert_eq!(api.post(V2, &three).await.0, 201);
    let (code, scale) = api.get(&format!("{V1}/three/scale")).await;
    assert_eq!(
        (code, &scale["spec"]["replicas"]),
        (200, &json!(3)),
        "{scale}"
    );
    let patch = json!({"spec": {"replicas": 5}});
    let (code, scale) = api
        .patch(
            &format!("{V1}/three/scale"),
            "application/merge-patch+json",
            &patch,
        )
        .await;
    assert_eq!(
        (code, &scale["spec"]["replicas"]),
        (200, &json!(5)),
        "{scale}"
    );
    let (_, stored) = api.get(&format!("{V2}/three")).await;
    assert_eq!(stored["spec"], json!({"color": "red", "replicas": 5}));
}
