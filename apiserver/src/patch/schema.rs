//! Which lists merge by which key: the `patchStrategy` / `patchMergeKey` tags minik needs.
//!
//! Kubernetes counterpart: the struct tags of `k8s.io/api/core/v1/types.go`, e.g.
//! ```go
//! Containers []Container `json:"containers" patchStrategy:"merge" patchMergeKey:"name"`
//! ```
//! which `strategicpatch.NewPatchMetaFromStruct` reads by reflection (and server-side apply reads
//! as `x-kubernetes-list-type: map` / `x-kubernetes-list-map-keys` from OpenAPI). A list without
//! tags is *atomic*: a patch replaces it whole. minik writes the tags of the kinds it serves as a
//! table keyed by the field path (array steps left out: `spec.containers.ports`).

/// How a list field is patched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListStrategy {
    /// Atomic: the patch's list replaces the live one (every untagged list).
    Replace,
    /// A list of objects merged item by item, matched on this key (`patchMergeKey`).
    MergeByKey(&'static str),
    /// A list of scalars merged as a set (`patchStrategy:"merge"` on `[]string`, e.g. finalizers).
    Set,
}

/// The containers of a pod spec share one set of tags, whichever list they sit in.
const CONTAINER_LISTS: &[&str] = &["containers", "initContainers", "ephemeralContainers"];

/// The strategy of the list at `path` (field names from the object's root) in an object of `kind`.
pub fn list_strategy(kind: &str, path: &[&str]) -> ListStrategy {
    use ListStrategy::*;
    // Fields every kind has.
    match path {
        ["metadata", "finalizers"] => return Set,
        ["metadata", "ownerReferences"] => return MergeByKey("uid"),
        ["status", "conditions"] => return MergeByKey("type"),
        _ => {}
    }
    match kind {
        "Pod" => pod_list(path),
        "Service" => match path {
            ["spec", "ports"] => MergeByKey("port"),
            _ => Replace,
        },
        // A workload's pod template patches like a pod: `spec.template.spec.containers` merge by
        // name (`kubectl set image`), as the `PodTemplateSpec` tags say.
        "Deployment"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController"
        | "DaemonSet"
        | "StatefulSet" => match path {
            ["spec", "template", pod_path @ ..] => pod_list(pod_path),
            _ => Replace,
        },
        "CronJob" => match path {
            ["spec", "jobTemplate", "spec", "template", pod_path @ ..] => pod_list(pod_path),
            _ => Replace,
        },
        "Node" => match path {
            ["spec", "podCIDRs"] => Set,
            ["status", "addresses"] => MergeByKey("type"),
            _ => Replace,
        },
        _ => Replace,
    }
}

fn pod_list(path: &[&str]) -> ListStrategy {
    use ListStrategy::*;
    match path {
        ["spec", list] if CONTAINER_LISTS.contains(list) => MergeByKey("name"),
        ["spec", list, field] if CONTAINER_LISTS.contains(list) => match *field {
            "ports" => MergeByKey("containerPort"),
            "env" => MergeByKey("name"),
            "volumeMounts" => MergeByKey("mountPath"),
            "volumeDevices" => MergeByKey("devicePath"),
            _ => Replace,
        },
        ["spec", "volumes"]
        | ["spec", "imagePullSecrets"]
        | ["spec", "resourceClaims"]
        | ["spec", "schedulingGates"] => MergeByKey("name"),
        ["spec", "hostAliases"] => MergeByKey("ip"),
        ["spec", "topologySpreadConstraints"] => MergeByKey("topologyKey"),
        ["status", "podIPs"] | ["status", "hostIPs"] => MergeByKey("ip"),
        // tolerations, readinessGates, containerStatuses, args, command …: atomic upstream.
        _ => Replace,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ListStrategy::*;

    #[test]
    fn container_lists_share_their_merge_keys() {
        for list in ["containers", "initContainers"] {
            assert_eq!(list_strategy("Pod", &["spec", list]), MergeByKey("name"));
            assert_eq!(
                list_strategy("Pod", &["spec", list, "ports"]),
                MergeByKey("containerPort")
            );
            assert_eq!(
                list_strategy("Pod", &["spec", list, "volumeMounts"]),
                MergeByKey("mountPath")
            );
            assert_eq!(list_strategy("Pod", &["spec", list, "args"]), Replace);
        }
    }

    #[test]
    fn service_ports_merge_by_port_and_untagged_lists_are_atomic() {
        assert_eq!(
            list_strategy("Service", &["spec", "ports"]),
            MergeByKey("port")
        );
        assert_eq!(list_strategy("Pod", &["spec", "tolerations"]), Replace);
        assert_eq!(list_strategy("Endpoints", &["subsets"]), Replace);
        assert_eq!(list_strategy("Node", &["metadata", "finalizers"]), Set);
        assert_eq!(
            list_strategy("Node", &["status", "addresses"]),
            MergeByKey("type")
        );
    }

    #[test]
    fn a_workload_template_patches_like_a_pod_spec() {
        for kind in ["Deployment", "ReplicaSet"] {
            let containers = ["spec", "template", "spec", "containers"];
            assert_eq!(list_strategy(kind, &containers), MergeByKey("name"));
            let env = ["spec", "template", "spec", "containers", "env"];
            assert_eq!(list_strategy(kind, &env), MergeByKey("name"));
            assert_eq!(list_strategy(kind, &["spec", "containers"]), Replace);
        }
    }
}
