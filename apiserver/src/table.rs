//! Server-side printing: answering `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/response.go` (`asTable`,
//! `transformObject`) and the `TableConvertor` of each registry. kubectl asks for a Table on `get`
//! (and in `get -w` streams) and prints its cells verbatim; without one it can only show NAME and
//! AGE (docs/real-clients.md#get). The cells come from [`minik_api::printers`]; each row embeds the
//! object as `PartialObjectMetadata` (`includeObject=Metadata`, the default), the full object
//! (`Object`) or nothing (`None`).

use axum::http::{header, HeaderMap};
use minik_api::printers::{column_definitions, row};
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::request::query::Params;

/// What each row embeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Include {
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
    /// Nothing.
    None,
}

/// How to encode an answer: the plain object, or a Table of a given `meta.k8s.io` version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Plain JSON.
    Object,
    /// A Table (`meta.k8s.io/v1` or `v1beta1`).
    Table {
        /// `meta.k8s.io/v1`.
        api_version: &'static str,
        /// What rows embed.
        include: Include,
    },
}

/// Picks the output from the Accept header (first acceptable entry wins) and `includeObject`.
pub fn negotiate(headers: &HeaderMap, params: &Params) -> ApiResult<Output> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mut output = Output::Object;
    for entry in accept.split(',') {
        let parts: Vec<String> = entry
            .split(';')
            .map(|p| p.trim().replace(' ', ""))
            .collect();
        let has = |p: &str| parts.iter().any(|x| x == p);
        if has("as=Table") && has("g=meta.k8s.io") {
            let api_version = if has("v=v1beta1") {
                "meta.k8s.io/v1beta1"
            } else {
                "meta.k8s.io/v1"
            };
            output = Output::Table {
                api_version,
                include: Include::Metadata,
            };
            break;
        }
        if parts
            .first()
            .is_some_and(|m| m == "application/json" || m == "*/*")
            && !has("as=Table")
        {
            break;
        }
    }
    if let Output::Table { api_version, .. } = output {
        let include = match params.get("includeObject").unwrap_or("") {
            "" | "Metadata" => Include::Metadata,
            "Object" => Include::Object,
            "None" => Include::None,
            other => {
                return Err(ApiError::bad_request(format!(
                    "includeObject must be Metadata, Object or None, not {other:?}"
                )))
            }
        };
        return Ok(Output::Table {
            api_version,
            include,
        });
    }
    Ok(output)
}

fn embedded(object: &Value, include: Include) -> Value {
    match include {
        Include::Object => object.clone(),
        Include::None => Value::Null,
        Include::Metadata => json!({
            "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
        }),
    }
}

/// A Table of `objects` of one kind; `headers` false leaves out the column definitions (as
/// upstream does after the first event of a watch).
pub fn table(
    kind: &str,
    objects: &[&Value],
    metadata: Value,
    api_version: &str,
    include: Include,
    headers: bool,
) -> Value {
    let now = jiff::Timestamp::now();
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let mut row_json = json!({"cells": row(kind, object, now)});
            if include != Include::None {
                row_json["object"] = embedded(object, include);
            }
            row_json
        })
        .collect();
    let columns = if headers {
        Value::Array(column_definitions(kind))
    } else {
        Value::Array(vec![])
    };
    json!({"kind": "Table", "apiVersion": api_version, "metadata": metadata, "columnDefinitions": columns, "rows": rows})
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn kubectl_accept_header_asks_for_a_v1_table() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"),
        );
        let output = negotiate(&headers, &Params::default()).unwrap();
        assert_eq!(
            output,
            Output::Table {
                api_version: "meta.k8s.io/v1",
                include: Include::Metadata
            }
        );
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, */*"),
        );
        assert_eq!(
            negotiate(&headers, &Params::default()).unwrap(),
            Output::Object
        );
        assert_eq!(
            negotiate(&HeaderMap::new(), &Params::default()).unwrap(),
            Output::Object
        );
    }

    #[test]
    fn include_object_picks_what_rows_embed_and_refuses_other_values() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;as=Table;v=v1;g=meta.k8s.io"),
        );
        let with = |value: &str| Params::new(vec![("includeObject".into(), value.into())]);
        let include = |value: &str| match negotiate(&headers, &with(value)) {
            Ok(Output::Table { include, .. }) => Some(include),
            _ => None,
        };
        assert_eq!(include("Object"), Some(Include::Object));
        assert_eq!(include("None"), Some(Include::None));
        assert_eq!(include(""), Some(Include::Metadata));
        assert_eq!(
            negotiate(&headers, &with("Everything")).unwrap_err().code(),
            400
        );

        let pod = json!({"kind": "Pod", "metadata": {"name": "web"}, "spec": {"containers": []}});
        let full = table(
            "Pod",
            &[&pod],
            json!({}),
            "meta.k8s.io/v1",
            Include::Object,
            false,
        );
        assert_eq!(full["rows"][0]["object"], pod);
        assert_eq!(
            full["columnDefinitions"],
            json!([]),
            "later watch events carry no headers"
        );
        let bare = table(
            "Pod",
            &[&pod],
            json!({}),
            "meta.k8s.io/v1",
            Include::None,
            true,
        );
        assert!(bare["rows"][0].get("object").is_none());
    }

    #[test]
    fn rows_embed_partial_metadata_by_default() {
        let pod = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a"}]}});
        let table = table(
            "Pod",
            &[&pod],
            json!({"resourceVersion": "3"}),
            "meta.k8s.io/v1",
            Include::Metadata,
            true,
        );
        assert_eq!(table["rows"][0]["cells"][0], "web");
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(table["columnDefinitions"][0]["name"], "Name");
    }
}
