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
use serde_json::{json, Value};

use crate::error::{json_response, ApiError, ApiResult};
use crate::request::query::ListOptions;
use crate::request::selection::{check_field_selector, matches};
use crate::request::Target;
use crate::storage::Record;
use crate::table::{table, Output};
use crate::AppState;

/// `GET …/{plural}/{name}` (and `…/status`).
pub fn get(state: &AppState, target: &Target, output: Output) -> ApiResult<Response> {
    let record = state
        .storage
        .get(&target.key())
        .map_err(|e| ApiError::from_storage(e, &target.info.group_resource(), target.name()))?
        .ok_or_else(|| {
            ApiError::from(minik_api::status::not_found(
                &target.info.group_resource(),
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
        return Ok(json_response(StatusCode::OK, &table));
    }
    Ok(json_response(StatusCode::OK, record.value.as_ref()))
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
        .map_err(|e| ApiError::from_storage(e, &target.info.group_resource(), ""))?;
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
        return Ok(json_response(
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
    let list = ListBody {
        api_version: target.info.api_version,
        items: items.iter().map(|r| &*r.value).collect(),
        kind: format!("{}List", target.info.kind),
        metadata,
    };
    Ok(json_response(StatusCode::OK, &list))
}

/// A list response that borrows its items instead of deep-copying every stored object into a
/// `json!` value (the copies and their drops were a quarter of the apiserver's CPU in the
/// scheduling profile, where watchers relist 10 000 pods). The fields are in the order
/// serde_json's sorted map writes them, so the bytes are the same as before.
#[derive(serde::Serialize)]
struct ListBody<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    items: Vec<&'a Value>,
    kind: String,
    metadata: Value,
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
    fn a_borrowed_list_body_is_written_as_the_json_map_was() {
        let items = [
            json!({"metadata": {"name": "a"}, "kind": "Pod"}),
            json!({"b": [1, "x"]}),
        ];
        let metadata = json!({"resourceVersion": "7", "continue": "2f"});
        let body = ListBody {
            api_version: "v1",
            items: items.iter().collect(),
            kind: "PodList".to_string(),
            metadata: metadata.clone(),
        };
        let map = json!({
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": metadata,
            "items": items.to_vec(),
        });
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            serde_json::to_string(&map).unwrap()
        );
    }

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let token = encode_continue("/registry/pods/default/web");
        assert_eq!(
            decode_continue(&token).unwrap(),
            "/registry/pods/default/web"
        );
        assert_eq!(decode_continue("zz").unwrap_err().code(), 400);
    }
}
