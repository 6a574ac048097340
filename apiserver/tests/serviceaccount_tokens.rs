//! ServiceAccount tokens over TLS: the TokenRequest API issues them, they authenticate as the
//! account, and an expired, tampered, wrong-audience or orphaned token is 401 with a Status; and
//! the token volume the pod admission mounts where tokens are issued.

mod secure;

use minik_apiserver::auth::tokens::{
    Claims, KeyFiles, Keys, KubernetesClaims, Ref, DEFAULT_ISSUER,
};
use minik_client::{Client, Method};
use minik_cluster::pki::Identity;
use secure::{code, SecureServer};
use serde_json::{json, Value};

const ACCOUNTS: &str = "/api/v1/namespaces/default/serviceaccounts";
const PODS: &str = "/api/v1/namespaces/default/pods";
const WHOAMI: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

async fn create_account(admin: &Client, name: &str) -> Value {
    let body = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}});
    admin
        .request_json(Method::POST, ACCOUNTS, Some(&body))
        .await
        .expect("account created")
}

async fn request_token(admin: &Client, account: &str, spec: Value) -> minik_client::Result<Value> {
    let body =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    let path = format!("{ACCOUNTS}/{account}/token");
    admin.request_json(Method::POST, &path, Some(&body)).await
}

/// The `code` of the Status an HTTP request with `token` answers `GET /api/v1/pods` with, and
/// the body.
async fn as_bearer(
    server: &SecureServer,
    token: &str,
    method: reqwest::Method,
    path: &str,
) -> (u16, Value) {
    let http = server.anonymous_http();
    let mut request = http
        .request(method.clone(), format!("{}{path}", server.url))
        .bearer_auth(token);
    if method == reqwest::Method::POST {
        request = request
            .json(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}));
    }
    SecureServer::send(request).await
}

fn assert_unauthorized((code, body): (u16, Value), why: &str) {
    assert_eq!(code, 401, "{why}: {body}");
    assert_eq!(body["kind"], "Status", "{why}");
    assert_eq!(body["reason"], "Unauthorized", "{why}");
}

/// A requested token names the account as its user, in the account's groups; RBAC then decides
/// (no binding: 403 that names the account).
#[tokio::test]
async fn a_requested_token_authenticates_as_the_service_account() {
    let server = SecureServer::start().await;
    let admin = server.client(&Identity::admin());
    let account = create_account(&admin, "robot").await;
    let answer = request_token(&admin, "robot", json!({}))
        .await
        .expect("token");
    assert_eq!(answer["kind"], "TokenRequest");
    assert_eq!(answer["spec"]["expirationSeconds"], 3600);
    assert_eq!(answer["spec"]["audiences"], json!([DEFAULT_ISSUER]));
    let token = answer["status"]["token"]
        .as_str()
        .expect("a token")
        .to_string();
    assert!(answer["status"]["expirationTimestamp"].is_string());

    let (code, review) = as_bearer(&server, &token, reqwest::Method::POST, WHOAMI).await;
    assert_eq!(code, 201, "{review}");
    let user = &review["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:default:robot");
    assert_eq!(user["uid"], account["metadata"]["uid"]);
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    let (code, status) = as_bearer(&server, &token, reqwest::Method::GET, "/api/v1/pods").await;
    assert_eq!(code, 403, "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("system:serviceaccount:default:robot"),
        "{message}"
    );
}

/// docs/security.md#s15: each way a token can be wrong is a 401 Status, never anonymous.
#[tokio::test]
async fn expired_tampered_foreign_and_orphaned_tokens_are_401() {
    let server = SecureServer::start().await;
    let admin = server.client(&Identity::admin());
    let account = create_account(&admin, "robot").await;
    let uid = account["metadata"]["uid"].as_str().unwrap().to_string();

    let vault = request_token(&admin, "robot", json!({"audiences": ["vault"]}))
        .await
        .unwrap();
    let vault = vault["status"]["token"].as_str().unwrap();
    assert_unauthorized(
        as_bearer(&server, vault, reqwest::Method::GET, "/api").await,
        "audience",
    );

    // An expired token, signed with the cluster's own key so only its time is wrong.
    let (signing_key_file, key_file) = server.pki.service_account_key_files();
    let keys = Keys::load(&KeyFiles {
        signing_key_file,
        key_file,
        issuer: DEFAULT_ISSUER.into(),
        api_audiences: Vec::new(),
    })
    .unwrap();
    let now = minik_apiserver::auth::tokens::now();
    let claims = Claims {
        iss: DEFAULT_ISSUER.into(),
        sub: "system:serviceaccount:default:robot".into(),
        aud: vec![DEFAULT_ISSUER.into()],
        exp: now - 3600,
        iat: now - 7200,
        nbf: now - 7200,
        jti: "expired".into(),
        kubernetes: KubernetesClaims {
            namespace: "default".into(),
            serviceaccount: Ref {
                name: "robot".into(),
                uid: uid.clone(),
            },
            pod: None,
            node: None,
        },
    };
    let expired = keys.issue(&claims).unwrap();
    assert_unauthorized(
        as_bearer(&server, &expired, reqwest::Method::GET, "/api").await,
        "expired",
    );
    let fresh = keys
        .issue(&Claims {
            exp: now + 600,
            ..claims
        })
        .unwrap();
    assert_eq!(
        as_bearer(&server, &fresh, reqwest::Method::GET, "/api")
            .await
            .0,
        200
    );

    let good = request_token(&admin, "robot", json!({})).await.unwrap();
    let good = good["status"]["token"].as_str().unwrap().to_string();
    assert_eq!(
        as_bearer(&server, &good, reqwest::Method::GET, "/api")
            .await
            .0,
        200
    );
    let mut tampered: Vec<char> = good.chars().collect();
    let last = tampered.len() - 3;
    tampered[last] = if tampered[last] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    assert_unauthorized(
        as_bearer(&server, &tampered, reqwest::Method::GET, "/api").await,
        "tampered",
    );

    // Deleting the account revokes its tokens; a new account of the same name has a new UID.
    let path = format!("{ACCOUNTS}/robot");
    admin
        .request_json(Method::DELETE, &path, None)
        .await
        .unwrap();
    assert_unauthorized(
        as_bearer(&server, &good, reqwest::Method::GET, "/api").await,
        "deleted",
    );
    create_account(&admin, "robot").await;
    assert_unauthorized(
        as_bearer(&server, &good, reqwest::Method::GET, "/api").await,
        "re-created",
    );
}

/// docs/security.md#s2, #s3: lifetimes, missing accounts and bound objects are checked; a
/// pod-bound token dies with its pod.
#[tokio::test]
async fn token_requests_are_validated_and_bound_tokens_die_with_their_pod() {
    let server = SecureServer::start().await;
    let admin = server.client(&Identity::admin());
    create_account(&admin, "robot").await;
    let short = request_token(&admin, "robot", json!({"expirationSeconds": 599})).await;
    assert_eq!(code(&short), 422, "{short:?}");
    assert_eq!(code(&request_token(&admin, "ghost", json!({})).await), 404);

    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"serviceAccountName": "robot", "containers": [{"name": "app", "image": "busybox"}]}});
    let pod = admin
        .request_json(Method::POST, "/api/v1/namespaces/default/pods", Some(&pod))
        .await
        .unwrap();
    let pod_uid = pod["metadata"]["uid"].as_str().unwrap();
    let bound = |uid: &str| json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": uid}});
    assert_eq!(
        code(&request_token(&admin, "robot", bound("other-uid")).await),
        409
    );
    create_account(&admin, "default").await;
    assert_eq!(
        code(&request_token(&admin, "default", bound(pod_uid)).await),
        400
    );
    let node_bound = json!({"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "s"}});
    assert_eq!(code(&request_token(&admin, "robot", node_bound).await), 400);

    let answer = request_token(&admin, "robot", bound(pod_uid))
        .await
        .unwrap();
    let token = answer["status"]["token"].as_str().unwrap().to_string();
    assert_eq!(
        as_bearer(&server, &token, reqwest::Method::GET, "/api")
            .await
            .0,
        200
    );
    let path = "/api/v1/namespaces/default/pods/web?gracePeriodSeconds=0";
    admin
        .request_json(Method::DELETE, path, None)
        .await
        .unwrap();
    assert_unauthorized(
        as_bearer(&server, &token, reqwest::Method::GET, "/api").await,
        "pod gone",
    );
}

/// NodeRestriction: a kubelet gets tokens only for pods bound to its own node.
#[tokio::test]
async fn a_node_gets_tokens_only_for_its_own_pods() {
    let server = SecureServer::start().await;
    let admin = server.client(&Identity::admin());
    create_account(&admin, "default").await;
    for (name, node) in [("mine", "node-1"), ("theirs", "node-2")] {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "busybox"}]}});
        admin
            .request_json(Method::POST, "/api/v1/namespaces/default/pods", Some(&pod))
            .await
            .unwrap();
    }
    let kubelet = server.client(&Identity::node("node-1"));
    let bound =
        |pod: &str| json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": pod}});
    let mine = request_token(&kubelet, "default", bound("mine")).await;
    assert_eq!(code(&mine), 200, "{mine:?}");
    assert_eq!(
        code(&request_token(&kubelet, "default", bound("theirs")).await),
        403
    );
    assert_eq!(
        code(&request_token(&kubelet, "default", json!({})).await),
        403
    );
    let account = kubelet
        .request_json(Method::GET, &format!("{ACCOUNTS}/default"), None)
        .await;
    assert_eq!(
        code(&account),
        200,
        "a node reads service accounts: {account:?}"
    );
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "app", "image": "busybox", "command": ["sleep", "60"]}]}})
}

/// docs/security.md#s12: a pod runs as `default` with the token volume mounted read-only in each
/// container, unless its account (or the pod) turns automount off.
#[tokio::test]
async fn pods_run_as_default_with_the_token_volume_unless_automount_is_off() {
    let server = SecureServer::start().await;
    let admin = server.client(&Identity::admin());
    let post = |path: &'static str, body: Value| {
        let admin = admin.clone();
        async move {
            admin
                .request_json(Method::POST, path, Some(&body))
                .await
                .expect("created")
        }
    };
    let created = post(PODS, pod("web")).await;
    let spec = &created["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["serviceAccount"], "default");
    let volume = &spec["volumes"][0];
    let name = volume["name"].as_str().unwrap();
    assert!(name.starts_with("kube-api-access-"), "{name}");
    let sources = volume["projected"]["sources"].as_array().unwrap();
    assert_eq!(sources[0]["serviceAccountToken"]["path"], "token");
    assert_eq!(sources[0]["serviceAccountToken"]["expirationSeconds"], 3607);
    assert_eq!(sources[1]["configMap"]["name"], "kube-root-ca.crt");
    assert_eq!(sources[2]["downwardAPI"]["items"][0]["path"], "namespace");
    let mount = &spec["containers"][0]["volumeMounts"][0];
    assert_eq!(mount["name"], name);
    assert_eq!(
        mount["mountPath"],
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );
    assert_eq!(mount["readOnly"], true);

    let quiet = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "quiet"},
                       "automountServiceAccountToken": false});
    post(ACCOUNTS, quiet).await;
    let mut other = pod("other");
    other["spec"]["serviceAccountName"] = json!("quiet");
    let created = post(PODS, other).await;
    assert!(created["spec"].get("volumes").is_none(), "{created}");
    let mut insists = pod("insists");
    insists["spec"]["serviceAccountName"] = json!("quiet");
    insists["spec"]["automountServiceAccountToken"] = json!(true);
    let created = post(PODS, insists).await;
    assert_eq!(created["spec"]["volumes"].as_array().map(Vec::len), Some(1));
}
