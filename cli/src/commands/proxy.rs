//! `minik proxy`: plain HTTP on loopback that forwards to the apiserver with your own credentials.
//!
//! Kubernetes counterpart: `kubectl proxy` (`staging/src/k8s.io/kubectl/pkg/cmd/proxy/proxy.go`
//! and `pkg/proxy/proxy_server.go`). It listens on `127.0.0.1:8001`, and sends every request on
//! to the apiserver found as `minik get` finds it (`--kubeconfig`, `$KUBECONFIG`, the running
//! cluster's `DATA/kubeconfig`), over TLS with that kubeconfig's certificate: `curl` needs no
//! flags. Upstream's filter comes first (docs/security.md#h9): the `Host` must match
//! `--accept-hosts` (by default only `localhost`, `127.0.0.1`, `[::1]`, so a DNS-rebinding page
//! cannot reach it), the path must not match `--reject-paths` (`exec`, `attach`), the method must
//! not match `--reject-methods`; anything else is `403 Forbidden`.
//!
//! What minik simplifies: no `--www` static files, no `--api-prefix`, no Unix socket; the
//! credential a caller sends (`Authorization`) is dropped, never forwarded.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;
use minik_client::Client;
use regex::Regex;

use super::resources::GlobalFlags;

/// Flags of `minik proxy` (kubectl proxy's names and defaults).
#[derive(clap::Args, Debug, Clone)]
pub struct ProxyArgs {
    /// The port to serve on (0 picks a free one).
    #[arg(long, short = 'p', default_value_t = 8001)]
    pub port: u16,
    /// Regular expressions for the hosts (the `Host` header) to accept, comma-separated.
    #[arg(long, default_value = r"^localhost$,^127\.0\.0\.1$,^\[::1\]$")]
    pub accept_hosts: String,
    /// Regular expressions for the paths to accept, comma-separated.
    #[arg(long, default_value = "^.*")]
    pub accept_paths: String,
    /// Regular expressions for the paths to refuse, comma-separated.
    #[arg(long, default_value = "^/api/.*/pods/.*/exec,^/api/.*/pods/.*/attach")]
    pub reject_paths: String,
    /// Regular expressions for the HTTP methods to refuse, comma-separated.
    #[arg(long, default_value = "^$")]
    pub reject_methods: String,
}

/// Upstream's `FilterServer`: which requests reach the apiserver.
#[derive(Debug)]
pub struct Filter {
    accept_hosts: Vec<Regex>,
    accept_paths: Vec<Regex>,
    reject_paths: Vec<Regex>,
    reject_methods: Vec<Regex>,
}

fn patterns(list: &str) -> anyhow::Result<Vec<Regex>> {
    list.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| Regex::new(p).with_context(|| format!("bad regular expression {p:?}")))
        .collect()
}

impl Filter {
    /// The filter of `args`' four lists.
    pub fn new(args: &ProxyArgs) -> anyhow::Result<Filter> {
        Ok(Filter {
            accept_hosts: patterns(&args.accept_hosts)?,
            accept_paths: patterns(&args.accept_paths)?,
            reject_paths: patterns(&args.reject_paths)?,
            reject_methods: patterns(&args.reject_methods)?,
        })
    }

    /// True if a request for `path` with `method`, sent to `host` (the `Host` header, with or
    /// without a port), may pass.
    pub fn accepts(&self, method: &str, path: &str, host: &str) -> bool {
        let host = host_name(host);
        let any = |list: &[Regex], text: &str| list.iter().any(|r| r.is_match(text));
        any(&self.accept_hosts, host)
            && any(&self.accept_paths, path)
            && !any(&self.reject_paths, path)
            && !any(&self.reject_methods, method)
    }
}

/// `127.0.0.1:8001` → `127.0.0.1`, `[::1]:8001` → `[::1]`, `localhost` → `localhost`.
fn host_name(host: &str) -> &str {
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) && !name.is_empty() => name,
        _ => host,
    }
}

struct Proxy {
    filter: Filter,
    client: Client,
}

/// Runs `minik proxy` until Ctrl-C.
pub async fn proxy(args: ProxyArgs, flags: &GlobalFlags) -> anyhow::Result<()> {
    let state = Arc::new(Proxy {
        filter: Filter::new(&args)?,
        client: flags.client()?,
    });
    let address = SocketAddr::from(([127, 0, 0, 1], args.port));
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("listen on {address}"))?;
    // kubectl's own line, which scripts wait for.
    println!("Starting to serve on {}", listener.local_addr()?);
    let app = axum::Router::new().fallback(forward).with_state(state);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// Headers that belong to one hop (RFC 9110 §7.6.1), and the caller's own credential.
const NOT_FORWARDED: [header::HeaderName; 6] = [
    header::HOST,
    header::AUTHORIZATION,
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::CONTENT_LENGTH,
];

fn forwarded(headers: &HeaderMap) -> HeaderMap {
    let mut kept = headers.clone();
    for name in &NOT_FORWARDED {
        kept.remove(name);
    }
    kept
}

/// Filters, then sends the request on and streams the answer back (watches included).
async fn forward(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    if !proxy.filter.accepts(method.as_str(), &path, &host) {
        tracing::info!(%method, %path, %host, "filter rejecting");
        return (StatusCode::FORBIDDEN, "Forbidden\n").into_response();
    }
    let target = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or(path);
    let headers = forwarded(request.headers());
    let body = reqwest::Body::wrap_stream(request.into_body().into_data_stream());
    let sent = proxy
        .client
        .raw_request(method, &target)
        .headers(headers)
        .body(body)
        .send()
        .await;
    let answer = match sent {
        Ok(answer) => answer,
        Err(error) => {
            let message = format!("error trying to reach the apiserver: {error}\n");
            return (StatusCode::BAD_GATEWAY, message).into_response();
        }
    };
    let mut response = Response::builder().status(answer.status().as_u16());
    if let Some(headers) = response.headers_mut() {
        *headers = forwarded(answer.headers());
    }
    let stream = answer.bytes_stream().map_err(std::io::Error::other);
    response
        .body(Body::from_stream(stream))
        .unwrap_or_else(|e| (StatusCode::BAD_GATEWAY, e.to_string()).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ProxyArgs,
    }

    fn defaults() -> Filter {
        Filter::new(&Cli::parse_from(["proxy"]).args).unwrap()
    }

    /// Upstream's defaults: loopback names only, no exec or attach.
    #[test]
    fn the_default_filter_accepts_loopback_hosts_and_refuses_exec() {
        let filter = defaults();
        for host in [
            "localhost",
            "localhost:8001",
            "127.0.0.1:8001",
            "[::1]:8001",
        ] {
            assert!(filter.accepts("GET", "/api/v1/pods", host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8001",
            "127.0.0.1.nip.io:8001",
            "",
        ] {
            assert!(!filter.accepts("GET", "/api/v1/pods", host), "{host}");
        }
        let exec = "/api/v1/namespaces/default/pods/web/exec";
        assert!(!filter.accepts("POST", exec, "localhost:8001"));
        assert!(!filter.accepts(
            "GET",
            "/api/v1/namespaces/default/pods/web/attach",
            "localhost"
        ));
        assert!(filter.accepts("DELETE", "/api/v1/namespaces/default/pods/web", "localhost"));
    }

    /// Rejected methods are refused whatever the path.
    #[test]
    fn reject_methods_refuses_a_method() {
        let mut args = Cli::parse_from(["proxy"]).args;
        args.reject_methods = "^POST$".into();
        let filter = Filter::new(&args).unwrap();
        assert!(!filter.accepts("POST", "/api/v1/namespaces/default/pods", "localhost"));
        assert!(filter.accepts("GET", "/api/v1/namespaces/default/pods", "localhost"));
        args.accept_hosts = "([".into();
        assert!(Filter::new(&args).is_err());
    }
}
