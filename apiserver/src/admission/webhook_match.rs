//! Which webhooks a request goes to: rules, scope, namespace and object selectors. Pure.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules/
//! rules.go` (operations, apiGroups, apiVersions, resources with `*` and `pods/status` forms,
//! scope), `predicates/namespace/matcher.go` and `predicates/object/matcher.go` (label selectors;
//! an empty selector matches everything), and the exemption of the admission configuration kinds
//! themselves (webhooks never intercept them, so a broken webhook can always be removed).
//! minik simplifies: `matchPolicy: Equivalent` (another group/version of the same resource) is
//! not evaluated; a rule matches the request's own group/version.

use std::collections::BTreeMap;

use minik_api::k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, RuleWithOperations, WebhookClientConfig,
};
use minik_api::meta::LabelSelector;
use minik_api::workloads::selector_from_meta;
use serde::Deserialize;
use serde_json::Value;

/// What the request does (`admission.Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// `CREATE`, as rules and AdmissionReviews spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// The resource a request addresses, as the rules see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    pub group: String,
    pub version: String,
    /// The plural: `pods`.
    pub resource: String,
    /// `status`, `scale` … or empty.
    pub subresource: String,
    pub kind: String,
    /// Whether the kind lives in a namespace (`Namespace` itself does not).
    pub namespaced: bool,
}

/// One webhook of either configuration kind: the fields the dispatcher reads (stored objects
/// were defaulted and validated when written).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub name: String,
    pub client_config: WebhookClientConfig,
    #[serde(default)]
    pub rules: Vec<RuleWithOperations>,
    pub failure_policy: Option<String>,
    pub namespace_selector: Option<LabelSelector>,
    pub object_selector: Option<LabelSelector>,
    pub timeout_seconds: Option<i32>,
    #[serde(default)]
    pub admission_review_versions: Vec<String>,
    /// CEL conditions that must all hold for the webhook to be called (`match_conditions.rs`).
    #[serde(default)]
    pub match_conditions: Vec<MatchCondition>,
    /// `IfNeeded` or `Never` (mutating webhooks).
    pub reinvocation_policy: Option<String>,
}

impl Webhook {
    /// `failurePolicy: Ignore`; the v1 default is Fail.
    pub fn ignores_failures(&self) -> bool {
        self.failure_policy.as_deref() == Some("Ignore")
    }

    /// `timeoutSeconds`, default 10, at most 30 (validation refuses more).
    pub fn timeout(&self) -> std::time::Duration {
        let seconds = self.timeout_seconds.unwrap_or(10).clamp(1, 30);
        std::time::Duration::from_secs(seconds as u64)
    }
}

/// `rules.go`'s exemption: the configurations (and admission policies) of this group are never
/// sent to a webhook.
pub fn is_exempt(resource: &Resource) -> bool {
    resource.group == "admissionregistration.k8s.io"
}

fn listed(list: &[String], wanted: &str) -> bool {
    list.iter().any(|item| item == "*" || item == wanted)
}

/// `resources`: `pods` (no subresource), `pods/status`, `pods/*`, `*` (every resource, no
/// subresource), `*/status`, `*/*` (everything).
fn resource_listed(list: &[String], resource: &Resource) -> bool {
    list.iter().any(|item| {
        let (name, sub) = item.split_once('/').unwrap_or((item, ""));
        (name == "*" || name == resource.resource) && (sub == "*" || sub == resource.subresource)
    })
}

/// `scope`: `Cluster` matches cluster-scoped kinds (and Namespaces), `Namespaced` the others,
/// `*` (the default) both.
fn scope_matches(scope: Option<&str>, resource: &Resource) -> bool {
    match scope {
        Some("Cluster") => !resource.namespaced,
        Some("Namespaced") => resource.namespaced,
        _ => true,
    }
}

/// Whether one rule covers the request.
pub fn rule_matches(rule: &RuleWithOperations, operation: Operation, resource: &Resource) -> bool {
    let list = |l: &Option<Vec<String>>| l.clone().unwrap_or_default();
    listed(&list(&rule.operations), operation.as_str())
        && listed(&list(&rule.api_groups), &resource.group)
        && listed(&list(&rule.api_versions), &resource.version)
        && resource_listed(&list(&rule.resources), resource)
        && scope_matches(rule.scope.as_deref(), resource)
}

/// Whether any of the webhook's rules covers the request.
pub fn rules_match(webhook: &Webhook, operation: Operation, resource: &Resource) -> bool {
    webhook
        .rules
        .iter()
        .any(|rule| rule_matches(rule, operation, resource))
}

/// The labels of an object (none when it has none).
pub fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(|labels| BTreeMap::<String, String>::deserialize(labels).ok())
        .unwrap_or_default()
}

/// Whether a selector (absent or empty: everything) matches any of the label sets.
/// An unparseable selector is an error (it falls under the webhook's failurePolicy).
pub fn selector_matches(
    selector: Option<&LabelSelector>,
    label_sets: &[&BTreeMap<String, String>],
) -> Result<bool, String> {
    let Some(selector) = selector else {
        return Ok(true);
    };
    let selector = selector_from_meta(selector).map_err(|e| e.to_string())?;
    if selector.is_empty() {
        return Ok(true);
    }
    Ok(label_sets.iter().any(|labels| selector.matches(labels)))
}

#[cfg(test)]
#[path = "webhook_match_tests.rs"]
mod tests;
