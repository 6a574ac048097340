//! The `scale` subresource of a custom resource: the object seen as an autoscaling/v1 `Scale`
//! through the paths its CRD names.
//!
//! Kubernetes counterpart: `ScaleREST` of `staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/etcd.go`
//! (`scaleFromCustomResource`, `scaleUpdatedObjectInfo`). `specReplicasPath` (`.spec.replicas`)
//! is the desired count, `statusReplicasPath` the observed one, `labelSelectorPath` (a string in
//! the object) the Scale's `status.selector`. A PUT or PATCH of the Scale sets the value at
//! `specReplicasPath` and goes through the custom resource's main strategy, so the schema's
//! validation applies and `metadata.generation` moves. `kubectl scale` sends a merge patch. The
//! Scale is read from the object in the request's version (`conversion.rs`).
//!
//! minik simplifies: the paths are simple dotted paths (what CRD validation requires anyway).

use axum::http::{Method, StatusCode};
use axum::response::Response;
use minik_api::status;
use serde_json::{json, Map, Value};

use super::conversion;
use super::kinds::CustomKind;
use super::strategy;
use crate::error::{json_response, ApiError, ApiResult};
use crate::registry::{meta, patch as patches, patch::PatchType};
use crate::request::body::{body_format, decode_object};
use crate::request::ApiRequest;
use crate::store::update::guaranteed_update;
use crate::AppState;

/// GET, PUT or PATCH of `…/{name}/scale`.
pub async fn serve(
    state: &AppState,
    kind: &CustomKind,
    method: &Method,
    request: &ApiRequest,
) -> ApiResult<Response> {
    let target = &request.target;
    if target.name.is_none() {
        return Err(status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .into());
    }
    match *method {
        Method::GET => {
            let record = state
                .storage
                .get(&target.key())
                .map_err(|e| {
                    ApiError::from_storage(e, &target.info.group_resource(), target.name())
                })?
                .ok_or_else(|| {
                    ApiError::from(status::not_found(
                        &target.info.group_resource(),
                        target.name(),
                    ))
                })?;
            let view = conversion::for_request(state, target.info, &record.value).await?;
            let object = view.as_ref().unwrap_or(&record.value);
            Ok(json_response(StatusCode::OK, &scale_of(kind, object)))
        }
        Method::PUT => {
            let scale = decode_object(&request.body, body_format(request.content_type())?)?;
            let precondition = meta::resource_version(&scale)?;
            write(state, kind, request, precondition, |_| Ok(scale.clone())).await
        }
        Method::PATCH => {
            let patch_type = PatchType::from_content_type(request.content_type())?;
            if matches!(patch_type, PatchType::Strategic | PatchType::Apply) {
                return Err(
                    status::unsupported_media_type(request.content_type().unwrap_or("")).into(),
                );
            }
            let patch = patch_type.decode_body(&request.body)?;
            let precondition = match patch_type {
                PatchType::Json => None,
                _ => meta::resource_version(&patch).ok().flatten(),
            };
            write(state, kind, request, precondition, |stored| {
                patches::apply(patch_type, "Scale", &scale_of(kind, stored), &patch)
            })
            .await
        }
        _ => Err(status::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method})"
        ))
        .into()),
    }
}

async fn write(
    state: &AppState,
    kind: &CustomKind,
    request: &ApiRequest,
    precondition: Option<u64>,
    scale: impl Fn(&Value) -> ApiResult<Value>,
) -> ApiResult<Response> {
    let target = &request.target;
    let Some(paths) = &kind.scale else {
        return Err(status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .into());
    };
    let object = guaranteed_update(
        state,
        target,
        precondition,
        request.params.dry_run(),
        |stored| {
            let wanted = scale(stored)?;
            let replicas = replicas_of(&wanted, target.name())?;
            let mut object = stored.clone();
            set_path(
                &mut object,
                &paths.spec_replicas_path,
                Value::from(replicas),
            );
            Ok(strategy::prepare_update(kind, object, stored, target.name(), None)?.object)
        },
    )
    .await?;
    // The stored object is in the storage version; the paths are those of the request's.
    let view = conversion::for_request(state, target.info, &object).await?;
    let object = view.as_ref().unwrap_or(&object);
    Ok(json_response(StatusCode::OK, &scale_of(kind, object)))
}

/// The Scale's `spec.replicas`; a negative count is a 422, as upstream's Scale validation.
fn replicas_of(scale: &Value, name: &str) -> ApiResult<i64> {
    let replicas = scale["spec"]["replicas"].as_i64().unwrap_or(0);
    if replicas < 0 {
        let cause = status::cause(
            "spec.replicas",
            "FieldValueInvalid",
            format!("Invalid value: {replicas}: must be greater than or equal to 0"),
        );
        return Err(status::invalid("Scale", name, vec![cause]).into());
    }
    Ok(replicas)
}

/// The Scale view of a stored custom resource.
pub fn scale_of(kind: &CustomKind, object: &Value) -> Value {
    let mut metadata = json!({});
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = object["metadata"].get(field) {
            metadata[field] = value.clone();
        }
    }
    let paths = kind.scale.as_ref();
    let read = |path: Option<&str>| path.and_then(|p| get_path(object, p)).cloned();
    let spec = read(paths.map(|p| p.spec_replicas_path.as_str()));
    let status = read(paths.map(|p| p.status_replicas_path.as_str()));
    let selector = read(paths.and_then(|p| p.label_selector_path.as_deref()));
    let mut scale_status = json!({"replicas": status.and_then(|v| v.as_i64()).unwrap_or(0)});
    if let Some(selector) = selector.and_then(|v| v.as_str().map(str::to_string)) {
        scale_status["selector"] = Value::from(selector);
    }
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": metadata,
        "spec": {"replicas": spec.and_then(|v| v.as_i64()).unwrap_or(0)},
        "status": scale_status,
    })
}

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('.').filter(|s| !s.is_empty())
}

/// The value at a dotted path (`.spec.replicas`).
pub fn get_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    segments(path).try_fold(object, |value, segment| value.get(segment))
}

/// Sets the value at a dotted path, making the objects on the way.
pub fn set_path(object: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = segments(path).collect();
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut node = object;
    for part in parents {
        if !node[*part].is_object() {
            node[*part] = Value::Object(Map::new());
        }
        node = &mut node[*part];
    }
    node[*last] = value;
}
