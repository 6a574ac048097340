//! Calling one webhook: where it is, HTTPS trusting its `caBundle`, the timeout.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/util/webhook/{client.go,authentication.go}`
//! (`ClientManager.HookClient`): `clientConfig.url` as given, or `clientConfig.service` as
//! `https://{name}.{namespace}.svc:{port}{path}` (port 443 by default) whose certificate must be
//! valid for that name, the request POSTed with `?timeout=` added, the call bounded by
//! `timeoutSeconds`. minik simplifies: a service is reached at its Endpoints' first address (as
//! `--enable-aggregator-routing` does), and only loopback addresses are ever called
//! (docs/architecture.md#network): a URL naming another host is refused.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use minik_api::k8s_openapi::api::admissionregistration::v1::{
    ServiceReference, WebhookClientConfig,
};
use minik_api::resource::lookup;
use reqwest::Url;
use serde_json::Value;

use super::webhook_match::Webhook;
use crate::request::storage_key;
use crate::AppState;

/// POSTs the review and returns the answer's body; the error text is what upstream's
/// `failed calling webhook` message carries after the name.
pub async fn post(state: &AppState, webhook: &Webhook, review: &Value) -> Result<Vec<u8>, String> {
    post_to(state, &webhook.client_config, webhook.timeout(), review).await
}

/// POSTs `review` to the webhook `config` names (also CRD conversion webhooks, whose
/// `clientConfig` has the same shape), bounded by `timeout`.
pub async fn post_to(
    state: &AppState,
    config: &WebhookClientConfig,
    timeout: std::time::Duration,
    review: &Value,
) -> Result<Vec<u8>, String> {
    let (mut url, address) = locate(state, config)?;
    url.query_pairs_mut()
        .append_pair("timeout", &format!("{}s", timeout.as_secs()));
    let shown = format!("Post \"{url}\"");
    let client = client(config, &url, address).map_err(|e| format!("{shown}: {e}"))?;
    let sent = client
        .post(url.clone())
        .timeout(timeout)
        .json(review)
        .send();
    let response = sent.await.map_err(|e| {
        if e.is_timeout() {
            format!("failed to call webhook: {shown}: context deadline exceeded")
        } else {
            format!("failed to call webhook: {shown}: {}", error_chain(&e))
        }
    })?;
    let code = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("failed to call webhook: {shown}: {}", error_chain(&e)))?;
    if !code.is_success() {
        let text = String::from_utf8_lossy(&body);
        return Err(format!(
            "failed to call webhook: the server responded with the status code {}: {}",
            code.as_u16(),
            text.trim()
        ));
    }
    Ok(body.to_vec())
}

/// The error and its sources, as Go prints a wrapped error.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// The URL to call and, for a service or `localhost`, the loopback address it resolves to.
fn locate(
    state: &AppState,
    config: &WebhookClientConfig,
) -> Result<(Url, Option<SocketAddr>), String> {
    if let Some(service) = &config.service {
        return locate_service(state, service);
    }
    let text = config.url.as_deref().unwrap_or("");
    let url = Url::parse(text).map_err(|e| format!("invalid webhook URL {text:?}: {e}"))?;
    match url_loopback(&url) {
        Some(address) => Ok((url, address)),
        None => Err(format!(
            "minik calls webhooks on loopback addresses only, not {text:?}"
        )),
    }
}

/// `Some(None)`: an IPv4 loopback literal; `Some(Some(addr))`: `localhost` pinned to
/// 127.0.0.1; `None`: not loopback.
pub fn url_loopback(url: &Url) -> Option<Option<SocketAddr>> {
    let port = url.port_or_known_default().unwrap_or(443);
    let host = url.host_str()?;
    if host == "localhost" {
        return Some(Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)));
    }
    let ip: Ipv4Addr = host.parse().ok()?;
    ip.is_loopback().then_some(None)
}

/// `https://{name}.{namespace}.svc:{port}{path}`, reached at the Service's endpoint for that port.
fn locate_service(
    state: &AppState,
    service: &ServiceReference,
) -> Result<(Url, Option<SocketAddr>), String> {
    let port = service.port.unwrap_or(443);
    let host = format!("{}.{}.svc", service.name, service.namespace);
    let path = service.path.as_deref().unwrap_or("/");
    let url = Url::parse(&format!("https://{host}:{port}{path}"))
        .map_err(|e| format!("invalid webhook service path {path:?}: {e}"))?;
    let read = |plural: &str| -> Result<Value, String> {
        let info = lookup(plural).ok_or("unknown kind")?;
        let key = storage_key(info, Some(&service.namespace), &service.name);
        let record = state.storage.get(&key).map_err(|e| e.to_string())?;
        let record = record.ok_or_else(|| format!("{plural} \"{}\" not found", service.name))?;
        Ok((*record.value).clone())
    };
    let address = endpoint_for(&read("services")?, &read("endpoints")?, port)
        .ok_or_else(|| format!("service \"{}\" has no ready endpoint for port {port}", host))?;
    if !address.ip().is_loopback() {
        return Err(format!(
            "minik calls webhooks on loopback addresses only, not {address}"
        ));
    }
    Ok((url, Some(address)))
}

/// The endpoint address behind the Service port `port`: the Endpoints port of the same name
/// (or the only one).
pub fn endpoint_for(service: &Value, endpoints: &Value, port: i32) -> Option<SocketAddr> {
    let ports = service.pointer("/spec/ports")?.as_array()?;
    let wanted = ports
        .iter()
        .find(|p| p["port"].as_i64() == Some(i64::from(port)))?;
    let name = wanted["name"].as_str().unwrap_or("");
    let subsets = endpoints.get("subsets")?.as_array()?;
    subsets.iter().find_map(|subset| {
        let ip: IpAddr = subset.pointer("/addresses/0/ip")?.as_str()?.parse().ok()?;
        let ports = subset.get("ports")?.as_array()?;
        let chosen = ports
            .iter()
            .find(|p| p["name"].as_str().unwrap_or("") == name)
            .or_else(|| (ports.len() == 1).then(|| &ports[0]))?;
        let number = u16::try_from(chosen["port"].as_i64()?).ok()?;
        Some(SocketAddr::new(ip, number))
    })
}

/// An HTTPS client trusting the webhook's `caBundle` (else the usual roots), with the host
/// pinned to `address` when one was resolved here.
fn client(
    config: &WebhookClientConfig,
    url: &Url,
    address: Option<SocketAddr>,
) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder().no_proxy().https_only(true);
    let bundle = config.ca_bundle.as_ref().map(|b| &b.0[..]);
    if let Some(pem) = bundle.filter(|b| !b.is_empty()) {
        let roots = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| format!("invalid caBundle: {e}"))?;
        builder = builder.tls_certs_only(roots);
    }
    if let (Some(address), Some(host)) = (address, url.host_str()) {
        builder = builder.resolve(host, address);
    }
    builder.build().map_err(|e| error_chain(&e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_loopback_urls_are_called() {
        let parse = |text: &str| url_loopback(&Url::parse(text).unwrap());
        assert_eq!(parse("https://127.0.0.1:8443/validate"), Some(None));
        assert_eq!(parse("https://127.9.8.7/validate"), Some(None));
        assert_eq!(
            parse("https://localhost:9443/"),
            Some(Some("127.0.0.1:9443".parse().unwrap()))
        );
        assert_eq!(parse("https://10.0.0.1/"), None);
        assert_eq!(parse("https://example.com/"), None);
    }

    #[test]
    fn a_service_port_leads_to_its_named_endpoint_port() {
        let service = json!({"spec": {"ports": [
            {"name": "metrics", "port": 9090}, {"name": "webhook", "port": 443}]}});
        let endpoints = json!({"subsets": [{"addresses": [{"ip": "127.0.0.5"}],
            "ports": [{"name": "metrics", "port": 19090}, {"name": "webhook", "port": 19443}]}]});
        assert_eq!(
            endpoint_for(&service, &endpoints, 443),
            Some("127.0.0.5:19443".parse().unwrap())
        );
        assert_eq!(endpoint_for(&service, &endpoints, 8443), None);
        assert_eq!(endpoint_for(&service, &json!({}), 443), None);
    }
}
