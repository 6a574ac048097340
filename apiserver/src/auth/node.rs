//! The Node authorizer: what a kubelet (`system:node:<name>` in `system:nodes`) may do.
//!
//! Kubernetes counterpart: `plugin/pkg/auth/authorizer/node/node_authorizer.go` together with the
//! NodeRestriction admission plugin (`plugin/pkg/admission/noderestriction/admission.go`),
//! docs/security.md#r6. A node may read nodes, pods and services; it may write only its own Node
//! and Lease, and change or delete only pods bound to it; it may write events; it may read
//! ServiceAccounts and request their tokens (the handler then checks the pod is its own). Secrets,
//! config maps and volumes are refused outright: minik's kubelet mounts none, so the upstream
//! graph of which pod uses which is not needed.
//!
//! Anything else gets no opinion and falls through to RBAC, where `system:node` has no bindings.
//! What minik simplifies: no mirror pods (a node may not create pods), no graph, no
//! `node-restriction.kubernetes.io/` label checks.

use super::attributes::Attributes;
use super::UserInfo;

/// The Node authorizer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeDecision {
    /// Allowed.
    Allow,
    /// Refused, with the reason upstream's authorizer gives.
    Deny(String),
    /// Not the Node authorizer's business: RBAC decides.
    NoOpinion,
}

/// The node a user is the kubelet of: `system:node:<name>` and in group `system:nodes`.
pub fn node_name(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix("system:node:")?;
    (!name.is_empty() && user.groups.iter().any(|g| g == "system:nodes")).then_some(name)
}

const READ: &[&str] = &["get", "list", "watch"];

/// What `node` may do. `pod_node` is the `spec.nodeName` of the pod a pod write names.
pub fn authorize(node: &str, attributes: &Attributes, pod_node: Option<&str>) -> NodeDecision {
    if !attributes.resource_request {
        return NodeDecision::NoOpinion;
    }
    let verb = attributes.verb.as_str();
    let reading = READ.contains(&verb);
    let own = |name: &str| name.is_empty() || name == node;
    let decide = |allowed: bool, why: &str| {
        if allowed {
            NodeDecision::Allow
        } else {
            NodeDecision::Deny(format!("node '{node}' {why}"))
        }
    };
    match (attributes.api_group.as_str(), attributes.resource.as_str()) {
        ("", "nodes") => decide(
            reading || (own(&attributes.name) && verb != "deletecollection"),
            "cannot modify node",
        ),
        ("", "pods") => match (verb, attributes.subresource.as_str()) {
            (_, "") if reading => NodeDecision::Allow,
            ("delete", "") | ("update" | "patch", "status") => decide(
                pod_node == Some(node),
                "can only modify pods with spec.nodeName set to itself",
            ),
            _ => decide(false, "cannot modify pods"),
        },
        ("coordination.k8s.io", "leases") => decide(
            attributes.namespace == "kube-node-lease" && own(&attributes.name),
            "can only access its own lease",
        ),
        ("" | "events.k8s.io", "events") => decide(
            matches!(verb, "create" | "update" | "patch"),
            "can only write events",
        ),
        ("", "services" | "endpoints") | ("discovery.k8s.io", "endpointslices") => {
            decide(reading, "can only read services")
        }
        // The token volume: a kubelet reads its pods' accounts and asks for their tokens; the
        // TokenRequest handler then holds it to pods bound to it (NodeRestriction).
        ("", "serviceaccounts") => decide(
            matches!(
                (verb, attributes.subresource.as_str()),
                ("get", "") | ("create", "token")
            ),
            "can only get service accounts and request their tokens",
        ),
        // Upstream allows only objects a pod bound to the node references (its graph); minik's
        // kubelet watches every ConfigMap and Secret and filters itself, so it may read them all.
        ("", "secrets" | "configmaps") => decide(reading, "can only read secrets and configmaps"),
        ("", "persistentvolumeclaims" | "persistentvolumes") => decide(
            false,
            "has no relationship to the object (minik mounts none)",
        ),
        _ => NodeDecision::NoOpinion,
    }
}

#[cfg(test)]
mod tests {
    use super::super::attributes::request_attributes;
    use super::*;

    fn node_user(name: &str) -> UserInfo {
        UserInfo {
            name: format!("system:node:{name}"),
            uid: String::new(),
            groups: vec!["system:nodes".into(), "system:authenticated".into()],
        }
    }

    fn decide(method: &str, path: &str, pod_node: Option<&str>) -> NodeDecision {
        let attributes = request_attributes(node_user("node-1"), method, path, "");
        authorize("node-1", &attributes, pod_node)
    }

    /// Only `system:node:<n>` in `system:nodes` is a node.
    #[test]
    fn node_identity_needs_name_and_group() {
        assert_eq!(node_name(&node_user("n1")), Some("n1"));
        let mut no_group = node_user("n1");
        no_group.groups.clear();
        assert_eq!(node_name(&no_group), None);
        assert_eq!(node_name(&UserInfo::default()), None);
    }

    /// The rules of docs/security.md#r6, case by case.
    #[test]
    fn a_node_writes_only_its_own_objects() {
        use NodeDecision::*;
        let deny = |d: NodeDecision| matches!(d, Deny(_));
        assert_eq!(decide("GET", "/api/v1/nodes", None), Allow);
        assert_eq!(decide("PATCH", "/api/v1/nodes/node-1/status", None), Allow);
        assert_eq!(decide("POST", "/api/v1/nodes", None), Allow);
        assert!(deny(decide("PATCH", "/api/v1/nodes/node-2/status", None)));
        assert!(deny(decide("DELETE", "/api/v1/nodes/node-2", None)));
        assert_eq!(decide("GET", "/api/v1/pods", None), Allow);
        let own_pod = "/api/v1/namespaces/default/pods/web";
        assert_eq!(decide("DELETE", own_pod, Some("node-1")), Allow);
        assert!(deny(decide("DELETE", own_pod, Some("node-2"))));
        assert!(deny(decide("DELETE", own_pod, None)));
        let status = "/api/v1/namespaces/default/pods/web/status";
        assert_eq!(decide("PATCH", status, Some("node-1")), Allow);
        assert!(deny(decide("PATCH", status, Some("node-2"))));
        assert!(deny(decide(
            "POST",
            "/api/v1/namespaces/default/pods",
            None
        )));
        assert!(deny(decide(
            "POST",
            "/api/v1/namespaces/default/pods/web/binding",
            Some("node-1")
        )));
        let lease = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
        assert_eq!(decide("PUT", &format!("{lease}/node-1"), None), Allow);
        assert_eq!(decide("POST", lease, None), Allow);
        assert!(deny(decide("PUT", &format!("{lease}/node-2"), None)));
        assert_eq!(
            decide("POST", "/api/v1/namespaces/default/events", None),
            Allow
        );
        assert!(deny(decide(
            "DELETE",
            "/api/v1/namespaces/default/events/e",
            None
        )));
        assert_eq!(
            decide("GET", "/api/v1/namespaces/default/secrets/s", None),
            Allow
        );
        assert!(deny(decide(
            "PUT",
            "/api/v1/namespaces/default/secrets/s",
            None
        )));
        assert_eq!(decide("GET", "/api/v1/services", None), Allow);
        let account = "/api/v1/namespaces/default/serviceaccounts/default";
        assert_eq!(decide("GET", account, None), Allow);
        assert_eq!(decide("POST", &format!("{account}/token"), None), Allow);
        assert!(deny(decide("DELETE", account, None)));
        assert!(deny(decide(
            "POST",
            "/api/v1/namespaces/default/services",
            None
        )));
        assert_eq!(decide("GET", "/apis/apps/v1/deployments", None), NoOpinion);
        assert_eq!(decide("GET", "/api", None), NoOpinion);
    }
}
