//! Inputs upstream refuses and minik used to take (issue 19): a mass delete through a trailing
//! slash, fields that fail `ValidatePod`, malformed resourceVersions, and metadata rules that hold
//! while an object is being deleted.

mod common;

use common::{pod, TestServer, PODS};
use serde_json::{json, Value};

fn causes(body: &Value) -> Vec<String> {
    body["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .filter_map(|c| c["field"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_delete_with_a_trailing_slash_deletes_nothing() {
    let server = TestServer::start().await;
    for name in ["a", "b"] {
        assert_eq!(server.post(PODS, &pod(name)).await.0, 201);
    }
    let (code, body) = server.delete(&format!("{PODS}/"), None).await;
    assert_eq!(code, 405, "{body}");
    assert_eq!(body["reason"], "MethodNotAllowed", "{body}");
    let (_, list) = server.get(PODS).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(2), "{list}");
    // A GET with the slash still lists, as upstream.
    assert_eq!(server.get(&format!("{PODS}/")).await.0, 200);
    server.stop().await;
}
