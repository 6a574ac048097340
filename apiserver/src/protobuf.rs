//! Request bodies in Kubernetes' protobuf encoding, for the few objects kubectl sends that way.
//!
//! Kubernetes counterpart: `k8s.io/apimachinery/pkg/runtime/serializer/protobuf` (the envelope:
//! the magic bytes `k8s\0`, then a `runtime.Unknown` message holding `typeMeta` and the object's
//! own bytes in `raw`) and the generated `k8s.io/api/core/v1/generated.proto` messages. kubectl's
//! typed-client commands — `kubectl create namespace NAME`, `kubectl create service clusterip …` —
//! POST with `Content-Type: application/vnd.kubernetes.protobuf` whatever the server prefers
//! (docs/real-clients.md does not list this; found by running them).
//!
//! `kubectl auth can-i` sends its SelfSubjectAccessReview the same way, `kubectl create
//! configmap|secret` their ConfigMap and Secret (data, binaryData, type, immutable), `kubectl create
//! token` its TokenRequest and `kubectl create serviceaccount` its ServiceAccount; `kubectl drain` its
//! Evictions and the DeleteOptions of its DELETEs, `kubectl create pdb` a PodDisruptionBudget, and
//! `kubectl create role|clusterrole|rolebinding|clusterrolebinding` their RBAC objects. The
//! schemas, one per kind, are in `protobuf_schemas.rs`.
//!
//! minik decodes only the fields those commands set: a Namespace's, a Service's and a
//! Deployment's, a Job's and an Ingress's metadata (name, generateName, namespace, labels, annotations), the Service's spec
//! (ports, selector, type, clusterIP, externalName) and the Deployment's replicas, selector and
//! pod template (containers with their name, image, command, args, ports and env). The decoded object is JSON, which the rest of the server
//! handles as if the client had sent it. Answers are always JSON (kubectl accepts them).

use serde_json::{json, Map, Value};

#[path = "protobuf_schemas.rs"]
mod schemas;

/// The four bytes that start every protobuf-encoded Kubernetes object.
const MAGIC: &[u8] = b"k8s\0";

/// Why a protobuf body could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Not a Kubernetes protobuf envelope, or truncated.
    #[error("malformed protobuf body: {0}")]
    Malformed(&'static str),
    /// A kind minik has no protobuf schema for.
    #[error(
        "protobuf bodies are only accepted for Namespace, Service, Deployment, Job, ConfigMap, Secret, ServiceAccount, TokenRequest, PodDisruptionBudget, DeleteOptions, Eviction, CronJob, Ingress, HorizontalPodAutoscaler (v1), RBAC roles and bindings and access reviews, not {0:?}; send JSON"
    )]
    Unsupported(String),
}

/// What a field holds, and how it becomes JSON.
#[derive(Clone, Copy)]
enum Field {
    Str(&'static str),
    Int(&'static str),
    /// A pointer field (`*int32`): present means set, even to 0 (`--replicas=0`).
    OptInt(&'static str),
    /// A pointer to an `int64` (`gracePeriodSeconds`).
    OptInt64(&'static str),
    StrMap(&'static str),
    StrList(&'static str),
    Message(&'static str, Schema),
    MessageList(&'static str, Schema),
    IntOrString(&'static str),
    /// `map<string, bytes>`: JSON carries the values base64-encoded (Secret and binary data).
    BytesMap(&'static str),
    Bool(&'static str),
    /// An embedded message whose fields JSON inlines into the parent (`IngressRuleValue`).
    Inline(Schema),
}

type Schema = &'static [(u64, Field)];

/// One raw field: its number and its payload (a varint, or length-delimited bytes).
enum Raw<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(bytes: &mut &[u8]) -> Result<u64, Error> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes
            .split_first()
            .ok_or(Error::Malformed("truncated varint"))?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(Error::Malformed("varint too long"))
}

/// Splits a message into its fields (wire types 0 and 2; fixed-width ones are skipped).
fn fields(mut bytes: &[u8]) -> Result<Vec<(u64, Raw<'_>)>, Error> {
    let mut found = Vec::new();
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        let raw = match key & 7 {
            0 => Raw::Varint(varint(&mut bytes)?),
            2 => {
                let len =
                    usize::try_from(varint(&mut bytes)?).map_err(|_| Error::Malformed("length"))?;
                if len > bytes.len() {
                    return Err(Error::Malformed("truncated field"));
                }
                let (payload, rest) = bytes.split_at(len);
                bytes = rest;
                Raw::Bytes(payload)
            }
            1 => {
                bytes = bytes
                    .get(8..)
                    .ok_or(Error::Malformed("truncated fixed64"))?;
                continue;
            }
            5 => {
                bytes = bytes
                    .get(4..)
                    .ok_or(Error::Malformed("truncated fixed32"))?;
                continue;
            }
            _ => return Err(Error::Malformed("unknown wire type")),
        };
        found.push((key >> 3, raw));
    }
    Ok(found)
}

fn text(bytes: &[u8]) -> Result<String, Error> {
    String::from_utf8(bytes.to_vec()).map_err(|_| Error::Malformed("string is not UTF-8"))
}

/// Decodes a message of `schema` into a JSON object (unknown fields are skipped).
fn message(bytes: &[u8], schema: Schema) -> Result<Value, Error> {
    let mut object = Map::new();
    for (number, raw) in fields(bytes)? {
        let Some((_, field)) = schema.iter().find(|(n, _)| *n == number) else {
            continue;
        };
        match (*field, raw) {
            // Go encodes zero values of optional fields; its JSON (`omitempty`) leaves them out.
            (Field::Str(_), Raw::Bytes([])) | (Field::Int(_), Raw::Varint(0)) => {}
            (Field::Str(name), Raw::Bytes(b)) => {
                object.insert(name.into(), Value::String(text(b)?));
            }
            (Field::Int(name) | Field::OptInt(name), Raw::Varint(v)) => {
                object.insert(name.into(), json!(v as i64 as i32));
            }
            (Field::OptInt64(name), Raw::Varint(v)) => {
                object.insert(name.into(), json!(v as i64));
            }
            (Field::StrList(name), Raw::Bytes(b)) => {
                push(&mut object, name, Value::String(text(b)?))
            }
            (Field::MessageList(name, inner), Raw::Bytes(b)) => {
                push(&mut object, name, message(b, inner)?)
            }
            (Field::Message(name, inner), Raw::Bytes(b)) => {
                object.insert(name.into(), message(b, inner)?);
            }
            (Field::Bool(name), Raw::Varint(v)) => {
                object.insert(name.into(), json!(v != 0));
            }
            (Field::BytesMap(name), Raw::Bytes(b)) => {
                use base64::Engine as _;
                let mut key = String::new();
                let mut value = Vec::new();
                for (number, raw) in fields(b)? {
                    match (number, raw) {
                        (1, Raw::Bytes(k)) => key = text(k)?,
                        (2, Raw::Bytes(v)) => value = v.to_vec(),
                        _ => {}
                    }
                }
                let encoded = base64::engine::general_purpose::STANDARD.encode(value);
                let map = object
                    .entry(name)
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(map) = map {
                    map.insert(key, Value::String(encoded));
                }
            }
            (Field::Inline(inner), Raw::Bytes(b)) => {
                if let Value::Object(fields) = message(b, inner)? {
                    object.extend(fields);
                }
            }
            (Field::StrMap(name), Raw::Bytes(b)) => {
                let entry = message(b, &[(1, Field::Str("k")), (2, Field::Str("v"))])?;
                let key = entry["k"].as_str().unwrap_or("").to_string();
                let value = entry
                    .get("v")
                    .cloned()
                    .unwrap_or(Value::String(String::new()));
                let map = object
                    .entry(name)
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(map) = map {
                    map.insert(key, value);
                }
            }
            (Field::IntOrString(name), Raw::Bytes(b)) => {
                // intstr.IntOrString: type (0 = Int, 1 = String), intVal, strVal.
                let parts = message(
                    b,
                    &[
                        (1, Field::Int("type")),
                        (2, Field::Int("int")),
                        (3, Field::Str("str")),
                    ],
                )?;
                let value = if parts["type"] == 1 {
                    parts["str"].clone()
                } else {
                    parts.get("int").cloned().unwrap_or(json!(0))
                };
                object.insert(name.into(), value);
            }
            _ => return Err(Error::Malformed("field of an unexpected wire type")),
        }
    }
    Ok(Value::Object(object))
}

fn push(object: &mut Map<String, Value>, name: &str, value: Value) {
    if let Value::Array(list) = object
        .entry(name)
        .or_insert_with(|| Value::Array(Vec::new()))
    {
        list.push(value);
    }
}

/// Decodes a `k8s\0`-prefixed body into the JSON object it stands for.
pub fn decode(body: &[u8]) -> Result<Value, Error> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or(Error::Malformed("missing the k8s\\0 prefix"))?;
    // runtime.Unknown: typeMeta (1), raw (2), contentEncoding (3), contentType (4).
    let mut type_meta = Value::Null;
    let mut raw: &[u8] = &[];
    for (number, field) in fields(envelope)? {
        match (number, field) {
            (1, Raw::Bytes(b)) => {
                type_meta = message(b, &[(1, Field::Str("apiVersion")), (2, Field::Str("kind"))])?
            }
            (2, Raw::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    let kind = type_meta["kind"].as_str().unwrap_or("").to_string();
    let schema = schemas::for_kind(&kind).ok_or_else(|| Error::Unsupported(kind.clone()))?;
    let mut object = message(raw, schema)?;
    object["apiVersion"] = type_meta.get("apiVersion").cloned().unwrap_or(json!("v1"));
    object["kind"] = Value::String(kind);
    Ok(object)
}

#[cfg(test)]
#[path = "protobuf_tests.rs"]
mod tests;
