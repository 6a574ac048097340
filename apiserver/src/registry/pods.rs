//! The pod strategy: defaults, validation, update immutability and binding.
//!
//! Kubernetes counterpart: `pkg/registry/core/pod/strategy.go` (`PrepareForCreate` resets the
//! status to Pending, `PrepareForUpdate`, `Validate` / `ValidateUpdate`), the
//! `DefaultTolerationSeconds` admission plugin (`plugin/pkg/admission/defaulttolerationseconds`) and
//! `pkg/registry/core/pod/storage/storage.go` (`BindingREST.assignPod`: the scheduler's POST of a
//! Binding sets `spec.nodeName` once and marks the pod `PodScheduled`).

use std::sync::atomic::{AtomicI64, Ordering};

use minik_api::core::{Binding, Pod, PodCondition, PodSpec, Toleration};
use minik_api::defaults::{default_pod, initial_pod_status};
use minik_api::status;
use minik_api::taints::{TAINT_NOT_READY, TAINT_UNREACHABLE};
use minik_api::validation::pod_spec::{malformed_quantity, QUANTITY_FORMAT_MSG};
use minik_api::validation::{validate_pod, validate_pod_update};
use serde_json::Value;

use super::{typed, untyped};
use crate::error::{ApiError, ApiResult};

fn name_of(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

/// Upstream's default for both flags: a pod stays 5 minutes on a node that went away.
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

// The admission plugin's two flags. They are process-wide, as upstream's plugin configuration is
// per apiserver process; `run` sets them from the flags (in-process test clusters share them).
static NOT_READY_SECONDS: AtomicI64 = AtomicI64::new(DEFAULT_TOLERATION_SECONDS);
static UNREACHABLE_SECONDS: AtomicI64 = AtomicI64::new(DEFAULT_TOLERATION_SECONDS);

/// Sets the `tolerationSeconds` given to new pods for the not-ready and unreachable taints.
pub fn set_default_toleration_seconds(not_ready: i64, unreachable: i64) {
    NOT_READY_SECONDS.store(not_ready, Ordering::Relaxed);
    UNREACHABLE_SECONDS.store(unreachable, Ordering::Relaxed);
}

/// `DefaultTolerationSeconds` admission (docs/workloads.md#nl9): a pod that does not already
/// tolerate `not-ready` (or `unreachable`) with effect NoExecute gets a toleration of it for
/// `seconds`, so that it is evicted that long after its node went away.
pub fn add_default_tolerations(spec: &mut PodSpec, not_ready: i64, unreachable: i64) {
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    // Upstream's test: an empty key or effect counts as a match, whatever the operator.
    let tolerates = |key: &str| {
        tolerations.iter().any(|t| {
            t.key.as_deref().is_none_or(|k| k.is_empty() || k == key)
                && t.effect
                    .as_deref()
                    .is_none_or(|e| e.is_empty() || e == "NoExecute")
        })
    };
    let missing: Vec<(&str, i64)> = [
        (TAINT_NOT_READY, not_ready),
        (TAINT_UNREACHABLE, unreachable),
    ]
    .into_iter()
    .filter(|(key, _)| !tolerates(key))
    .collect();
    for (key, seconds) in missing {
        tolerations.push(Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            toleration_seconds: Some(seconds),
            ..Toleration::default()
        });
    }
}

/// A new pod: defaults, the default tolerations, a fresh `Pending` status (whatever the client
/// sent), then validation.
pub fn prepare_create(object: Value) -> ApiResult<Value> {
    let mut pod: Pod = typed(object, "Pod")?;
    check_quantities("Pod", pod.spec.as_ref())?;
    default_pod(&mut pod);
    if let Some(spec) = pod.spec.as_mut() {
        let not_ready = NOT_READY_SECONDS.load(Ordering::Relaxed);
        add_default_tolerations(spec, not_ready, UNREACHABLE_SECONDS.load(Ordering::Relaxed));
    }
    pod.status = None;
    initial_pod_status(&mut pod);
    let mut causes = validate_pod(&pod);
    causes.extend(minik_api::validation::ephemeral::forbid_on_create(&pod));
    if !causes.is_empty() {
        return Err(status::invalid("Pod", &name_of(&pod), causes).into());
    }
    untyped(&pod)
}

/// An updated pod: defaults, then `ValidatePodUpdate` against the stored pod
/// (docs/kubernetes-rules.md#a4).
pub fn prepare_update(object: Value, old: &Value) -> ApiResult<Value> {
    let mut pod: Pod = typed(object, "Pod")?;
    let mut old: Pod = typed(old.clone(), "Pod")?;
    check_quantities("Pod", pod.spec.as_ref())?;
    default_pod(&mut pod);
    // As upstream, the stored object is defaulted when read, so a default added since it was
    // written (a probe's 0 becoming 10) is not taken for a change.
    default_pod(&mut old);
    let causes = validate_pod_update(&pod, &old);
    if !causes.is_empty() {
        return Err(status::invalid("Pod", &name_of(&pod), causes).into());
    }
    untyped(&pod)
}

/// Resource quantities must parse: upstream's decoder refuses `cpu: lots` with a 400 before any
/// validation runs (`resource.ParseQuantity` in `Quantity.UnmarshalJSON`).
pub fn check_quantities(kind: &str, spec: Option<&PodSpec>) -> ApiResult<()> {
    match spec.and_then(malformed_quantity) {
        None => Ok(()),
        Some(_) => Err(ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a {kind}: {QUANTITY_FORMAT_MSG}"
        ))),
    }
}

/// `assignPod`: the node a Binding names, written into a stored pod. A pod already bound, or
/// being deleted, is a 409 Conflict.
pub fn bind(stored: &Value, binding: &Binding) -> ApiResult<Value> {
    let mut pod: Pod = typed(stored.clone(), "Pod")?;
    let name = name_of(&pod);
    let node = binding.target.name.clone().unwrap_or_default();
    if node.is_empty() {
        let cause = status::cause("target.name", "FieldValueRequired", "Required value");
        return Err(status::invalid("Binding", &name, vec![cause]).into());
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Err(status::conflict(
            "pods/binding",
            &name,
            &format!("pod {name} is being deleted, cannot be assigned to a host"),
        )
        .into());
    }
    let spec = pod.spec.get_or_insert_with(Default::default);
    if let Some(current) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        let why = format!("pod {name} is already assigned to node \"{current}\"");
        return Err(status::conflict("pods/binding", &name, &why).into());
    }
    spec.node_name = Some(node);
    let status = pod.status.get_or_insert_with(Default::default);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    conditions.retain(|c| c.type_ != "PodScheduled");
    conditions.push(PodCondition {
        type_: "PodScheduled".into(),
        status: "True".into(),
        last_transition_time: Some(minik_api::now()),
        ..PodCondition::default()
    });
    untyped(&pod)
}

/// Decodes a Binding body; its name must be the pod's.
pub fn decode_binding(body: Value, pod_name: &str) -> ApiResult<Binding> {
    let binding: Binding = typed(body, "Binding")?;
    match binding.metadata.name.as_deref() {
        Some(name) if !name.is_empty() && name != pod_name => Err(ApiError::bad_request(format!(
            "the name of the binding ({name}) does not match the name of the pod ({pod_name})"
        ))),
        _ => Ok(binding),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"containers": [{"name": "main", "image": "busybox"}]},
               "status": {"phase": "Running"}})
    }

    #[test]
    fn create_defaults_and_resets_status() {
        let created = prepare_create(pod()).unwrap();
        assert_eq!(created["spec"]["terminationGracePeriodSeconds"], 30);
        assert_eq!(created["status"]["phase"], "Pending");
    }

    #[test]
    fn create_adds_the_not_ready_and_unreachable_tolerations() {
        let created = prepare_create(pod()).unwrap();
        let tolerations = created["spec"]["tolerations"].as_array().unwrap();
        let keys: Vec<_> = tolerations
            .iter()
            .map(|t| t["key"].as_str().unwrap())
            .collect();
        assert_eq!(keys, [TAINT_NOT_READY, TAINT_UNREACHABLE]);
        assert!(tolerations.iter().all(|t| t["effect"] == "NoExecute"
            && t["operator"] == "Exists"
            && t["tolerationSeconds"] == DEFAULT_TOLERATION_SECONDS));
    }

    #[test]
    fn a_pod_that_tolerates_a_taint_keeps_its_own_toleration() {
        let own = |key: &str, effect: &str| Toleration {
            key: Some(key.into()),
            effect: Some(effect.into()),
            operator: Some("Exists".into()),
            toleration_seconds: Some(5),
            ..Toleration::default()
        };
        let mut spec = PodSpec {
            tolerations: Some(vec![own(TAINT_UNREACHABLE, "NoExecute")]),
            ..PodSpec::default()
        };
        add_default_tolerations(&mut spec, 300, 300);
        let tolerations = spec.tolerations.unwrap();
        assert_eq!(tolerations.len(), 2);
        assert_eq!(tolerations[0].toleration_seconds, Some(5));
        assert_eq!(tolerations[1].key.as_deref(), Some(TAINT_NOT_READY));
        // An empty key tolerates every taint: nothing is added; a NoSchedule one does not count.
        let mut spec = PodSpec {
            tolerations: Some(vec![own("", "")]),
            ..PodSpec::default()
        };
        add_default_tolerations(&mut spec, 300, 300);
        assert_eq!(spec.tolerations.unwrap().len(), 1);
        let mut spec = PodSpec {
            tolerations: Some(vec![own(TAINT_NOT_READY, "NoSchedule")]),
            ..PodSpec::default()
        };
        add_default_tolerations(&mut spec, 300, 7);
        assert_eq!(spec.tolerations.unwrap()[2].toleration_seconds, Some(7));
    }

    #[test]
    fn create_without_image_is_invalid() {
        let mut bad = pod();
        bad["spec"]["containers"][0]["image"] = json!("");
        assert_eq!(prepare_create(bad).unwrap_err().code(), 422);
    }

    #[test]
    fn a_pod_stored_before_a_default_existed_still_takes_status_updates() {
        let mut stored = prepare_create(pod()).unwrap();
        stored["spec"]["containers"][0]["readinessProbe"] =
            json!({"tcpSocket": {"port": 80}, "periodSeconds": 0});
        let mut update = stored.clone();
        update["status"]["phase"] = json!("Running");
        assert!(prepare_update(update, &stored).is_ok());
    }

    #[test]
    fn binding_sets_node_once() {
        let binding = Binding {
            target: minik_api::core::ObjectReference {
                name: Some("node-1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let bound = bind(&prepare_create(pod()).unwrap(), &binding).unwrap();
        assert_eq!(bound["spec"]["nodeName"], "node-1");
        assert_eq!(bound["status"]["conditions"][0]["type"], "PodScheduled");
        assert_eq!(bind(&bound, &binding).unwrap_err().code(), 409);
    }
}
