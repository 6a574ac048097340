//! The policy rules of the bootstrap roles: small builders (`rule`, `named`, `urls`, `events`) and
//! one function per role's rule list, as upstream's `bootstrappolicy/policy.go` and
//! `controller_policy.go` write them. [`super`] turns them into ClusterRoles and binds them.

use minik_api::k8s_openapi::api::rbac::v1::PolicyRule;

pub(super) const READ: &[&str] = &["get", "list", "watch"];
pub(super) const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
pub(super) const ALL: &[&str] = &["*"];

pub(super) fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A rule on resources of `groups`.
pub(super) fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: strings(verbs),
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        ..PolicyRule::default()
    }
}

/// A rule on one named object.
pub(super) fn named(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    names: &[&str],
) -> PolicyRule {
    PolicyRule {
        resource_names: Some(strings(names)),
        ..rule(verbs, groups, resources)
    }
}

/// A rule on non-resource URLs.
pub(super) fn urls(verbs: &[&str], paths: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: strings(verbs),
        non_resource_urls: Some(strings(paths)),
        ..PolicyRule::default()
    }
}

pub(super) fn events() -> PolicyRule {
    rule(
        &["create", "patch", "update"],
        &["", "events.k8s.io"],
        &["events"],
    )
}

pub(super) const HEALTH: &[&str] = &["/healthz", "/livez", "/readyz", "/version", "/version/"];

/// Read access shared by `view`, `edit` and `admin` (no secrets: docs/security.md#r5).
pub(super) fn view_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            READ,
            &[""],
            &[
                "pods",
                "pods/log",
                "pods/status",
                "services",
                "services/status",
                "endpoints",
                "events",
                "configmaps",
                "persistentvolumeclaims",
                "serviceaccounts",
                "namespaces",
                "namespaces/status",
                "replicationcontrollers",
            ],
        ),
        rule(
            READ,
            &["apps"],
            &[
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
                "statefulsets",
                "daemonsets",
            ],
        ),
        rule(READ, &["discovery.k8s.io"], &["endpointslices"]),
        rule(READ, &["events.k8s.io"], &["events"]),
        rule(
            READ,
            &["policy"],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
    ]
}

pub(super) fn edit_rules() -> Vec<PolicyRule> {
    let mut rules = view_rules();
    rules.push(rule(
        WRITE,
        &[""],
        &[
            "pods",
            "services",
            "endpoints",
            "configmaps",
            "secrets",
            "persistentvolumeclaims",
            "serviceaccounts",
            "replicationcontrollers",
        ],
    ));
    rules.push(rule(READ, &[""], &["secrets"]));
    // Upstream's `system:aggregate-to-edit`: exec, attach and port-forward are read and written
    // (a WebSocket upgrade is a GET, checked again as `create` by the handler).
    let streams = &["pods/attach", "pods/exec", "pods/portforward", "pods/proxy"];
    rules.push(rule(READ, &[""], streams));
    rules.push(rule(WRITE, &[""], streams));
    rules.push(rule(&["create"], &[""], &["pods/eviction", "pods/binding"]));
    // `kubectl debug` adds ephemeral containers with a patch of this subresource.
    let ephemeral = &["pods/ephemeralcontainers"];
    rules.push(rule(&["patch", "update"], &[""], ephemeral));
    rules.push(rule(
        WRITE,
        &["apps"],
        &[
            "deployments",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "daemonsets",
        ],
    ));
    rules.push(rule(WRITE, &["discovery.k8s.io"], &["endpointslices"]));
    rules.push(rule(WRITE, &["policy"], &["poddisruptionbudgets"]));
    rules
}

pub(super) fn admin_rules() -> Vec<PolicyRule> {
    let mut rules = edit_rules();
    rules.push(rule(
        &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
        &["rbac.authorization.k8s.io"],
        &["roles", "rolebindings"],
    ));
    rules.push(rule(
        &["create"],
        &["authorization.k8s.io"],
        &["localsubjectaccessreviews"],
    ));
    rules
}

/// Upstream's `system:node` rules (bound to nobody: the Node authorizer decides for kubelets).
pub(super) fn node_rules() -> Vec<PolicyRule> {
    vec![
        rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
        rule(
            &["create"],
            &["authorization.k8s.io"],
            &["subjectaccessreviews", "localsubjectaccessreviews"],
        ),
        rule(READ, &[""], &["services", "nodes"]),
        rule(
            &[
                "create", "get", "list", "watch", "patch", "update", "delete",
            ],
            &[""],
            &["nodes", "nodes/status"],
        ),
        rule(
            &["get", "list", "watch", "create", "delete"],
            &[""],
            &["pods"],
        ),
        rule(&["update", "patch"], &[""], &["pods/status"]),
        rule(&["create"], &[""], &["pods/eviction"]),
        rule(
            &["get"],
            &[""],
            &[
                "secrets",
                "configmaps",
                "persistentvolumeclaims",
                "persistentvolumes",
            ],
        ),
        rule(
            &["get", "create", "update", "patch", "delete"],
            &["coordination.k8s.io"],
            &["leases"],
        ),
        events(),
    ]
}

pub(super) fn scheduler_rules() -> Vec<PolicyRule> {
    vec![
        events(),
        rule(&["create"], &["coordination.k8s.io"], &["leases"]),
        named(
            &["get", "update"],
            &["coordination.k8s.io"],
            &["leases"],
            &["kube-scheduler"],
        ),
        rule(
            READ,
            &[""],
            &[
                "nodes",
                "namespaces",
                "services",
                "persistentvolumeclaims",
                "persistentvolumes",
                "replicationcontrollers",
            ],
        ),
        rule(&["get", "list", "watch", "delete"], &[""], &["pods"]),
        rule(&["create"], &[""], &["pods/binding", "bindings"]),
        rule(&["patch", "update"], &[""], &["pods/status"]),
        rule(READ, &["apps"], &["replicasets", "statefulsets"]),
        // The VolumeBinding filter reads the claims' classes (issue 20).
        rule(READ, &["storage.k8s.io"], &["storageclasses"]),
    ]
}

pub(super) fn controller_manager_rules() -> Vec<PolicyRule> {
    vec![
        events(),
        rule(&["create"], &["coordination.k8s.io"], &["leases"]),
        named(
            &["get", "update"],
            &["coordination.k8s.io"],
            &["leases"],
            &["kube-controller-manager"],
        ),
        rule(&["list", "watch"], &["*"], &["*"]),
        rule(
            &["create", "get", "update"],
            &[""],
            &["secrets", "serviceaccounts"],
        ),
        rule(&["create"], &[""], &["serviceaccounts/token"]),
        rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
        rule(
            &["create"],
            &["authorization.k8s.io"],
            &["subjectaccessreviews"],
        ),
    ]
}

pub(super) fn endpoint_rules() -> Vec<PolicyRule> {
    vec![
        rule(READ, &[""], &["services", "pods"]),
        rule(
            &["get", "list", "create", "update", "delete"],
            &[""],
            &["endpoints"],
        ),
        rule(&["create"], &[""], &["endpoints/restricted"]),
        events(),
    ]
}

pub(super) fn endpoint_slice_rules() -> Vec<PolicyRule> {
    vec![
        rule(READ, &[""], &["services", "pods", "nodes", "endpoints"]),
        rule(
            &["create", "update", "delete"],
            &[""],
            &["services/finalizers"],
        ),
        rule(
            &["get", "list", "watch", "create", "update", "delete"],
            &["discovery.k8s.io"],
            &["endpointslices"],
        ),
        events(),
    ]
}

pub(super) fn deployment_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            &["get", "list", "watch", "update"],
            &["apps"],
            &["deployments"],
        ),
        rule(
            &["update"],
            &["apps"],
            &["deployments/status", "deployments/finalizers"],
        ),
        rule(
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
            &["apps"],
            &["replicasets"],
        ),
        rule(&["get", "list", "watch", "update"], &[""], &["pods"]),
        events(),
    ]
}

pub(super) fn replica_set_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            &["get", "list", "watch", "update"],
            &["apps"],
            &["replicasets"],
        ),
        rule(
            &["update"],
            &["apps"],
            &["replicasets/status", "replicasets/finalizers"],
        ),
        rule(
            &["list", "watch", "patch", "create", "delete"],
            &[""],
            &["pods"],
        ),
        events(),
    ]
}

pub(super) fn proxier_rules() -> Vec<PolicyRule> {
    vec![
        rule(&["list", "watch"], &[""], &["services", "endpoints"]),
        rule(READ, &[""], &["nodes"]),
        rule(
            &["list", "watch"],
            &["discovery.k8s.io"],
            &["endpointslices"],
        ),
        connection_report(),
        events(),
    ]
}

/// minik's connection reports (`kube-system/connections-<writer>`, issue 24's idle rule): the
/// proxy and the ingress write their own. RBAC cannot name an object it has not seen created, so
/// the rule is on ConfigMaps (upstream's kube-proxy has no such right: its report is minik's).
fn connection_report() -> PolicyRule {
    rule(&["get", "create", "patch"], &[""], &["configmaps"])
}

/// upstream's `system:controller:service-controller` (cloud-provider), which minik's load
/// balancer runs as: it reads Services and writes their status.
pub(super) fn service_controller_rules() -> Vec<PolicyRule> {
    vec![
        rule(&["get", "list", "watch"], &[""], &["services"]),
        rule(&["patch", "update"], &[""], &["services/status"]),
        rule(
            &["list", "watch"],
            &["discovery.k8s.io"],
            &["endpointslices"],
        ),
        events(),
    ]
}

/// The ingress controller's role, as ingress-nginx's chart writes it (minik installs it at
/// bootstrap, being the cluster's one ingress controller): Ingresses and their status, its
/// IngressClass, and the Services and slices it routes to.
pub(super) fn ingress_controller_rules() -> Vec<PolicyRule> {
    vec![
        rule(&["get", "list", "watch"], &[""], &["services"]),
        rule(
            &["list", "watch"],
            &["discovery.k8s.io"],
            &["endpointslices"],
        ),
        rule(
            &["get", "list", "watch"],
            &["networking.k8s.io"],
            &["ingresses"],
        ),
        rule(
            &["update", "patch"],
            &["networking.k8s.io"],
            &["ingresses/status"],
        ),
        rule(
            &["get", "list", "watch", "create"],
            &["networking.k8s.io"],
            &["ingressclasses"],
        ),
        connection_report(),
        events(),
    ]
}

/// metrics-server: upstream's `system:metrics-server` (read pods and nodes, scrape the kubelets'
/// `nodes/stats` and `nodes/metrics`), plus what minik's metrics-server writes for itself at start
/// instead of a manifest: its Endpoints and its APIService.
pub(super) fn metrics_server_rules() -> Vec<PolicyRule> {
    vec![
        rule(&["get", "list", "watch"], &[""], &["pods", "nodes"]),
        rule(&["get"], &[""], &["nodes/stats", "nodes/metrics"]),
        rule(&["get", "create", "update"], &[""], &["endpoints"]),
        rule(
            &["get", "create", "update"],
            &["apiregistration.k8s.io"],
            &["apiservices"],
        ),
    ]
}

/// The HPA controller: upstream's `system:controller:horizontal-pod-autoscaler`.
pub(super) fn horizontal_pod_autoscaler_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            &["get", "list", "watch"],
            &["autoscaling"],
            &["horizontalpodautoscalers"],
        ),
        rule(
            &["update"],
            &["autoscaling"],
            &["horizontalpodautoscalers/status"],
        ),
        rule(
            &["get", "update", "patch"],
            &["apps"],
            &["deployments/scale", "replicasets/scale"],
        ),
        rule(
            &["get", "update", "patch"],
            &[""],
            &["replicationcontrollers/scale"],
        ),
        rule(&["list"], &[""], &["pods"]),
        rule(&["list", "get"], &["metrics.k8s.io"], &["pods"]),
        events(),
    ]
}

/// The cluster autoscaler: upstream's `cluster-autoscaler` ClusterRole (its example manifests,
/// read-only parts reduced to what minik serves), with its kube-system Role on the status
/// ConfigMap folded in (minik bootstraps ClusterRoles only), plus `patch` and `delete` on nodes:
/// minik's autoscaler taints with a patch and deletes the Node itself, where upstream's cloud
/// node-lifecycle controller deletes it.
pub(super) fn cluster_autoscaler_rules() -> Vec<PolicyRule> {
    vec![
        events(),
        rule(&["create"], &[""], &["pods/eviction"]),
        rule(&["update"], &[""], &["pods/status"]),
        rule(
            &["watch", "list", "get", "update", "patch", "delete"],
            &[""],
            &["nodes"],
        ),
        rule(
            READ,
            &[""],
            &["namespaces", "pods", "services", "replicationcontrollers"],
        ),
        rule(
            READ,
            &["apps"],
            &["statefulsets", "replicasets", "daemonsets"],
        ),
        rule(&["watch", "list"], &["policy"], &["poddisruptionbudgets"]),
        rule(&["create", "list", "watch"], &[""], &["configmaps"]),
        named(
            &["delete", "get", "update", "patch", "watch"],
            &[""],
            &["configmaps"],
            &["cluster-autoscaler-status"],
        ),
    ]
}
