//! Registration: the `v1beta1.metrics.k8s.io` APIService and the Endpoints it resolves to.
//!
//! Kubernetes counterpart: metrics-server's deployment manifest (`components.yaml`): a Service
//! `kube-system/metrics-server` in front of its pods and the APIService
//! `v1beta1.metrics.k8s.io` naming that Service and the CA its serving certificate chains to; the
//! kube-aggregator resolves the Service to an endpoint and proxies the group's paths there.
//!
//! minik simplifies: metrics-server writes both itself at start (there are no manifests to apply
//! and no pods behind it), and only the Endpoints, not a Service: it runs on the host, at
//! 127.0.0.1 and its own port, which the Endpoints name and the apiserver dials.

use minik_client::{Client, Method};
use serde_json::{json, Value};

/// The APIService's name.
pub const API_SERVICE: &str = "v1beta1.metrics.k8s.io";

/// The Endpoints of `kube-system/metrics-server`: this process, at 127.0.0.1:`port`.
pub fn endpoints(port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "metrics-server", "namespace": "kube-system",
                     "labels": {"k8s-app": "metrics-server"}},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                     "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
    })
}

/// The APIService: the group's service, port and CA (or, on a plain-http cluster, none).
pub fn api_service(port: u16, ca_pem: Option<&[u8]>) -> Value {
    use base64::Engine;
    let mut spec = json!({
        "group": "metrics.k8s.io", "version": "v1beta1",
        "service": {"namespace": "kube-system", "name": "metrics-server", "port": port},
        "groupPriorityMinimum": 100, "versionPriority": 100,
    });
    match ca_pem {
        Some(ca) => {
            spec["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(ca));
        }
        None => spec["insecureSkipTLSVerify"] = json!(true),
    }
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": API_SERVICE, "labels": {"k8s-app": "metrics-server"}},
        "spec": spec,
    })
}

/// Creates the object at `collection`/`name`, or replaces the one there.
async fn put(
    client: &Client,
    collection: &str,
    name: &str,
    mut body: Value,
) -> minik_client::Result<()> {
    let path = format!("{collection}/{name}");
    match client.request_json(Method::GET, &path, None).await {
        Ok(existing) => {
            body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"].clone();
            client.request_json(Method::PUT, &path, Some(&body)).await?;
        }
        Err(e) if e.is_not_found() => {
            client
                .request_json(Method::POST, collection, Some(&body))
                .await?;
        }
        Err(e) => return Err(e),
    }
    Ok(())
}

/// Writes the Endpoints, then the APIService (so the group is never announced unreachable).
pub async fn register(
    client: &Client,
    port: u16,
    ca_pem: Option<&[u8]>,
) -> minik_client::Result<()> {
    put(
        client,
        "/api/v1/namespaces/kube-system/endpoints",
        "metrics-server",
        endpoints(port),
    )
    .await?;
    put(
        client,
        "/apis/apiregistration.k8s.io/v1/apiservices",
        API_SERVICE,
        api_service(port, ca_pem),
    )
    .await
}
