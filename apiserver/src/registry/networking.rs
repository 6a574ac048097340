//! The Ingress and IngressClass strategies: validation with field paths, an immutable controller.
//!
//! Kubernetes counterpart: `pkg/registry/networking/ingress/strategy.go` (`PrepareForCreate`
//! clears the status, which the ingress controller writes through `/status`; `Validate` runs
//! `ValidateIngressCreate`) and `pkg/registry/networking/ingressclass/strategy.go`. The rules are
//! in `minik_api::networking`, pure.
//!
//! The `DefaultIngressClass` admission plugin (`plugin/pkg/admission/network/
//! defaultingressclass/admission.go`) runs here too, on create only: an Ingress with neither
//! `spec.ingressClassName` nor the legacy `kubernetes.io/ingress.class` annotation gets the name
//! of the class annotated `ingressclass.kubernetes.io/is-default-class: "true"`; with several
//! default classes the newest wins (ties by name), as upstream since 1.28.

use minik_api::meta::StatusCause;
use minik_api::networking::{
    is_default_class, validate_ingress, validate_ingress_class, validate_ingress_class_update,
};
use minik_api::networking_v1::{Ingress, IngressClass};
use minik_api::status;
use serde_json::Value;

use super::{typed, untyped};
use crate::error::{ApiError, ApiResult};
use crate::storage::Storage;

/// The legacy class annotation (`networkingv1beta1.AnnotationIngressClass`): an Ingress that
/// carries it has chosen its class, and admission leaves it alone.
pub const LEGACY_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// The `DefaultIngressClass` admission on a new Ingress's body (before the strategy runs).
pub fn admit_ingress(storage: &dyn Storage, mut body: Value) -> ApiResult<Value> {
    if !needs_default_class(&body) {
        return Ok(body);
    }
    let (records, _) = storage
        .list("/registry/ingressclasses/")
        .map_err(|e| ApiError::from_storage(e, "ingressclasses.networking.k8s.io", ""))?;
    let classes: Vec<IngressClass> = records
        .iter()
        .filter_map(|r| serde_json::from_value(r.value.as_ref().clone()).ok())
        .collect();
    let Some(name) = default_class_name(&classes) else {
        return Ok(body);
    };
    // A body whose `spec` is not an object is the strategy's 400/422 to give, not ours.
    if let Some(spec) = body.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("ingressClassName".into(), Value::String(name));
    }
    Ok(body)
}

/// Whether a new Ingress has left its class to the default: no `spec.ingressClassName` and no
/// legacy class annotation.
pub fn needs_default_class(body: &Value) -> bool {
    let named = body
        .pointer("/spec/ingressClassName")
        .is_some_and(|v| !v.is_null());
    let annotated = body
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(LEGACY_CLASS_ANNOTATION));
    !named && !annotated
}

/// The default class's name: among the classes marked default, the newest by
/// `creationTimestamp`, the first by name on a tie (upstream's `getDefaultClass`).
pub fn default_class_name(classes: &[IngressClass]) -> Option<String> {
    let created = |c: &IngressClass| c.metadata.creation_timestamp.as_ref().map(|t| t.0);
    classes
        .iter()
        .filter(|class| is_default_class(class))
        .max_by(|a, b| {
            created(a)
                .cmp(&created(b))
                .then_with(|| b.metadata.name.cmp(&a.metadata.name))
        })
        .and_then(|class| class.metadata.name.clone())
}

/// A new Ingress: an empty status, validation.
pub fn prepare_create_ingress(object: Value) -> ApiResult<Value> {
    let mut ingress = decode_ingress(object)?;
    ingress.status = Some(Default::default());
    check(
        "Ingress",
        &ingress.metadata.name,
        validate_ingress(&ingress),
    )?;
    untyped(&ingress)
}

/// An updated Ingress (main resource or `/status`): validation.
pub fn prepare_update_ingress(object: Value) -> ApiResult<Value> {
    let ingress = decode_ingress(object)?;
    check(
        "Ingress",
        &ingress.metadata.name,
        validate_ingress(&ingress),
    )?;
    untyped(&ingress)
}

/// A new IngressClass: validation.
pub fn prepare_create_class(object: Value) -> ApiResult<Value> {
    let class: IngressClass = typed(object, "IngressClass")?;
    check(
        "IngressClass",
        &class.metadata.name,
        validate_ingress_class(&class),
    )?;
    untyped(&class)
}

/// An updated IngressClass: validation, and the controller never changes.
pub fn prepare_update_class(object: Value, old: &Value) -> ApiResult<Value> {
    let class: IngressClass = typed(object, "IngressClass")?;
    let old: IngressClass = typed(old.clone(), "IngressClass")?;
    let mut causes = validate_ingress_class(&class);
    causes.extend(validate_ingress_class_update(&class, &old));
    check("IngressClass", &class.metadata.name, causes)?;
    untyped(&class)
}

/// Decodes an Ingress; a path without `pathType` is upstream's 422 at that field, not a decoding
/// error (k8s-openapi's type makes the field required).
fn decode_ingress(mut object: Value) -> ApiResult<Ingress> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .map(String::from);
    let mut causes = Vec::new();
    let rules = object
        .pointer_mut("/spec/rules")
        .and_then(Value::as_array_mut);
    for (r, rule) in rules.into_iter().flatten().enumerate() {
        let paths = rule
            .pointer_mut("/http/paths")
            .and_then(Value::as_array_mut);
        for (p, path) in paths.into_iter().flatten().enumerate() {
            if path.get("pathType").is_none_or(Value::is_null) {
                let field = format!("spec.rules[{r}].http.paths[{p}].pathType");
                causes.push(status::cause(
                    field,
                    "FieldValueRequired",
                    "Required value: pathType must be specified",
                ));
                // Decodable, so the other checks still run.
                path["pathType"] = Value::String("Prefix".into());
            }
        }
    }
    check("Ingress", &name, causes)?;
    typed(object, "Ingress")
}

fn check(kind: &str, name: &Option<String>, causes: Vec<StatusCause>) -> ApiResult<()> {
    if causes.is_empty() {
        return Ok(());
    }
    Err(status::invalid(kind, name.as_deref().unwrap_or(""), causes).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn web() -> Value {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"name": "web"},
               "spec": {"rules": [{"host": "foo.example", "http": {"paths": [{"path": "/",
                   "pathType": "Prefix",
                   "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]},
               "status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}})
    }

    #[test]
    fn create_clears_the_status() {
        let created = prepare_create_ingress(web()).unwrap();
        assert_eq!(created["status"], json!({}));
    }

    #[test]
    fn a_path_without_path_type_is_a_422_at_its_field() {
        let mut missing = web();
        missing["spec"]["rules"][0]["http"]["paths"][0]
            .as_object_mut()
            .unwrap()
            .remove("pathType");
        let error = prepare_create_ingress(missing).unwrap_err();
        assert_eq!(error.code(), 422);
        let causes = error.0.details.unwrap().causes.unwrap();
        assert_eq!(
            causes[0].field.as_deref(),
            Some("spec.rules[0].http.paths[0].pathType")
        );
    }

    fn class(name: &str, created: &str, default: Option<&str>) -> IngressClass {
        let annotations =
            default.map(|v| json!({"ingressclass.kubernetes.io/is-default-class": v}));
        serde_json::from_value(
            json!({"metadata": {"name": name, "creationTimestamp": created,
            "annotations": annotations}}),
        )
        .unwrap()
    }

    #[test]
    fn the_default_class_is_the_newest_marked_true() {
        let old = class("old", "2026-01-01T00:00:00Z", Some("true"));
        let new = class("new", "2026-02-01T00:00:00Z", Some("true"));
        let not_default = class("zzz", "2026-03-01T00:00:00Z", Some("false"));
        let unmarked = class("plain", "2026-03-01T00:00:00Z", None);
        let all = [old.clone(), new, not_default.clone(), unmarked.clone()];
        assert_eq!(default_class_name(&all).as_deref(), Some("new"));
        // Same second: the first name wins.
        let twin = class("a-twin", "2026-01-01T00:00:00Z", Some("true"));
        assert_eq!(default_class_name(&[old, twin]).as_deref(), Some("a-twin"));
        assert_eq!(default_class_name(&[not_default, unmarked]), None);
        // Only the exact string "true" counts.
        let shouting = class("x", "2026-01-01T00:00:00Z", Some("True"));
        assert_eq!(default_class_name(&[shouting]), None);
    }

    #[test]
    fn only_an_ingress_without_a_class_gets_the_default() {
        let mut body = web();
        assert!(needs_default_class(&body));
        body["spec"]["ingressClassName"] = json!("other");
        assert!(!needs_default_class(&body));
        let mut legacy = web();
        legacy["metadata"]["annotations"] = json!({"kubernetes.io/ingress.class": "nginx"});
        assert!(!needs_default_class(&legacy));
    }

    #[test]
    fn admission_fills_the_class_from_the_store() {
        use crate::storage::memory::MemoryStorage;
        let storage = MemoryStorage::new(16);
        let default = class("minik", "2026-01-01T00:00:00Z", Some("true"));
        let value = serde_json::to_value(&default).unwrap();
        futures::executor::block_on(storage.create("/registry/ingressclasses/minik", value))
            .unwrap();
        let admitted = admit_ingress(&storage, web()).unwrap();
        assert_eq!(admitted["spec"]["ingressClassName"], "minik");
        let mut chosen = web();
        chosen["spec"]["ingressClassName"] = json!("other");
        let admitted = admit_ingress(&storage, chosen).unwrap();
        assert_eq!(admitted["spec"]["ingressClassName"], "other");
        // A spec that is not an object is left to validation (no panic).
        let broken = json!({"metadata": {"name": "x"}, "spec": "nonsense"});
        assert_eq!(admit_ingress(&storage, broken.clone()).unwrap(), broken);
    }

    #[test]
    fn an_ingress_class_controller_is_immutable() {
        let class = |c: &str| json!({"metadata": {"name": "minik"}, "spec": {"controller": c}});
        let old = prepare_create_class(class("minik.io/ingress")).unwrap();
        assert_eq!(
            prepare_update_class(class("other.io/x"), &old)
                .unwrap_err()
                .code(),
            422
        );
    }
}
