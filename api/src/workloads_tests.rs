//! Tests of `workloads.rs`: defaults and each 422 with its field path.

use serde_json::json;

use super::*;

fn deployment(spec: serde_json::Value) -> Deployment {
    serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": spec})).unwrap()
}

fn web_spec() -> serde_json::Value {
    json!({"selector": {"matchLabels": {"app": "web"}},
           "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "web", "image": "nginx"}]}}})
}

fn fields(causes: &[StatusCause]) -> Vec<&str> {
    causes.iter().filter_map(|c| c.field.as_deref()).collect()
}

#[test]
fn deployment_defaults_are_upstreams() {
    let mut web = deployment(web_spec());
    default_deployment(&mut web);
    let value = serde_json::to_value(&web).unwrap();
    assert_eq!(value["spec"]["replicas"], 1);
    assert_eq!(
        value["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})
    );
    assert_eq!(value["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(value["spec"]["progressDeadlineSeconds"], 600);
    let pod_spec = &value["spec"]["template"]["spec"];
    assert_eq!(pod_spec["restartPolicy"], "Always");
    assert_eq!(pod_spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(pod_spec["containers"][0]["imagePullPolicy"], "Always");
    assert!(pod_spec.get("enableServiceLinks").is_none());
    assert!(validate_deployment(&web).is_empty());
}

#[test]
fn recreate_gets_no_rolling_update_block() {
    let mut spec = web_spec();
    spec["strategy"] = json!({"type": "Recreate"});
    let mut web = deployment(spec);
    default_deployment(&mut web);
    let strategy = web.spec.unwrap().strategy.unwrap();
    assert!(strategy.rolling_update.is_none());
}

#[test]
fn each_invalid_deployment_names_its_field() {
    let cases = [
        (json!({"selector": {}}), "spec.selector"),
        (
            json!({"selector": {"matchLabels": {"app": "other"}}}),
            "spec.template.metadata.labels",
        ),
        (json!({"replicas": -1}), "spec.replicas"),
        (
            json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}),
            "spec.strategy.rollingUpdate.maxUnavailable",
        ),
        (
            json!({"template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"restartPolicy": "Never", "containers": [{"name": "web", "image": "nginx"}]}}}),
            "spec.template.spec.restartPolicy",
        ),
        (
            json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web"}]}}}),
            "spec.template.spec.containers[0].image",
        ),
        (
            json!({"strategy": {"type": "Recreate", "rollingUpdate": {}}}),
            "spec.strategy.rollingUpdate",
        ),
        (
            json!({"minReadySeconds": 600}),
            "spec.progressDeadlineSeconds",
        ),
    ];
    for (change, field) in cases {
        let mut spec = web_spec();
        for (key, value) in change.as_object().unwrap() {
            spec[key] = value.clone();
        }
        let mut web = deployment(spec);
        default_deployment(&mut web);
        let causes = validate_deployment(&web);
        assert_eq!(fields(&causes), [field], "{change}");
    }
}

#[test]
fn the_selector_is_immutable() {
    let old: MetaSelector = serde_json::from_value(json!({"matchLabels": {"app": "web"}})).unwrap();
    let new: MetaSelector = serde_json::from_value(json!({"matchLabels": {"app": "api"}})).unwrap();
    assert!(validate_selector_update(&old, &old).is_empty());
    assert_eq!(
        fields(&validate_selector_update(&new, &old)),
        ["spec.selector"]
    );
}

#[test]
fn replica_sets_default_replicas_and_labels() {
    let mut rs: ReplicaSet =
        serde_json::from_value(json!({"metadata": {"name": "web-1"}, "spec": web_spec()})).unwrap();
    default_replica_set(&mut rs);
    assert_eq!(rs.spec.as_ref().unwrap().replicas, Some(1));
    assert_eq!(rs.metadata.labels.as_ref().unwrap()["app"], "web");
    assert!(validate_replica_set(&rs).is_empty());
}

#[test]
fn selectors_print_as_upstream_sorted_by_key() {
    let selector: MetaSelector = serde_json::from_value(json!({
        "matchLabels": {"tier": "front", "app": "web"},
        "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                             {"key": "canary", "operator": "DoesNotExist"}]}))
    .unwrap();
    assert_eq!(
        selector_from_meta(&selector).unwrap().to_string(),
        "app=web,!canary,env in (dev,prod),tier=front"
    );
}
