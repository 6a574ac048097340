//! kubectl 1.32, unmodified, with Ingresses (issue 17): `create ingress NAME --rule=HOST/*=SVC:PORT`
//! (a protobuf body) and `apply -f` of an Ingress manifest, `get ingress` in kubectl's columns,
//! then curl with a `Host` header through minik's ingress controller reaches the right pod.

use std::time::Duration;

use minik_api::networking_v1::Ingress;
use minik_client::Api;
use minik_tests::wait::{eventually, wait_for};
use minik_tests::Cluster;

use crate::support::{cells, kubectl_binary, line_of, pod_yaml, running, stop_clean, Kubectl};

const API_SERVICE: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n  \
    selector: {app: api}\n  ports: [{name: http, port: 80, targetPort: 8080}]\n";

const API_INGRESS: &str = "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: api\n\
spec:\n  ingressClassName: minik\n  rules:\n  - host: api.example\n    http:\n      paths:\n      \
- path: /\n        pathType: Prefix\n        backend:\n          service:\n            name: api\n            \
port:\n              name: http\n";

/// `curl -s -H 'Host: HOST' http://ADDRESS/`: the body, if curl succeeded.
async fn curl(address: &str, host: &str) -> Option<String> {
    let output = tokio::process::Command::new("curl")
        .args(["-s", "--max-time", "2", "-H", &format!("Host: {host}")])
        .arg(format!("http://{address}/"))
        .output()
        .await
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

#[tokio::test]
async fn kubectl_creates_and_applies_ingresses_and_curl_reaches_the_pods() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = Cluster::builder()
        .without_proxy()
        .ingress(&[])
        .start()
        .await
        .expect("start cluster");
    let address = cluster.ingress_address().expect("ingress").to_string();
    let kubectl = Kubectl::new(binary, &cluster);
    kubectl.apply_web_and_service("app: web").await;
    let api_pod = kubectl.manifest("api-pod.yaml", &pod_yaml("api", "app: api", ""));
    let api_service = kubectl.manifest("api-svc.yaml", API_SERVICE);
    for manifest in [&api_pod, &api_service] {
        kubectl
            .ok(&["apply", "-f", manifest.to_str().unwrap()])
            .await;
    }
    running(&cluster, "web").await;
    running(&cluster, "api").await;

    let created = kubectl
        .ok(&["create", "ingress", "shop", "--rule=shop.example/*=web:80"])
        .await;
    assert!(
        created.contains("ingress.networking.k8s.io/shop created"),
        "{created}"
    );
    let ingress = kubectl.manifest("ingress.yaml", API_INGRESS);
    let applied = kubectl
        .ok(&["apply", "-f", ingress.to_str().unwrap()])
        .await;
    assert!(
        applied.contains("ingress.networking.k8s.io/api created"),
        "{applied}"
    );

    let ingresses: Api<Ingress> = Api::namespaced(cluster.client(), "default");
    let has_address = |i: &Ingress| {
        let lb = i.status.as_ref().and_then(|s| s.load_balancer.as_ref());
        lb.and_then(|l| l.ingress.as_ref())
            .is_some_and(|p| !p.is_empty())
    };
    for name in ["shop", "api"] {
        wait_for(&ingresses, name, has_address, Duration::from_secs(30))
            .await
            .expect("the controller reports its address");
    }
    let listed = kubectl.ok(&["get", "ingress"]).await;
    let header = cells(listed.lines().next().unwrap());
    assert_eq!(
        header,
        ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"],
        "{listed}"
    );
    let shop = cells(line_of(&listed, "shop").expect("a row for shop"));
    assert_eq!(
        shop[..5],
        // No class was given: the DefaultIngressClass admission filled in the default, `minik`.
        ["shop", "minik", "shop.example", "127.0.0.1", "80"],
        "{listed}"
    );
    let api = cells(line_of(&listed, "api").expect("a row for api"));
    assert_eq!(api[..3], ["api", "minik", "api.example"], "{listed}");
    let classes = kubectl.ok(&["get", "ingressclass"]).await;
    let minik = cells(line_of(&classes, "minik").expect("the controller's class"));
    assert_eq!(
        minik[..3],
        ["minik", "minik.io/ingress-controller", "<none>"],
        "{classes}"
    );

    for (host, pod) in [("shop.example", "web"), ("api.example", "api")] {
        let reached = eventually(
            &format!("curl -H 'Host: {host}' → {pod}"),
            Duration::from_secs(30),
            || async { curl(&address, host).await.filter(|body| body == pod) },
        )
        .await;
        assert!(reached.is_ok(), "{host}: {:?}", curl(&address, host).await);
    }
    assert_eq!(
        curl(&address, "nobody.example").await.as_deref(),
        Some("default backend - 404")
    );
    stop_clean(cluster).await;
}
