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
async fn v2_is_json_and_refuses_protobuf_only_clients() {
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
    assert_eq!(v2(headers).await.status(), StatusCode::NOT_ACCEPTABLE);
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
