//! Tests of the aggregated discovery document: negotiation, the conversion of legacy lists, the
//! caching headers. No server: the pure functions only.

use super::*;
use crate::discovery::resource_list;

const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

#[test]
fn kubectl_gets_v2_and_older_clients_what_they_ask_for() {
    assert_eq!(negotiate(Some(KUBECTL_ACCEPT)), Form::V2);
    let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    assert_eq!(negotiate(Some(beta)), Form::V2Beta1);
    assert_eq!(negotiate(Some("application/json")), Form::Legacy);
    assert_eq!(negotiate(Some("*/*")), Form::Legacy);
    assert_eq!(negotiate(None), Form::Legacy);
    // Parameter order does not matter; unknown forms are passed over.
    let reordered =
        "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, \
                     application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io";
    assert_eq!(negotiate(Some(reordered)), Form::V2);
    let unknown = "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList";
    assert_eq!(negotiate(Some(unknown)), Form::Legacy);
    // Quality: q=0 refuses a form; a higher q wins over the order.
    let refused = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0";
    assert_eq!(negotiate(Some(refused)), Form::Legacy);
    let weighted = "application/json;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    assert_eq!(negotiate(Some(weighted)), Form::V2);
    assert_eq!(
        Form::V2.content_type(),
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
}

fn find<'a>(resources: &'a [Value], name: &str) -> &'a Value {
    resources
        .iter()
        .find(|r| r["resource"] == name)
        .unwrap_or_else(|| panic!("{name} missing from {resources:#?}"))
}

fn subresource<'a>(resource: &'a Value, name: &str) -> &'a Value {
    resource["subresources"]
        .as_array()
        .and_then(|subs| subs.iter().find(|s| s["subresource"] == name))
        .unwrap_or_else(|| panic!("{name} missing from {resource:#?}"))
}

#[test]
fn core_resources_carry_their_subresources_scope_and_names() {
    let resources = resources(&resource_list("v1"), None);
    let pods = find(&resources, "pods");
    assert_eq!(
        pods["responseKind"],
        json!({"group": "", "version": "", "kind": "Pod"})
    );
    assert_eq!(
        (&pods["scope"], &pods["singularResource"]),
        (&json!("Namespaced"), &json!("pod"))
    );
    assert_eq!(
        (&pods["shortNames"], &pods["categories"]),
        (&json!(["po"]), &json!(["all"]))
    );
    assert_eq!(
        subresource(pods, "status")["verbs"],
        json!(["get", "patch", "update"])
    );
    assert_eq!(
        subresource(pods, "eviction")["responseKind"],
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    );
    assert_eq!(
        subresource(pods, "exec")["responseKind"]["kind"],
        "PodExecOptions"
    );
    let nodes = find(&resources, "nodes");
    assert_eq!(nodes["scope"], "Cluster");
    assert!(nodes.get("categories").is_none(), "{nodes}");
    assert!(resources
        .iter()
        .all(|r| !r["resource"].as_str().unwrap().contains('/')));
}

#[test]
fn every_legacy_entry_lands_once_in_the_aggregated_form() {
    let lists = ["v1", "apps/v1", "batch/v1", "autoscaling/v2", "policy/v1"];
    for group_version in lists {
        let legacy = resource_list(group_version);
        let converted = resources(&legacy, None);
        let counted: usize = converted
            .iter()
            .map(|r| 1 + r["subresources"].as_array().map_or(0, Vec::len))
            .sum();
        assert_eq!(
            counted,
            legacy["resources"].as_array().unwrap().len(),
            "{group_version}"
        );
    }
    let apps = resources(&resource_list("apps/v1"), None);
    assert_eq!(
        subresource(find(&apps, "deployments"), "scale")["responseKind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
}

#[test]
fn custom_kinds_name_their_group_version_and_orphans_get_a_parent() {
    let list = json!({"resources": [
        {"name": "widgets", "singularName": "widget", "namespaced": false, "kind": "Widget",
         "verbs": ["get"], "shortNames": ["wd"]},
        {"name": "widgets/status", "singularName": "", "namespaced": false, "kind": "Widget",
         "verbs": ["get", "patch", "update"]},
        {"name": "widgets/scale", "singularName": "", "namespaced": false, "kind": "Scale",
         "group": "autoscaling", "version": "v1", "verbs": ["get", "patch", "update"]},
        {"name": "gears/status", "singularName": "", "namespaced": true, "kind": "Gear",
         "verbs": ["get"]},
    ]});
    let resources = resources(&list, Some(("example.com", "v1")));
    let widgets = find(&resources, "widgets");
    assert_eq!(
        widgets["responseKind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(widgets["scope"], "Cluster");
    assert_eq!(
        subresource(widgets, "status")["responseKind"]["group"],
        "example.com"
    );
    assert_eq!(
        subresource(widgets, "scale")["responseKind"]["group"],
        "autoscaling"
    );
    let gears = find(&resources, "gears");
    assert_eq!(
        (&gears["responseKind"], &gears["scope"]),
        (&json!({}), &json!("Namespaced"))
    );
}

#[test]
fn the_core_document_has_one_unnamed_group_with_v1_current() {
    let document = document(Form::V2, core_items());
    assert_eq!(
        (&document["kind"], &document["apiVersion"]),
        (
            &json!("APIGroupDiscoveryList"),
            &json!("apidiscovery.k8s.io/v2")
        )
    );
    let items = document["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"], json!({}));
    assert_eq!(items[0]["versions"][0]["version"], "v1");
    assert_eq!(items[0]["versions"][0]["freshness"], "Current");
    let stale = version_entry("v1beta1", Vec::new(), false);
    assert_eq!(stale, json!({"version": "v1beta1", "freshness": "Stale"}));
}

fn body_of(response: Response) -> Vec<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime
        .block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
        .unwrap()
        .to_vec()
}

#[test]
fn an_etag_is_sent_and_a_matching_if_none_match_is_answered_304() {
    let response = respond(Form::V2, core_items(), &HeaderMap::new());
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(headers[header::CONTENT_TYPE], Form::V2.content_type());
    assert_eq!(headers[header::VARY], "Accept");
    assert_eq!(headers[header::CACHE_CONTROL], "public");
    let etag = headers[header::ETAG].clone();
    assert!(etag.to_str().unwrap().starts_with('"'), "{etag:?}");
    let body: Value = serde_json::from_slice(&body_of(response)).unwrap();
    assert_eq!(body["items"][0]["versions"][0]["version"], "v1");

    let mut asking = HeaderMap::new();
    asking.insert(header::IF_NONE_MATCH, etag.clone());
    let again = respond(Form::V2, core_items(), &asking);
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()[header::ETAG], etag);
    assert!(body_of(again).is_empty());
    // The other form is another document with its own tag.
    let beta = respond(Form::V2Beta1, core_items(), &asking);
    assert_eq!(beta.status(), StatusCode::OK);
    assert_ne!(beta.headers()[header::ETAG], etag);
    let beta: Value = serde_json::from_slice(&body_of(beta)).unwrap();
    assert_eq!(beta["apiVersion"], "apidiscovery.k8s.io/v2beta1");
}
