//! Unit tests of strategic merge patch, one behaviour each, with the patches kubectl really sends.

use serde_json::{json, Value};

use super::merge;
use crate::patch::Error;

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["a"]},
        "spec": {
            "containers": [
                {"name": "main", "image": "busybox:1", "ports": [{"containerPort": 80, "name": "http"}],
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                {"name": "side", "image": "busybox:1"}
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]
        },
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]}
    })
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| item["name"].as_str().unwrap())
        .collect()
}

#[test]
fn kubectl_apply_configure_patch_changes_one_image_and_keeps_the_rest() {
    let patch = json!({
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {"$setElementOrder/containers": [{"name": "main"}, {"name": "side"}],
                 "containers": [{"image": "busybox:1.37", "name": "main"}]}
    });
    let merged = merge("Pod", &pod(), &patch).unwrap();
    let main = &merged["spec"]["containers"][0];
    assert_eq!(main["image"], "busybox:1.37");
    assert_eq!(
        main["ports"][0]["containerPort"], 80,
        "untouched fields stay"
    );
    assert_eq!(names(&merged["spec"]["containers"]), ["main", "side"]);
    assert_eq!(
        merged["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        "{}"
    );
    assert!(
        !merged.to_string().contains("$setElementOrder"),
        "directives are never stored"
    );
}

#[test]
fn null_deletes_a_key() {
    let merged = merge(
        "Pod",
        &pod(),
        &json!({"metadata": {"labels": {"app": null, "tier": "x"}}}),
    )
    .unwrap();
    assert_eq!(merged["metadata"]["labels"], json!({"tier": "x"}));
}

#[test]
fn new_list_items_are_appended_with_their_directives_removed() {
    let patch = json!({"spec": {"containers": [
        {"name": "extra", "image": "nginx", "$setElementOrder/ports": [{"containerPort": 81}],
         "ports": [{"containerPort": 81}]}]}});
    let merged = merge("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        names(&merged["spec"]["containers"]),
        ["main", "side", "extra"]
    );
    assert_eq!(
        merged["spec"]["containers"][2],
        json!({"name": "extra", "image": "nginx", "ports": [{"containerPort": 81}]})
    );
}

#[test]
fn env_ports_and_volume_mounts_merge_by_their_own_keys() {
    let patch = json!({"spec": {"containers": [{"name": "main",
        "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}]}]}});
    let merged = merge("Pod", &pod(), &patch).unwrap();
    let main = &merged["spec"]["containers"][0];
    assert_eq!(
        main["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}])
    );
    assert_eq!(
        main["ports"],
        json!([{"containerPort": 80, "name": "http", "protocol": "TCP"}])
    );
    assert_eq!(main["volumeMounts"][0]["readOnly"], true);
    assert_eq!(main["volumeMounts"].as_array().unwrap().len(), 1);
}

#[test]
fn patch_delete_removes_the_list_item_with_that_key() {
    let patch = json!({"spec": {"containers": [{"name": "side", "$patch": "delete"}]}});
    let merged = merge("Pod", &pod(), &patch).unwrap();
    assert_eq!(names(&merged["spec"]["containers"]), ["main"]);
}

#[test]
fn patch_replace_in_a_list_replaces_the_whole_list() {
    let patch =
        json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}});
    let merged = merge("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        merged["spec"]["containers"],
        json!([{"name": "only", "image": "x"}])
    );
}

#[test]
fn patch_replace_in_a_map_replaces_the_map_and_delete_removes_it() {
    let replace = json!({"metadata": {"labels": {"$patch": "replace", "new": "1"}}});
    let merged = merge("Pod", &pod(), &replace).unwrap();
    assert_eq!(merged["metadata"]["labels"], json!({"new": "1"}));
    let delete = json!({"metadata": {"labels": {"$patch": "delete"}}});
    let merged = merge("Pod", &pod(), &delete).unwrap();
    assert!(merged["metadata"].get("labels").is_none());
}

#[test]
fn retain_keys_clears_the_volume_source_that_was_switched_away_from() {
    let patch = json!({"spec": {"volumes": [
        {"name": "data", "$retainKeys": ["hostPath", "name"], "hostPath": {"path": "/tmp"}}]}});
    let merged = merge("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        merged["spec"]["volumes"],
        json!([{"name": "data", "hostPath": {"path": "/tmp"}}])
    );
}

#[test]
fn untagged_lists_such_as_tolerations_are_replaced_whole() {
    let patch = json!({"spec": {"tolerations": [{"key": "c", "operator": "Exists"}]}});
    let merged = merge("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        merged["spec"]["tolerations"],
        json!([{"key": "c", "operator": "Exists"}])
    );
}

#[test]
fn set_element_order_orders_the_merged_list_and_interleaves_server_only_items_as_upstream() {
    let original = json!({"spec": {"containers": [
        {"name": "a"}, {"name": "server-only"}, {"name": "b"}]}});
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}, {"name": "c"}],
        "containers": [{"name": "c", "image": "x"}]}});
    let merged = merge("Pod", &original, &patch).unwrap();
    // Upstream's mergeSortedSlice: "server-only" (server index 1) goes before "b" (index 2).
    assert_eq!(
        names(&merged["spec"]["containers"]),
        ["server-only", "b", "a", "c"]
    );
    let original = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "z"}]}});
    let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}});
    let merged = merge("Pod", &original, &patch).unwrap();
    assert_eq!(names(&merged["spec"]["containers"]), ["b", "a", "z"]);
}

#[test]
fn set_element_order_alone_reorders_without_changing_items() {
    let patch =
        json!({"spec": {"$setElementOrder/containers": [{"name": "side"}, {"name": "main"}]}});
    let merged = merge("Pod", &pod(), &patch).unwrap();
    assert_eq!(names(&merged["spec"]["containers"]), ["side", "main"]);
    assert_eq!(merged["spec"]["containers"][1]["image"], "busybox:1");
}

#[test]
fn finalizers_merge_as_a_set_and_delete_from_primitive_list_removes() {
    let merged = merge(
        "Pod",
        &pod(),
        &json!({"metadata": {"finalizers": ["b", "a"]}}),
    )
    .unwrap();
    assert_eq!(merged["metadata"]["finalizers"], json!(["a", "b"]));
    let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}});
    let merged = merge("Pod", &merged, &patch).unwrap();
    assert_eq!(merged["metadata"]["finalizers"], json!(["b"]));
}

#[test]
fn status_conditions_merge_by_type() {
    let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    let merged = merge("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        merged["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}])
    );
}

#[test]
fn service_ports_merge_by_port() {
    let service = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}});
    let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}});
    let merged = merge("Service", &service, &patch).unwrap();
    assert_eq!(
        merged["spec"]["ports"],
        json!([{"port": 80, "targetPort": 9090}, {"port": 443}])
    );
}

#[test]
fn malformed_patches_are_refused() {
    let missing_key = json!({"spec": {"containers": [{"image": "x"}]}});
    assert!(matches!(
        merge("Pod", &pod(), &missing_key),
        Err(Error::BadPatch(_))
    ));
    let unknown = json!({"metadata": {"labels": {"$patch": "explode"}}});
    assert!(matches!(
        merge("Pod", &pod(), &unknown),
        Err(Error::BadPatch(_))
    ));
    assert!(matches!(
        merge("Pod", &pod(), &json!([1])),
        Err(Error::BadPatch(_))
    ));
    let retain = json!({"spec": {"$retainKeys": "nope"}});
    assert!(matches!(
        merge("Pod", &pod(), &retain),
        Err(Error::BadPatch(_))
    ));
}

#[test]
fn an_empty_patch_changes_nothing() {
    assert_eq!(merge("Pod", &pod(), &json!({})).unwrap(), pod());
}
