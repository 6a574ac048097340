//! Unit tests of server-side apply: upsert, ownership, removal of unapplied fields, conflicts.

use serde_json::{json, Value};

use super::{apply, Options};
use crate::patch::Error;

fn options(manager: &str, force: bool) -> Options {
    Options {
        field_manager: Some(manager.into()),
        force,
        time: "2026-11-22T03:00:00Z".into(),
        status: false,
    }
}

fn manifest(image: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "web", "labels": labels},
           "spec": {"containers": [{"name": "main", "image": image}]}})
}

/// The object as the server stores it after creation (system fields added).
fn created(manager: &str, config: &Value) -> Value {
    let mut object = apply("Pod", None, config, &options(manager, false)).unwrap();
    object["metadata"]["uid"] = json!("u1");
    object["metadata"]["resourceVersion"] = json!("5");
    object["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
    object["status"] = json!({"phase": "Running"});
    object
}

#[test]
fn apply_without_field_manager_is_refused() {
    let result = apply(
        "Pod",
        None,
        &manifest("nginx", json!({})),
        &Options::default(),
    );
    assert_eq!(result, Err(Error::MissingFieldManager));
    let status = Error::MissingFieldManager.to_status();
    assert_eq!(
        (status.code, status.message.as_deref()),
        (
            Some(422),
            Some("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")
        )
    );
}

#[test]
fn apply_creates_and_records_the_managers_fields() {
    let object = apply(
        "Pod",
        None,
        &manifest("nginx", json!({"app": "web"})),
        &options("kubectl", false),
    )
    .unwrap();
    let entry = &object["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "kubectl");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(
        entry["fieldsV1"]["f:metadata"]["f:labels"],
        json!({"f:app": {}})
    );
    assert_eq!(object["spec"]["containers"][0]["image"], "nginx");
}

#[test]
fn reapplying_merges_into_live_and_keeps_server_set_fields() {
    let live = created("kubectl", &manifest("nginx", json!({"app": "web"})));
    let object = apply(
        "Pod",
        Some(&live),
        &manifest("nginx:2", json!({"app": "web"})),
        &options("kubectl", false),
    )
    .unwrap();
    let main = &object["spec"]["containers"][0];
    assert_eq!(main["image"], "nginx:2");
    assert_eq!(main["imagePullPolicy"], "IfNotPresent", "defaults stay");
    assert_eq!(object["metadata"]["uid"], "u1");
    assert_eq!(
        object["status"]["phase"], "Running",
        "apply never writes status"
    );
}

#[test]
fn a_field_dropped_from_the_manifest_is_removed_from_the_object() {
    let live = created(
        "kubectl",
        &manifest("nginx", json!({"app": "web", "tier": "front"})),
    );
    let object = apply(
        "Pod",
        Some(&live),
        &manifest("nginx", json!({"app": "web"})),
        &options("kubectl", false),
    )
    .unwrap();
    assert_eq!(object["metadata"]["labels"], json!({"app": "web"}));
}

#[test]
fn a_field_another_applier_also_owns_is_not_removed() {
    let live = created(
        "kubectl",
        &manifest("nginx", json!({"app": "web", "tier": "front"})),
    );
    let other = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"tier": "front"}}});
    let live = apply("Pod", Some(&live), &other, &options("other", false)).unwrap();
    let object = apply(
        "Pod",
        Some(&live),
        &manifest("nginx", json!({"app": "web"})),
        &options("kubectl", false),
    )
    .unwrap();
    assert_eq!(
        object["metadata"]["labels"],
        json!({"app": "web", "tier": "front"})
    );
    assert_eq!(
        object["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn changing_a_field_another_applier_owns_conflicts_unless_forced() {
    let live = created("kubectl", &manifest("nginx", json!({})));
    let result = apply(
        "Pod",
        Some(&live),
        &manifest("nginx:2", json!({})),
        &options("ci", false),
    );
    let Err(Error::Conflict { message, conflicts }) = result else {
        panic!("expected a conflict, got {result:?}");
    };
    assert_eq!(
        message,
        "Apply failed with 1 conflict: conflict with \"kubectl\" using v1: .spec.containers[name=\"main\"].image"
    );
    assert_eq!(conflicts.len(), 1);
    let status = Error::Conflict { message, conflicts }.to_status();
    assert_eq!(
        (status.code, status.reason.as_deref()),
        (Some(409), Some("Conflict"))
    );

    let forced = apply(
        "Pod",
        Some(&live),
        &manifest("nginx:2", json!({})),
        &options("ci", true),
    )
    .unwrap();
    assert_eq!(forced["spec"]["containers"][0]["image"], "nginx:2");
    let kubectl = forced["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "kubectl")
        .unwrap();
    let image = &kubectl["fieldsV1"]["f:spec"]["f:containers"]["k:{\"name\":\"main\"}"];
    assert!(
        image.get("f:image").is_none(),
        "the forced field changed owner: {kubectl}"
    );
}

#[test]
fn setting_the_same_value_shares_ownership_without_conflict() {
    let live = created("kubectl", &manifest("nginx", json!({})));
    assert!(apply(
        "Pod",
        Some(&live),
        &manifest("nginx", json!({})),
        &options("ci", false)
    )
    .is_ok());
}

#[test]
fn an_unchanged_reapply_keeps_the_entry_time() {
    let live = created("kubectl", &manifest("nginx", json!({"app": "web"})));
    let mut later = options("kubectl", false);
    later.time = "2030-01-01T00:00:00Z".into();
    let object = apply(
        "Pod",
        Some(&live),
        &manifest("nginx", json!({"app": "web"})),
        &later,
    )
    .unwrap();
    assert_eq!(
        object["metadata"]["managedFields"][0]["time"],
        "2026-11-22T03:00:00Z"
    );
}
