//! The kinds minik serves: their URL segment, short names, and whether they live in a namespace.
//!
//! Kubernetes counterpart: the `APIResource` entries of discovery (`GET /api/v1`), which is where
//! kubectl learns that `po` means pods and that nodes are cluster-scoped. minik serves only the
//! core/v1 kinds its pipeline needs (ConfigMaps and Secrets among them), plus coordination.k8s.io Leases (node heartbeats) and
//! discovery.k8s.io EndpointSlices (what `kubectl describe service` reads a Service's endpoints from)
//! the apps/v1 workloads (Deployments and the ReplicaSets they roll, DaemonSets and their
//! ControllerRevisions), core/v1 ReplicationControllers, batch/v1 Jobs and CronJobs, policy/v1
//! PodDisruptionBudgets, the
//! rbac.authorization.k8s.io/v1 roles and bindings the authorizer reads, the ServiceAccounts
//! pods run as, and networking.k8s.io/v1 Ingresses and IngressClasses (what `minik ingress` serves).

/// What minik knows about one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    /// `Pod`.
    pub kind: &'static str,
    /// The URL segment and discovery name: `pods`.
    pub plural: &'static str,
    /// `pod`.
    pub singular: &'static str,
    /// What kubectl also accepts: `po`.
    pub short_names: &'static [&'static str],
    /// Namespaced kinds live under `/api/v1/namespaces/{ns}/…`.
    pub namespaced: bool,
    /// `v1`, or `group/version` for kinds outside the core group.
    pub api_version: &'static str,
}

impl ResourceInfo {
    /// The API group: empty for the core group.
    pub fn group(&self) -> &'static str {
        self.api_version
            .split_once('/')
            .map(|(group, _)| group)
            .unwrap_or("")
    }

    /// The resource as error messages name it: `pods`, `deployments.apps` (upstream's
    /// `GroupResource.String()`).
    pub fn group_resource(&self) -> String {
        match self.group() {
            "" => self.plural.to_string(),
            group => format!("{}.{group}", self.plural),
        }
    }

    /// The path prefix of the kind's group and version: `/api/v1` or `/apis/{group}/{version}`.
    pub fn group_version_path(&self) -> String {
        if self.group().is_empty() {
            format!("/api/{}", self.api_version)
        } else {
            format!("/apis/{}", self.api_version)
        }
    }
}

/// Every kind minik serves.
pub const RESOURCES: &[ResourceInfo] = &[
    ResourceInfo {
        kind: "Pod",
        plural: "pods",
        singular: "pod",
        short_names: &["po"],
        namespaced: true,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "Service",
        plural: "services",
        singular: "service",
        short_names: &["svc"],
        namespaced: true,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "Endpoints",
        plural: "endpoints",
        singular: "endpoints",
        short_names: &["ep"],
        namespaced: true,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "ConfigMap",
        plural: "configmaps",
        singular: "configmap",
        short_names: &["cm"],
        namespaced: true,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "Secret",
        plural: "secrets",
        singular: "secret",
        short_names: &[],
        namespaced: true,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "Event",
        plural: "events",
        singular: "event",
        short_names: &["ev"],
        namespaced: true,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "Node",
        plural: "nodes",
        singular: "node",
        short_names: &["no"],
        namespaced: false,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "Namespace",
        plural: "namespaces",
        singular: "namespace",
        short_names: &["ns"],
        namespaced: false,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "Lease",
        plural: "leases",
        singular: "lease",
        short_names: &[],
        namespaced: true,
        api_version: "coordination.k8s.io/v1",
    },
    ResourceInfo {
        kind: "EndpointSlice",
        plural: "endpointslices",
        singular: "endpointslice",
        short_names: &[],
        namespaced: true,
        api_version: "discovery.k8s.io/v1",
    },
    ResourceInfo {
        kind: "Deployment",
        plural: "deployments",
        singular: "deployment",
        short_names: &["deploy"],
        namespaced: true,
        api_version: "apps/v1",
    },
    ResourceInfo {
        kind: "ReplicaSet",
        plural: "replicasets",
        singular: "replicaset",
        short_names: &["rs"],
        namespaced: true,
        api_version: "apps/v1",
    },
    ResourceInfo {
        kind: "Role",
        plural: "roles",
        singular: "role",
        short_names: &[],
        namespaced: true,
        api_version: "rbac.authorization.k8s.io/v1",
    },
    ResourceInfo {
        kind: "ClusterRole",
        plural: "clusterroles",
        singular: "clusterrole",
        short_names: &[],
        namespaced: false,
        api_version: "rbac.authorization.k8s.io/v1",
    },
    ResourceInfo {
        kind: "RoleBinding",
        plural: "rolebindings",
        singular: "rolebinding",
        short_names: &[],
        namespaced: true,
        api_version: "rbac.authorization.k8s.io/v1",
    },
    ResourceInfo {
        kind: "ClusterRoleBinding",
        plural: "clusterrolebindings",
        singular: "clusterrolebinding",
        short_names: &[],
        namespaced: false,
        api_version: "rbac.authorization.k8s.io/v1",
    },
    ResourceInfo {
        kind: "ServiceAccount",
        plural: "serviceaccounts",
        singular: "serviceaccount",
        short_names: &["sa"],
        namespaced: true,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "Job",
        plural: "jobs",
        singular: "job",
        short_names: &[],
        namespaced: true,
        api_version: "batch/v1",
    },
    ResourceInfo {
        kind: "PodDisruptionBudget",
        plural: "poddisruptionbudgets",
        singular: "poddisruptionbudget",
        short_names: &["pdb"],
        namespaced: true,
        api_version: "policy/v1",
    },
    // The later workload controllers (issue 20): ReplicationControllers, DaemonSets and the
    // ControllerRevisions that record their templates, CronJobs.
    ResourceInfo {
        kind: "ReplicationController",
        plural: "replicationcontrollers",
        singular: "replicationcontroller",
        short_names: &["rc"],
        namespaced: true,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "DaemonSet",
        plural: "daemonsets",
        singular: "daemonset",
        short_names: &["ds"],
        namespaced: true,
        api_version: "apps/v1",
    },
    ResourceInfo {
        kind: "CronJob",
        plural: "cronjobs",
        singular: "cronjob",
        short_names: &["cj"],
        namespaced: true,
        api_version: "batch/v1",
    },
    ResourceInfo {
        kind: "ControllerRevision",
        plural: "controllerrevisions",
        singular: "controllerrevision",
        short_names: &[],
        namespaced: true,
        api_version: "apps/v1",
    },
    ResourceInfo {
        kind: "Ingress",
        plural: "ingresses",
        singular: "ingress",
        short_names: &["ing"],
        namespaced: true,
        api_version: "networking.k8s.io/v1",
    },
    ResourceInfo {
        kind: "IngressClass",
        plural: "ingressclasses",
        singular: "ingressclass",
        short_names: &[],
        namespaced: false,
        api_version: "networking.k8s.io/v1",
    },
    // StatefulSets and the storage they claim (issue 20).
    ResourceInfo {
        kind: "StatefulSet",
        plural: "statefulsets",
        singular: "statefulset",
        short_names: &["sts"],
        namespaced: true,
        api_version: "apps/v1",
    },
    ResourceInfo {
        kind: "PersistentVolumeClaim",
        plural: "persistentvolumeclaims",
        singular: "persistentvolumeclaim",
        short_names: &["pvc"],
        namespaced: true,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "PersistentVolume",
        plural: "persistentvolumes",
        singular: "persistentvolume",
        short_names: &["pv"],
        namespaced: false,
        api_version: "v1",
    },
    ResourceInfo {
        kind: "StorageClass",
        plural: "storageclasses",
        singular: "storageclass",
        short_names: &["sc"],
        namespaced: false,
        api_version: "storage.k8s.io/v1",
    },
    // Resource metrics and autoscaling (issues 18 and 20): the APIService that registers
    // metrics-server's group with the aggregation layer, and HorizontalPodAutoscalers.
    ResourceInfo {
        kind: "APIService",
        plural: "apiservices",
        singular: "apiservice",
        short_names: &[],
        namespaced: false,
        api_version: "apiregistration.k8s.io/v1",
    },
    ResourceInfo {
        kind: "HorizontalPodAutoscaler",
        plural: "horizontalpodautoscalers",
        singular: "horizontalpodautoscaler",
        short_names: &["hpa"],
        namespaced: true,
        api_version: "autoscaling/v2",
    },
    // CustomResourceDefinitions (issue 21): the kinds they define are served from a table the
    // API server keeps at run time (`apiserver/src/apiextensions/kinds.rs`), not from this list.
    ResourceInfo {
        kind: "CustomResourceDefinition",
        plural: "customresourcedefinitions",
        singular: "customresourcedefinition",
        short_names: &["crd", "crds"],
        namespaced: false,
        api_version: "apiextensions.k8s.io/v1",
    },
    // Admission webhooks (issue 21): the configurations that register them.
    ResourceInfo {
        kind: "ValidatingWebhookConfiguration",
        plural: "validatingwebhookconfigurations",
        singular: "validatingwebhookconfiguration",
        short_names: &[],
        namespaced: false,
        api_version: "admissionregistration.k8s.io/v1",
    },
    ResourceInfo {
        kind: "MutatingWebhookConfiguration",
        plural: "mutatingwebhookconfigurations",
        singular: "mutatingwebhookconfiguration",
        short_names: &[],
        namespaced: false,
        api_version: "admissionregistration.k8s.io/v1",
    },
];

/// Whether `info` is one of the built-in kinds above (not a custom kind a CRD added at run time).
pub fn is_builtin(info: &ResourceInfo) -> bool {
    RESOURCES.contains(info)
}

/// Finds a kind by any name a user may type: plural, singular, short name or Kind (any case).
pub fn lookup(name: &str) -> Option<&'static ResourceInfo> {
    let name = name.to_ascii_lowercase();
    RESOURCES.iter().find(|info| {
        info.plural == name
            || info.singular == name
            || info.kind.to_ascii_lowercase() == name
            || info.short_names.contains(&name.as_str())
    })
}

/// Finds a kind by its URL segment (`pods`) within an API group (empty for core).
pub fn by_plural(group: &str, plural: &str) -> Option<&'static ResourceInfo> {
    RESOURCES
        .iter()
        .find(|info| info.plural == plural && info.group() == group)
}

/// Finds a kind by `apiVersion` and `kind`, as written in a manifest.
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static ResourceInfo> {
    RESOURCES
        .iter()
        .find(|info| info.kind == kind && info.api_version == api_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_kubectl_accepts_finds_the_kind() {
        for name in ["pods", "pod", "po", "Pod", "PODS"] {
            assert_eq!(lookup(name).map(|info| info.kind), Some("Pod"), "{name}");
        }
        assert_eq!(lookup("svc").map(|info| info.plural), Some("services"));
        assert_eq!(lookup("ep").map(|info| info.plural), Some("endpoints"));
        assert_eq!(
            lookup("deploy").map(|info| info.api_version),
            Some("apps/v1")
        );
        assert_eq!(lookup("rs").map(|info| info.kind), Some("ReplicaSet"));
        assert_eq!(
            lookup("sa").map(|info| info.plural),
            Some("serviceaccounts")
        );
        assert!(!lookup("no").unwrap().namespaced);
        assert_eq!(lookup("rc").map(|info| info.api_version), Some("v1"));
        assert_eq!(lookup("ds").map(|info| info.kind), Some("DaemonSet"));
    }

    #[test]
    fn group_paths_follow_the_core_and_named_group_layout() {
        assert_eq!(lookup("pods").unwrap().group_version_path(), "/api/v1");
        assert_eq!(
            by_plural("coordination.k8s.io", "leases")
                .unwrap()
                .group_version_path(),
            "/apis/coordination.k8s.io/v1"
        );
    }
}
