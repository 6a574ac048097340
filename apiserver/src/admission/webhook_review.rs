//! The AdmissionReview a webhook receives and what its answer means. Pure.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/admission/plugin/webhook/request/
//! admissionreview.go` (`CreateV1AdmissionReview`, `VerifyAdmissionResponse`: same apiVersion and
//! kind back, `response.uid` equal to the request's, a patch only with `patchType: JSONPatch`),
//! `webhook/errors/statuserror.go` (`ToStatusErr`: a denial's message and a code of at least 400)
//! and `apiserver/pkg/util/webhook/error.go` (a failed call's `failed calling webhook` text).
//! minik simplifies: only `admission.k8s.io/v1` is spoken (a webhook that lists only v1beta1
//! is a failed call); `auditAnnotations` are accepted and dropped.

use base64::Engine;
use minik_api::meta::{Status, StatusCause, StatusDetails};
use minik_api::status;
use serde_json::{json, Value};

use super::webhook_match::{Operation, Resource};
use crate::auth::UserInfo;

/// The request's side of a review: what the dispatcher knows about the write.
#[derive(Clone, Debug)]
pub struct Attributes {
    pub operation: Operation,
    pub resource: Resource,
    /// The object's namespace (none for cluster-scoped kinds).
    pub namespace: Option<String>,
    /// Empty on a create with `generateName` (the name is chosen after admission).
    pub name: String,
    pub user: Option<UserInfo>,
    pub dry_run: bool,
}

/// The `AdmissionReview` body sent to a webhook.
pub fn request_body(
    attributes: &Attributes,
    uid: &str,
    object: Option<&Value>,
    old_object: Option<&Value>,
) -> Value {
    let r = &attributes.resource;
    let kind = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let resource = json!({"group": r.group, "version": r.version, "resource": r.resource});
    let options_kind = match attributes.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        Operation::Connect => "",
    };
    let options = (!options_kind.is_empty())
        .then(|| json!({"kind": options_kind, "apiVersion": "meta.k8s.io/v1"}));
    let mut request = json!({
        "uid": uid,
        "kind": kind, "resource": resource,
        "requestKind": kind, "requestResource": resource,
        "name": attributes.name,
        "operation": attributes.operation.as_str(),
        "userInfo": attributes.user.as_ref().map(|u| json!(u)).unwrap_or_else(|| json!({})),
        "object": object, "oldObject": old_object,
        "dryRun": attributes.dry_run,
        "options": options,
    });
    if !r.subresource.is_empty() {
        request["subResource"] = json!(r.subresource);
        request["requestSubResource"] = json!(r.subresource);
    }
    if let Some(namespace) = &attributes.namespace {
        request["namespace"] = json!(namespace);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

/// What a webhook answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// `Some(status)` when it refused the request (the status it gave, maybe empty).
    pub denied: Option<Value>,
    /// The RFC 6902 patch of a mutating webhook.
    pub patch: Option<json_patch::Patch>,
    pub warnings: Vec<String>,
}

/// Reads a webhook's answer; an error here is a failed call (the failurePolicy applies).
pub fn parse_response(body: &[u8], uid: &str, mutating: bool) -> Result<Verdict, String> {
    let review: Value = serde_json::from_slice(body)
        .map_err(|e| format!("received invalid webhook response: {e}"))?;
    let (api_version, kind) = (&review["apiVersion"], &review["kind"]);
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}, Kind={}",
            api_version.as_str().unwrap_or(""),
            kind.as_str().unwrap_or("")
        ));
    }
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    let got = response["uid"].as_str().unwrap_or("");
    if got != uid {
        return Err(format!("expected response.uid=\"{uid}\", got \"{got}\""));
    }
    let patch = read_patch(response, mutating)?;
    let warnings = response["warnings"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let allowed = response["allowed"].as_bool().unwrap_or(false);
    let denied = (!allowed).then(|| response.get("status").cloned().unwrap_or(json!({})));
    Ok(Verdict {
        denied,
        patch,
        warnings,
    })
}

/// `patch` and `patchType` come together, as `JSONPatch`, and only from mutating webhooks.
fn read_patch(response: &Value, mutating: bool) -> Result<Option<json_patch::Patch>, String> {
    let patch = response.get("patch").and_then(Value::as_str);
    let patch_type = response.get("patchType").and_then(Value::as_str);
    match (patch, patch_type) {
        (None, None) => Ok(None),
        (Some(_), _) | (_, Some(_)) if !mutating => {
            Err("validating webhook may not return a patch".into())
        }
        (Some(_), None) => Err("webhook returned response.patch but not response.patchType".into()),
        (None, Some(_)) => Err("webhook returned response.patchType but not response.patch".into()),
        (Some(patch), Some("JSONPatch")) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(patch)
                .map_err(|e| format!("received invalid webhook response: patch: {e}"))?;
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("received invalid webhook response: patch: {e}"))
        }
        (Some(_), Some(other)) => Err(format!(
            "webhook returned invalid response.patchType of \"{other}\""
        )),
    }
}

/// `ToStatusErr`: a denial, with the webhook named and a code of at least 400.
pub fn denial(webhook: &str, given: &Value) -> Status {
    let denied_by = format!("admission webhook \"{webhook}\" denied the request");
    let text = |field: &str| given[field].as_str().filter(|s| !s.is_empty());
    let message = match text("message").or_else(|| text("reason")) {
        Some(why) => format!("{denied_by}: {why}"),
        None => format!("{denied_by} without explanation"),
    };
    let code = given["code"].as_i64().filter(|c| *c >= 400);
    let code = code.and_then(|c| u16::try_from(c).ok()).unwrap_or(400);
    let mut status = status::failure(code, text("reason").unwrap_or(""), message);
    status.reason = text("reason").map(str::to_string);
    if let Some(details) = given.get("details").filter(|d| d.is_object()) {
        status.details = serde_json::from_value::<StatusDetails>(details.clone()).ok();
    }
    status
}

/// `ErrCallingWebhook` under failurePolicy Fail: an InternalError (500), as upstream answers.
pub fn call_failure(webhook: &str, error: &str) -> Status {
    let why = format!("failed calling webhook \"{webhook}\": {error}");
    let mut status = status::internal(format!("Internal error occurred: {why}"));
    status.details = Some(StatusDetails {
        causes: Some(vec![StatusCause {
            message: Some(why),
            ..StatusCause::default()
        }]),
        ..StatusDetails::default()
    });
    status
}

/// Applies a mutating webhook's patch; a patch that does not apply is a failed call.
pub fn apply_patch(object: &Value, patch: &json_patch::Patch) -> Result<Value, String> {
    let mut patched = object.clone();
    json_patch::patch(&mut patched, patch).map_err(|e| format!("JSON Patch: {e}"))?;
    Ok(patched)
}

#[cfg(test)]
#[path = "webhook_review_tests.rs"]
mod tests;
