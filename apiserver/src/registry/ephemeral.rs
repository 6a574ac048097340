//! The `pods/ephemeralcontainers` subresource: the one way to add a container to a running pod.
//!
//! Kubernetes counterpart: `EphemeralContainersREST` (`pkg/registry/core/pod/storage/storage.go`)
//! and `podEphemeralContainersStrategy` (`pkg/registry/core/pod/strategy.go`): GET answers the
//! pod; PUT and PATCH (`kubectl debug` sends a strategic-merge patch of the whole pod) take only
//! `spec.ephemeralContainers` from the new object (`dropNonEphemeralContainerUpdates`), and the
//! result must pass `ValidatePodEphemeralContainersUpdate`, else 422 with the field paths.
//!
//! minik simplifies: the old pod's metadata is kept whole (upstream copies name, namespace,
//! resourceVersion and uid from the new one, which the generic update has already checked).

use minik_api::core::Pod;
use minik_api::defaults::default_pod;
use minik_api::status;
use minik_api::validation::ephemeral::validate_update;
use serde_json::Value;

use super::{typed, untyped};
use crate::error::ApiResult;

/// The stored pod with the new object's ephemeral containers, defaulted and validated.
pub fn prepare_update(object: Value, old: &Value) -> ApiResult<Value> {
    let new: Pod = typed(object, "Pod")?;
    let mut old: Pod = typed(old.clone(), "Pod")?;
    default_pod(&mut old);
    let mut pod = merged(&new, &old);
    default_pod(&mut pod);
    let causes = validate_update(&pod, &old);
    if !causes.is_empty() {
        let name = pod.metadata.name.clone().unwrap_or_default();
        return Err(status::invalid("Pod", &name, causes).into());
    }
    untyped(&pod)
}

/// `dropNonEphemeralContainerUpdates`: the old pod, with the new one's ephemeral containers and
/// resourceVersion.
fn merged(new: &Pod, old: &Pod) -> Pod {
    let mut pod = old.clone();
    pod.metadata.resource_version = new.metadata.resource_version.clone();
    let ephemeral = new
        .spec
        .as_ref()
        .and_then(|s| s.ephemeral_containers.clone());
    if let Some(spec) = pod.spec.as_mut() {
        spec.ephemeral_containers = ephemeral.filter(|list| !list.is_empty());
    }
    pod
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored() -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web", "namespace": "default", "resourceVersion": "5"},
               "spec": {"containers": [{"name": "main", "image": "busybox"}]},
               "status": {"phase": "Running"}})
    }

    #[test]
    fn only_the_ephemeral_containers_are_taken_from_the_update() {
        let mut update = stored();
        update["spec"]["containers"][0]["image"] = json!("alpine");
        update["spec"]["ephemeralContainers"] = json!([{"name": "debugger-x", "image": "busybox", "targetContainerName": "main", "stdin": true}]);
        let pod = prepare_update(update, &stored()).unwrap();
        assert_eq!(pod["spec"]["containers"][0]["image"], "busybox");
        let added = &pod["spec"]["ephemeralContainers"][0];
        assert_eq!(added["name"], "debugger-x");
        assert_eq!(added["terminationMessagePolicy"], "File");
    }

    #[test]
    fn an_invalid_ephemeral_container_is_a_422_with_its_field() {
        let mut update = stored();
        update["spec"]["ephemeralContainers"] = json!([{"name": "main", "image": "busybox",
            "ports": [{"containerPort": 80}]}]);
        let error = prepare_update(update, &stored()).unwrap_err();
        let status = serde_json::to_value(&*error.0).unwrap();
        assert_eq!(status["code"], 422);
        let fields: Vec<&str> = status["details"]["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["field"].as_str().unwrap())
            .collect();
        assert!(
            fields.contains(&"spec.ephemeralContainers[0].name"),
            "{fields:?}"
        );
        assert!(
            fields.contains(&"spec.ephemeralContainers[0].ports"),
            "{fields:?}"
        );
    }
}
