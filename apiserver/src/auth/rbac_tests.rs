//! Table tests of the authorizer chain over the bootstrap policy plus a few objects of our own.
//!
//! Kubernetes counterpart: `plugin/pkg/auth/authorizer/rbac/rbac_test.go` and
//! `pkg/apis/rbac/v1/evaluation_helpers_test.go`.

use minik_api::k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use serde_json::json;

use super::super::attributes::request_attributes;
use super::super::bootstrap;
use super::*;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        uid: String::new(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}

/// The bootstrap policy, a Role `pod-reader` in `team` bound to alice, and a RoleBinding of the
/// ClusterRole `view` to group `viewers` in `team`.
fn policy() -> Policy {
    let mut policy = Policy::default();
    for role in bootstrap::cluster_roles() {
        policy
            .cluster_roles
            .insert(role.metadata.name.clone().unwrap(), role);
    }
    policy.cluster_role_bindings = bootstrap::cluster_role_bindings();
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "pod-reader", "namespace": "team"},
        "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"], "resourceNames": []},
                  {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"]}],
    }))
    .unwrap();
    policy
        .roles
        .insert(("team".into(), "pod-reader".into()), role);
    let bindings: Vec<RoleBinding> = serde_json::from_value(json!([
        {"metadata": {"name": "alice-reads", "namespace": "team"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
         "subjects": [{"kind": "User", "name": "alice"}]},
        {"metadata": {"name": "viewers", "namespace": "team"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "Group", "name": "viewers"}, {"kind": "ServiceAccount", "name": "robot"}]},
    ]))
    .unwrap();
    policy.role_bindings = bindings;
    policy
}

const AUTH: &str = "system:authenticated";

/// Each identity against requests its role allows and refuses.
#[test]
fn identities_get_what_their_roles_grant() {
    let policy = policy();
    let admin = user("kubernetes-admin", &["system:masters", AUTH]);
    let alice = user("alice", &[AUTH]);
    let viewer = user("carol", &["viewers", AUTH]);
    let robot = user("system:serviceaccount:team:robot", &[AUTH]);
    let scheduler = user("system:kube-scheduler", &[AUTH]);
    let proxy = user("system:kube-proxy", &[AUTH]);
    let endpoints = user(
        "system:serviceaccount:kube-system:endpoint-controller",
        &[AUTH],
    );
    let nobody = user("dave", &[AUTH]);
    let kcm = user("system:kube-controller-manager", &[AUTH]);
    let cases: Vec<(&UserInfo, &str, &str, bool)> = vec![
        (&admin, "DELETE", "/api/v1/nodes/node-1", true),
        (&admin, "GET", "/metrics", true),
        (&alice, "GET", "/api/v1/namespaces/team/pods", true),
        (&alice, "GET", "/api/v1/namespaces/team/pods/web", true),
        (&alice, "GET", "/api/v1/namespaces/team/pods/web/log", false),
        (&alice, "GET", "/api/v1/namespaces/other/pods", false),
        (&alice, "GET", "/api/v1/pods", false),
        (&alice, "DELETE", "/api/v1/namespaces/team/pods/web", false),
        (
            &alice,
            "GET",
            "/api/v1/namespaces/team/configmaps/settings",
            true,
        ),
        (
            &alice,
            "GET",
            "/api/v1/namespaces/team/configmaps/other",
            false,
        ),
        (
            &viewer,
            "GET",
            "/apis/apps/v1/namespaces/team/deployments",
            true,
        ),
        (&viewer, "POST", "/api/v1/namespaces/team/pods", false),
        (&viewer, "GET", "/api/v1/namespaces/team/secrets", false),
        (&robot, "GET", "/api/v1/namespaces/team/services", true),
        (
            &scheduler,
            "POST",
            "/api/v1/namespaces/default/pods/web/binding",
            true,
        ),
        (&scheduler, "GET", "/api/v1/nodes", true),
        (&scheduler, "POST", "/api/v1/namespaces/default/pods", false),
        (&proxy, "GET", "/api/v1/endpoints", true),
        (
            &proxy,
            "DELETE",
            "/api/v1/namespaces/default/services/web",
            false,
        ),
        (
            &endpoints,
            "PUT",
            "/api/v1/namespaces/default/endpoints/web",
            true,
        ),
        (
            &endpoints,
            "POST",
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            true,
        ),
        (
            &endpoints,
            "DELETE",
            "/api/v1/namespaces/default/pods/web",
            false,
        ),
        (
            &kcm,
            "POST",
            "/apis/apps/v1/namespaces/default/replicasets",
            true,
        ),
        (&kcm, "POST", "/api/v1/namespaces/default/pods", true),
        (
            &kcm,
            "PUT",
            "/apis/apps/v1/namespaces/default/deployments/web/status",
            true,
        ),
        (
            &kcm,
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager",
            true,
        ),
        (&kcm, "DELETE", "/api/v1/nodes/node-1", true),
        (&kcm, "POST", "/api/v1/nodes", false),
        (&nobody, "GET", "/api", true),
        (&nobody, "GET", "/apis/apps/v1", true),
        (&nobody, "GET", "/healthz", true),
        (&nobody, "GET", "/metrics", false),
        (
            &nobody,
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            true,
        ),
        (
            &nobody,
            "POST",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            false,
        ),
        (&nobody, "GET", "/api/v1/namespaces/default/pods", false),
    ];
    for (who, method, path, allowed) in cases {
        let attributes = request_attributes(who.clone(), method, path, "");
        let decision = authorize(&policy, &attributes, None);
        assert_eq!(
            decision.allowed(),
            allowed,
            "{} {method} {path}: {decision:?}",
            who.name
        );
    }
}

/// docs/security.md#r1's matching rules.
#[test]
fn rules_match_by_verb_group_resource_subresource_and_url() {
    let rule = |value: serde_json::Value| -> PolicyRule { serde_json::from_value(value).unwrap() };
    let attributes =
        |method: &str, path: &str| request_attributes(UserInfo::default(), method, path, "");
    let log = attributes("GET", "/api/v1/namespaces/a/pods/web/log");
    assert!(rule_allows(
        &rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]})),
        &log
    ));
    assert!(rule_allows(
        &rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]})),
        &log
    ));
    assert!(!rule_allows(
        &rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/*"]})),
        &log
    ));
    assert!(!rule_allows(
        &rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]})),
        &log
    ));
    assert!(!rule_allows(
        &rule(json!({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["*"]})),
        &log
    ));
    let healthz = attributes("GET", "/healthz/etcd");
    assert!(rule_allows(
        &rule(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz/*"]})),
        &healthz
    ));
    assert!(!rule_allows(
        &rule(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]})),
        &healthz
    ));
    assert!(!rule_allows(
        &rule(json!({"verbs": ["post"], "nonResourceURLs": ["*"]})),
        &healthz
    ));
}

/// Nodes are decided by the Node authorizer before RBAC.
#[test]
fn nodes_are_limited_to_their_own_pods() {
    let policy = policy();
    let node = user("system:node:node-1", &["system:nodes", AUTH]);
    let delete = request_attributes(
        node.clone(),
        "DELETE",
        "/api/v1/namespaces/default/pods/web",
        "",
    );
    assert!(authorize(&policy, &delete, Some("node-1")).allowed());
    let Decision::Deny(reason) = authorize(&policy, &delete, Some("node-2")) else {
        panic!("a node deleted another node's pod");
    };
    assert!(reason.contains("node-1"), "{reason}");
    let secret = request_attributes(node, "DELETE", "/api/v1/namespaces/default/secrets/s", "");
    assert!(!authorize(&policy, &secret, None).allowed());
}

/// SelfSubjectRulesReview's view: cluster rules plus the namespace's.
#[test]
fn rules_for_collects_cluster_and_namespace_rules() {
    let policy = policy();
    let alice = user("alice", &[AUTH]);
    let in_team = rules_for(&policy, &alice, "team");
    let elsewhere = rules_for(&policy, &alice, "other");
    assert_eq!(in_team.len(), elsewhere.len() + 2);
    assert!(elsewhere.iter().any(|r| r.non_resource_urls.is_some()));
}

/// The controller manager's identity holds what the DaemonSet, CronJob and replication
/// controllers write (issue 20), and no more.
#[test]
fn the_controller_manager_may_run_daemon_sets_and_replication_controllers() {
    let policy = policy();
    let kcm = user("system:kube-controller-manager", &[AUTH]);
    let cases = [
        (
            "PATCH",
            "/apis/apps/v1/namespaces/default/daemonsets/agent/status",
            true,
        ),
        (
            "POST",
            "/apis/apps/v1/namespaces/default/controllerrevisions",
            true,
        ),
        (
            "DELETE",
            "/apis/apps/v1/namespaces/default/controllerrevisions/agent-1",
            true,
        ),
        (
            "PATCH",
            "/api/v1/namespaces/default/replicationcontrollers/old/status",
            true,
        ),
        ("PATCH", "/api/v1/namespaces/default/pods/agent-x", true),
        (
            "DELETE",
            "/apis/apps/v1/namespaces/default/daemonsets/agent",
            true,
        ),
        ("POST", "/apis/apps/v1/namespaces/default/daemonsets", false),
        ("POST", "/apis/batch/v1/namespaces/default/jobs", true),
        (
            "PATCH",
            "/apis/batch/v1/namespaces/default/cronjobs/tick/status",
            true,
        ),
    ];
    for (method, path, allowed) in cases {
        let attributes = request_attributes(kcm.clone(), method, path, "");
        let decision = authorize(&policy, &attributes, None);
        assert_eq!(decision.allowed(), allowed, "{method} {path}: {decision:?}");
    }
}

/// The cluster autoscaler (issue 24): nodes, evictions and its status ConfigMap, nothing more.
#[test]
fn the_cluster_autoscaler_manages_nodes_but_no_workloads() {
    let policy = policy();
    let autoscaler = user("system:cluster-autoscaler", &[AUTH]);
    let status = "/api/v1/namespaces/kube-system/configmaps/cluster-autoscaler-status";
    let cases = [
        ("GET", "/api/v1/nodes", true),
        ("PATCH", "/api/v1/nodes/node-101", true),
        ("DELETE", "/api/v1/nodes/node-101", true),
        ("GET", "/api/v1/pods", true),
        ("POST", "/api/v1/namespaces/default/pods/web/eviction", true),
        ("PATCH", status, true),
        (
            "PATCH",
            "/api/v1/namespaces/kube-system/configmaps/other",
            false,
        ),
        ("DELETE", "/api/v1/namespaces/default/pods/web", false),
        ("GET", "/api/v1/namespaces/default/secrets", false),
        (
            "PATCH",
            "/apis/apps/v1/namespaces/default/deployments/web",
            false,
        ),
    ];
    for (method, path, allowed) in cases {
        let attributes = request_attributes(autoscaler.clone(), method, path, "");
        let decision = authorize(&policy, &attributes, None);
        assert_eq!(decision.allowed(), allowed, "{method} {path}: {decision:?}");
    }
}
