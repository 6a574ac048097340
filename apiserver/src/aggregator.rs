//! The aggregation layer: API groups served by another server, registered by an APIService.
//!
//! Kubernetes counterpart: kube-aggregator (`k8s.io/kube-aggregator/pkg/apiserver`,
//! `handler_proxy.go`): an `apiregistration.k8s.io/v1` APIService `{version}.{group}` with a
//! `spec.service` sends every request under `/apis/{group}/{version}` to that service, after the
//! kube-apiserver has authenticated and authorized it. The request goes over TLS (verified with
//! the APIService's `caBundle`, unless `insecureSkipTLSVerify`), with the front-proxy client
//! certificate, the caller's credentials removed and its identity in `X-Remote-User`,
//! `X-Remote-Group` (and `X-Remote-Extra-*`). The group appears in `/apis` discovery.
//!
//! minik simplifies: the service is resolved straight from its Endpoints object (upstream's
//! `--enable-aggregator-routing`), with no Service needed; the front-proxy certificate is the
//! apiserver's kubelet client certificate, and the server's certificate is checked against the
//! cluster CA the apiserver already trusts for the kubelets (so `caBundle` must be that CA); no
//! `Available` status condition is maintained. Aggregated discovery asks the server for its
//! legacy document on each request ([`fetch_resource_list`]).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use minik_api::status;
use serde_json::Value;

use crate::auth::UserInfo;
use crate::error::ApiError;
use crate::AppState;

/// How long a proxied request may take.
const PROXY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// `(group, version)` of a path under `/apis/{group}/{version}`.
pub fn group_version(path: &str) -> Option<(&str, &str)> {
    let mut parts = path.strip_prefix("/apis/")?.split('/');
    let group = parts.next().filter(|g| !g.is_empty())?;
    let version = parts.next().filter(|v| !v.is_empty())?;
    Some((group, version))
}

/// Where an APIService's requests go: `host:port` of its service's first endpoint.
pub fn endpoint_of(api_service: &Value, endpoints: &Value) -> Option<String> {
    let wanted = api_service
        .pointer("/spec/service/port")
        .and_then(Value::as_i64);
    let subsets = endpoints.get("subsets")?.as_array()?;
    subsets.iter().find_map(|subset| {
        let ip = subset.pointer("/addresses/0/ip")?.as_str()?;
        let ports = subset.get("ports")?.as_array()?;
        let port = ports
            .iter()
            .filter_map(|p| p.get("port").and_then(Value::as_i64))
            .find(|p| wanted.is_none_or(|w| w == *p))
            .or_else(|| ports.first()?.get("port")?.as_i64())?;
        Some(format!("{ip}:{port}"))
    })
}

/// The stored APIServices that name a service (the groups served elsewhere).
pub fn remote_api_services(state: &AppState) -> Vec<std::sync::Arc<Value>> {
    let Ok((records, _)) = state.storage.list("/registry/apiservices/") else {
        return Vec::new();
    };
    records
        .into_iter()
        .map(|r| r.value)
        .filter(|v| v.pointer("/spec/service/name").is_some())
        .collect()
}

/// Passes a request for an aggregated group to its server; everything else goes on.
pub async fn filter(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some((group, version)) = group_version(request.uri().path()) else {
        return next.run(request).await;
    };
    let key = format!("/registry/apiservices/{version}.{group}");
    let api_service = match state.storage.get(&key) {
        Ok(Some(record)) if record.value.pointer("/spec/service/name").is_some() => record.value,
        _ => return next.run(request).await,
    };
    match proxy(&state, &api_service, request).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// How long aggregated discovery waits for an APIService's server.
const DISCOVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The legacy `APIResourceList` of an APIService's group version, asked of its server as the
/// aggregator's own user (upstream's discovery manager falls back to this legacy document when
/// the server does not serve aggregated discovery).
pub async fn fetch_resource_list(
    state: &AppState,
    group: &str,
    version: &str,
) -> Result<Value, ApiError> {
    let key = format!("/registry/apiservices/{version}.{group}");
    let api_service = match state.storage.get(&key) {
        Ok(Some(record)) => record.value,
        _ => return Err(unavailable(&key, "no such APIService")),
    };
    let mut request = Request::builder()
        .uri(format!("/apis/{group}/{version}"))
        .header("accept", "application/json")
        .body(Body::empty())
        .map_err(|e| unavailable(&key, e))?;
    request.extensions_mut().insert(UserInfo {
        name: "system:kube-aggregator".into(),
        uid: String::new(),
        groups: vec!["system:masters".into()],
    });
    let response = tokio::time::timeout(DISCOVERY_TIMEOUT, proxy(state, &api_service, request))
        .await
        .map_err(|_| unavailable(&key, "discovery timed out"))??;
    if !response.status().is_success() {
        return Err(unavailable(&key, response.status()));
    }
    let body = axum::body::to_bytes(response.into_body(), crate::MAX_BODY_BYTES)
        .await
        .map_err(|e| unavailable(&key, e))?;
    serde_json::from_slice(&body).map_err(|e| unavailable(&key, e))
}

fn unavailable(name: &str, why: impl std::fmt::Display) -> ApiError {
    status::failure(
        503,
        "ServiceUnavailable",
        format!("the server is currently unable to handle the request ({name}: {why})"),
    )
    .into()
}

async fn proxy(
    state: &AppState,
    api_service: &Value,
    request: Request,
) -> Result<Response, ApiError> {
    let name = api_service
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let service = |field: &str| {
        api_service
            .pointer(&format!("/spec/service/{field}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let endpoints_key = format!(
        "/registry/endpoints/{}/{}",
        service("namespace"),
        service("name")
    );
    let endpoints = match state.storage.get(&endpoints_key) {
        Ok(Some(record)) => record.value,
        _ => return Err(unavailable(name, "no endpoints for its service")),
    };
    let address = endpoint_of(api_service, &endpoints)
        .ok_or_else(|| unavailable(name, "no endpoint address"))?;
    let scheme = if state.kubelet_tls { "https" } else { "http" };
    let path_and_query = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let url = format!("{scheme}://{address}{path_and_query}");
    let user = request.extensions().get::<UserInfo>().cloned();
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, crate::MAX_BODY_BYTES)
        .await
        .map_err(|e| ApiError::from(status::bad_request(e.to_string())))?;
    let mut outgoing = state
        .http
        .request(parts.method.clone(), &url)
        .timeout(PROXY_TIMEOUT)
        .body(body);
    for header in ["accept", "content-type", "user-agent"] {
        if let Some(value) = parts.headers.get(header) {
            outgoing = outgoing.header(header, value);
        }
    }
    if let Some(user) = &user {
        outgoing = outgoing.header("X-Remote-User", user.name.as_str());
        for group in &user.groups {
            outgoing = outgoing.header("X-Remote-Group", group.as_str());
        }
    }
    tracing::debug!(apiservice = %name, %url, "proxying to an aggregated API");
    let answer = outgoing.send().await.map_err(|e| unavailable(name, e))?;
    let mut response = Response::builder().status(answer.status().as_u16());
    for (header, value) in answer.headers() {
        if header == "content-type" || header == "content-length" {
            if let (Ok(h), Ok(v)) = (
                HeaderName::from_bytes(header.as_str().as_bytes()),
                HeaderValue::from_bytes(value.as_bytes()),
            ) {
                response = response.header(h, v);
            }
        }
    }
    let bytes = answer.bytes().await.map_err(|e| unavailable(name, e))?;
    response
        .body(Body::from(bytes))
        .map_err(|e| ApiError::from(status::internal(e.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_group_version_is_read_from_the_path() {
        assert_eq!(
            group_version("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods"),
            Some(("metrics.k8s.io", "v1beta1"))
        );
        assert_eq!(group_version("/apis/metrics.k8s.io"), None);
        assert_eq!(group_version("/api/v1/pods"), None);
    }

    #[test]
    fn the_service_port_picks_the_endpoint() {
        let api_service =
            json!({"spec": {"service": {"name": "m", "namespace": "kube-system", "port": 4443}}});
        let endpoints = json!({"subsets": [{"addresses": [{"ip": "127.0.0.1"}],
            "ports": [{"port": 80}, {"port": 4443}]}]});
        assert_eq!(
            endpoint_of(&api_service, &endpoints).as_deref(),
            Some("127.0.0.1:4443")
        );
        assert_eq!(endpoint_of(&api_service, &json!({"subsets": []})), None);
    }
}
