//! Unit tests of the CRD pieces that need no server: validation of a CRD, the kinds it serves,
//! the write strategy, Table cells, watch-line conversion and scale paths.

use minik_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{json, Value};

use super::controller::kinds_of;
use super::kinds::CustomKind;
use super::{convert, crd, names, scale, strategy, table};

/// A two-version CronTab CRD with a status and a scale subresource and two printer columns.
pub fn crontab_crd() -> Value {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "cronSpec": {"type": "string"},
            "replicas": {"type": "integer", "minimum": 0, "default": 1},
            "selector": {"type": "string"}}},
        "status": {"type": "object", "properties": {
            "replicas": {"type": "integer"}, "labelSelector": {"type": "string"}}}}});
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": schema},
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.labelSelector"}},
            "additionalPrinterColumns": [
                {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]})
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {"group": "stable.example.com", "scope": "Namespaced",
            "names": {"plural": "crontabs", "kind": "CronTab", "shortNames": ["ct"]},
            "versions": [version("v1", true), version("v2", false)]}})
}

fn decoded(value: Value) -> CustomResourceDefinition {
    let mut crd: CustomResourceDefinition = serde_json::from_value(value).unwrap();
    crd::set_defaults(&mut crd);
    crd
}

fn kind(version: &str) -> CustomKind {
    kinds_of(&decoded(crontab_crd()), false)
        .into_iter()
        .find(|k| k.version == version)
        .unwrap()
}

#[test]
fn a_valid_crd_gets_defaults_and_an_invalid_one_every_upstream_error() {
    let crd = decoded(crontab_crd());
    assert!(
        names::validate(&crd).is_empty(),
        "{:?}",
        names::validate(&crd)
    );
    assert_eq!(crd.spec.names.singular.as_deref(), Some("crontab"));
    assert_eq!(crd.spec.names.list_kind.as_deref(), Some("CronTabList"));
    let mut bad = crontab_crd();
    bad["metadata"]["name"] = json!("crontabs.example");
    bad["spec"]["scope"] = json!("Galaxy");
    bad["spec"]["names"]["plural"] = json!("CronTabs");
    bad["spec"]["versions"][1]["storage"] = json!(true);
    bad["spec"]["versions"][0]["schema"] = json!(null);
    let found: Vec<String> = names::validate(&decoded(bad))
        .iter()
        .map(|e| e.field.clone())
        .collect();
    for field in [
        "metadata.name",
        "spec.names.plural",
        "spec.scope",
        "spec.versions",
        "spec.versions[0].schema.openAPIV3Schema",
    ] {
        assert!(found.contains(&field.to_string()), "{field} in {found:?}");
    }
    let mut protected = crontab_crd();
    protected["spec"]["group"] = json!("stable.k8s.io");
    protected["metadata"]["name"] = json!("crontabs.stable.k8s.io");
    let errors = names::validate(&decoded(protected));
    assert_eq!(
        errors[0].field,
        "metadata.annotations[api-approved.kubernetes.io]"
    );
}

#[test]
fn a_crd_serves_one_kind_per_served_version_sharing_the_storage_version() {
    let kinds = kinds_of(&decoded(crontab_crd()), false);
    assert_eq!(kinds.len(), 2);
    assert!(kinds
        .iter()
        .all(|k| k.storage_version == "v1" && k.status && k.scale.is_some()));
    assert_eq!(kinds[1].info.api_version, "stable.example.com/v2");
    assert_eq!(kinds[0].info.short_names, ["ct"]);
}

#[test]
fn writes_are_validated_and_left_in_their_version() {
    let v2 = kind("v2");
    let object = json!({"apiVersion": "stable.example.com/v2", "kind": "CronTab",
        "metadata": {"name": "x"}, "spec": {"cronSpec": "* * * * *", "junk": 1},
        "status": {"replicas": 9}});
    let prepared = strategy::prepare_create(&v2, object, Some("default")).unwrap();
    assert_eq!(prepared.object["apiVersion"], "stable.example.com/v2");
    assert_eq!(
        prepared.object["spec"],
        json!({"cronSpec": "* * * * *", "replicas": 1})
    );
    assert!(
        prepared.object.get("status").is_none(),
        "status is a subresource"
    );
    assert_eq!(prepared.pruned, ["spec.junk"]);
    let mut stored = prepared.object.clone();
    stored["metadata"]["resourceVersion"] = json!("5");
    let mut status_write = stored.clone();
    status_write["status"] = json!({"replicas": 3});
    status_write["spec"]["replicas"] = json!(7);
    let updated =
        strategy::prepare_update(&v2, status_write, &stored, "x", Some("status")).unwrap();
    assert_eq!(
        (
            updated.object["spec"]["replicas"].clone(),
            updated.object["status"]["replicas"].clone()
        ),
        (json!(1), json!(3))
    );
    assert_eq!(
        updated.object["metadata"]["generation"], 1,
        "status writes keep the generation"
    );
    let mut spec_write = stored.clone();
    spec_write["spec"]["replicas"] = json!(-1);
    let error = strategy::prepare_update(&v2, spec_write, &stored, "x", None).unwrap_err();
    assert_eq!(error.code(), 422);
    assert_eq!(
        error.0.message.as_deref(),
        Some("CronTab.stable.example.com \"x\" is invalid: spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0")
    );
}

#[test]
fn reads_come_back_in_the_version_asked_for_with_defaults_and_tables() {
    let v2 = kind("v2");
    let stored = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "x", "resourceVersion": "7", "creationTimestamp": "2020-01-01T00:00:00Z"},
        "spec": {"cronSpec": "*/5 * * * *"}});
    let line = serde_json::to_vec(&json!({"type": "ADDED", "object": stored})).unwrap();
    let mut headers = true;
    let converted: Value =
        serde_json::from_slice(&convert::convert_line(&v2, &line, None, &mut headers)).unwrap();
    assert_eq!(converted["object"]["apiVersion"], "stable.example.com/v2");
    assert_eq!(
        converted["object"]["spec"]["replicas"], 1,
        "defaulted on read"
    );
    let as_table = ("meta.k8s.io/v1", crate::table::Include::Metadata);
    let row: Value = serde_json::from_slice(&convert::convert_line(
        &v2,
        &line,
        Some(as_table),
        &mut headers,
    ))
    .unwrap();
    let cells = row["object"]["rows"][0]["cells"].as_array().unwrap();
    assert_eq!(cells[0..3], [json!("x"), json!("*/5 * * * *"), json!(1)]);
    assert!(
        cells[3].as_str().unwrap().contains('y'),
        "an age in years: {}",
        cells[3]
    );
    assert_eq!(row["object"]["columnDefinitions"][1]["name"], "Spec");
    assert!(!headers, "only the first event carries the columns");
    let bookmark = serde_json::to_vec(&json!({"type": "BOOKMARK", "object": {"kind": "CronTab",
        "apiVersion": "stable.example.com/v1", "metadata": {"resourceVersion": "9"}}}))
    .unwrap();
    let converted: Value = serde_json::from_slice(&convert::convert_line(
        &v2,
        &bookmark,
        Some(as_table),
        &mut headers,
    ))
    .unwrap();
    assert_eq!(
        converted["object"],
        json!({"kind": "CronTab", "apiVersion": "stable.example.com/v2", "metadata": {"resourceVersion": "9"}})
    );
}

#[test]
fn printer_columns_read_simple_json_paths() {
    let object = json!({"status": {"conditions": [{"type": "Ready"}]}, "spec": {"n": 2}});
    assert_eq!(
        table::lookup(&object, "{.status.conditions[0].type}"),
        Some(&json!("Ready"))
    );
    assert_eq!(table::lookup(&object, ".spec.n"), Some(&json!(2)));
    assert_eq!(table::lookup(&object, ".spec.missing"), None);
}

#[test]
fn the_scale_view_reads_and_writes_the_crd_paths() {
    let v1 = kind("v1");
    let mut object = json!({"metadata": {"name": "x"}, "spec": {"replicas": 2},
        "status": {"replicas": 1, "labelSelector": "app=x"}});
    assert_eq!(
        scale::scale_of(&v1, &object)["status"],
        json!({"replicas": 1, "selector": "app=x"})
    );
    scale::set_path(&mut object, ".spec.replicas", json!(5));
    scale::set_path(&mut object, ".spec.deep.er", json!(true));
    assert_eq!(object["spec"], json!({"replicas": 5, "deep": {"er": true}}));
}
