//! `/openapi/v2` as protobuf: the Swagger JSON document re-encoded as gnostic's
//! `openapi_v2.Document`, which client-go's `OpenAPISchema()` asks for
//! (`application/com.github.proto-openapi.spec.v2.v1.0+protobuf`, and the older `…v2@v1.0…`).
//!
//! Kubernetes counterpart: `k8s.io/kube-openapi/pkg/handler/handler.go` (`ToProtoBinary`: gnostic's
//! `ParseDocument` of the JSON, then `proto.Marshal`); the messages and field numbers are those of
//! `github.com/google/gnostic/openapiv2/OpenAPIv2.proto`. Values gnostic keeps as `Any` (vendor
//! extensions, `default`, `enum`, `example`) carry their YAML text; minik writes JSON text, which
//! is YAML.
//!
//! minik simplifies: only what Kubernetes' documents use is encoded — no `xml`, `externalDocs`,
//! `examples`, response headers, or security schemes other than API keys.

use serde_json::{Map, Value};

/// The protobuf bytes of a Swagger 2.0 JSON document.
pub fn document(doc: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 1, &doc["swagger"]);
    if let Some(info) = doc.get("info") {
        let mut bytes = Vec::new();
        for (field, name) in [(1, "title"), (2, "version"), (3, "description")] {
            string(&mut bytes, field, &info[name]);
        }
        message(&mut out, 2, &bytes);
    }
    string(&mut out, 3, &doc["host"]);
    string(&mut out, 4, &doc["basePath"]);
    strings(&mut out, 5, &doc["schemes"]);
    strings(&mut out, 6, &doc["consumes"]);
    strings(&mut out, 7, &doc["produces"]);
    if let Some(paths) = doc["paths"].as_object() {
        message(&mut out, 8, &paths_message(paths));
    }
    if let Some(definitions) = doc["definitions"].as_object() {
        message(&mut out, 9, &named(definitions, 1, schema));
    }
    for requirement in doc["security"].as_array().into_iter().flatten() {
        message(&mut out, 12, &security_requirement(requirement));
    }
    if let Some(schemes) = doc["securityDefinitions"].as_object() {
        message(&mut out, 13, &named(schemes, 1, security_scheme));
    }
    vendor_extensions(&mut out, 16, doc);
    out
}

fn paths_message(paths: &Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::new();
    for (path, item) in paths {
        if path.starts_with("x-") {
            continue;
        }
        let mut pair = Vec::new();
        string_of(&mut pair, 1, path);
        message(&mut pair, 2, &path_item(item));
        message(&mut out, 2, &pair);
    }
    out
}

fn path_item(item: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 1, &item["$ref"]);
    let verbs = [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ];
    for (field, verb) in verbs {
        if let Some(operation) = item.get(verb) {
            message(&mut out, field, &operation_message(operation));
        }
    }
    for parameter in item["parameters"].as_array().into_iter().flatten() {
        message(&mut out, 9, &parameters_item(parameter));
    }
    vendor_extensions(&mut out, 10, item);
    out
}

fn operation_message(operation: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    strings(&mut out, 1, &operation["tags"]);
    string(&mut out, 2, &operation["summary"]);
    string(&mut out, 3, &operation["description"]);
    string(&mut out, 5, &operation["operationId"]);
    strings(&mut out, 6, &operation["produces"]);
    strings(&mut out, 7, &operation["consumes"]);
    for parameter in operation["parameters"].as_array().into_iter().flatten() {
        message(&mut out, 8, &parameters_item(parameter));
    }
    if let Some(responses) = operation["responses"].as_object() {
        message(&mut out, 9, &responses_message(responses));
    }
    strings(&mut out, 10, &operation["schemes"]);
    boolean(&mut out, 11, &operation["deprecated"]);
    vendor_extensions(&mut out, 13, operation);
    out
}

/// `ParametersItem`: a `$ref` (`JsonReference`), a body parameter or a non-body one.
fn parameters_item(parameter: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(reference) = parameter.get("$ref") {
        let mut bytes = Vec::new();
        string(&mut bytes, 1, reference);
        string(&mut bytes, 2, &parameter["description"]);
        message(&mut out, 2, &bytes);
        return out;
    }
    let mut bytes = Vec::new();
    if parameter["in"] == "body" {
        let mut body = Vec::new();
        string(&mut body, 1, &parameter["description"]);
        string(&mut body, 2, &parameter["name"]);
        string(&mut body, 3, &parameter["in"]);
        boolean(&mut body, 4, &parameter["required"]);
        if let Some(s) = parameter.get("schema") {
            message(&mut body, 5, &schema(s));
        }
        vendor_extensions(&mut body, 6, parameter);
        message(&mut bytes, 1, &body);
    } else {
        message(&mut bytes, 2, &non_body_parameter(parameter));
    }
    message(&mut out, 1, &bytes);
    out
}

/// `NonBodyParameter`: the sub-schema for its `in`, whose field numbers differ by a shift.
fn non_body_parameter(parameter: &Value) -> Vec<u8> {
    // (oneof field, the `type` field; query and formData have `allowEmptyValue` before it).
    let (which, type_field) = match parameter["in"].as_str() {
        Some("header") => (1, 5),
        Some("formData") => (2, 6),
        Some("path") => (4, 5),
        _ => (3, 6),
    };
    let mut sub = Vec::new();
    boolean(&mut sub, 1, &parameter["required"]);
    string(&mut sub, 2, &parameter["in"]);
    string(&mut sub, 3, &parameter["description"]);
    string(&mut sub, 4, &parameter["name"]);
    if type_field == 6 {
        boolean(&mut sub, 5, &parameter["allowEmptyValue"]);
    }
    string(&mut sub, type_field, &parameter["type"]);
    string(&mut sub, type_field + 1, &parameter["format"]);
    boolean(&mut sub, type_field + 14, &parameter["uniqueItems"]);
    vendor_extensions(&mut sub, type_field + 17, parameter);
    let mut out = Vec::new();
    message(&mut out, which, &sub);
    out
}

fn responses_message(responses: &Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::new();
    for (code, response) in responses {
        let mut value = Vec::new();
        if let Some(reference) = response.get("$ref") {
            let mut bytes = Vec::new();
            string(&mut bytes, 1, reference);
            message(&mut value, 2, &bytes);
        } else {
            let mut bytes = Vec::new();
            string(&mut bytes, 1, &response["description"]);
            if let Some(s) = response.get("schema") {
                let mut item = Vec::new();
                message(&mut item, 1, &schema(s));
                message(&mut bytes, 2, &item);
            }
            vendor_extensions(&mut bytes, 5, response);
            message(&mut value, 1, &bytes);
        }
        let mut pair = Vec::new();
        string_of(&mut pair, 1, code);
        message(&mut pair, 2, &value);
        message(&mut out, 1, &pair);
    }
    out
}

/// gnostic's `Schema`.
pub fn schema(s: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    for (field, name) in [(1, "$ref"), (2, "format"), (3, "title"), (4, "description")] {
        string(&mut out, field, &s[name]);
    }
    any(&mut out, 5, s.get("default"));
    for (field, name) in [(6, "multipleOf"), (7, "maximum")] {
        double(&mut out, field, &s[name]);
    }
    boolean(&mut out, 8, &s["exclusiveMaximum"]);
    double(&mut out, 9, &s["minimum"]);
    boolean(&mut out, 10, &s["exclusiveMinimum"]);
    integer(&mut out, 11, &s["maxLength"]);
    integer(&mut out, 12, &s["minLength"]);
    string(&mut out, 13, &s["pattern"]);
    integer(&mut out, 14, &s["maxItems"]);
    integer(&mut out, 15, &s["minItems"]);
    boolean(&mut out, 16, &s["uniqueItems"]);
    integer(&mut out, 17, &s["maxProperties"]);
    integer(&mut out, 18, &s["minProperties"]);
    strings(&mut out, 19, &s["required"]);
    for value in s["enum"].as_array().into_iter().flatten() {
        any(&mut out, 20, Some(value));
    }
    match &s["additionalProperties"] {
        Value::Bool(allowed) => message(&mut out, 21, &[0x10, u8::from(*allowed)]),
        Value::Object(_) => {
            let mut item = Vec::new();
            message(&mut item, 1, &schema(&s["additionalProperties"]));
            message(&mut out, 21, &item);
        }
        _ => {}
    }
    match &s["type"] {
        Value::String(_) | Value::Array(_) => {
            let mut item = Vec::new();
            string(&mut item, 1, &s["type"]);
            strings(&mut item, 1, &s["type"]);
            message(&mut out, 22, &item);
        }
        _ => {}
    }
    let items: Vec<&Value> = match &s["items"] {
        Value::Array(list) => list.iter().collect(),
        Value::Object(_) => vec![&s["items"]],
        _ => Vec::new(),
    };
    if !items.is_empty() {
        let mut item = Vec::new();
        for schema_value in items {
            message(&mut item, 1, &schema(schema_value));
        }
        message(&mut out, 23, &item);
    }
    for part in s["allOf"].as_array().into_iter().flatten() {
        message(&mut out, 24, &schema(part));
    }
    if let Some(properties) = s["properties"].as_object() {
        message(&mut out, 25, &named(properties, 1, schema));
    }
    string(&mut out, 26, &s["discriminator"]);
    boolean(&mut out, 27, &s["readOnly"]);
    any(&mut out, 30, s.get("example"));
    vendor_extensions(&mut out, 31, s);
    out
}

fn security_requirement(requirement: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, scopes) in requirement.as_object().into_iter().flatten() {
        let mut array = Vec::new();
        strings(&mut array, 1, scopes);
        let mut pair = Vec::new();
        string_of(&mut pair, 1, name);
        message(&mut pair, 2, &array);
        message(&mut out, 1, &pair);
    }
    out
}

/// A `SecurityDefinitionsItem`: API keys only (`BearerToken`, the one Kubernetes declares).
fn security_scheme(scheme: &Value) -> Vec<u8> {
    let mut key = Vec::new();
    for (field, name) in [(1, "type"), (2, "name"), (3, "in"), (4, "description")] {
        string(&mut key, field, &scheme[name]);
    }
    let mut out = Vec::new();
    if scheme["type"] == "apiKey" {
        message(&mut out, 2, &key);
    }
    out
}

/// A map as gnostic's ordered `Named…` pairs in repeated field `field`.
fn named(map: &Map<String, Value>, field: u32, encode: fn(&Value) -> Vec<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in map {
        let mut pair = Vec::new();
        string_of(&mut pair, 1, name);
        message(&mut pair, 2, &encode(value));
        message(&mut out, field, &pair);
    }
    out
}

/// The `x-…` keys of an object as `NamedAny`s.
fn vendor_extensions(out: &mut Vec<u8>, field: u32, object: &Value) {
    for (name, value) in object.as_object().into_iter().flatten() {
        if name.starts_with("x-") {
            let mut pair = Vec::new();
            string_of(&mut pair, 1, name);
            any(&mut pair, 2, Some(value));
            message(out, field, &pair);
        }
    }
}

/// An `Any` holding a value's YAML (JSON is YAML) in its field 2.
fn any(out: &mut Vec<u8>, field: u32, value: Option<&Value>) {
    if let Some(value) = value {
        let mut bytes = Vec::new();
        string_of(&mut bytes, 2, &value.to_string());
        message(out, field, &bytes);
    }
}

// The wire format: a key (field number and wire type), then a varint, 8 bytes or a length.

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

fn message(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    key(out, field, 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn string_of(out: &mut Vec<u8>, field: u32, text: &str) {
    message(out, field, text.as_bytes());
}

/// A proto3 string: written only when set and not empty.
fn string(out: &mut Vec<u8>, field: u32, value: &Value) {
    if let Some(text) = value.as_str().filter(|t| !t.is_empty()) {
        string_of(out, field, text);
    }
}

fn strings(out: &mut Vec<u8>, field: u32, value: &Value) {
    for text in value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        string_of(out, field, text);
    }
}

fn boolean(out: &mut Vec<u8>, field: u32, value: &Value) {
    if value.as_bool() == Some(true) {
        key(out, field, 0);
        out.push(1);
    }
}

fn integer(out: &mut Vec<u8>, field: u32, value: &Value) {
    if let Some(n) = value.as_i64().filter(|n| *n != 0) {
        key(out, field, 0);
        varint(out, n as u64);
    }
}

fn double(out: &mut Vec<u8>, field: u32, value: &Value) {
    if let Some(n) = value.as_f64().filter(|n| *n != 0.0) {
        key(out, field, 1);
        out.extend_from_slice(&n.to_le_bytes());
    }
}
