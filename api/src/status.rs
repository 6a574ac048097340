//! Builders for `Status`, the object every Kubernetes API error is.
//!
//! Kubernetes counterpart: `k8s.io/apimachinery/pkg/api/errors/errors.go` (`NewNotFound`,
//! `NewAlreadyExists`, `NewConflict`, `NewInvalid`, …). The reason and code pairs are the API
//! conventions': clients branch on them (kubectl prints `Error from server (NotFound): …`, client-go's
//! `IsConflict` makes controllers retry, a 410 `Expired` makes a watcher relist).

use crate::meta::{Status, StatusCause, StatusDetails};

/// A failure `Status` with a reason, an HTTP code and a message. Where upstream's constructor
/// always fills `details` (NotFound, Forbidden, MethodNotSupported, conflicts, Invalid, internal
/// errors and timeouts), the Status carries them, empty until a caller names the object: clients
/// read `details` without checking (kubectl debug takes `details.name` of any 404).
pub fn failure(code: u16, reason: &str, message: impl Into<String>) -> Status {
    let has_details = matches!(code, 403 | 404 | 405 | 409 | 422 | 500 | 504);
    Status {
        status: Some("Failure".to_string()),
        code: Some(i32::from(code)),
        reason: Some(reason.to_string()),
        message: Some(message.into()),
        details: has_details.then(StatusDetails::default),
        ..Status::default()
    }
}

/// The success `Status` some DELETEs answer with.
pub fn success(kind: &str, name: &str) -> Status {
    Status {
        status: Some("Success".to_string()),
        details: Some(details(kind, name)),
        ..Status::default()
    }
}

/// `details` of a Status about one object; `resource` is `pods` or `deployments.apps`, which
/// upstream splits into the resource (`kind`) and its `group`.
fn details(resource: &str, name: &str) -> StatusDetails {
    let (kind, group) = match resource.split_once('.') {
        Some((kind, group)) => (kind, Some(group.to_string())),
        None => (resource, None),
    };
    StatusDetails {
        kind: Some(kind.to_string()),
        group,
        name: Some(name.to_string()),
        ..StatusDetails::default()
    }
}

fn with_details(mut status: Status, kind: &str, name: &str) -> Status {
    status.details = Some(details(kind, name));
    status
}

/// 400 BadRequest: the request itself is malformed (bad JSON or YAML, a bad selector …).
pub fn bad_request(message: impl Into<String>) -> Status {
    failure(400, "BadRequest", message)
}

/// 404 NotFound: `pods "web" not found`. `plural` is the resource name with its group for named
/// groups (`pods`, `deployments.apps`), as `ResourceInfo::group_resource` gives it.
pub fn not_found(plural: &str, name: &str) -> Status {
    with_details(
        failure(404, "NotFound", format!("{plural} \"{name}\" not found")),
        plural,
        name,
    )
}

/// 409 AlreadyExists: a create of a name that is taken.
pub fn already_exists(plural: &str, name: &str) -> Status {
    with_details(
        failure(
            409,
            "AlreadyExists",
            format!("{plural} \"{name}\" already exists"),
        ),
        plural,
        name,
    )
}

/// 409 Conflict: an update carried a stale `resourceVersion` (or a failed precondition).
pub fn conflict(plural: &str, name: &str, why: &str) -> Status {
    let message = format!("Operation cannot be fulfilled on {plural} \"{name}\": {why}");
    with_details(failure(409, "Conflict", message), plural, name)
}

/// 410 Expired: a watch or list asked for a resourceVersion older than the kept history.
pub fn expired(message: impl Into<String>) -> Status {
    failure(410, "Expired", message)
}

/// 405 MethodNotAllowed.
pub fn method_not_allowed(message: impl Into<String>) -> Status {
    failure(405, "MethodNotAllowed", message)
}

/// 413 RequestEntityTooLarge.
pub fn too_large(message: impl Into<String>) -> Status {
    failure(413, "RequestEntityTooLarge", message)
}

/// 415 UnsupportedMediaType.
pub fn unsupported_media_type(content_type: &str) -> Status {
    failure(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml (got {content_type:?})"))
}

/// 500 InternalError: something went wrong inside the server (never for bad client input).
pub fn internal(message: impl Into<String>) -> Status {
    failure(500, "InternalError", message)
}

/// One invalid field of a 422: `field` is the path (`spec.containers[0].name`).
pub fn cause(field: impl Into<String>, reason: &str, message: impl Into<String>) -> StatusCause {
    StatusCause {
        field: Some(field.into()),
        reason: Some(reason.to_string()),
        message: Some(message.into()),
    }
}

/// 422 Invalid: `Pod "web" is invalid: spec.containers[0].image: Required value`.
pub fn invalid(kind: &str, name: &str, causes: Vec<StatusCause>) -> Status {
    let reasons: Vec<String> = causes
        .iter()
        .map(|cause| {
            format!(
                "{}: {}",
                cause.field.as_deref().unwrap_or(""),
                cause.message.as_deref().unwrap_or("")
            )
        })
        .collect();
    let message = format!("{kind} \"{name}\" is invalid: {}", reasons.join(", "));
    let mut status = failure(422, "Invalid", message);
    status.details = Some(StatusDetails {
        causes: Some(causes),
        ..details(kind, name)
    });
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_reads_as_kubectl_prints_it() {
        let status = not_found("pods", "web");
        assert_eq!(status.code, Some(404));
        assert_eq!(status.reason.as_deref(), Some("NotFound"));
        assert_eq!(status.message.as_deref(), Some("pods \"web\" not found"));
    }

    #[test]
    fn a_404_always_has_details_and_a_400_none_as_upstream() {
        let generic = failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
        let json = serde_json::to_value(&generic).unwrap();
        assert_eq!(json["details"], serde_json::json!({}));
        let named = serde_json::to_value(not_found("deployments.apps", "web")).unwrap();
        assert_eq!(
            named["details"],
            serde_json::json!({"name": "web", "group": "apps", "kind": "deployments"})
        );
        assert!(bad_request("x").details.is_none());
        assert!(expired("x").details.is_none());
    }

    #[test]
    fn invalid_names_each_field() {
        let status = invalid(
            "Pod",
            "web",
            vec![cause(
                "spec.containers[0].image",
                "FieldValueRequired",
                "Required value",
            )],
        );
        assert_eq!(status.code, Some(422));
        assert_eq!(
            status.message.as_deref(),
            Some("Pod \"web\" is invalid: spec.containers[0].image: Required value")
        );
    }
}
