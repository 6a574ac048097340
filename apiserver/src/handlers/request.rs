//! Reading a request: query parameters, and bodies in JSON or YAML whatever the client sent.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/rest.go` (`readBody`,
//! `negotiation.NegotiateInputSerializer`) and the query decoding of `metav1.ListOptions` /
//! `DeleteOptions`. Real clients are sloppy in ways the server must accept
//! (docs/real-clients.md#must-haves): the Python client sends no `Content-Type` (it means JSON),
//! kube-rs sends `?&labelSelector=…`, Python sends DeleteOptions as query parameters. So bodies are
//! read as bytes and parsed here, never through axum's strict `Json` extractor.

use minik_api::selector::{FieldSelector, LabelSelector};
use minik_api::status;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// The query string as name/value pairs (repeated names keep their first value).
#[derive(Clone, Debug, Default)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    /// Wraps decoded pairs.
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        Params { pairs }
    }

    /// The value of a parameter, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean parameter: `true`/`1` (Kubernetes accepts both for `watch`).
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some("true" | "1" | "True"))
    }

    /// An integer parameter; a malformed one is a 400.
    pub fn int(&self, name: &str) -> ApiResult<Option<i64>> {
        match self.get(name).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(text) => text.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid value for query parameter {name}: {text:?} is not an integer"
                ))
            }),
        }
    }

    /// `dryRun=All`: validate and answer, but store nothing.
    pub fn dry_run(&self) -> bool {
        self.get("dryRun").is_some_and(|v| v == "All")
    }
}

/// The list/watch options of `metav1.ListOptions` that minik honours.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `watch=true|1`.
    pub watch: bool,
    /// `resourceVersion` (list: ignored, current state served; watch: the start point).
    pub resource_version: Option<String>,
    /// `limit` (0 or absent: everything).
    pub limit: Option<usize>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `timeoutSeconds` for watches.
    pub timeout_seconds: Option<u64>,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `sendInitialEvents` (streaming list).
    pub send_initial_events: bool,
}

impl ListOptions {
    /// Reads the options from the query; a bad selector or number is a 400.
    pub fn parse(params: &Params) -> ApiResult<Self> {
        let labels = LabelSelector::parse(params.get("labelSelector").unwrap_or(""))
            .map_err(|e| ApiError::bad_request(format!("unable to parse labelSelector: {e}")))?;
        let fields = FieldSelector::parse(params.get("fieldSelector").unwrap_or(""))
            .map_err(|e| ApiError::bad_request(format!("unable to parse fieldSelector: {e}")))?;
        let non_negative = |name: &str| -> ApiResult<Option<u64>> {
            match params.int(name)? {
                Some(n) if n < 0 => Err(ApiError::bad_request(format!(
                    "{name} must not be negative"
                ))),
                other => Ok(other.map(|n| n as u64)),
            }
        };
        Ok(ListOptions {
            labels,
            fields,
            watch: params.flag("watch"),
            resource_version: params
                .get("resourceVersion")
                .filter(|v| !v.is_empty())
                .map(str::to_string),
            limit: non_negative("limit")?
                .filter(|n| *n > 0)
                .map(|n| n as usize),
            continue_token: params
                .get("continue")
                .filter(|v| !v.is_empty())
                .map(str::to_string),
            timeout_seconds: non_negative("timeoutSeconds")?,
            bookmarks: params.flag("allowWatchBookmarks"),
            send_initial_events: params.flag("sendInitialEvents"),
        })
    }
}

/// How a body is encoded, from its `Content-Type` (parameters such as `charset` ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFormat {
    /// `application/json`, or no Content-Type at all.
    Json,
    /// `application/yaml` (and `application/apply-patch+yaml`).
    Yaml,
    /// `application/vnd.kubernetes.protobuf` (kubectl's typed creates; see `protobuf.rs`).
    Protobuf,
}

/// The media type of a request, lowercased, without parameters; `None` when absent.
pub fn media_type(content_type: Option<&str>) -> Option<String> {
    content_type
        .map(|ct| {
            ct.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|ct| !ct.is_empty())
}

/// The format of a create/update body; anything but JSON or YAML is a 415.
pub fn body_format(content_type: Option<&str>) -> ApiResult<BodyFormat> {
    match media_type(content_type).as_deref() {
        None | Some("application/json") | Some("*/*") | Some("text/plain") => Ok(BodyFormat::Json),
        Some("application/yaml") | Some("application/x-yaml") | Some("text/yaml") => {
            Ok(BodyFormat::Yaml)
        }
        Some("application/vnd.kubernetes.protobuf") => Ok(BodyFormat::Protobuf),
        Some(other) => Err(status::unsupported_media_type(other).into()),
    }
}

/// Parses a body into any type; malformed input is a 400 naming the problem.
pub fn decode<T: DeserializeOwned>(bytes: &[u8], format: BodyFormat) -> ApiResult<T> {
    match format {
        BodyFormat::Json => serde_json::from_slice(bytes).map_err(|e| {
            ApiError::bad_request(format!("couldn't decode the request body as JSON: {e}"))
        }),
        BodyFormat::Yaml => {
            let text = std::str::from_utf8(bytes)
                .map_err(|e| ApiError::bad_request(format!("body is not UTF-8: {e}")))?;
            let value: Value = serde_saphyr::from_str(text).map_err(|e| {
                ApiError::bad_request(format!("couldn't decode the request body as YAML: {e}"))
            })?;
            serde_json::from_value(value)
                .map_err(|e| ApiError::bad_request(format!("invalid object: {e}")))
        }
        BodyFormat::Protobuf => {
            let value = crate::protobuf::decode(bytes).map_err(|e| {
                ApiError::from(status::failure(415, "UnsupportedMediaType", e.to_string()))
            })?;
            serde_json::from_value(value)
                .map_err(|e| ApiError::bad_request(format!("invalid object: {e}")))
        }
    }
}

/// Parses an object body: it must be a JSON object.
pub fn decode_object(bytes: &[u8], format: BodyFormat) -> ApiResult<Value> {
    let value: Value = decode(bytes, format)?;
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_content_type_means_json_and_unknown_is_415() {
        assert_eq!(body_format(None).unwrap(), BodyFormat::Json);
        assert_eq!(
            body_format(Some("application/json; charset=utf-8")).unwrap(),
            BodyFormat::Json
        );
        assert_eq!(
            body_format(Some("application/yaml")).unwrap(),
            BodyFormat::Yaml
        );
        assert_eq!(
            body_format(Some("application/vnd.kubernetes.protobuf")).unwrap(),
            BodyFormat::Protobuf
        );
        assert_eq!(
            body_format(Some("application/cbor")).unwrap_err().code(),
            415
        );
    }

    #[test]
    fn yaml_and_json_bodies_decode_alike() {
        let json = decode_object(br#"{"metadata":{"name":"web"}}"#, BodyFormat::Json).unwrap();
        let yaml = decode_object(b"metadata:\n  name: web\n", BodyFormat::Yaml).unwrap();
        assert_eq!(json, yaml);
        assert_eq!(
            decode_object(b"{nope", BodyFormat::Json)
                .unwrap_err()
                .code(),
            400
        );
        assert_eq!(
            decode_object(b"[1]", BodyFormat::Json).unwrap_err().code(),
            400
        );
    }

    #[test]
    fn list_options_read_kube_rs_style_queries() {
        let params = Params::new(vec![
            ("labelSelector".into(), "app=web".into()),
            ("watch".into(), "1".into()),
            ("timeoutSeconds".into(), "290".into()),
        ]);
        let options = ListOptions::parse(&params).unwrap();
        assert!(options.watch);
        assert_eq!(options.timeout_seconds, Some(290));
        let bad = Params::new(vec![("limit".into(), "x".into())]);
        assert_eq!(ListOptions::parse(&bad).unwrap_err().code(), 400);
    }
}
