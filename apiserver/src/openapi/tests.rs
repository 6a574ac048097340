//! Tests of the OpenAPI handlers: the index, the caching headers, v2's media types, extra sources.

use std::sync::Arc;

use axum::body::to_bytes;
use axum::extract::{Path, Query};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use serde_json::{json, Value};

use super::*;

async fn body(response: Response) -> Value {
    let bytes = to_bytes(response.into_body(), usize::MAX).await.unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn query(hash: Option<&str>) -> Query<BTreeMap<String, String>> {
    Query(
        hash.map(|h| ("hash".to_string(), h.to_string()))
            .into_iter()
            .collect(),
    )
}

#[tokio::test]
async fn the_index_links_each_group_version_with_its_hash() {
    let index = body(index_of(&Default::default())).await;
    let core = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    let hash = core.split("hash=").nth(1).unwrap();
    assert_eq!(hash, documents().v3["api/v1"].hash);
    assert!(index["paths"]["apis/apps/v1"].is_object());
    assert!(index["paths"]["apis/events.k8s.io/v1"].is_object());
}

#[tokio::test]
async fn a_group_version_document_is_cached_by_hash() {
    let hash = documents().v3["apis/apps/v1"].hash.clone();
    let path = || Path("apis/apps/v1".to_string());
    let current = document_of(
        &Default::default(),
        path(),
        query(Some(&hash)),
        HeaderMap::new(),
    );
    assert_eq!(current.status(), StatusCode::OK);
    assert_eq!(
        current.headers()[header::CACHE_CONTROL],
        "public, immutable"
    );
    let doc = body(current).await;
    let deployment = &doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
    );
    assert!(doc["components"]["schemas"]["io.k8s.api.core.v1.Service"].is_null());

    let stale = document_of(
        &Default::default(),
        path(),
        query(Some("OLD")),
        HeaderMap::new(),
    );
    assert_eq!(stale.status(), StatusCode::MOVED_PERMANENTLY);
    assert!(stale.headers()[header::LOCATION]
        .to_str()
        .unwrap()
        .ends_with(&hash));

    let mut headers = HeaderMap::new();
    headers.insert(
        header::IF_NONE_MATCH,
        HeaderValue::from_str(&format!("\"{hash}\"")).unwrap(),
    );
    let unchanged = document_of(&Default::default(), path(), query(None), headers);
    assert_eq!(unchanged.status(), StatusCode::NOT_MODIFIED);

    let missing = document_of(
        &Default::default(),
        Path("apis/nothing/v9".into()),
        query(None),
        HeaderMap::new(),
    );
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn v2_is_json_or_protobuf_as_asked() {
    let doc = body(v2(HeaderMap::new()).await).await;
    assert_eq!(doc["swagger"], "2.0");
    assert_eq!(
        doc["definitions"]["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"][0]["kind"],
        "Pod"
    );
    assert!(doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"].is_object());
    let mut headers = HeaderMap::new();
    headers.insert(
        header::ACCEPT,
        HeaderValue::from_static("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
    );
    let protobuf = v2(headers).await;
    assert_eq!(protobuf.status(), StatusCode::OK);
    assert_eq!(
        protobuf.headers()[header::CONTENT_TYPE],
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    let bytes = axum::body::to_bytes(protobuf.into_body(), usize::MAX)
        .await
        .unwrap();
    let document = wire::fields(&bytes);
    assert_eq!(wire::text(&document, 1), ["2.0"]);
    // definitions (9) → NamedSchema (1) {name 1, Schema 2}; the Pod's vendor extension (31).
    let definitions = wire::fields(wire::bytes(&document, 9)[0]);
    let pod = wire::bytes(&definitions, 1)
        .into_iter()
        .map(wire::fields)
        .find(|pair| wire::text(pair, 1) == ["io.k8s.api.core.v1.Pod"])
        .expect("the Pod's schema");
    let schema = wire::fields(wire::bytes(&pod, 2)[0]);
    assert!(wire::text(&schema, 4)[0].starts_with("Pod is a collection"));
    let extension = wire::fields(wire::bytes(&schema, 31)[0]);
    assert_eq!(
        wire::text(&extension, 1),
        ["x-kubernetes-group-version-kind"]
    );
    let yaml = wire::text(&wire::fields(wire::bytes(&extension, 2)[0]), 2)[0].to_string();
    let gvk: Value = serde_json::from_str(&yaml).unwrap();
    assert_eq!(gvk[0]["kind"], "Pod");
    // paths (8) → NamedPathItem (2): the Pod's patch operation (8) names fieldValidation.
    let paths = wire::fields(wire::bytes(&document, 8)[0]);
    let pod_path = wire::bytes(&paths, 2)
        .into_iter()
        .map(wire::fields)
        .find(|pair| wire::text(pair, 1) == ["/api/v1/namespaces/{namespace}/pods/{name}"])
        .expect("the pod path");
    let patch = wire::fields(wire::bytes(&wire::fields(wire::bytes(&pod_path, 2)[0]), 8)[0]);
    let has_field_validation = wire::bytes(&patch, 8).into_iter().any(|item| {
        // ParametersItem → Parameter (1) → NonBodyParameter (2) → query (3) → name (4).
        let parameter = wire::fields(item);
        wire::bytes(&parameter, 1).into_iter().any(|p| {
            let non_body = wire::fields(p);
            wire::bytes(&non_body, 2).into_iter().any(|q| {
                let query = wire::fields(
                    wire::bytes(&wire::fields(q), 3)
                        .first()
                        .copied()
                        .unwrap_or(&[]),
                );
                wire::text(&query, 4) == ["fieldValidation"]
            })
        })
    });
    assert!(has_field_validation);

    let mut yaml_only = HeaderMap::new();
    yaml_only.insert(header::ACCEPT, HeaderValue::from_static("application/yaml"));
    assert_eq!(v2(yaml_only).await.status(), StatusCode::NOT_ACCEPTABLE);
}

/// A protobuf reader for the test: each field's number with its varint or bytes.
mod wire {
    pub enum Field<'a> {
        Varint,
        Bytes(&'a [u8]),
        Fixed,
    }

    fn varint(bytes: &[u8], at: &mut usize) -> u64 {
        let (mut value, mut shift) = (0u64, 0);
        loop {
            let byte = bytes[*at];
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return value;
            }
            shift += 7;
        }
    }

    pub fn fields(bytes: &[u8]) -> Vec<(u32, Field<'_>)> {
        let (mut out, mut at) = (Vec::new(), 0);
        while at < bytes.len() {
            let key = varint(bytes, &mut at);
            let field = (key >> 3) as u32;
            match key & 7 {
                0 => {
                    varint(bytes, &mut at);
                    out.push((field, Field::Varint));
                }
                1 => {
                    at += 8;
                    out.push((field, Field::Fixed));
                }
                2 => {
                    let len = varint(bytes, &mut at) as usize;
                    out.push((field, Field::Bytes(&bytes[at..at + len])));
                    at += len;
                }
                other => panic!("wire type {other} at {at}"),
            }
        }
        out
    }

    pub fn bytes<'a>(fields: &[(u32, Field<'a>)], number: u32) -> Vec<&'a [u8]> {
        fields
            .iter()
            .filter(|(n, _)| *n == number)
            .filter_map(|(_, f)| match f {
                Field::Bytes(b) => Some(*b),
                Field::Varint | Field::Fixed => None,
            })
            .collect()
    }

    pub fn text<'a>(fields: &[(u32, Field<'a>)], number: u32) -> Vec<&'a str> {
        bytes(fields, number)
            .into_iter()
            .map(|b| std::str::from_utf8(b).expect("utf-8"))
            .collect()
    }
}

struct Widgets;

impl extra::ExtraSchemas for Widgets {
    fn group_versions(&self) -> Vec<(String, Vec<extra::ExtraKind>)> {
        let kind = extra::ExtraKind {
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            status: false,
            definition: extra::definition_name("example.com/v1", "Widget"),
            schema: json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
        };
        vec![("example.com/v1".into(), vec![kind])]
    }
}

#[tokio::test]
async fn an_extra_source_adds_a_group_version() {
    extra::register(Arc::new(Widgets));
    let index = body(index_of(&Default::default())).await;
    assert!(index["paths"]["apis/example.com/v1"].is_object());
    let doc = body(document_of(
        &Default::default(),
        Path("apis/example.com/v1".into()),
        query(None),
        HeaderMap::new(),
    ))
    .await;
    let widget = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-group-version-kind"][0]["kind"],
        "Widget"
    );
    assert!(
        doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
            .is_object()
    );
}
