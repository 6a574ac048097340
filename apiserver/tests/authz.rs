//! Authorization over TLS: each identity gets what its role allows and 403 elsewhere, RBAC objects
//! are served and take effect, and the access reviews answer `kubectl auth can-i` / `whoami`.

mod secure;

use minik_client::{Client, Method};
use minik_cluster::pki::Identity;
use secure::{code, SecureServer};
use serde_json::{json, Value};

fn pod(name: &str, node: Option<&str>) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    });
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

async fn call(client: &Client, method: Method, path: &str, body: Option<&Value>) -> (i32, Value) {
    let result = client.request_json(method, path, body).await;
    let code = code(&result);
    let body = match result {
        Ok(v) => v,
        Err(e) => serde_json::to_value(e.status().cloned()).unwrap_or(Value::Null),
    };
    (code, body)
}

const PODS: &str = "/api/v1/namespaces/default/pods";

/// A node may delete only pods bound to itself; the 403 names the user, verb and resource.
#[tokio::test]
async fn a_node_cannot_touch_another_nodes_pods() {
    let server = SecureServer::start().await;
    let admin = server.client(&Identity::admin());
    let node1 = server.client(&Identity::node("node-1"));
    for (name, node) in [("mine", "node-1"), ("theirs", "node-2")] {
        let (status, body) = call(&admin, Method::POST, PODS, Some(&pod(name, Some(node)))).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, _) = call(&node1, Method::GET, PODS, None).await;
    assert_eq!(status, 200);
    let (status, body) = call(&node1, Method::DELETE, &format!("{PODS}/theirs"), None).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "pods \"theirs\" is forbidden: User \"system:node:node-1\" cannot delete resource \"pods\" in API group \"\" in the namespace \"default\": node 'node-1' can only modify pods with spec.nodeName set to itself"
    );
    assert_eq!(body["details"]["kind"], "pods");
    let (status, body) = call(&node1, Method::DELETE, &format!("{PODS}/mine"), None).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = call(
        &node1,
        Method::POST,
        PODS,
        Some(&pod("new", Some("node-1"))),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = call(
        &node1,
        Method::DELETE,
        "/api/v1/namespaces/default/secrets/token",
        None,
    )
    .await;
    assert_eq!(status, 403);
}

/// docs/kubernetes-rules.md#c11: a node reads a Secret only when one of its own pods uses it,
/// and only by name (a GET, or a watch on `metadata.name`); never the whole list.
#[tokio::test]
async fn a_node_reads_only_the_secrets_its_pods_use() {
    let server = SecureServer::start().await;
    let admin = server.client(&Identity::admin());
    let node1 = server.client(&Identity::node("node-1"));
    const SECRETS: &str = "/api/v1/namespaces/default/secrets";
    for (secret, node) in [("mine", "node-1"), ("theirs", "node-2")] {
        let object = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret}});
        let (status, body) = call(&admin, Method::POST, SECRETS, Some(&object)).await;
        assert_eq!(status, 200, "{body}");
        let mut pod = pod(&format!("uses-{secret}"), Some(node));
        pod["spec"]["volumes"] = json!([{"name": "s", "secret": {"secretName": secret}}]);
        let (status, body) = call(&admin, Method::POST, PODS, Some(&pod)).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = call(&node1, Method::GET, &format!("{SECRETS}/mine"), None).await;
    assert_eq!(status, 200, "{body}");
    let by_name = format!("{SECRETS}?fieldSelector=metadata.name%3Dmine");
    let (status, body) = call(&node1, Method::GET, &by_name, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["items"][0]["metadata"]["name"], "mine");
    let (status, body) = call(&node1, Method::GET, &format!("{SECRETS}/theirs"), None).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["message"],
        "secrets \"theirs\" is forbidden: User \"system:node:node-1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'node-1' and this object"
    );
    let (status, body) = call(&node1, Method::GET, SECRETS, None).await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = call(&node1, Method::GET, "/api/v1/configmaps", None).await;
    assert_eq!(status, 403);
}

/// `view` bound by a RoleBinding: reads in its namespace, cannot create, nothing elsewhere.
#[tokio::test]
async fn a_view_binding_allows_reads_only_in_its_namespace() {
    let server = SecureServer::start().await;
    let admin = server.client(&Identity::admin());
    let bob = server.token_client("bob-token");
    let (status, body) = call(&bob, Method::GET, PODS, None).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "bob-views"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}],
    });
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
    let (status, body) = call(&admin, Method::POST, bindings, Some(&binding)).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = call(&bob, Method::GET, PODS, None).await;
    assert_eq!(status, 200);
    let (status, body) = call(&bob, Method::POST, PODS, Some(&pod("web", None))).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = call(&bob, Method::GET, "/api/v1/nodes", None).await;
    assert_eq!(status, 403);
    assert_eq!(
        body["message"],
        "nodes is forbidden: User \"bob\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
    );
    let (status, _) = call(
        &admin,
        Method::DELETE,
        &format!("{bindings}/bob-views"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(&bob, Method::GET, PODS, None).await;
    assert_eq!(status, 403, "the deleted binding no longer applies");
}

/// The bootstrap roles exist; the components' identities can do their jobs and no more.
#[tokio::test]
async fn component_identities_follow_their_bootstrap_roles() {
    let server = SecureServer::start().await;
    let admin = server.client(&Identity::admin());
    let (status, roles) = call(
        &admin,
        Method::GET,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        None,
    )
    .await;
    assert_eq!(status, 200);
    let names: Vec<&str> = roles["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["metadata"]["name"].as_str())
        .collect();
    for name in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:node",
        "system:kube-scheduler",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let (status, _) = call(&admin, Method::POST, PODS, Some(&pod("web", None))).await;
    assert_eq!(status, 200);
    let scheduler = server.client(&Identity::scheduler());
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}});
    let (status, body) = call(
        &scheduler,
        Method::POST,
        &format!("{PODS}/web/binding"),
        Some(&binding),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = call(&scheduler, Method::POST, PODS, Some(&pod("x", None))).await;
    assert_eq!(status, 403);
    let proxy = server.client(&Identity::kube_proxy());
    assert_eq!(
        call(&proxy, Method::GET, "/api/v1/services", None).await.0,
        200
    );
    assert_eq!(call(&proxy, Method::GET, PODS, None).await.0, 403);
    let endpoints = server.client(&Identity::endpoint_controller());
    assert_eq!(
        call(&endpoints, Method::GET, "/api/v1/endpoints", None)
            .await
            .0,
        200
    );
    assert_eq!(
        call(&endpoints, Method::DELETE, &format!("{PODS}/web"), None)
            .await
            .0,
        403
    );
}

/// `kubectl auth can-i` and `kubectl auth whoami`, as the apiserver answers them.
#[tokio::test]
async fn access_reviews_answer_can_i_and_whoami() {
    let server = SecureServer::start().await;
    let alice = server.token_client("alice-token");
    let review = |verb: &str, resource: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
               "spec": {"resourceAttributes": {"namespace": "default", "verb": verb, "resource": resource}}})
    };
    let ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let (status, body) = call(&alice, Method::POST, ssar, Some(&review("create", "pods"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["kind"], "SelfSubjectAccessReview");
    assert_eq!(body["status"]["allowed"], false);
    let admin = server.client(&Identity::admin());
    let (_, body) = call(&admin, Method::POST, ssar, Some(&review("create", "pods"))).await;
    assert_eq!(body["status"]["allowed"], true);
    let (status, body) = call(
        &alice,
        Method::POST,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"]["userInfo"]["username"], "alice");
    assert_eq!(body["status"]["userInfo"]["uid"], "uid-alice");
    assert_eq!(
        body["status"]["userInfo"]["groups"],
        json!(["dev", "system:authenticated"])
    );
    // SubjectAccessReview asks about someone else, and needs more than basic-user.
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "system:node:node-1", "groups": ["system:nodes"],
                 "resourceAttributes": {"verb": "get", "resource": "nodes"}}});
    let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    assert_eq!(call(&alice, Method::POST, path, Some(&sar)).await.0, 403);
    let (status, body) = call(&admin, Method::POST, path, Some(&sar)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"]["allowed"], true);
    let rules = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                       "spec": {"namespace": "default"}});
    let (status, body) = call(
        &alice,
        Method::POST,
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        Some(&rules),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(!body["status"]["nonResourceRules"]
        .as_array()
        .unwrap()
        .is_empty());
}
