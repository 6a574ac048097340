//! GET of one object and LIST of a collection, with selectors and paging.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/get.go` (`GetResource`,
//! `ListResource`) and the storage's `GetList` with its `SelectionPredicate` (label selector, field
//! selector, `limit`, `continue`). A list answers `{kind: PodList, metadata: {resourceVersion},
//! items}`; its resourceVersion is where a watch should start to miss nothing.
//!
//! minik simplifies: a list always reflects the current state (any `resourceVersion` asked for is
//! served as "not older than"), and a `continue` token resumes after the last key returned rather
//! than from a snapshot, which upstream keeps for about five minutes.

use axum::http::StatusCode;
use axum::response::Response;
use minik_api::selector::FieldSelector;
use serde_json::{json, Value};

use super::request::ListOptions;
use super::{object_response, Target};
use crate::error::{ApiError, ApiResult};
use crate::storage::Record;
use crate::table::{table, Output};
use crate::AppState;

/// `GET …/{plural}/{name}` (and `…/status`).
pub fn get(state: &AppState, target: &Target, output: Output) -> ApiResult<Response> {
    let record = state
        .storage
        .get(&target.key())
        .map_err(|e| ApiError::from_storage(e, target.info.plural, target.name()))?
        .ok_or_else(|| {
            ApiError::from(minik_api::status::not_found(
                target.info.plural,
                target.name(),
            ))
        })?;
    if let Output::Table {
        api_version,
        include,
    } = output
    {
        let metadata = json!({"resourceVersion": record.revision.to_string()});
        let table = table(
            target.info.kind,
            &[&record.value],
            metadata,
            api_version,
            include,
            true,
        );
        return Ok(object_response(StatusCode::OK, &table));
    }
    Ok(object_response(StatusCode::OK, &record.value))
}

/// The fields a kind may be selected on, beyond `metadata.name` and `metadata.namespace`.
fn selectable_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "Pod" => &[
            "spec.nodeName",
            "spec.schedulerName",
            "spec.restartPolicy",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "Node" => &["spec.unschedulable"],
        "Namespace" => &["status.phase"],
        "Service" => &["spec.clusterIP", "spec.type"],
        _ => &[],
    }
}

/// Rejects a field selector naming a field the kind does not support (400, as upstream).
pub fn check_field_selector(kind: &str, selector: &FieldSelector) -> ApiResult<()> {
    for requirement in selector.requirements() {
        let field = requirement.field.as_str();
        if field != "metadata.name"
            && field != "metadata.namespace"
            && !selectable_fields(kind).contains(&field)
        {
            return Err(ApiError::bad_request(format!(
                "field label not supported: {field}"
            )));
        }
    }
    Ok(())
}

/// Reads a dotted field of an object as the string a field selector compares with.
pub fn field_value(object: &Value, path: &str) -> Option<String> {
    let value = path
        .split('.')
        .try_fold(object, |value, part| value.get(part))?;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Object(map) if path == "source" => map
            .get("component")
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    }
}

/// Whether an object passes the list/watch selectors.
pub fn matches(options: &ListOptions, object: &Value) -> bool {
    let labels = object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    options.labels.matches(&labels) && options.fields.matches(|field| field_value(object, field))
}

/// `GET …/{plural}`: the matching objects, paged by `limit` and `continue`.
pub fn list(
    state: &AppState,
    target: &Target,
    options: &ListOptions,
    output: Output,
) -> ApiResult<Response> {
    check_field_selector(target.info.kind, &options.fields)?;
    let (records, revision) = state
        .storage
        .list(&target.prefix())
        .map_err(|e| ApiError::from_storage(e, target.info.plural, ""))?;
    let after = match &options.continue_token {
        Some(token) => Some(decode_continue(token)?),
        None => None,
    };
    let mut items: Vec<&Record> = records
        .iter()
        .filter(|r| after.as_deref().is_none_or(|after| r.key.as_str() > after))
        .filter(|r| matches(options, &r.value))
        .collect();
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if let Some(limit) = options.limit {
        if items.len() > limit {
            let remaining = items.len() - limit;
            items.truncate(limit);
            if let Some(last) = items.last() {
                metadata["continue"] = Value::String(encode_continue(&last.key));
                metadata["remainingItemCount"] = Value::from(remaining);
            }
        }
    }
    if let Output::Table {
        api_version,
        include,
    } = output
    {
        let objects: Vec<&Value> = items.iter().map(|r| &*r.value).collect();
        return Ok(object_response(
            StatusCode::OK,
            &table(
                target.info.kind,
                &objects,
                metadata,
                api_version,
                include,
                true,
            ),
        ));
    }
    let list = json!({
        "kind": format!("{}List", target.info.kind),
        "apiVersion": target.info.api_version,
        "metadata": metadata,
        "items": items.iter().map(|r| (*r.value).clone()).collect::<Vec<Value>>(),
    });
    Ok(object_response(StatusCode::OK, &list))
}

/// A continue token: the last key returned, hex-encoded so it is opaque and URL-safe.
fn encode_continue(key: &str) -> String {
    key.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_continue(token: &str) -> ApiResult<String> {
    let invalid = || ApiError::bad_request(format!("invalid continue token {token:?}"));
    if !token.len().is_multiple_of(2) {
        return Err(invalid());
    }
    let bytes = (0..token.len())
        .step_by(2)
        .map(|i| {
            token
                .get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(invalid)?;
    String::from_utf8(bytes).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let token = encode_continue("/registry/pods/default/web");
        assert_eq!(
            decode_continue(&token).unwrap(),
            "/registry/pods/default/web"
        );
        assert_eq!(decode_continue("zz").unwrap_err().code(), 400);
    }

    #[test]
    fn field_values_are_read_by_path() {
        let event = json!({"involvedObject": {"name": "web", "kind": "Pod"}, "source": {"component": "kubelet"}, "spec": {"unschedulable": true}});
        assert_eq!(
            field_value(&event, "involvedObject.name").as_deref(),
            Some("web")
        );
        assert_eq!(field_value(&event, "source").as_deref(), Some("kubelet"));
        assert_eq!(
            field_value(&event, "spec.unschedulable").as_deref(),
            Some("true")
        );
        assert_eq!(field_value(&event, "spec.nodeName"), None);
    }

    #[test]
    fn unsupported_field_labels_are_rejected() {
        let selector = FieldSelector::parse("spec.nodeName=n1").unwrap();
        assert!(check_field_selector("Pod", &selector).is_ok());
        assert_eq!(
            check_field_selector("Service", &selector)
                .unwrap_err()
                .code(),
            400
        );
    }
}
