//! The Ingress and IngressClass strategies: validation with field paths, an immutable controller.
//!
//! Kubernetes counterpart: `pkg/registry/networking/ingress/strategy.go` (`PrepareForCreate`
//! clears the status, which the ingress controller writes through `/status`; `Validate` runs
//! `ValidateIngressCreate`) and `pkg/registry/networking/ingressclass/strategy.go`. The rules are
//! in `minik_api::networking`, pure.
//!
//! minik simplifies: upstream's `DefaultIngressClass` admission plugin, which fills
//! `spec.ingressClassName` of a new Ingress from the default class, is left out; minik's
//! controller treats an Ingress without a class as its own while its class is the default.

use minik_api::meta::StatusCause;
use minik_api::networking::{
    validate_ingress, validate_ingress_class, validate_ingress_class_update,
};
use minik_api::networking_v1::{Ingress, IngressClass};
use minik_api::status;
use serde_json::Value;

use super::{typed, untyped};
use crate::error::ApiResult;

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
