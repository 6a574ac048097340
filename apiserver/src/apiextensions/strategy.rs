//! The write strategy of custom resources: metadata, status semantics, generation, then the
//! schema's defaulting, pruning, validation and CEL rules.
//!
//! Kubernetes counterpart: `customResourceStrategy` and `statusStrategy` in
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/{strategy.go,status_strategy.go}`
//! and the decoding chain of `pkg/apiserver/customresource_handler.go` (defaulting and pruning
//! happen while the body is decoded, validation in the strategy). With a `status` subresource, a
//! write to the main resource keeps the stored `status` and one to `/status` keeps everything else;
//! `metadata.generation` moves only when something other than metadata (and, with the subresource,
//! status) changed. A write names its version in the path; the object is validated against that
//! version's schema and left in that version: `conversion.rs` converts it to the storage
//! version before it is stored (and an update's stored object to the request's version before
//! it gets here), `convert.rs` does the reverse on the way out.
//!
//! minik simplifies: `metadata` of embedded resources is not validated as ObjectMeta.
//!
//! Read next: `schema/mod.rs` for the steps, `convert.rs` for reads.

use minik_api::status;
use minik_api::validation::{validate_name, NameRule};
use serde_json::Value;

use super::field::invalid_status;
use super::kinds::CustomKind;
use super::schema::{cel, defaults, prune, validate};
use crate::error::{ApiError, ApiResult};
use crate::registry::{meta, object_meta};

/// What a write stores, and the fields the schema pruned (unknown fields, for fieldValidation).
#[derive(Debug)]
pub struct Prepared {
    /// The object, in the request's version.
    pub object: Value,
    /// Paths of the fields pruning dropped.
    pub pruned: Vec<String>,
}

/// A create (POST, or a PUT/apply that finds nothing).
pub fn prepare_create(
    kind: &CustomKind,
    mut object: Value,
    namespace: Option<&str>,
) -> ApiResult<Prepared> {
    if kind.terminating {
        return Err(status::method_not_allowed(format!(
            "create is not supported on resources of kind \"{}.{}\"",
            kind.info.plural, kind.group
        ))
        .into());
    }
    meta::set_type_meta(&mut object, &kind.api_version(), kind.info.kind)?;
    object_meta::check(&object, kind.info.kind)?;
    meta::prepare_create(&mut object, namespace)?;
    let name = meta::meta_str(&object, "name").unwrap_or("").to_string();
    let causes = validate_name(&name, NameRule::Subdomain);
    if !causes.is_empty() {
        return Err(status::invalid(kind.info.kind, &name, causes).into());
    }
    if kind.status {
        object.as_object_mut().map(|o| o.remove("status"));
    }
    let pruned = apply_schema(kind, &mut object, None)?;
    Ok(Prepared { object, pruned })
}

/// An update (PUT or PATCH of the object or of `/status`; `/scale` writes as the main resource).
pub fn prepare_update(
    kind: &CustomKind,
    mut object: Value,
    stored: &Value,
    name: &str,
    subresource: Option<&str>,
) -> ApiResult<Prepared> {
    let mut old = stored.clone();
    old["apiVersion"] = Value::from(kind.api_version());
    // A patch was applied to the stored object, which is in the storage version.
    if object["apiVersion"] == kind.storage_api_version().as_str() {
        object["apiVersion"] = Value::from(kind.api_version());
    }
    meta::set_type_meta(&mut object, &kind.api_version(), kind.info.kind)?;
    object_meta::check(&object, kind.info.kind)?;
    meta::prepare_update(&mut object, &old, name, kind.info.plural)?;
    let causes = meta::new_finalizers_while_deleting(&object, &old);
    if !causes.is_empty() {
        return Err(status::invalid(kind.info.kind, name, causes).into());
    }
    if subresource == Some("status") {
        let mut merged = old.clone();
        match object.get("status") {
            Some(status) => merged["status"] = status.clone(),
            None => {
                merged.as_object_mut().map(|o| o.remove("status"));
            }
        }
        if let Some(managed) = object.pointer("/metadata/managedFields") {
            merged["metadata"]["managedFields"] = managed.clone();
        }
        object = merged;
    } else if kind.status {
        match old.get("status") {
            Some(status) => object["status"] = status.clone(),
            None => {
                object.as_object_mut().map(|o| o.remove("status"));
            }
        }
    }
    let pruned = apply_schema(kind, &mut object, Some(&old))?;
    bump_generation(&mut object, &old, kind.status);
    Ok(Prepared { object, pruned })
}

/// Defaulting, pruning, validation and CEL rules of the kind's schema; the pruned paths.
fn apply_schema(
    kind: &CustomKind,
    object: &mut Value,
    old: Option<&Value>,
) -> ApiResult<Vec<String>> {
    let Some(schema) = &kind.schema else {
        return Ok(Vec::new());
    };
    defaults::apply(schema, object);
    let pruned = prune::prune(schema, object);
    let mut errors = validate::validate(schema, object, "");
    if errors.is_empty() {
        errors.extend(cel::check(schema, object, old));
    }
    if errors.is_empty() {
        return Ok(pruned);
    }
    let name = meta::meta_str(object, "name").unwrap_or("");
    Err(ApiError::from(invalid_status(
        &kind.group,
        kind.info.kind,
        name,
        &errors,
    )))
}

/// `generation` counts changes outside metadata (and outside status when it is a subresource).
fn bump_generation(object: &mut Value, old: &Value, status_subresource: bool) {
    let content = |o: &Value| {
        let mut copy = o.clone();
        if let Some(map) = copy.as_object_mut() {
            map.remove("metadata");
            map.remove("apiVersion");
            if status_subresource {
                map.remove("status");
            }
        }
        copy
    };
    let old_generation = old
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let generation = if content(object) != content(old) {
        old_generation + 1
    } else {
        old_generation
    };
    object["metadata"]["generation"] = Value::from(generation);
}

/// A stored object as a reader of `kind`'s version sees it: its `apiVersion`, and the version's
/// defaults (objects stored before a default was added get it on read, as upstream does).
pub fn present(kind: &CustomKind, object: &mut Value) {
    if !object.is_object() {
        return;
    }
    object["apiVersion"] = Value::from(kind.api_version());
    if let Some(schema) = &kind.schema {
        defaults::apply(schema, object);
    }
}
