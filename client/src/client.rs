//! `Client`: HTTP to the apiserver, turning every error answer into a `Status`.
//!
//! Kubernetes counterpart: client-go's `rest.RESTClient` (`staging/src/k8s.io/client-go/rest/request.go`,
//! `transformResponse`) and kube-rs's `kube_client::Client`. The client knows nothing about kinds:
//! it sends a request to a path and reads JSON back. [`crate::Api`] builds the paths.
//!
//! Error answers: the apiserver sends a `Status` body with every non-2xx answer. When a body is not
//! a `Status` (a proxy's HTML page, a plain-text 500), the client synthesizes one from the HTTP code
//! the way client-go's `NewGenericServerResponse` does, so callers always see [`Error::Api`].
//!
//! Transport: [`Client::new`] speaks plain http (a server started without TLS);
//! [`Client::from_config`] and [`Client::from_kubeconfig`] speak https with the kubeconfig's CA
//! (only it, never the system roots), client certificate or bearer token, as client-go's
//! `rest.Config` does; [`Client::connect`] is what every component's `--server`/`--kubeconfig`
//! flags call.
//!
//! minik simplifies: no protobuf, no retries (callers retry where Kubernetes' semantics say so: a
//! watcher relists, a controller requeues), no exec credential plugins.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use reqwest::{header, Method, RequestBuilder, Response, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;

use minik_api::meta::Status;
use minik_api::{Table, WatchEvent};

use crate::error::{Error, Result};
use crate::kubeconfig::{self, ClientConfig};
use crate::watch_lines::watch_events;

/// The `Accept` header of `kubectl get`: a `meta.k8s.io/v1` Table, else the plain object (a server
/// that cannot print tables answers JSON, which then fails to decode as a Table).
pub const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// A handle on one apiserver. Cloning is cheap (the connection pool is shared).
#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
    /// `http://127.0.0.1:6443`, without a trailing slash.
    base_url: Arc<str>,
    /// The `Authorization: Bearer` credential, if the kubeconfig has one.
    token: Option<BearerToken>,
}

/// A bearer token that never shows in `Debug` output.
#[derive(Clone)]
struct BearerToken(Arc<str>);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Client {
    /// A client for the plain-http apiserver at `base_url` (e.g. `http://127.0.0.1:6443`).
    pub fn new(base_url: &str) -> Result<Client> {
        let (base_url, parsed) = parse_url(base_url)?;
        if parsed.scheme() != "http" {
            return Err(Error::InvalidUrl(base_url.to_string()));
        }
        Ok(Client {
            http: builder().build()?,
            base_url: base_url.into(),
            token: None,
        })
    }

    /// A client for `config.server`: https with the given CA and credentials, or plain http.
    pub fn from_config(config: &ClientConfig) -> Result<Client> {
        let (base_url, parsed) = parse_url(&config.server)?;
        let mut http = builder();
        if parsed.scheme() == "https" {
            http = tls(http, config)?;
        }
        Ok(Client {
            http: http.build()?,
            base_url: base_url.into(),
            token: config.token.as_deref().map(|t| BearerToken(t.into())),
        })
    }

    /// A client from the current context of the kubeconfig at `path`.
    pub fn from_kubeconfig(path: &Path) -> Result<Client> {
        Client::from_config(&kubeconfig::load(path)?)
    }

    /// What the components' flags mean: with `--kubeconfig`, its current context (its server
    /// wins); without, plain http to `--server`.
    pub fn connect(server: &str, kubeconfig: Option<&Path>) -> Result<Client> {
        match kubeconfig {
            Some(path) => Client::from_kubeconfig(path),
            None => Client::new(server),
        }
    }

    /// The server address this client talks to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// A request builder for `path` (which starts with `/` and may carry a query string).
    pub(crate) fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let request = self
            .http
            .request(method, format!("{}{path}", self.base_url));
        match &self.token {
            Some(BearerToken(token)) => request.bearer_auth(token),
            None => request,
        }
    }

    /// A raw request to `path`, carrying this client's TLS identity and bearer token, for a
    /// proxy that passes requests and answers through unchanged (`minik proxy`).
    pub fn raw_request(&self, method: Method, path: &str) -> RequestBuilder {
        self.request(method, path)
    }

    /// Sends a request; a non-2xx answer becomes [`Error::Api`].
    pub(crate) async fn send(&self, request: RequestBuilder) -> Result<Response> {
        let response = request.send().await?;
        if response.status().is_success() {
            return Ok(response);
        }
        let code = response.status();
        let body = response.bytes().await?;
        Err(Error::Api(status_from_body(code, &body)))
    }

    /// Sends a request and decodes the JSON answer.
    pub(crate) async fn send_json<T: DeserializeOwned>(
        &self,
        request: RequestBuilder,
    ) -> Result<T> {
        let body = self.send(request).await?.bytes().await?;
        Ok(serde_json::from_slice(&body)?)
    }

    /// An untyped request: `method path` with an optional JSON body, answering JSON. For tools that
    /// handle kinds they only know at run time (`minik apply` reads `kind` from a manifest).
    pub async fn request_json(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value> {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(body);
        }
        self.send_json(request).await
    }

    /// An untyped PATCH of the object at `path`, for tools that know the kind only at run time (the
    /// garbage collector strips ownerReferences and finalizers of any kind).
    pub async fn patch_json(&self, path: &str, patch: &crate::Patch) -> Result<Value> {
        let request = self
            .request(Method::PATCH, path)
            .header(header::CONTENT_TYPE, patch.content_type())
            .body(serde_json::to_vec(patch.body())?);
        self.send_json(request).await
    }

    /// A GET of an object or a collection as a server-side [`Table`] (what `kubectl get` prints).
    pub async fn get_table(&self, path: &str) -> Result<Table> {
        let request = self
            .request(Method::GET, path)
            .header(header::ACCEPT, TABLE_ACCEPT);
        self.send_json(request).await
    }

    /// A watch at `path` whose events carry one-row [`Table`]s instead of objects (`kubectl get
    /// -w`). BOOKMARK and ERROR events still carry their plain object, decoded into an empty table
    /// or a `Status`.
    pub async fn watch_tables(
        &self,
        path: &str,
    ) -> Result<BoxStream<'static, Result<WatchEvent<Table>>>> {
        let request = self
            .request(Method::GET, path)
            .header(header::ACCEPT, TABLE_ACCEPT);
        let response = self.send(request).await?;
        Ok(watch_events(response.bytes_stream().map_err(Error::from)).boxed())
    }

    /// A GET whose answer is text (`pods/{name}/log`).
    pub async fn get_text(&self, path: &str) -> Result<String> {
        Ok(self
            .send(self.request(Method::GET, path))
            .await?
            .text()
            .await?)
    }

    /// A GET whose answer is streamed as it arrives (`pods/{name}/log?follow=true`).
    pub async fn get_stream(&self, path: &str) -> Result<BoxStream<'static, Result<Bytes>>> {
        let response = self.send(self.request(Method::GET, path)).await?;
        Ok(response.bytes_stream().map_err(Error::from).boxed())
    }

    /// Opens a watch at `path` (which must carry `watch=true` in its query) and decodes each line
    /// as a `WatchEvent<T>`; `T` may be `serde_json::Value` for untyped callers.
    pub async fn watch_raw<T>(
        &self,
        path: &str,
    ) -> Result<BoxStream<'static, Result<WatchEvent<T>>>>
    where
        T: DeserializeOwned + Send + 'static,
    {
        let response = self.send(self.request(Method::GET, path)).await?;
        Ok(watch_events(response.bytes_stream().map_err(Error::from)).boxed())
    }
}

/// The builder every client starts from. No overall timeout: watches and `logs -f` stay open for
/// as long as the server keeps them.
fn builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .user_agent(concat!("minik/", env!("CARGO_PKG_VERSION")))
}

/// Trust exactly the kubeconfig's CA (client-go does not add the system roots when a CA is
/// given) and present its client certificate.
fn tls(mut http: reqwest::ClientBuilder, config: &ClientConfig) -> Result<reqwest::ClientBuilder> {
    if let Some(ca) = &config.ca_pem {
        let roots = reqwest::Certificate::from_pem_bundle(ca)
            .map_err(|e| Error::Kubeconfig(format!("certificate-authority: {e}")))?;
        http = http.tls_certs_only(roots);
    }
    if config.insecure_skip_tls_verify {
        http = http.tls_danger_accept_invalid_certs(true);
    }
    match (&config.client_cert_pem, &config.client_key_pem) {
        (Some(cert), Some(key)) => {
            let mut pem = cert.clone();
            pem.push(b'\n');
            pem.extend_from_slice(key);
            let identity = reqwest::Identity::from_pem(&pem)
                .map_err(|e| Error::Kubeconfig(format!("client certificate: {e}")))?;
            http = http.identity(identity);
        }
        (None, None) => {}
        _ => {
            return Err(Error::Kubeconfig(
                "client-certificate and client-key must be given together".into(),
            ))
        }
    }
    Ok(http)
}

/// `base_url` without a trailing slash, and parsed; it must be http(s) with a host.
fn parse_url(base_url: &str) -> Result<(&str, reqwest::Url)> {
    let base_url = base_url.trim_end_matches('/');
    let parsed =
        reqwest::Url::parse(base_url).map_err(|_| Error::InvalidUrl(base_url.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(Error::InvalidUrl(base_url.to_string()));
    }
    Ok((base_url, parsed))
}

/// Reads an error body: a `Status` as the server sent it, or one synthesized from the HTTP code.
pub(crate) fn status_from_body(code: StatusCode, body: &[u8]) -> Status {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        if value.get("kind").and_then(Value::as_str) == Some("Status") {
            if let Ok(mut status) = serde_json::from_value::<Status>(value) {
                status.code.get_or_insert(i32::from(code.as_u16()));
                return status;
            }
        }
    }
    synthesize_status(code, &String::from_utf8_lossy(body))
}

/// client-go's `NewGenericServerResponse`: a reason and message from the HTTP code alone.
fn synthesize_status(code: StatusCode, body: &str) -> Status {
    let (reason, message) = match code.as_u16() {
        400 => (
            "BadRequest",
            "the server rejected our request for an unknown reason".to_string(),
        ),
        401 => (
            "Unauthorized",
            "the server has asked for the client to provide credentials".to_string(),
        ),
        403 => (
            "Forbidden",
            "the server does not allow access to the requested resource".to_string(),
        ),
        404 => (
            "NotFound",
            "the server could not find the requested resource".to_string(),
        ),
        405 => (
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".to_string(),
        ),
        409 => ("Conflict", "the server reported a conflict".to_string()),
        410 => ("Expired", "the resource requested has expired".to_string()),
        413 => (
            "RequestEntityTooLarge",
            "the server rejected the request because it is too large".to_string(),
        ),
        415 => (
            "UnsupportedMediaType",
            "the server does not support the media type".to_string(),
        ),
        422 => (
            "Invalid",
            "the server rejected our request due to an error in our request".to_string(),
        ),
        429 => (
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later"
                .to_string(),
        ),
        503 => (
            "ServiceUnavailable",
            "the server is currently unable to handle the request".to_string(),
        ),
        504 => (
            "Timeout",
            "the server was unable to return a response in the time allotted".to_string(),
        ),
        _ => {
            let detail = body.trim();
            let message = if detail.is_empty() {
                "an error on the server has prevented the request from succeeding".to_string()
            } else {
                format!(
                    "an error on the server ({detail:?}) has prevented the request from succeeding"
                )
            };
            ("InternalError", message)
        }
    };
    minik_api::status::failure(code.as_u16(), reason, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_body_is_returned_as_the_server_sent_it() {
        let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404}"#;
        let status = status_from_body(StatusCode::NOT_FOUND, body);
        assert_eq!(status.reason.as_deref(), Some("NotFound"));
        assert_eq!(status.message.as_deref(), Some("pods \"nope\" not found"));
        assert_eq!(status.code, Some(404));
    }

    #[test]
    fn plain_text_error_body_becomes_a_synthesized_status() {
        let status = status_from_body(StatusCode::INTERNAL_SERVER_ERROR, b"boom");
        assert_eq!(status.reason.as_deref(), Some("InternalError"));
        assert_eq!(status.code, Some(500));
        assert_eq!(
            status.message.as_deref(),
            Some("an error on the server (\"boom\") has prevented the request from succeeding")
        );
        let status = status_from_body(StatusCode::NOT_FOUND, b"<html>");
        assert_eq!(status.reason.as_deref(), Some("NotFound"));
    }

    #[test]
    fn only_http_urls_are_accepted() {
        assert!(Client::new("http://127.0.0.1:6443/").is_ok());
        assert_eq!(
            Client::new("http://127.0.0.1:6443/").unwrap().base_url(),
            "http://127.0.0.1:6443"
        );
        assert!(Client::new("127.0.0.1:6443").is_err());
        assert!(Client::new("https://127.0.0.1:6443").is_err());
    }

    /// A kubeconfig's server may be https; a client certificate needs its key.
    #[test]
    fn from_config_takes_https_and_checks_the_client_pair() {
        let config = ClientConfig {
            server: "https://127.0.0.1:6443/".into(),
            insecure_skip_tls_verify: true,
            token: Some("secret".into()),
            ..ClientConfig::default()
        };
        let client = Client::from_config(&config).unwrap();
        assert_eq!(client.base_url(), "https://127.0.0.1:6443");
        assert!(!format!("{client:?}").contains("secret"));
        let half = ClientConfig {
            client_cert_pem: Some(b"x".to_vec()),
            ..config
        };
        assert!(matches!(
            Client::from_config(&half),
            Err(Error::Kubeconfig(_))
        ));
        let ftp = ClientConfig {
            server: "ftp://127.0.0.1".into(),
            ..ClientConfig::default()
        };
        assert!(Client::from_config(&ftp).is_err());
    }
}
