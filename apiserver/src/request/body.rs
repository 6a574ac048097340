//! Reading a request body: JSON, YAML or protobuf, whatever the client sent.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/rest.go` (`readBody`,
//! `negotiation.NegotiateInputSerializer`). The Python client sends no `Content-Type` (it means
//! JSON), so bodies are read as bytes and parsed here, never through axum's strict `Json`
//! extractor.

use minik_api::status;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

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
}
