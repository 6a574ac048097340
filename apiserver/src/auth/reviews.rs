//! Access reviews: "may I?", "may they?", "what may I?" and "who am I?".
//!
//! Kubernetes counterpart: `pkg/registry/authorization/selfsubjectaccessreview`,
//! `subjectaccessreview`, `selfsubjectrulesreview` and
//! `pkg/registry/authentication/selfsubjectreview` (docs/security.md#r7, #r8, #r9). None is
//! stored: a POST answers 201 with the request echoed and `status` filled in. They are what
//! `kubectl auth can-i` and `kubectl auth whoami` send.
//!
//! On a server without authentication every review says allowed (upstream's AlwaysAllow) and the
//! caller is anonymous. What minik simplifies: no LocalSubjectAccessReview, no `extra`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use minik_api::k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::{json, Value};

use super::attributes::Attributes;
use super::rbac::{self, Decision};
use super::UserInfo;
use crate::error::{json_response, ApiError, ApiResult};
use crate::AppState;

type Caller = Option<Extension<UserInfo>>;

/// The review in the request: JSON, or protobuf as kubectl's typed client sends it.
fn body_json(body: &[u8]) -> ApiResult<Value> {
    if body.starts_with(b"k8s\0") {
        return crate::protobuf::decode(body)
            .map_err(|e| ApiError::bad_request(format!("invalid review: {e}")));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid review: {e}")))
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`.
pub async fn self_subject_access_review(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> ApiResult<Response> {
    let review = body_json(&body)?;
    let user = caller.map(|Extension(u)| u);
    access_review(&state, review, user, "SelfSubjectAccessReview")
}

/// `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`: the user is the spec's.
pub async fn subject_access_review(
    State(state): State<AppState>,
    body: Bytes,
) -> ApiResult<Response> {
    let review = body_json(&body)?;
    let spec = &review["spec"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let user = UserInfo {
        name: spec["user"].as_str().unwrap_or("").to_string(),
        uid: spec["uid"].as_str().unwrap_or("").to_string(),
        groups: strings(&spec["groups"]),
    };
    if user.name.is_empty() && user.groups.is_empty() {
        return Err(ApiError::from(minik_api::status::invalid(
            "SubjectAccessReview",
            "",
            vec![minik_api::status::cause(
                "spec.user",
                "FieldValueInvalid",
                "at least one of user or group must be specified",
            )],
        )));
    }
    access_review(&state, review, Some(user), "SubjectAccessReview")
}

fn access_review(
    state: &AppState,
    mut review: Value,
    user: Option<UserInfo>,
    kind: &str,
) -> ApiResult<Response> {
    let spec = &review["spec"];
    let attributes = match (&spec["resourceAttributes"], &spec["nonResourceAttributes"]) {
        (Value::Object(_), Value::Null) => resource_attributes(&spec["resourceAttributes"]),
        (Value::Null, Value::Object(_)) => Attributes {
            verb: text(&spec["nonResourceAttributes"], "verb"),
            path: text(&spec["nonResourceAttributes"], "path"),
            ..Attributes::default()
        },
        _ => {
            return Err(ApiError::from(minik_api::status::invalid(
                kind,
                "",
                vec![minik_api::status::cause(
                    "spec.resourceAttributes",
                    "FieldValueInvalid",
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                )],
            )))
        }
    };
    let status = match user {
        None => json!({"allowed": true}),
        Some(user) => {
            let policy = policy(state)?;
            let attributes = Attributes { user, ..attributes };
            match rbac::authorize(&policy, &attributes, None) {
                Decision::Allow(reason) => json!({"allowed": true, "reason": reason}),
                Decision::Deny(reason) if reason.is_empty() => json!({"allowed": false}),
                Decision::Deny(reason) => json!({"allowed": false, "reason": reason}),
            }
        }
    };
    review["status"] = status;
    Ok(created(review, kind))
}

fn resource_attributes(spec: &Value) -> Attributes {
    Attributes {
        verb: text(spec, "verb"),
        resource_request: true,
        api_group: text(spec, "group"),
        resource: text(spec, "resource"),
        subresource: text(spec, "subresource"),
        namespace: text(spec, "namespace"),
        name: text(spec, "name"),
        ..Attributes::default()
    }
}

fn text(value: &Value, field: &str) -> String {
    value[field].as_str().unwrap_or("").to_string()
}

fn policy(state: &AppState) -> ApiResult<std::sync::Arc<rbac::Policy>> {
    state
        .security
        .policy
        .current(state.storage.as_ref())
        .map_err(|e| ApiError::from_storage(e, "clusterroles", ""))
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews`.
pub async fn self_subject_rules_review(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> ApiResult<Response> {
    let mut review = body_json(&body)?;
    let namespace = review["spec"]["namespace"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let rules: Vec<PolicyRule> = match caller {
        None => vec![PolicyRule {
            verbs: vec!["*".into()],
            api_groups: Some(vec!["*".into()]),
            resources: Some(vec!["*".into()]),
            non_resource_urls: None,
            resource_names: None,
        }],
        Some(Extension(user)) if user.groups.iter().any(|g| g == rbac::MASTERS) => {
            vec![
                PolicyRule {
                    verbs: vec!["*".into()],
                    api_groups: Some(vec!["*".into()]),
                    resources: Some(vec!["*".into()]),
                    ..PolicyRule::default()
                },
                PolicyRule {
                    verbs: vec!["*".into()],
                    non_resource_urls: Some(vec!["*".into()]),
                    ..PolicyRule::default()
                },
            ]
        }
        Some(Extension(user)) => rbac::rules_for(policy(&state)?.as_ref(), &user, &namespace),
    };
    let (resource, non_resource): (Vec<_>, Vec<_>) = rules
        .into_iter()
        .partition(|r| r.non_resource_urls.is_none());
    let resource_rules: Vec<Value> = resource
        .iter()
        .map(|r| json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources, "resourceNames": r.resource_names}))
        .collect();
    let non_resource_rules: Vec<Value> = non_resource
        .iter()
        .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
        .collect();
    review["status"] = json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false});
    Ok(created(review, "SelfSubjectRulesReview"))
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews`: who the caller is.
pub async fn self_subject_review(caller: Caller) -> Response {
    let user = caller.map(|Extension(u)| u).unwrap_or_default();
    let review = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "SelfSubjectReview",
        "metadata": {"creationTimestamp": null},
        "status": {"userInfo": user},
    });
    json_response(StatusCode::CREATED, &review)
}

fn created(mut review: Value, kind: &str) -> Response {
    review["kind"] = json!(kind);
    review["apiVersion"] = json!("authorization.k8s.io/v1");
    if !review["metadata"].is_object() {
        review["metadata"] = json!({});
    }
    json_response(StatusCode::CREATED, &review)
}
