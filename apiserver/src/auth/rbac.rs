//! RBAC: may this user do this, according to the Roles, ClusterRoles and their bindings?
//!
//! Kubernetes counterpart: `plugin/pkg/auth/authorizer/rbac/rbac.go` (`RBACAuthorizer.Authorize`,
//! `RulesFor`), `pkg/registry/rbac/validation/rule.go` (which bindings apply to a user,
//! docs/security.md#r2) and `pkg/apis/rbac/v1/evaluation_helpers.go` (how one rule matches,
//! docs/security.md#r1). Before RBAC, the chain of `pkg/kubeapiserver/authorizer/config.go`: the
//! `system:masters` group is allowed everything (docs/security.md#x6), then the Node authorizer
//! (`node.rs`) decides for kubelets.
//!
//! Everything here is a pure function over a [`Policy`] snapshot, tested by tables.
//! What minik simplifies: no aggregation (the bootstrap `admin`/`edit`/`view` are written out in
//! full), no escalation check on writes to roles and bindings (docs/security.md#r3).
//!
//! Read next: `bootstrap/` (the roles every cluster starts with), `node.rs`.

use std::collections::HashMap;

use minik_api::k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

use super::attributes::Attributes;
use super::node::{self, NodeDecision};
use super::UserInfo;

/// The group allowed everything.
pub const MASTERS: &str = "system:masters";

/// The four RBAC kinds as read from storage.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Every Role, by `(namespace, name)`.
    pub roles: HashMap<(String, String), Role>,
    /// Every ClusterRole, by name.
    pub cluster_roles: HashMap<String, ClusterRole>,
    /// Every RoleBinding.
    pub role_bindings: Vec<RoleBinding>,
    /// Every ClusterRoleBinding.
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
}

/// An authorizer's answer, with upstream's reason text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, and by what.
    Allow(String),
    /// Denied (RBAC's reason is empty: nothing granted it).
    Deny(String),
}

impl Decision {
    /// True for [`Decision::Allow`].
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }
}

/// The whole chain: `system:masters`, then the Node authorizer, then RBAC. `pod_node` is the
/// `spec.nodeName` of the pod the request names, when the caller looked it up for a node.
pub fn authorize(policy: &Policy, attributes: &Attributes, pod_node: Option<&str>) -> Decision {
    if attributes.user.groups.iter().any(|g| g == MASTERS) {
        return Decision::Allow(format!("allowed by the {MASTERS} group"));
    }
    if let Some(node) = node::node_name(&attributes.user) {
        match node::authorize(node, attributes, pod_node) {
            NodeDecision::Allow => return Decision::Allow("allowed by the node authorizer".into()),
            NodeDecision::Deny(reason) => return Decision::Deny(reason),
            NodeDecision::NoOpinion => {}
        }
    }
    // Borrowed, not cloned: this runs for every request (upstream's `VisitRulesFor` visits too).
    let mut allowed_by = None;
    visit_rules(
        policy,
        &attributes.user,
        &attributes.namespace,
        |binding, rules| {
            let found = rules.iter().any(|rule| rule_allows(rule, attributes));
            if found {
                allowed_by = Some(binding());
            }
            found
        },
    );
    match allowed_by {
        Some(binding) => Decision::Allow(format!("RBAC: allowed by {binding}")),
        None => Decision::Deny(String::new()),
    }
}

/// Every rule granted to `user` in `namespace` (empty: cluster-wide only), as
/// `SelfSubjectRulesReview` lists them.
pub fn rules_for(policy: &Policy, user: &UserInfo, namespace: &str) -> Vec<PolicyRule> {
    let mut found = Vec::new();
    visit_rules(policy, user, namespace, |_, rules| {
        found.extend_from_slice(rules);
        false
    });
    found
}

/// Calls `visit` with each binding that applies to `user` in `namespace` (a description made on
/// demand) and its role's rules, until `visit` returns true.
fn visit_rules(
    policy: &Policy,
    user: &UserInfo,
    namespace: &str,
    mut visit: impl FnMut(&dyn Fn() -> String, &[PolicyRule]) -> bool,
) {
    for binding in &policy.cluster_role_bindings {
        let subjects = binding.subjects.as_deref().unwrap_or_default();
        if subjects.iter().any(|s| applies_to(s, user, "")) {
            let name = binding.metadata.name.as_deref().unwrap_or("");
            let rules = role_rules(policy, &binding.role_ref, "");
            if visit(&|| format!("ClusterRoleBinding {name:?}"), rules) {
                return;
            }
        }
    }
    if namespace.is_empty() {
        return;
    }
    for binding in &policy.role_bindings {
        if binding.metadata.namespace.as_deref() != Some(namespace) {
            continue;
        }
        let subjects = binding.subjects.as_deref().unwrap_or_default();
        if subjects.iter().any(|s| applies_to(s, user, namespace)) {
            let name = binding.metadata.name.as_deref().unwrap_or("");
            let rules = role_rules(policy, &binding.role_ref, namespace);
            if visit(&|| format!("RoleBinding {name:?} in {namespace:?}"), rules) {
                return;
            }
        }
    }
}

/// The rules of the role a binding references (a RoleBinding may reference a ClusterRole).
fn role_rules<'p>(policy: &'p Policy, role_ref: &RoleRef, namespace: &str) -> &'p [PolicyRule] {
    let rules = match role_ref.kind.as_str() {
        "ClusterRole" => policy
            .cluster_roles
            .get(&role_ref.name)
            .and_then(|r| r.rules.as_deref()),
        "Role" => policy
            .roles
            .get(&(namespace.to_string(), role_ref.name.clone()))
            .and_then(|r| r.rules.as_deref()),
        _ => None,
    };
    rules.unwrap_or_default()
}

/// docs/security.md#r2: a User or Group by name, a ServiceAccount by its user name (its namespace
/// defaulting to the binding's).
fn applies_to(subject: &Subject, user: &UserInfo, binding_namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => subject.name == user.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let namespace = subject
                .namespace
                .as_deref()
                .filter(|ns| !ns.is_empty())
                .unwrap_or(binding_namespace);
            // `system:serviceaccount:{namespace}:{name}`, compared without building it.
            user.name
                .strip_prefix("system:serviceaccount:")
                .and_then(|rest| rest.strip_prefix(namespace))
                .and_then(|rest| rest.strip_prefix(':'))
                == Some(subject.name.as_str())
        }
        _ => false,
    }
}

/// docs/security.md#r1: verbs, groups, resources (`*`, exact `res/sub`, or `*/sub`; `pods/*` does
/// not cover `pods/log`) and names for resource requests; URLs (exact or `prefix*`) otherwise.
pub fn rule_allows(rule: &PolicyRule, attributes: &Attributes) -> bool {
    let has = |list: Option<&[String]>, value: &str| {
        list.unwrap_or_default()
            .iter()
            .any(|item| item == "*" || item == value)
    };
    if !has(Some(&rule.verbs), &attributes.verb) {
        return false;
    }
    if !attributes.resource_request {
        return rule
            .non_resource_urls
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|url| {
                url == "*"
                    || *url == attributes.path
                    || url
                        .strip_suffix('*')
                        .is_some_and(|prefix| attributes.path.starts_with(prefix))
            });
    }
    let names = rule.resource_names.as_deref().unwrap_or_default();
    has(rule.api_groups.as_deref(), &attributes.api_group)
        && resource_matches(rule.resources.as_deref().unwrap_or_default(), attributes)
        && (names.is_empty() || names.contains(&attributes.name))
}

fn resource_matches(resources: &[String], attributes: &Attributes) -> bool {
    let sub = attributes.subresource.as_str();
    resources.iter().any(|r| {
        let r = r.as_str();
        r == "*"
            || match r.split_once('/') {
                None => sub.is_empty() && r == attributes.resource,
                // `res/sub` exactly, or `*/sub` for any resource's `sub`.
                Some((res, rsub)) => {
                    !sub.is_empty() && rsub == sub && (res == attributes.resource || res == "*")
                }
            }
    })
}

#[cfg(test)]
#[path = "rbac_tests.rs"]
mod tests;
