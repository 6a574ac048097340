//! `fieldValidation=Strict|Warn|Ignore`: unknown and duplicate fields in a request body.
//!
//! Kubernetes counterpart: the strict decoding of `k8s.io/apiserver/pkg/endpoints/handlers`
//! (`fieldValidation`, KEP-2885: server-side field validation) and `transformDecodeError`, which
//! words a Strict failure as
//! `Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.foo"`.
//! kubectl sends `fieldValidation=Strict` on `apply`/`create` (its default `--validate=strict`)
//! once the OpenAPI document advertises the parameter (docs/real-clients.md#openapi); under `Warn`
//! each problem goes back as a `Warning: 299 - "unknown field \"spec.foo\""` header, which kubectl
//! prints on stderr.
//!
//! How minik finds unknown fields: upstream's decoder reports them while it decodes; minik decodes
//! the body into the typed k8s-openapi struct through `serde_ignored`, which calls back with the
//! path of every key the struct's `Deserialize` skipped. Duplicate keys (which `serde_json::Value`
//! silently collapses) are found on the raw JSON bytes.
//!
//! Known fields that minik stores but does not act on get their own warnings, from
//! `ignored_fields.rs`; [`with_warnings`] turns both kinds into headers.
//!
//! minik simplifies: type errors (`containerPort: "80"`) are left to validation, which answers 422.

use std::collections::BTreeSet;
use std::fmt;

use axum::http::HeaderValue;
use axum::response::Response;
use minik_api::apps::{Deployment, ReplicaSet};
use minik_api::core::{Endpoints, Event, Namespace, Node, Pod, Service};
use minik_api::k8s_openapi::api::coordination::v1::Lease;
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::request::query::Params;

/// The three `fieldValidation` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Drop unknown fields silently (what `kubectl --validate=false` asks for).
    Ignore,
    /// Drop them and warn (the server's default).
    Warn,
    /// Refuse the request with 400 BadRequest.
    Strict,
}

impl Mode {
    /// Reads `fieldValidation` from the query; an unknown value is a 400.
    pub fn from_params(params: &Params) -> ApiResult<Self> {
        match params.get("fieldValidation").unwrap_or("") {
            "" | "Warn" => Ok(Mode::Warn),
            "Ignore" => Ok(Mode::Ignore),
            "Strict" => Ok(Mode::Strict),
            other => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of Ignore, Warn or Strict, not {other:?}"
            ))),
        }
    }
}

/// Formats a `serde_ignored` path as upstream does: `spec.containers[0].foo`.
fn upstream_path(path: &serde_ignored::Path) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", upstream_path(parent)),
        Path::Map { parent, key } => {
            let parent = upstream_path(parent);
            if parent.is_empty() {
                key.clone()
            } else {
                format!("{parent}.{key}")
            }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => upstream_path(parent),
    }
}

fn ignored_by<K: DeserializeOwned>(value: &Value) -> Vec<String> {
    let mut unknown = Vec::new();
    // One callback type for every kind: with a closure per `K`, every nested type's visitor was
    // compiled again for each kind that contains it (~5 MB of the binary's code).
    let mut record = |path: serde_ignored::Path| unknown.push(upstream_path(&path));
    let record: &mut dyn FnMut(serde_ignored::Path) = &mut record;
    // A type error ends the walk; the fields found so far are still reported.
    let _ = serde_ignored::deserialize::<_, _, K>(value, record);
    unknown
}

/// The dotted paths of the fields of `value` that `kind` does not have, in document order.
pub fn unknown_fields(kind: &str, value: &Value) -> Vec<String> {
    match kind {
        "Pod" => ignored_by::<Pod>(value),
        "Service" => ignored_by::<Service>(value),
        "Endpoints" => ignored_by::<Endpoints>(value),
        "Event" => ignored_by::<Event>(value),
        "Node" => ignored_by::<Node>(value),
        "Namespace" => ignored_by::<Namespace>(value),
        "Lease" => ignored_by::<Lease>(value),
        "EndpointSlice" => ignored_by::<EndpointSlice>(value),
        "Deployment" => ignored_by::<Deployment>(value),
        "ReplicaSet" => ignored_by::<ReplicaSet>(value),
        "Role" => ignored_by::<Role>(value),
        "ClusterRole" => ignored_by::<ClusterRole>(value),
        "RoleBinding" => ignored_by::<RoleBinding>(value),
        "ClusterRoleBinding" => ignored_by::<ClusterRoleBinding>(value),
        "Job" => ignored_by::<minik_api::batch::Job>(value),
        "ConfigMap" => ignored_by::<minik_api::core::ConfigMap>(value),
        "Secret" => ignored_by::<minik_api::core::Secret>(value),
        // The later workload controllers (issue 20).
        "ReplicationController" => ignored_by::<minik_api::core::ReplicationController>(value),
        "DaemonSet" => ignored_by::<minik_api::apps::DaemonSet>(value),
        "StatefulSet" => ignored_by::<minik_api::apps::StatefulSet>(value),
        "PersistentVolume" => ignored_by::<minik_api::core::PersistentVolume>(value),
        "PersistentVolumeClaim" => ignored_by::<minik_api::core::PersistentVolumeClaim>(value),
        "StorageClass" => {
            ignored_by::<minik_api::k8s_openapi::api::storage::v1::StorageClass>(value)
        }
        "ControllerRevision" => ignored_by::<minik_api::apps::ControllerRevision>(value),
        "CronJob" => ignored_by::<minik_api::batch::CronJob>(value),
        "Ingress" => ignored_by::<minik_api::networking_v1::Ingress>(value),
        "IngressClass" => ignored_by::<minik_api::networking_v1::IngressClass>(value),
        // Admission webhooks (issue 21).
        "ValidatingWebhookConfiguration" => ignored_by::<
            minik_api::k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
        >(value),
        "MutatingWebhookConfiguration" => ignored_by::<
            minik_api::k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration,
        >(value),
        _ => Vec::new(),
    }
}

/// The paths of keys repeated within one JSON object of `body` (YAML or invalid JSON: none).
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let mut found = BTreeSet::new();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let _ = DuplicateSeed {
        path: String::new(),
        found: &mut found,
    }
    .deserialize(&mut deserializer);
    found.into_iter().collect()
}

struct DuplicateSeed<'a> {
    path: String,
    found: &'a mut BTreeSet<String>,
}

impl<'de> DeserializeSeed<'de> for DuplicateSeed<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DuplicateSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            if !seen.insert(key) {
                self.found.insert(path.clone());
            }
            map.next_value_seed(DuplicateSeed {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            let path = format!("{}[{index}]", self.path);
            if seq
                .next_element_seed(DuplicateSeed {
                    path,
                    found: self.found,
                })?
                .is_none()
            {
                return Ok(());
            }
            index += 1;
        }
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Applies the mode to a request body of `kind`: Strict refuses unknown or duplicate fields with
/// 400, Warn returns the warnings to send (one per field), Ignore returns none. `raw` is the body
/// as sent, when it was JSON (for duplicates).
pub fn check(mode: Mode, kind: &str, value: &Value, raw: Option<&[u8]>) -> ApiResult<Vec<String>> {
    if mode == Mode::Ignore {
        return Ok(Vec::new());
    }
    let mut problems: Vec<String> = unknown_fields(kind, value)
        .into_iter()
        .map(|field| format!("unknown field \"{field}\""))
        .collect();
    if let Some(raw) = raw {
        problems.extend(
            duplicate_fields(raw)
                .into_iter()
                .map(|field| format!("duplicate field \"{field}\"")),
        );
    }
    if mode == Mode::Strict && !problems.is_empty() {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a {kind}: strict decoding error: {}",
            problems.join(", ")
        )));
    }
    Ok(problems)
}

/// Adds one `Warning: 299 - "…"` header per warning (RFC 7234 warn-code 299, agent `-`), which
/// kubectl prints on stderr as `Warning: …`.
pub fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for warning in warnings {
        let text = format!(
            "299 - \"{}\"",
            warning.replace('\\', "\\\\").replace('"', "\\\"")
        );
        if let Ok(value) = HeaderValue::from_str(&text) {
            response.headers_mut().append("warning", value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_named_by_their_upstream_path() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "bogus": 1},
                         "spec": {"containers": [{"name": "a", "image": "b", "imagePullPolicyy": "x"}], "foo": true}});
        assert_eq!(
            unknown_fields("Pod", &pod),
            [
                "metadata.bogus",
                "spec.containers[0].imagePullPolicyy",
                "spec.foo"
            ]
        );
        let clean = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a", "image": "b"}]}});
        assert!(unknown_fields("Pod", &clean).is_empty());
    }

    #[test]
    fn duplicate_keys_are_found_in_the_raw_json() {
        let body = br#"{"metadata":{"name":"a","name":"b"},"spec":{"containers":[{"name":"x","image":"y","image":"z"}]}}"#;
        assert_eq!(
            duplicate_fields(body),
            ["metadata.name", "spec.containers[0].image"]
        );
        assert!(duplicate_fields(b"not json").is_empty());
    }

    #[test]
    fn strict_refuses_with_upstream_wording_warn_reports_ignore_accepts() {
        let pod = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a", "image": "b"}], "foo": 1}});
        let error = check(Mode::Strict, "Pod", &pod, None).unwrap_err();
        assert_eq!(error.code(), 400);
        assert_eq!(
            error.0.message.as_deref(),
            Some("Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.foo\"")
        );
        assert_eq!(
            check(Mode::Warn, "Pod", &pod, None).unwrap(),
            ["unknown field \"spec.foo\""]
        );
        assert!(check(Mode::Ignore, "Pod", &pod, None).unwrap().is_empty());
    }

    #[test]
    fn field_validation_parameter_is_parsed_and_checked() {
        let params = |v: &str| Params::new(vec![("fieldValidation".into(), v.into())]);
        assert_eq!(Mode::from_params(&params("Strict")).unwrap(), Mode::Strict);
        assert_eq!(Mode::from_params(&Params::default()).unwrap(), Mode::Warn);
        assert_eq!(Mode::from_params(&params("Loose")).unwrap_err().code(), 400);
    }
}
