//! The checks of a conversion webhook's answer (`conversion.rs`), without a server.

use serde_json::{json, Value};

use super::conversion::{accept, converted_objects, review};

fn answer(version: &str, uid: &str, result: Value, objects: Value) -> Value {
    json!({"apiVersion": format!("apiextensions.k8s.io/{version}"), "kind": "ConversionReview",
        "response": {"uid": uid, "result": result, "convertedObjects": objects}})
}

#[test]
fn the_review_names_the_desired_version_and_carries_the_objects() {
    let sent = review("v1", "u-1", &[json!({"kind": "Foo"})], "example.com/v1");
    assert_eq!(sent["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(sent["request"]["desiredAPIVersion"], "example.com/v1");
    assert_eq!(sent["request"]["objects"][0]["kind"], "Foo");
}

#[test]
fn an_answer_must_be_ours_and_a_success() {
    let ok = json!({"status": "Success"});
    let objects = json!([{"kind": "Foo"}]);
    assert_eq!(
        converted_objects(
            &answer("v1", "u-1", ok.clone(), objects.clone()),
            "v1",
            "u-1"
        )
        .unwrap(),
        vec![json!({"kind": "Foo"})]
    );
    let cases = [
        (
            answer("v1beta1", "u-1", ok.clone(), objects.clone()),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview",
        ),
        (
            answer("v1", "other", ok.clone(), objects.clone()),
            "expected response.uid=\"u-1\", got \"other\"",
        ),
        (
            answer("v1", "u-1", json!({"status": "Failure", "message": "cannot convert"}), objects.clone()),
            "cannot convert",
        ),
        (
            answer("v1", "u-1", json!({}), objects.clone()),
            "response.result.status was '', not 'Success'",
        ),
        (
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}),
            "no response provided",
        ),
    ];
    for (given, error) in cases {
        assert_eq!(converted_objects(&given, "v1", "u-1").unwrap_err(), error);
    }
    // v1beta1 answers were never checked for their kind and uid upstream.
    let old = answer("v1beta1", "", ok, objects);
    assert!(converted_objects(&old, "v1beta1", "u-1").is_ok());
}

fn original() -> Value {
    json!({"apiVersion": "example.com/v2", "kind": "Foo",
        "metadata": {"name": "a", "namespace": "default", "uid": "u", "resourceVersion": "7",
            "labels": {"old": "1"}},
        "spec": {"color": "red"}})
}

#[test]
fn only_labels_and_annotations_of_the_converted_metadata_are_kept() {
    let converted = json!({"apiVersion": "example.com/v1", "kind": "Foo",
        "metadata": {"name": "a", "namespace": "default", "uid": "u", "resourceVersion": "99",
            "annotations": {"converted": "yes"}, "generation": 5},
        "spec": {"colour": "red"}});
    let accepted = accept(&original(), converted, "example.com/v1").unwrap();
    assert_eq!(
        accepted["metadata"],
        json!({"name": "a", "namespace": "default", "uid": "u", "resourceVersion": "7",
            "annotations": {"converted": "yes"}})
    );
    assert_eq!(accepted["spec"], json!({"colour": "red"}));
}

#[test]
fn a_converted_object_keeps_its_version_kind_and_identity() {
    let changed = |path: &str, value: Value| {
        let mut object = original();
        object["apiVersion"] = json!("example.com/v1");
        *object.pointer_mut(path).unwrap() = value;
        accept(&original(), object, "example.com/v1").unwrap_err()
    };
    assert_eq!(
        changed("/apiVersion", json!("example.com/v2")),
        "invalid groupVersion (expected example.com/v1, received example.com/v2)"
    );
    assert_eq!(
        changed("/kind", json!("Bar")),
        "invalid kind (expected Foo, received Bar)"
    );
    assert_eq!(
        changed("/metadata/name", json!("b")),
        "must have the same name: a != b"
    );
    assert_eq!(
        changed("/metadata/uid", json!("v")),
        "must have the same UID: u != v"
    );
    assert_eq!(
        changed("/metadata/labels", json!({"n": 1})),
        "metadata.labels[n] must be a string, but is 1 in converted object"
    );
}
