//! Tests of `webhook_match.rs`: rules, scope, selectors and the exemption, without I/O.

use super::*;
use serde_json::json;

fn rule(value: Value) -> RuleWithOperations {
    serde_json::from_value(value).unwrap()
}

fn pods(subresource: &str) -> Resource {
    Resource {
        group: String::new(),
        version: "v1".into(),
        resource: "pods".into(),
        subresource: subresource.into(),
        kind: "Pod".into(),
        namespaced: true,
    }
}

fn widgets() -> Resource {
    Resource {
        group: "example.com".into(),
        version: "v1".into(),
        resource: "widgets".into(),
        subresource: String::new(),
        kind: "Widget".into(),
        namespaced: false,
    }
}

#[test]
fn resources_match_in_their_star_and_subresource_forms() {
    // (resources listed, subresource of the request, matches)
    let table = [
        (vec!["pods"], "", true),
        (vec!["pods"], "status", false),
        (vec!["pods/status"], "status", true),
        (vec!["pods/status"], "", false),
        (vec!["pods/*"], "status", true),
        // As `rules.go` compares: a `*` subresource matches the empty one too.
        (vec!["pods/*"], "", true),
        (vec!["*"], "", true),
        (vec!["*"], "status", false),
        (vec!["*/status"], "status", true),
        (vec!["*/*"], "scale", true),
        (vec!["services", "pods"], "", true),
        (vec!["services"], "", false),
    ];
    for (resources, sub, expected) in table {
        let r = rule(
            json!({"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": resources}),
        );
        assert_eq!(
            rule_matches(&r, Operation::Create, &pods(sub)),
            expected,
            "{resources:?} on pods/{sub}"
        );
    }
}

#[test]
fn operations_groups_and_versions_must_all_match() {
    let r = rule(
        json!({"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.com"],
        "apiVersions": ["*"], "resources": ["widgets"]}),
    );
    assert!(rule_matches(&r, Operation::Create, &widgets()));
    assert!(rule_matches(&r, Operation::Update, &widgets()));
    assert!(!rule_matches(&r, Operation::Delete, &widgets()));
    assert!(!rule_matches(&r, Operation::Create, &pods("")));
    let other_version = rule(json!({"operations": ["*"], "apiGroups": ["*"],
        "apiVersions": ["v2"], "resources": ["*"]}));
    assert!(!rule_matches(&other_version, Operation::Create, &widgets()));
}

#[test]
fn scope_separates_cluster_from_namespaced_kinds() {
    let with_scope = |scope: &str| {
        rule(
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
            "resources": ["*"], "scope": scope}),
        )
    };
    assert!(rule_matches(
        &with_scope("Namespaced"),
        Operation::Create,
        &pods("")
    ));
    assert!(!rule_matches(
        &with_scope("Cluster"),
        Operation::Create,
        &pods("")
    ));
    assert!(rule_matches(
        &with_scope("Cluster"),
        Operation::Create,
        &widgets()
    ));
    assert!(!rule_matches(
        &with_scope("Namespaced"),
        Operation::Create,
        &widgets()
    ));
    assert!(rule_matches(
        &with_scope("*"),
        Operation::Create,
        &widgets()
    ));
}

#[test]
fn selectors_match_everything_when_empty_and_either_object_otherwise() {
    let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let team = labels(&[("team", "a")]);
    let none = labels(&[]);
    assert_eq!(selector_matches(None, &[&none]), Ok(true));
    let empty = LabelSelector::default();
    assert_eq!(selector_matches(Some(&empty), &[&none]), Ok(true));
    let wanted: LabelSelector =
        serde_json::from_value(json!({"matchLabels": {"team": "a"}})).unwrap();
    assert_eq!(selector_matches(Some(&wanted), &[&none]), Ok(false));
    assert_eq!(selector_matches(Some(&wanted), &[&none, &team]), Ok(true));
    let excluded: LabelSelector = serde_json::from_value(
        json!({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]}),
    )
    .unwrap();
    assert_eq!(selector_matches(Some(&excluded), &[&team]), Ok(false));
    let broken: LabelSelector =
        serde_json::from_value(json!({"matchExpressions": [{"key": "team", "operator": "Near"}]}))
            .unwrap();
    assert!(selector_matches(Some(&broken), &[&team]).is_err());
}

#[test]
fn the_webhook_configurations_are_never_intercepted() {
    let configs = Resource {
        group: "admissionregistration.k8s.io".into(),
        resource: "validatingwebhookconfigurations".into(),
        ..widgets()
    };
    assert!(is_exempt(&configs));
    assert!(!is_exempt(&widgets()));
    assert!(!is_exempt(&pods("")));
}

#[test]
fn timeouts_and_failure_policy_default_as_upstream_v1() {
    let webhook = Webhook::default();
    assert_eq!(webhook.timeout(), std::time::Duration::from_secs(10));
    assert!(!webhook.ignores_failures());
    let tuned = Webhook {
        timeout_seconds: Some(2),
        failure_policy: Some("Ignore".into()),
        ..Webhook::default()
    };
    assert_eq!(tuned.timeout(), std::time::Duration::from_secs(2));
    assert!(tuned.ignores_failures());
}
