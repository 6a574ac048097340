//! The roles and bindings every cluster starts with, created at apiserver start when missing.
//!
//! Kubernetes counterpart: `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`
//! (`ClusterRoles`, `ClusterRoleBindings`) and `controller_policy.go`, reconciled by the
//! `rbac/bootstrap-roles` post-start hook (docs/security.md#r4). The objects carry upstream's
//! `kubernetes.io/bootstrapping: rbac-defaults` label and `autoupdate` annotation.
//!
//! At every start, missing objects are created and existing ones that keep the `autoupdate`
//! annotation get the rules (or subjects) they lack added, as upstream's reconciliation does
//! without `--remove-extra-permissions`: a newer minik's roles reach an older data dir.
//!
//! What minik simplifies: `admin`, `edit` and `view` are written out instead of aggregated
//! (docs/security.md#r5) and name only the kinds minik serves plus the usual core ones; the
//! endpoint-slice controllers' roles are also bound to minik's one endpoint controller, which does
//! all three jobs, and the workload controllers' roles to the controller manager's user.

use minik_api::k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject,
};
use minik_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::{json, Value};

use crate::storage::{self, Storage};

mod rules;

use rules::*;

/// Every bootstrap ClusterRole.
pub fn cluster_roles() -> Vec<ClusterRole> {
    let role = |name: &str, rules: Vec<PolicyRule>| ClusterRole {
        metadata: meta(name),
        rules: Some(rules),
        ..ClusterRole::default()
    };
    let mut discovery = HEALTH.to_vec();
    discovery.extend([
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/openapi",
        "/openapi/*",
    ]);
    vec![
        role("cluster-admin", vec![rule(ALL, ALL, ALL), urls(ALL, ALL)]),
        role("admin", admin_rules()),
        role("edit", edit_rules()),
        role("view", view_rules()),
        role("system:discovery", vec![urls(&["get"], &discovery)]),
        role("system:public-info-viewer", vec![urls(&["get"], HEALTH)]),
        role(
            "system:basic-user",
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        role("system:node", node_rules()),
        // Upstream's role for servers that delegate authentication and authorization to the
        // apiserver (a kubelet's webhook authz posts SubjectAccessReviews).
        role(
            "system:auth-delegator",
            vec![
                rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
            ],
        ),
        role("system:node-proxier", proxier_rules()),
        role("system:kube-scheduler", scheduler_rules()),
        role("system:kube-controller-manager", controller_manager_rules()),
        role("system:controller:endpoint-controller", endpoint_rules()),
        role(
            "system:controller:endpointslice-controller",
            endpoint_slice_rules(),
        ),
        role(
            "system:controller:endpointslicemirroring-controller",
            endpoint_slice_rules(),
        ),
        role(
            "system:controller:deployment-controller",
            deployment_rules(),
        ),
        role(
            "system:controller:replicaset-controller",
            replica_set_rules(),
        ),
        role(
            "system:controller:job-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update", "patch"],
                    &["batch"],
                    &["jobs"],
                ),
                rule(
                    &["update", "patch"],
                    &["batch"],
                    &["jobs/status", "jobs/finalizers"],
                ),
                rule(
                    &["list", "watch", "create", "delete", "patch"],
                    &[""],
                    &["pods"],
                ),
                events(),
            ],
        ),
        // The later workload controllers (issue 20), as upstream's `controller_policy.go`.
        role(
            "system:controller:replication-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[""],
                    &["replicationcontrollers"],
                ),
                rule(
                    &["update", "patch"],
                    &[""],
                    &[
                        "replicationcontrollers/status",
                        "replicationcontrollers/finalizers",
                    ],
                ),
                rule(
                    &["list", "watch", "patch", "create", "delete"],
                    &[""],
                    &["pods"],
                ),
                events(),
            ],
        ),
        role(
            "system:controller:daemon-set-controller",
            vec![
                rule(&["get", "list", "watch"], &["apps"], &["daemonsets"]),
                rule(
                    &["update", "patch"],
                    &["apps"],
                    &["daemonsets/status", "daemonsets/finalizers"],
                ),
                rule(&["list", "watch"], &[""], &["nodes"]),
                rule(
                    &["list", "watch", "create", "delete", "patch"],
                    &[""],
                    &["pods"],
                ),
                rule(&["create"], &[""], &["pods/binding"]),
                rule(
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                    &["apps"],
                    &["controllerrevisions"],
                ),
                events(),
            ],
        ),
        // StatefulSets, the volume binder with minik's local-path provisioner, the TTL controller
        // (issue 20), as upstream's `buildControllerRoles`.
        role(
            "system:controller:statefulset-controller",
            vec![
                rule(&["list", "watch"], &["apps"], &["statefulsets"]),
                rule(
                    &["update", "patch"],
                    &["apps"],
                    &["statefulsets/status", "statefulsets/finalizers"],
                ),
                rule(
                    &[
                        "get", "list", "watch", "create", "delete", "update", "patch",
                    ],
                    &[""],
                    &["pods"],
                ),
                rule(
                    &["get", "create", "delete", "update", "patch"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                events(),
            ],
        ),
        role(
            "system:controller:persistent-volume-binder",
            vec![
                rule(
                    &[
                        "create", "delete", "get", "list", "update", "patch", "watch",
                    ],
                    &[""],
                    &["persistentvolumes"],
                ),
                rule(
                    &["update", "patch"],
                    &[""],
                    &["persistentvolumes/status", "persistentvolumeclaims/status"],
                ),
                rule(
                    &["get", "list", "update", "patch", "watch"],
                    &[""],
                    &["persistentvolumeclaims"],
                ),
                rule(&["get", "list", "watch"], &[""], &["pods", "nodes"]),
                rule(
                    &["get", "list", "watch"],
                    &["storage.k8s.io"],
                    &["storageclasses"],
                ),
                events(),
            ],
        ),
        role(
            "system:controller:ttl-after-finished-controller",
            vec![
                rule(&["delete", "get", "list", "watch"], &["batch"], &["jobs"]),
                events(),
            ],
        ),
        role(
            "system:controller:node-controller",
            vec![
                rule(
                    &["get", "list", "update", "delete", "patch"],
                    &[""],
                    &["nodes"],
                ),
                rule(
                    &["patch", "update"],
                    &[""],
                    &["nodes/status", "pods/status"],
                ),
                rule(&["list", "delete"], &[""], &["pods"]),
                events(),
            ],
        ),
        role(
            "system:controller:cronjob-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &["batch"],
                    &["cronjobs"],
                ),
                rule(
                    &[
                        "create", "delete", "get", "list", "patch", "update", "watch",
                    ],
                    &["batch"],
                    &["jobs"],
                ),
                rule(
                    &["update", "patch"],
                    &["batch"],
                    &["cronjobs/status", "cronjobs/finalizers"],
                ),
                rule(&["list", "delete"], &[""], &["pods"]),
                events(),
            ],
        ),
        role(
            "system:controller:disruption-controller",
            vec![
                rule(
                    &["get", "list", "watch"],
                    &["apps"],
                    &["deployments", "replicasets", "statefulsets"],
                ),
                rule(
                    &["get", "list", "watch"],
                    &[""],
                    &["replicationcontrollers"],
                ),
                rule(
                    &["get", "list", "watch"],
                    &["policy"],
                    &["poddisruptionbudgets"],
                ),
                rule(&["update"], &["policy"], &["poddisruptionbudgets/status"]),
                rule(&["get"], ALL, &["*/scale"]),
                events(),
            ],
        ),
        role(
            "system:controller:pod-garbage-collector",
            vec![
                rule(&["list", "watch", "delete"], &[""], &["pods"]),
                rule(&["get", "list"], &[""], &["nodes"]),
                rule(&["patch"], &[""], &["pods/status"]),
            ],
        ),
        role(
            "system:controller:root-ca-cert-publisher",
            vec![
                rule(&["create", "update"], &[""], &["configmaps"]),
                events(),
            ],
        ),
        role(
            "system:controller:service-controller",
            service_controller_rules(),
        ),
        role("system:ingress-controller", ingress_controller_rules()),
        // Resource metrics and autoscaling (issues 18 and 20).
        role("system:metrics-server", metrics_server_rules()),
        // The cluster autoscaler process (`minik cluster-autoscaler`, issue 24).
        role("cluster-autoscaler", cluster_autoscaler_rules()),
        role(
            "system:controller:horizontal-pod-autoscaler",
            horizontal_pod_autoscaler_rules(),
        ),
        role(
            "system:controller:generic-garbage-collector",
            vec![rule(
                &["get", "list", "watch", "patch", "update", "delete"],
                ALL,
                ALL,
            )],
        ),
    ]
}

fn subject(kind: &str, name: &str) -> Subject {
    Subject {
        kind: kind.into(),
        name: name.into(),
        api_group: (kind != "ServiceAccount").then(|| "rbac.authorization.k8s.io".into()),
        namespace: (kind == "ServiceAccount").then(|| "kube-system".into()),
    }
}

/// Every bootstrap ClusterRoleBinding, each named like its role.
pub fn cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    let binding = |role: &str, subjects: Vec<Subject>| ClusterRoleBinding {
        metadata: meta(role),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role.into(),
        },
        subjects: Some(subjects),
    };
    let sa = |name: &str| subject("ServiceAccount", name);
    let mut bindings = vec![
        binding("cluster-admin", vec![subject("Group", "system:masters")]),
        binding(
            "system:discovery",
            vec![subject("Group", "system:authenticated")],
        ),
        binding(
            "system:basic-user",
            vec![subject("Group", "system:authenticated")],
        ),
        binding(
            "system:public-info-viewer",
            vec![
                subject("Group", "system:authenticated"),
                subject("Group", "system:unauthenticated"),
            ],
        ),
        binding(
            "system:node-proxier",
            vec![subject("User", "system:kube-proxy")],
        ),
        binding(
            "system:kube-scheduler",
            vec![subject("User", "system:kube-scheduler")],
        ),
        binding(
            "system:kube-controller-manager",
            vec![subject("User", "system:kube-controller-manager")],
        ),
        binding(
            "system:controller:endpoint-controller",
            vec![sa("endpoint-controller")],
        ),
        binding(
            "system:controller:endpointslice-controller",
            vec![sa("endpointslice-controller"), sa("endpoint-controller")],
        ),
        binding(
            "system:controller:endpointslicemirroring-controller",
            vec![
                sa("endpointslicemirroring-controller"),
                sa("endpoint-controller"),
            ],
        ),
        binding(
            "system:controller:service-controller",
            vec![sa("service-controller")],
        ),
        binding(
            "system:ingress-controller",
            vec![subject("User", "system:ingress-controller")],
        ),
        binding(
            "system:metrics-server",
            vec![subject("User", "system:metrics-server")],
        ),
        binding(
            "cluster-autoscaler",
            vec![subject("User", "system:cluster-autoscaler")],
        ),
    ];
    // Upstream's Node authorizer grants kubelets the `system:node` rules, among them creating
    // SubjectAccessReviews for their webhook authorization; minik's leaves that to RBAC, so the
    // nodes are bound to the one role holding just that.
    bindings.push(binding(
        "system:auth-delegator",
        vec![subject("Group", "system:nodes")],
    ));
    // minik's controller manager runs its controllers with its own credential (upstream's
    // `--use-service-account-credentials=false`), which must then hold their roles.
    for controller in [
        "deployment-controller",
        "replicaset-controller",
        "job-controller",
        "node-controller",
        "pod-garbage-collector",
        "disruption-controller",
        "replication-controller",
        "daemon-set-controller",
        "cronjob-controller",
        "root-ca-cert-publisher",
        "generic-garbage-collector",
        "statefulset-controller",
        "persistent-volume-binder",
        "ttl-after-finished-controller",
        "horizontal-pod-autoscaler",
    ] {
        let user = subject("User", "system:kube-controller-manager");
        bindings.push(binding(
            &format!("system:controller:{controller}"),
            vec![sa(controller), user],
        ));
    }
    bindings
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        labels: Some([("kubernetes.io/bootstrapping".into(), "rbac-defaults".into())].into()),
        annotations: Some(
            [(
                "rbac.authorization.kubernetes.io/autoupdate".into(),
                "true".into(),
            )]
            .into(),
        ),
        ..ObjectMeta::default()
    }
}

/// Creates every bootstrap role and binding that does not exist yet, and adds what the ones marked
/// `autoupdate` lack.
pub async fn ensure(storage: &dyn Storage) -> Result<(), storage::Error> {
    let mut written = 0;
    for role in cluster_roles() {
        written += reconcile(storage, "clusterroles", "ClusterRole", "rules", &role).await?;
    }
    for binding in cluster_role_bindings() {
        written += reconcile(
            storage,
            "clusterrolebindings",
            "ClusterRoleBinding",
            "subjects",
            &binding,
        )
        .await?;
    }
    tracing::info!(written, "rbac bootstrap policy ready");
    Ok(())
}

/// Creates `object` if missing; if present and still marked `autoupdate`, appends the entries of
/// its `list` field (`rules` or `subjects`) it lacks. Answers 1 when it wrote.
async fn reconcile<T: Serialize>(
    storage: &dyn Storage,
    plural: &str,
    kind: &str,
    list: &str,
    object: &T,
) -> Result<usize, storage::Error> {
    let mut value = serde_json::to_value(object).unwrap_or(Value::Null);
    let name = value["metadata"]["name"].as_str().unwrap_or("").to_string();
    let key = format!("/registry/{plural}/{name}");
    if let Some(stored) = storage.get(&key)? {
        return add_missing(storage, &key, &stored, list, &value).await;
    }
    value["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
    value["kind"] = json!(kind);
    value["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
    value["metadata"]["creationTimestamp"] = crate::registry::meta::now_value();
    match storage.create(&key, value).await {
        Ok(_) => Ok(1),
        Err(storage::Error::AlreadyExists(_)) => Ok(0),
        Err(e) => Err(e),
    }
}

/// The entries of `wanted[list]` that `stored[list]` lacks, appended to it (upstream's reconcile
/// adds missing permissions and subjects and keeps extra ones). An object whose `autoupdate`
/// annotation is not `true` is the user's and is left alone; a conflict means another writer
/// (another apiserver starting) got there first.
async fn add_missing(
    storage: &dyn Storage,
    key: &str,
    stored: &storage::Record,
    list: &str,
    wanted: &Value,
) -> Result<usize, storage::Error> {
    let annotations = &stored.value["metadata"]["annotations"];
    if annotations["rbac.authorization.kubernetes.io/autoupdate"] != "true" {
        return Ok(0);
    }
    let have = stored.value[list].as_array().cloned().unwrap_or_default();
    let missing: Vec<Value> = wanted[list]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| !have.contains(entry))
        .cloned()
        .collect();
    if missing.is_empty() {
        return Ok(0);
    }
    let mut value = (*stored.value).clone();
    value[list] = Value::Array(have.into_iter().chain(missing).collect());
    match storage.update(key, value, Some(stored.revision)).await {
        Ok(_) => Ok(1),
        Err(storage::Error::Conflict { .. }) => Ok(0),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::memory::MemoryStorage;

    fn edit_with(annotation: &str) -> Value {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "edit", "annotations": {
                "rbac.authorization.kubernetes.io/autoupdate": annotation}},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
        })
    }

    async fn edit_rules_after_ensure(annotation: &str) -> Vec<Value> {
        let storage = MemoryStorage::new(100);
        let key = "/registry/clusterroles/edit";
        storage.create(key, edit_with(annotation)).await.unwrap();
        ensure(&storage).await.unwrap();
        let stored = storage.get(key).unwrap().unwrap();
        stored.value["rules"].as_array().unwrap().clone()
    }

    #[tokio::test]
    async fn an_autoupdate_role_gains_the_rules_it_lacks_and_keeps_its_own() {
        let rules = edit_rules_after_ensure("true").await;
        assert_eq!(rules[0]["verbs"], json!(["get"]), "its own rule is kept");
        let exec = rules.iter().any(|rule| {
            rule["resources"]
                .as_array()
                .unwrap()
                .contains(&json!("pods/exec"))
                && rule["verbs"].as_array().unwrap().contains(&json!("create"))
        });
        assert!(exec, "edit gains create on pods/exec: {rules:?}");
    }

    #[tokio::test]
    async fn a_role_without_autoupdate_is_left_alone() {
        assert_eq!(edit_rules_after_ensure("false").await.len(), 1);
    }
}
