//! The `scale` subresource: GET, PUT and PATCH of `…/deployments/{name}/scale` and
//! `…/replicasets/{name}/scale`.
//!
//! Kubernetes counterpart: `ScaleREST` (`pkg/registry/apps/deployment/storage/storage.go`): its
//! `Get` answers the Scale view of the object, its `Update` maps the new Scale back onto the
//! object inside the generic store's `GuaranteedUpdate`, so a scale is an ordinary update of
//! `spec.replicas` (strategy, validation, generation and watch event included). A PATCH is
//! applied to the Scale view, not to the object. The mapping is [`crate::registry::scale`].

use axum::http::StatusCode;
use axum::response::Response;
use minik_api::status;
use serde_json::Value;

use crate::error::{json_response, ApiError, ApiResult};
use crate::registry::patch::{self as patches, PatchType};
use crate::registry::scale::{apply_scale, scale_of};
use crate::registry::{self, meta};
use crate::request::body::{body_format, decode_object};
use crate::request::{ApiRequest, Target};
use crate::store::update::guaranteed_update;
use crate::AppState;

/// `GET …/{name}/scale`.
pub fn get(state: &AppState, target: &Target) -> ApiResult<Response> {
    let record = state
        .storage
        .get(&target.key())
        .map_err(|e| ApiError::from_storage(e, &target.info.group_resource(), target.name()))?
        .ok_or_else(|| {
            ApiError::from(status::not_found(
                &target.info.group_resource(),
                target.name(),
            ))
        })?;
    Ok(json_response(StatusCode::OK, &scale_of(&record.value)))
}

/// `PUT …/{name}/scale`: a whole Scale; its `resourceVersion`, if any, must be current.
pub async fn update(state: &AppState, request: &ApiRequest) -> ApiResult<Response> {
    let scale = decode_object(&request.body, body_format(request.content_type())?)?;
    let precondition = meta::resource_version(&scale)?;
    write(state, request, precondition, |stored| {
        apply_scale(stored, scale.clone())
    })
    .await
}

/// `PATCH …/{name}/scale`: merge, JSON or strategic merge patch of the Scale view
/// (`kubectl scale` sends `{"spec":{"replicas":N}}` as a merge patch).
pub async fn patch(state: &AppState, request: &ApiRequest) -> ApiResult<Response> {
    let patch_type = PatchType::from_content_type(request.content_type())?;
    let patch = patch_type.decode_body(&request.body)?;
    let precondition = match patch_type {
        PatchType::Json => None,
        _ => meta::resource_version(&patch).ok().flatten(),
    };
    write(state, request, precondition, |stored| {
        let patched = patches::apply(patch_type, "Scale", &scale_of(stored), &patch)?;
        apply_scale(stored, patched)
    })
    .await
}

/// Scales the stored object through the kind's strategy and answers its new Scale.
async fn write(
    state: &AppState,
    request: &ApiRequest,
    precondition: Option<u64>,
    scaled: impl Fn(&Value) -> ApiResult<Value>,
) -> ApiResult<Response> {
    let target = &request.target;
    let object = guaranteed_update(
        state,
        target,
        precondition,
        request.params.dry_run(),
        |stored| {
            let object = scaled(stored)?;
            registry::prepare_update(
                target.info,
                object,
                stored,
                target.name(),
                None,
                &Default::default(),
            )
        },
    )
    .await?;
    Ok(json_response(StatusCode::OK, &scale_of(&object)))
}
