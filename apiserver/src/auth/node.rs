//! The Node authorizer: what a kubelet (`system:node:<name>` in `system:nodes`) may do.
//!
//! Kubernetes counterpart: `plugin/pkg/auth/authorizer/node/node_authorizer.go` together with the
//! NodeRestriction admission plugin (`plugin/pkg/admission/noderestriction/admission.go`),
//! docs/security.md#r6. A node may read nodes, pods and services; it may write only its own Node
//! and Lease, and change or delete only pods bound to it; it may write events; it may read
//! ServiceAccounts and request their tokens (the handler then checks the pod is its own).
//!
//! Secrets, ConfigMaps and PersistentVolumeClaims (docs/kubernetes-rules.md#c11): a node may
//! get, list or watch one only when the request names it (by path, or a list/watch with
//! `fieldSelector=metadata.name=NAME`) and a non-terminated pod bound to the node references it
//! ([`pod_references`]). Upstream keeps a graph of these edges; minik's filter scans the stored
//! pods of the namespace per request instead (`auth/mod.rs`), same answer.
//!
//! Anything else gets no opinion and falls through to RBAC, where `system:node` has no bindings.
//! What minik simplifies: no mirror pods (a node may not create pods), no graph, no
//! PersistentVolumes (a node reads none), no `node-restriction.kubernetes.io/` label checks.

use serde_json::Value;

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

/// What `node` may do. `pod_node` is the node the named object is bound to: for a pod, its
/// `spec.nodeName`; for a Secret, ConfigMap or PVC, the asking node when one of its
/// non-terminated pods references the object (see [`pod_references`]), else `None`.
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
        ("", "secrets" | "configmaps" | "persistentvolumeclaims") if !reading => {
            decide(false, "can only read resources of this type")
        }
        // docs/kubernetes-rules.md#c11: one named object, used by one of the node's pods.
        ("", "secrets" | "configmaps" | "persistentvolumeclaims" | "persistentvolumes") => {
            if !attributes.name.is_empty() && pod_node == Some(node) {
                NodeDecision::Allow
            } else {
                NodeDecision::Deny(format!(
                    "no relationship found between node '{node}' and this object"
                ))
            }
        }
        _ => NodeDecision::NoOpinion,
    }
}

/// The claims a pod bound to `node` (and not terminated) mounts: the graph's pod → PVC edges,
/// which lead on to the PersistentVolume each claim is bound to (pvc → pv).
pub fn claims_of<'a>(pod: &'a Value, node: &str) -> Vec<&'a str> {
    let terminated = matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    );
    if pod["spec"]["nodeName"].as_str() != Some(node) || terminated {
        return Vec::new();
    }
    references(&pod["spec"])
        .into_iter()
        .filter(|(kind, _)| *kind == "persistentvolumeclaims")
        .map(|(_, name)| name)
        .collect()
}

/// The resources a node reads only through a pod that uses them.
pub const POD_REFERENCED: &[&str] = &["secrets", "configmaps", "persistentvolumeclaims"];

/// True when `pod` (a stored Pod) is bound to `node`, has not terminated, and uses the
/// `resource` named `name`: in a volume (also projected), an env `valueFrom`, an `envFrom` of
/// any container (init and ephemeral too), or its `imagePullSecrets` — upstream's graph edges
/// (`plugin/pkg/auth/authorizer/node/graph_populator.go`).
pub fn pod_references(pod: &Value, node: &str, resource: &str, name: &str) -> bool {
    let spec = &pod["spec"];
    let terminated = matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    );
    if spec["nodeName"].as_str() != Some(node) || terminated {
        return false;
    }
    references(spec)
        .into_iter()
        .any(|(kind, used)| kind == resource && used == name)
}

/// Every (resource, name) a pod spec references.
fn references<'a>(spec: &'a Value) -> Vec<(&'static str, &'a str)> {
    let mut out = Vec::new();
    let mut push =
        |kind: &'static str, name: &'a Value| out.extend(name.as_str().map(|n| (kind, n)));
    for secret in items(&spec["imagePullSecrets"]) {
        push("secrets", &secret["name"]);
    }
    for volume in items(&spec["volumes"]) {
        push("secrets", &volume["secret"]["secretName"]);
        push("configmaps", &volume["configMap"]["name"]);
        push(
            "persistentvolumeclaims",
            &volume["persistentVolumeClaim"]["claimName"],
        );
        for source in items(&volume["projected"]["sources"]) {
            push("secrets", &source["secret"]["name"]);
            push("configmaps", &source["configMap"]["name"]);
        }
    }
    let containers = ["containers", "initContainers", "ephemeralContainers"];
    for container in containers.iter().flat_map(|list| items(&spec[*list])) {
        for env in items(&container["env"]) {
            push("secrets", &env["valueFrom"]["secretKeyRef"]["name"]);
            push("configmaps", &env["valueFrom"]["configMapKeyRef"]["name"]);
        }
        for from in items(&container["envFrom"]) {
            push("secrets", &from["secretRef"]["name"]);
            push("configmaps", &from["configMapRef"]["name"]);
        }
    }
    out
}

fn items(list: &Value) -> impl Iterator<Item = &Value> {
    list.as_array().into_iter().flatten()
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
        let secret = "/api/v1/namespaces/default/secrets/s";
        assert_eq!(decide("GET", secret, Some("node-1")), Allow);
        assert!(deny(decide("GET", secret, None)));
        assert!(deny(decide("GET", "/api/v1/secrets", Some("node-1"))));
        let by_name = "fieldSelector=metadata.name%3Ds&watch=true";
        let watch = request_attributes(
            node_user("node-1"),
            "GET",
            "/api/v1/namespaces/default/secrets",
            by_name,
        );
        assert_eq!(authorize("node-1", &watch, Some("node-1")), Allow);
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
        let Deny(reason) = decide("GET", "/api/v1/namespaces/default/configmaps", None) else {
            panic!("an unnamed list of configmaps is allowed");
        };
        assert_eq!(
            reason,
            "no relationship found between node 'node-1' and this object"
        );
        assert_eq!(decide("GET", "/api", None), NoOpinion);
    }

    /// Every kind of reference is an edge; other nodes' and finished pods' are not.
    #[test]
    fn pods_reference_what_they_mount_and_read() {
        let pod = serde_json::json!({
            "spec": {
                "nodeName": "node-1",
                "imagePullSecrets": [{"name": "pull"}],
                "volumes": [
                    {"name": "a", "secret": {"secretName": "vol-secret"}},
                    {"name": "b", "configMap": {"name": "vol-cm"}},
                    {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "d", "projected": {"sources": [{"configMap": {"name": "proj-cm"}}]}}
                ],
                "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-env"}}]}],
                "containers": [{"name": "c", "env": [
                    {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "k"}}}
                ]}],
                "ephemeralContainers": [{"name": "e", "envFrom": [{"configMapRef": {"name": "eph"}}]}]
            }
        });
        let uses = |resource, name| pod_references(&pod, "node-1", resource, name);
        for (resource, name) in [
            ("secrets", "pull"),
            ("secrets", "vol-secret"),
            ("configmaps", "vol-cm"),
            ("persistentvolumeclaims", "data"),
            ("configmaps", "proj-cm"),
            ("secrets", "init-env"),
            ("configmaps", "env-cm"),
            ("configmaps", "eph"),
        ] {
            assert!(uses(resource, name), "{resource}/{name}");
        }
        assert!(!uses("configmaps", "vol-secret"));
        assert!(!uses("secrets", "other"));
        assert!(!pod_references(&pod, "node-2", "secrets", "pull"));
        let mut done = pod.clone();
        done["status"]["phase"] = "Succeeded".into();
        assert!(!pod_references(&done, "node-1", "secrets", "pull"));
    }
}
