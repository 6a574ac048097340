//! apiextensions: CustomResourceDefinitions, and the custom kinds they add while the server runs.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver`, the delegate server
//! kube-apiserver chains in front of its 404 handler. A CRD (`apiextensions.k8s.io/v1`) is stored
//! like any object, with its own strategy ([`crd`], [`names`]); [`controller`] accepts its names,
//! marks it `Established` and puts its kinds in the server's table ([`kinds`]); from then on
//! `/apis/{group}/{version}/…` serves its objects through the same handlers as built-in kinds
//! (get, list, watch, create, update, patch, delete, selectors, Tables), with the CRD's own write
//! strategy ([`strategy`], the [`schema`] steps), printer columns ([`table`]), `scale`
//! subresource ([`scale`]), discovery entries ([`discovery`]), OpenAPI ([`openapi`]) and version
//! changes ([`conversion`], with the `None` strategy or a conversion webhook configured as
//! [`conversion_config`] checks): on the way out ([`convert`]) and, for writes, in `write.rs` and
//! `store/update.rs`. Deleting the CRD deletes its objects first ([`finalizer`]).
//!
//! The hooks in shared code are small: the request path falls back to the table
//! ([`parse_target`]), writes call [`prepare_create`]/[`prepare_update`] and [`check_fields`]
//! (which hand built-in kinds to `registry` and `field_validation` unchanged), and storage keys
//! of custom kinds carry their group, as upstream's `/registry/{group}/{plural}/…`.
//!
//! minik simplifies: no `selectableFields`, no
//! aggregated discovery (minik serves the legacy documents only), and no protobuf for custom
//! resources (as upstream).
//!
//! Read next: `controller.rs`, then `strategy.rs`.

pub mod controller;
pub mod conversion;
pub mod conversion_config;
pub mod convert;
pub mod crd;
pub mod discovery;
pub mod field;
pub mod finalizer;
pub mod kinds;
pub mod names;
pub mod openapi;
pub mod scale;
pub mod schema;
pub mod strategy;
pub mod table;

#[cfg(test)]
mod conversion_tests;
#[cfg(test)]
mod tests;

use minik_api::ResourceInfo;
use serde_json::Value;

pub use kinds::{CustomKind, Kinds};

use crate::error::{ApiError, ApiResult};
use crate::field_validation::{self as fields, Mode};
use crate::registry::{self, services};
use crate::request::{parse_target_with, Target};
use crate::AppState;

/// The target of a path under `/apis/{group}/{version}` that names a served custom kind.
pub fn parse_target(kinds: &Kinds, group: &str, version: &str, rest: &str) -> Option<Target> {
    parse_target_with(rest, |plural| kinds.resolve(group, version, plural))
}

/// A create's registry step: the CRD's strategy for a custom kind, the built-in one otherwise.
pub fn prepare_create(
    state: &AppState,
    info: &ResourceInfo,
    body: Value,
    namespace: Option<&str>,
    allocated: &services::Allocated,
) -> ApiResult<Value> {
    match state.custom.kind(info) {
        Some(kind) => Ok(strategy::prepare_create(&kind, body, namespace)?.object),
        None => registry::prepare_create(info, body, namespace, allocated),
    }
}

/// An update's registry step, as [`prepare_create`].
pub fn prepare_update(
    state: &AppState,
    info: &ResourceInfo,
    body: Value,
    stored: &Value,
    name: &str,
    subresource: Option<&str>,
    allocated: &services::Allocated,
) -> ApiResult<Value> {
    match state.custom.kind(info) {
        Some(kind) => Ok(strategy::prepare_update(&kind, body, stored, name, subresource)?.object),
        None => registry::prepare_update(info, body, stored, name, subresource, allocated),
    }
}

/// `fieldValidation` for a request body: for a custom kind the unknown fields are the ones its
/// schema would prune (upstream's decoder reports them the same way); built-in kinds go to
/// [`fields::check`].
pub fn check_fields(
    state: &AppState,
    mode: Mode,
    info: &ResourceInfo,
    body: &Value,
    raw: Option<&[u8]>,
) -> ApiResult<Vec<String>> {
    let Some(kind) = state.custom.kind(info) else {
        return fields::check(mode, info.kind, body, raw);
    };
    if mode == Mode::Ignore {
        return Ok(Vec::new());
    }
    let mut problems: Vec<String> = unknown_fields(&kind, body)
        .into_iter()
        .map(|field| format!("unknown field \"{field}\""))
        .collect();
    if let Some(raw) = raw {
        problems.extend(
            fields::duplicate_fields(raw)
                .into_iter()
                .map(|field| format!("duplicate field \"{field}\"")),
        );
    }
    if mode == Mode::Strict && !problems.is_empty() {
        let name = kind.info.kind;
        return Err(ApiError::bad_request(format!(
            "{name} in version \"{}\" cannot be handled as a {name}: strict decoding error: {}",
            kind.version,
            problems.join(", ")
        )));
    }
    Ok(problems)
}

/// The fields of `body` the kind's schema does not have (the ones pruning would drop).
pub fn unknown_fields(kind: &CustomKind, body: &Value) -> Vec<String> {
    let Some(schema) = &kind.schema else {
        return Vec::new();
    };
    let mut copy = body.clone();
    schema::prune::prune(schema, &mut copy)
}

/// Whether a custom kind has the subresource: `status` or `scale` as its CRD declares.
pub fn has_subresource(state: &AppState, info: &ResourceInfo, sub: &str) -> Option<bool> {
    let kind = state.custom.kind(info)?;
    Some(match sub {
        "status" => kind.status,
        "scale" => kind.scale.is_some(),
        _ => false,
    })
}

/// Custom resources take merge, JSON and apply patches, not strategic merge ones (there are no
/// Go struct tags to read list merge keys from): upstream answers 415.
pub fn check_patch_type(
    state: &AppState,
    info: &ResourceInfo,
    patch_type: crate::registry::patch::PatchType,
) -> ApiResult<()> {
    if patch_type != crate::registry::patch::PatchType::Strategic
        || state.custom.kind(info).is_none()
    {
        return Ok(());
    }
    Err(minik_api::status::failure(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    )
    .into())
}
