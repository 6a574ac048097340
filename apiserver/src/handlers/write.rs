//! Writes: create (POST), update (PUT), patch (PATCH) and the pod binding subresource.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/{create,update,patch}.go` and
//! the generic store's `Create` / `Update` (`pkg/registry/generic/registry/store.go`), whose heart
//! is etcd3's `GuaranteedUpdate`: read the object, compute the new state, compare-and-swap on the
//! revision read, retry on conflict. A client that sends a `resourceVersion` gets a 409 Conflict
//! instead of a retry when someone else wrote first (optimistic concurrency,
//! docs/kubernetes-rules.md#a2).

use std::sync::Mutex;

use axum::http::StatusCode;
use axum::response::Response;
use minik_api::{status, ResourceInfo};
use serde_json::{json, Value};
use tracing::info;

use crate::admission::webhook::{self, Prepare, Review};
use crate::admission::webhook_match::Operation;
use crate::apiextensions;
use crate::error::{json_response, ApiError, ApiResult};
use crate::field_validation::{self as fields, Mode};
use crate::ignored_fields;
use crate::patch::apply as server_side_apply;
use crate::registry::patch::PatchType;
use crate::registry::{self, meta, pods, services};
use crate::request::body::{body_format, decode_object, BodyFormat};
use crate::request::{storage_key, ApiRequest};
use crate::store::namespaces;
use crate::store::update::{guaranteed_update, guaranteed_update_admitted};
use crate::AppState;

/// `POST …/{plural}`.
pub async fn create(state: &AppState, request: &ApiRequest) -> ApiResult<Response> {
    let target = &request.target;
    if target.info.namespaced && target.namespace.is_none() {
        return Err(status::method_not_allowed(
            "create is not supported on the cluster-wide path; use /namespaces/{namespace}/…",
        )
        .into());
    }
    let (body, warnings) = decode_checked(state, request)?;
    let response = create_object(state, request, body, None).await?;
    Ok(fields::with_warnings(response, &warnings))
}

/// Decodes a create/update body and applies `fieldValidation` to it (unknown and, for JSON,
/// duplicate fields): the object and the warnings to send.
fn decode_checked(state: &AppState, request: &ApiRequest) -> ApiResult<(Value, Vec<String>)> {
    let format = body_format(request.content_type())?;
    let body = decode_object(&request.body, format)?;
    let raw = (format == BodyFormat::Json).then_some(&request.body[..]);
    let mode = Mode::from_params(&request.params)?;
    let kind = request.target.info.kind;
    let mut warnings = apiextensions::check_fields(state, mode, request.target.info, &body, raw)?;
    if request.target.subresource.is_none() {
        warnings.extend(ignored_fields::warnings(kind, &body));
    }
    Ok((body, warnings))
}

/// Stores a new object after admission and the registry prepared it (201 with the stored
/// object). `managed_fields` (from server-side apply) replace whatever the body carried.
async fn create_object(
    state: &AppState,
    request: &ApiRequest,
    body: Value,
    managed_fields: Option<Value>,
) -> ApiResult<Response> {
    let info = request.target.info;
    let dry_run = request.params.dry_run();
    let namespace = request
        .target
        .namespace
        .as_deref()
        .filter(|_| info.namespaced);
    if let Some(namespace) = namespace {
        namespaces::require_active(state, namespace)?;
    }
    // Admission, as upstream's ServiceAccount plugin: before the pod strategy runs.
    let body = match (info.kind, namespace) {
        ("Pod", Some(namespace)) => {
            let issues_tokens = state.security.tokens.is_some();
            registry::serviceaccounts::admit(
                state.storage.as_ref(),
                body,
                namespace,
                issues_tokens,
            )?
        }
        // Admission, as upstream's DefaultIngressClass plugin: a classless Ingress gets the default.
        ("Ingress", Some(_)) => registry::networking::admit_ingress(state.storage.as_ref(), body)?,
        // DefaultStorageClass admission (issue 20).
        ("PersistentVolumeClaim", Some(_)) => {
            registry::storage_kinds::admit_claim(state.storage.as_ref(), body)?
        }
        _ => body,
    };
    // Admission webhooks: mutating ones now, validating ones after the registry's validation.
    let mut attributes = webhook::attributes(request, Operation::Create);
    attributes.name = meta::meta_str(&body, "name").unwrap_or("").to_string();
    let review = Review::prepare(state, attributes);
    let body = match &review {
        Some(review) => review.mutate(body, None).await?,
        None => body,
    };
    let (_allocation, used) = service_allocations(state, info).await?;
    // A generated name that is taken is generated again (`RetryGenerateName`, GA in 1.32).
    let attempts = if meta::generates_name(&body) {
        MAX_NAME_GENERATION_ATTEMPTS
    } else {
        1
    };
    let response = retry_name_collisions(attempts, || async {
        let mut object =
            apiextensions::prepare_create(state, info, body.clone(), namespace, &used)?;
        if let Some(managed) = managed_fields.clone() {
            meta::meta_mut(&mut object)?.insert("managedFields".into(), managed);
        }
        let name = meta::meta_str(&object, "name").unwrap_or("").to_string();
        if let Some(review) = &review {
            review.validate(Some(&object), None).await?;
        }
        // Custom resources are stored in their CRD's storage version (issue 21: conversion).
        let object = apiextensions::conversion::for_storage(state, info, object).await?;
        if dry_run {
            return Ok(json_response(StatusCode::CREATED, &object));
        }
        let key = storage_key(info, namespace, &name);
        let record = state
            .storage
            .create(&key, object)
            .await
            .map_err(|e| ApiError::from_storage(e, &info.group_resource(), &name))?;
        info!(kind = info.kind, key = %key, revision = record.revision, "created object");
        Ok(json_response(StatusCode::CREATED, record.value.as_ref()))
    })
    .await?;
    Ok(admission_warnings(response, review.as_ref()))
}

/// The webhooks' warnings as `Warning` headers.
fn admission_warnings(response: Response, review: Option<&Review<'_>>) -> Response {
    match review {
        Some(review) => fields::with_warnings(response, &review.warnings()),
        None => response,
    }
}

/// Services: choosing a cluster IP or node port and storing it happen under one lock (see
/// registry/services.rs); the lock's guard and what the stored Services hold.
async fn service_allocations<'a>(
    state: &'a AppState,
    info: &ResourceInfo,
) -> ApiResult<(Option<tokio::sync::MutexGuard<'a, ()>>, services::Allocated)> {
    if info.kind != "Service" {
        return Ok((None, services::Allocated::default()));
    }
    let guard = state.ip_allocation.lock().await;
    let (records, _) = state
        .storage
        .list("/registry/services/")
        .map_err(|e| ApiError::from_storage(e, "services", ""))?;
    Ok((Some(guard), services::allocated(&records)))
}

/// `maxNameGenerationCreateAttempts` in `k8s.io/apiserver/pkg/registry/generic/registry/store.go`.
const MAX_NAME_GENERATION_ATTEMPTS: usize = 8;

/// Runs `create` up to `attempts` times while it answers 409 AlreadyExists: upstream's store
/// retries a create whose generated name collided, transparently to the client.
async fn retry_name_collisions<T, F, Fut>(attempts: usize, mut create: F) -> ApiResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ApiResult<T>>,
{
    let mut attempt = 1;
    loop {
        match create().await {
            Err(error)
                if attempt < attempts && error.0.reason.as_deref() == Some("AlreadyExists") =>
            {
                info!(attempt, "generated name taken, generating another");
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// The object stored at the request's URL, if any.
fn stored(state: &AppState, request: &ApiRequest) -> ApiResult<Option<crate::storage::Record>> {
    let target = &request.target;
    state
        .storage
        .get(&target.key())
        .map_err(|e| ApiError::from_storage(e, &target.info.group_resource(), target.name()))
}

/// Creates `body` under the name in the URL: the path of a PUT or an apply that finds nothing
/// there (`AllowCreateOnUpdate`, server-side apply's create).
async fn create_at_url_name(
    state: &AppState,
    request: &ApiRequest,
    mut body: Value,
    managed_fields: Option<Value>,
) -> ApiResult<Response> {
    let target = &request.target;
    meta::meta_mut(&mut body)?.insert("name".into(), Value::String(target.name().to_string()));
    create_object(state, request, body, managed_fields).await
}

/// `PUT …/{plural}/{name}` (and `…/status`).
pub async fn update(state: &AppState, request: &ApiRequest) -> ApiResult<Response> {
    let (body, warnings) = decode_checked(state, request)?;
    let target = &request.target;
    // Like upstream's endpoints, events and leases (`AllowCreateOnUpdate`), a PUT may create them.
    let creatable = matches!(target.info.kind, "Endpoints" | "Event" | "Lease");
    if creatable && target.subresource.is_none() && stored(state, request)?.is_none() {
        let response = create_at_url_name(state, request, body, None).await?;
        return Ok(fields::with_warnings(response, &warnings));
    }
    let precondition = meta::resource_version(&body)?;
    let sub = target.subresource.as_deref();
    let (_allocation, used) = service_allocations(state, target.info).await?;
    let prepare = |body: Value, stored: &Value| {
        apiextensions::prepare_update(state, target.info, body, stored, target.name(), sub, &used)
    };
    let review = Review::prepare(state, webhook::attributes(request, Operation::Update));
    let object = guaranteed_update_admitted(
        state,
        target,
        precondition,
        request.params.dry_run(),
        |stored| prepare(body.clone(), stored),
        review.as_ref().map(|review| (review, &prepare as &Prepare)),
    )
    .await?;
    let response = json_response(StatusCode::OK, object.as_ref());
    let response = admission_warnings(response, review.as_ref());
    Ok(fields::with_warnings(response, &warnings))
}

/// `PATCH …/{plural}/{name}` (and `…/status`): merge, JSON, strategic merge or apply patches.
pub async fn patch(state: &AppState, request: &ApiRequest) -> ApiResult<Response> {
    let patch_type = PatchType::from_content_type(request.content_type())?;
    apiextensions::check_patch_type(state, request.target.info, patch_type)?;
    let patch = patch_type.decode_body(&request.body)?;
    let mode = Mode::from_params(&request.params)?;
    if patch_type == PatchType::Apply {
        return apply(state, request, patch, mode).await;
    }
    let target = &request.target;
    let kind = target.info.kind;
    let precondition = if patch_type == PatchType::Json {
        None
    } else {
        meta::resource_version(&patch).ok().flatten()
    };
    let sub = target.subresource.as_deref();
    let warnings = Mutex::new(Vec::new());
    let (_allocation, used) = service_allocations(state, target.info).await?;
    let prepare = |body: Value, stored: &Value| {
        apiextensions::prepare_update(state, target.info, body, stored, target.name(), sub, &used)
    };
    let review = Review::prepare(state, webhook::attributes(request, Operation::Update));
    let object = guaranteed_update_admitted(
        state,
        target,
        precondition,
        request.params.dry_run(),
        |stored| {
            let patched = registry::patch::apply(patch_type, kind, stored, &patch)?;
            // The result is checked, not the patch: patches carry `$` directives.
            let mut found = apiextensions::check_fields(state, mode, target.info, &patched, None)?;
            if sub.is_none() {
                // Only what the patch added: an object that already carried an ignored field
                // was warned about when it was written (as upstream's `GetWarningsForPod`
                // compares with the old pod).
                let before = ignored_fields::warnings(kind, stored);
                found.extend(
                    ignored_fields::warnings(kind, &patched)
                        .into_iter()
                        .filter(|warning| !before.contains(warning)),
                );
            }
            *warnings.lock().unwrap_or_else(|p| p.into_inner()) = found;
            prepare(patched, stored)
        },
        review.as_ref().map(|review| (review, &prepare as &Prepare)),
    )
    .await?;
    let warnings = warnings.into_inner().unwrap_or_else(|p| p.into_inner());
    let response = json_response(StatusCode::OK, object.as_ref());
    let response = admission_warnings(response, review.as_ref());
    Ok(fields::with_warnings(response, &warnings))
}

/// Server-side apply (`application/apply-patch+yaml`): an upsert that records the applier's
/// fields in `metadata.managedFields` (see `patch/apply.rs`). 201 when it created the object.
async fn apply(
    state: &AppState,
    request: &ApiRequest,
    applied: Value,
    mode: Mode,
) -> ApiResult<Response> {
    let target = &request.target;
    let kind = target.info.kind;
    let options = server_side_apply::Options {
        field_manager: request.params.get("fieldManager").map(str::to_string),
        force: request.params.flag("force"),
        time: meta::now_value().as_str().unwrap_or("").to_string(),
        status: target.subresource.as_deref() == Some("status"),
    };
    let to_api = |e: crate::patch::Error| ApiError::from(e.to_status());
    let mut warnings = apiextensions::check_fields(state, mode, target.info, &applied, None)?;
    if target.subresource.is_none() {
        warnings.extend(ignored_fields::warnings(kind, &applied));
    }
    if stored(state, request)?.is_none() && target.subresource.is_none() {
        if let Some(given) = meta::meta_str(&applied, "name").filter(|n| *n != target.name()) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({given}) does not match the name on the URL ({})",
                target.name()
            )));
        }
        let body = server_side_apply::apply(kind, None, &applied, &options).map_err(to_api)?;
        let managed = body.pointer("/metadata/managedFields").cloned();
        let response = create_at_url_name(state, request, body, managed).await?;
        return Ok(fields::with_warnings(response, &warnings));
    }
    let precondition = meta::resource_version(&applied).ok().flatten();
    let sub = target.subresource.as_deref();
    let (_allocation, used) = service_allocations(state, target.info).await?;
    let prepare = |body: Value, stored: &Value| {
        apiextensions::prepare_update(state, target.info, body, stored, target.name(), sub, &used)
    };
    let review = Review::prepare(state, webhook::attributes(request, Operation::Update));
    let object = guaranteed_update_admitted(
        state,
        target,
        precondition,
        request.params.dry_run(),
        |stored| {
            let merged =
                server_side_apply::apply(kind, Some(stored), &applied, &options).map_err(to_api)?;
            prepare(merged, stored)
        },
        review.as_ref().map(|review| (review, &prepare as &Prepare)),
    )
    .await?;
    let response = json_response(StatusCode::OK, object.as_ref());
    let response = admission_warnings(response, review.as_ref());
    Ok(fields::with_warnings(response, &warnings))
}

/// `POST …/pods/{name}/binding`: the scheduler's decision, written once
/// (docs/kubernetes-rules.md#s1).
pub async fn bind(state: &AppState, request: &ApiRequest) -> ApiResult<Response> {
    let body = decode_object(&request.body, body_format(request.content_type())?)?;
    let target = &request.target;
    let binding = pods::decode_binding(body, target.name())?;
    let node = binding.target.name.clone().unwrap_or_default();
    guaranteed_update(state, target, None, request.params.dry_run(), |stored| {
        pods::bind(stored, &binding)
    })
    .await?;
    info!(pod = %format!("{}/{}", target.namespace.as_deref().unwrap_or(""), target.name()), node = %node, "bound pod");
    let success = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
    Ok(json_response(StatusCode::CREATED, &success))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken() -> ApiError {
        status::already_exists("pods", "web-abcde").into()
    }

    #[tokio::test]
    async fn a_taken_generated_name_is_retried_up_to_eight_times() {
        // (failures before success, attempts allowed, answer code, calls made)
        let table = [
            (0, 8, 200, 1),
            (3, 8, 200, 4),
            (7, 8, 200, 8),
            (8, 8, 409, 8),
            (1, 1, 409, 1),
        ];
        for (failures, attempts, code, calls) in table {
            let mut made = 0;
            let result = retry_name_collisions(attempts, || {
                made += 1;
                let fail = made <= failures;
                async move {
                    if fail {
                        Err(taken())
                    } else {
                        Ok(())
                    }
                }
            })
            .await;
            let answered = result.map(|_| 200).unwrap_or_else(|e| e.code());
            assert_eq!((answered, made), (code, calls), "{failures} collisions");
        }
        let mut made = 0;
        let other = retry_name_collisions(8, || {
            made += 1;
            async { Err::<(), _>(ApiError::bad_request("no")) }
        })
        .await;
        assert_eq!(
            (other.unwrap_err().code(), made),
            (400, 1),
            "only collisions retry"
        );
    }
}
