//! Tests of `webhook_review.rs`: the request sent, the answers accepted, the errors' wording.

use super::*;

fn attributes(operation: Operation, subresource: &str) -> Attributes {
    Attributes {
        operation,
        resource: Resource {
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            subresource: subresource.into(),
            kind: "Pod".into(),
            namespaced: true,
        },
        namespace: Some("default".into()),
        name: "web".into(),
        user: Some(UserInfo {
            name: "kubernetes-admin".into(),
            uid: String::new(),
            groups: vec!["system:masters".into()],
        }),
        dry_run: false,
    }
}

fn answer(response: Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": response}),
    )
    .unwrap()
}

fn encoded(patch: Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(patch.to_string())
}

#[test]
fn the_request_carries_what_upstreams_review_does() {
    let old = json!({"metadata": {"name": "web"}});
    let body = request_body(
        &attributes(Operation::Update, "status"),
        "u-1",
        Some(&old),
        Some(&old),
    );
    let request = &body["request"];
    assert_eq!(body["kind"], "AdmissionReview");
    assert_eq!(request["uid"], "u-1");
    assert_eq!(request["operation"], "UPDATE");
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "Pod"})
    );
    assert_eq!(request["resource"]["resource"], "pods");
    assert_eq!(request["subResource"], "status");
    assert_eq!(request["namespace"], "default");
    assert_eq!(request["userInfo"]["username"], "kubernetes-admin");
    assert_eq!(request["options"]["kind"], "UpdateOptions");
    assert_eq!(request["oldObject"], old);
    let created = request_body(&attributes(Operation::Create, ""), "u-2", Some(&old), None);
    assert!(created["request"].get("subResource").is_none());
    assert_eq!(created["request"]["oldObject"], Value::Null);
}

#[test]
fn an_allowed_answer_with_a_json_patch_is_read() {
    let patch = json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]);
    let body = answer(
        json!({"uid": "u", "allowed": true, "patchType": "JSONPatch",
        "patch": encoded(patch), "warnings": ["careful"]}),
    );
    let verdict = parse_response(&body, "u", true).unwrap();
    assert_eq!(verdict.denied, None);
    assert_eq!(verdict.warnings, vec!["careful".to_string()]);
    let patched = apply_patch(&json!({"metadata": {}}), &verdict.patch.unwrap()).unwrap();
    assert_eq!(patched["metadata"]["labels"]["a"], "b");
}

#[test]
fn malformed_answers_are_failed_calls() {
    let patch = encoded(json!([]));
    let cases = [
        (
            answer(json!({"uid": "other", "allowed": true})),
            true,
            "expected response.uid",
        ),
        (
            answer(json!({"uid": "u", "allowed": true, "patch": patch})),
            true,
            "not response.patchType",
        ),
        (
            answer(json!({"uid": "u", "allowed": true, "patchType": "JSONPatch"})),
            true,
            "not response.patch",
        ),
        (
            answer(json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "JSONPatch"})),
            false,
            "may not return a patch",
        ),
        (
            answer(json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "Merge"})),
            true,
            "invalid response.patchType",
        ),
        (
            b"{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\"}".to_vec(),
            true,
            "expected webhook response of admission.k8s.io/v1",
        ),
        (
            b"not json".to_vec(),
            true,
            "received invalid webhook response",
        ),
        (answer(Value::Null), true, "webhook response was absent"),
    ];
    for (body, mutating, expected) in cases {
        let error = parse_response(&body, "u", mutating).unwrap_err();
        assert!(error.contains(expected), "{error} should say {expected}");
    }
}

#[test]
fn a_denial_names_the_webhook_and_is_at_least_400() {
    let given = json!({"code": 403, "message": "no latest tags", "reason": "Forbidden"});
    let status = denial("policy.example.com", &given);
    assert_eq!(status.code, Some(403));
    assert_eq!(
        status.message.as_deref(),
        Some("admission webhook \"policy.example.com\" denied the request: no latest tags")
    );
    let bare = denial("policy.example.com", &json!({}));
    assert_eq!(bare.code, Some(400));
    assert_eq!(
        bare.message.as_deref(),
        Some("admission webhook \"policy.example.com\" denied the request without explanation")
    );
    let low = denial(
        "w.example.com",
        &json!({"code": 200, "reason": "NotAllowed"}),
    );
    assert_eq!(low.code, Some(400));
    assert!(low
        .message
        .unwrap()
        .ends_with("denied the request: NotAllowed"));
}

#[test]
fn a_failed_call_is_an_internal_error_naming_the_webhook() {
    let status = call_failure("w.example.com", "context deadline exceeded");
    assert_eq!(status.code, Some(500));
    assert_eq!(status.reason.as_deref(), Some("InternalError"));
    assert_eq!(
        status.message.as_deref(),
        Some("Internal error occurred: failed calling webhook \"w.example.com\": context deadline exceeded")
    );
}

#[test]
fn a_patch_that_does_not_apply_is_an_error() {
    let patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/missing/x", "value": 1}]))
            .unwrap();
    assert!(apply_patch(&json!({}), &patch).is_err());
}
