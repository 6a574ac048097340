//! OpenAPI v3 of custom kinds: each CRD version's schema at `/openapi/v3/apis/{group}/{version}`.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver/pkg/controller/openapiv3/`
//! and `pkg/controller/openapi/builder/builder.go`, which turn each served version's schema into a
//! document: the kind's schema (plus `apiVersion`, `kind` and `metadata`) under
//! `components.schemas`, named by the reversed group (`com.example.stable.v1.CronTab`) and tagged
//! `x-kubernetes-group-version-kind`, which is how `kubectl explain crontab.spec` finds it; and a
//! `patch` operation per kind with the `fieldValidation` parameter, which is how `kubectl apply`
//! learns it may ask the server to validate fields (docs/real-clients.md#openapi).
//! The index entry's hash changes with the document, so kubectl's cache follows CRD changes.
//!
//! minik simplifies: operations other than `patch` are left out, and `metadata` is a short
//! ObjectMeta schema rather than the full one.

use std::hash::{Hash, Hasher};

use serde_json::{json, Map, Value};

use super::kinds::{CustomKind, Kinds};

/// `(path, hash)` of every custom group version, for the `/openapi/v3` index.
pub fn index_entries(kinds: &Kinds) -> Vec<(String, String)> {
    let mut paths: Vec<String> = kinds
        .all()
        .iter()
        .map(|k| format!("apis/{}/{}", k.group, k.version))
        .collect();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|path| Some((path.clone(), hash(&document(kinds, &path)?))))
        .collect()
}

/// A document's hash, as the index's `?hash=` (upper-case hex, as upstream's).
pub fn hash(document: &Value) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    document.to_string().hash(&mut hasher);
    format!("{:016X}", hasher.finish())
}

/// The document of `apis/{group}/{version}`, if a CRD serves it.
pub fn document(kinds: &Kinds, path: &str) -> Option<Value> {
    let group_version = path.strip_prefix("apis/")?;
    let served: Vec<std::sync::Arc<CustomKind>> = kinds
        .all()
        .into_iter()
        .filter(|k| k.api_version() == group_version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    schemas.insert(OBJECT_META.to_string(), object_meta());
    for kind in &served {
        let name = schema_name(kind);
        paths.insert(object_path(kind), patch_operation(kind, &name));
        schemas.insert(name.clone(), kind_schema(kind));
        let list = json!({"type": "object", "required": ["items"],
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "items": {"type": "array", "items": {"$ref": format!("#/components/schemas/{name}")}}},
            "x-kubernetes-group-version-kind": [gvk(kind, &kind.list_kind)]});
        schemas.insert(format!("{name}List"), list);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

fn object_meta() -> Value {
    let text = |description: &str| json!({"type": "string", "description": description});
    json!({"type": "object",
    "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
    "properties": {
        "name": text("Name must be unique within a namespace."),
        "namespace": text("Namespace defines the space within which each name must be unique."),
        "labels": {"type": "object", "additionalProperties": {"type": "string"},
            "description": "Map of string keys and values that can be used to organize and categorize objects."},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"},
            "description": "Annotations is an unstructured key value map stored with a resource."},
        "uid": text("UID is the unique in time and space value for this object."),
        "resourceVersion": text("An opaque value that represents the internal version of this object."),
    }})
}

/// `com.example.stable.v1.CronTab`: the group reversed, the version, the kind.
pub fn schema_name(kind: &CustomKind) -> String {
    let reversed: Vec<&str> = kind.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), kind.version, kind.info.kind)
}

fn gvk(kind: &CustomKind, kind_name: &str) -> Value {
    json!({"group": kind.group, "version": kind.version, "kind": kind_name})
}

fn object_path(kind: &CustomKind) -> String {
    let base = format!("/apis/{}", kind.api_version());
    if kind.info.namespaced {
        format!(
            "{base}/namespaces/{{namespace}}/{}/{{name}}",
            kind.info.plural
        )
    } else {
        format!("{base}/{}/{{name}}", kind.info.plural)
    }
}

fn patch_operation(kind: &CustomKind, name: &str) -> Value {
    let reference = json!({"schema": {"$ref": format!("#/components/schemas/{name}")}});
    json!({"patch": {
        "x-kubernetes-group-version-kind": gvk(kind, kind.info.kind),
        "parameters": [
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
        ],
        "requestBody": {"content": {"application/merge-patch+json": {"schema": {"type": "object"}}}},
        "responses": {"200": {"description": "OK", "content": {"application/json": reference}}},
    }})
}

/// The version's schema with the type and object metadata every kind has.
fn kind_schema(kind: &CustomKind) -> Value {
    let mut schema = kind
        .schema
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
        .unwrap_or_else(|| json!({"type": "object"}));
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut all = Map::new();
    all.insert("apiVersion".into(), json!({"type": "string",
        "description": "APIVersion defines the versioned schema of this representation of an object."}));
    all.insert("kind".into(), json!({"type": "string",
        "description": "Kind is a string value representing the REST resource this object represents."}));
    all.insert(
        "metadata".into(),
        json!({"$ref": format!("#/components/schemas/{OBJECT_META}")}),
    );
    all.extend(properties);
    schema["properties"] = Value::Object(all);
    schema["x-kubernetes-group-version-kind"] = json!([gvk(kind, kind.info.kind)]);
    schema
}
