//! `minik image web`: the built-in web server that stands in for `nginx` in the seeds' pods.
//!
//! Kubernetes counterpart: none (an application image). It answers every request with `200` and
//! its pod name plus a newline, so a `curl` to a pod or a Service shows which pod answered.
//!
//! Environment (set by the kubelet or in the pod spec's `env`):
//! - `POD_IP` — address to bind (default `127.0.0.1`); must be in 127.0.0.0/8.
//! - `PORT`, else `MINIK_CONTAINER_PORT` (the kubelet sets it to the first `containerPort`), else 8080.
//! - `POD_NAME` — the answer body, unless `MINIK_WEB_ROOT` (a directory, relative to the working
//!   directory: the image table sets `usr/share/nginx/html` for `nginx`) holds the requested file
//!   (`index.html` for `/`), which is served instead.
//! - `MINIK_WEB_DELAY_MS` — delay before each answer.
//! - `MINIK_WEB_UNHEALTHY_FILE` — while this file exists, `/healthz` answers 500 (tests flip
//!   readiness and liveness with it); otherwise `/healthz` answers 200 `ok`.
//! - `MINIK_ON_SIGTERM` — `exit` | `drain:MILLIS` | `ignore` (see [`super::lifecycle`]).
//!
//! `GET /stream?ms=TOTAL&every=TICK` holds a long-lived answer open (a stand-in for a WebSocket
//! or a server-sent event stream, seed 002): a line `POD_NAME N` every TICK ms (default 200) for
//! TOTAL ms (default 60 000), then `done`. A stream the process's exit cuts never says `done`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;

use super::lifecycle::{event, sigterm_stream, until_exit, OnSigterm};

/// The web server's settings, read from the environment.
#[derive(Clone, Debug, PartialEq)]
pub struct WebConfig {
    pub addr: SocketAddr,
    pub pod_name: String,
    pub delay: Duration,
    pub unhealthy_file: Option<PathBuf>,
    pub on_sigterm: OnSigterm,
    /// The document root (`nginx`: `usr/share/nginx/html`, relative to the container's tree).
    pub root: Option<PathBuf>,
}

impl WebConfig {
    /// Builds the config from an environment lookup (pure, for tests).
    pub fn from_lookup(env: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let ip: IpAddr = match env("POD_IP") {
            Some(ip) => ip
                .parse()
                .map_err(|_| format!("POD_IP={ip:?} is not an IP address"))?,
            None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        };
        if !ip.is_loopback() {
            return Err(format!(
                "POD_IP={ip} is not a loopback address; minik binds only 127.0.0.0/8"
            ));
        }
        let port = match env("PORT").or_else(|| env("MINIK_CONTAINER_PORT")) {
            Some(port) => port
                .parse::<u16>()
                .map_err(|_| format!("port {port:?} is not a number"))?,
            None => 8080,
        };
        let delay_ms = match env("MINIK_WEB_DELAY_MS") {
            Some(ms) => ms
                .parse::<u64>()
                .map_err(|_| format!("MINIK_WEB_DELAY_MS={ms:?} is not a number"))?,
            None => 0,
        };
        Ok(WebConfig {
            addr: SocketAddr::new(ip, port),
            pod_name: env("POD_NAME").unwrap_or_else(|| "unknown".into()),
            delay: Duration::from_millis(delay_ms),
            unhealthy_file: env("MINIK_WEB_UNHEALTHY_FILE").map(PathBuf::from),
            on_sigterm: OnSigterm::parse(env("MINIK_ON_SIGTERM").as_deref())?,
            root: env("MINIK_WEB_ROOT").map(PathBuf::from),
        })
    }
}

/// Entry point of `minik image web`.
pub fn run() -> i32 {
    let config = match WebConfig::from_lookup(|key| std::env::var(key).ok()) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("minik image web: {message}");
            return 2;
        }
    };
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(serve(config)),
        Err(err) => {
            eprintln!("minik image web: {err}");
            1
        }
    }
}

/// Serves until the SIGTERM policy says to exit; returns the exit code.
async fn serve(config: WebConfig) -> i32 {
    let mut sigterm = match sigterm_stream() {
        Ok(stream) => stream,
        Err(err) => {
            eprintln!("minik image web: cannot handle SIGTERM: {err}");
            return 1;
        }
    };
    let listener = match tokio::net::TcpListener::bind(config.addr).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("minik image web: cannot listen on {}: {err}", config.addr);
            return 1;
        }
    };
    event(
        "started",
        &format!("addr={} pod={}", config.addr, config.pod_name),
    );
    let on_sigterm = config.on_sigterm;
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/stream", get(stream))
        .fallback(hello)
        .with_state(Arc::new(config));
    // The server runs as a task; returning from here ends the process (in-flight requests included).
    tokio::spawn(async move { axum::serve(listener, app).await });
    until_exit(&mut sigterm, on_sigterm).await;
    event("exit", "code=0");
    0
}

async fn hello(State(config): State<Arc<WebConfig>>, uri: axum::http::Uri) -> Vec<u8> {
    if !config.delay.is_zero() {
        tokio::time::sleep(config.delay).await;
    }
    if let Some(file) = config
        .root
        .as_deref()
        .and_then(|root| static_file(root, uri.path()))
    {
        if let Ok(body) = tokio::fs::read(&file).await {
            return body;
        }
    }
    format!("{}\n", config.pod_name).into_bytes()
}

/// The file a request path names under `root` (`/` → `index.html`); `None` if there is none or
/// the path tries to leave the root.
fn static_file(root: &std::path::Path, path: &str) -> Option<PathBuf> {
    let relative = path.trim_start_matches('/');
    if relative.split('/').any(|part| part == "..") {
        return None;
    }
    let mut file = root.join(relative);
    if file.is_dir() {
        file = file.join("index.html");
    }
    file.is_file().then_some(file)
}

/// The `ms` and `every` parameters of `/stream`.
#[derive(serde::Deserialize)]
struct StreamParams {
    ms: Option<u64>,
    every: Option<u64>,
}

/// A chunked answer held open for `ms`: one line per tick, then `done`.
async fn stream(
    State(config): State<Arc<WebConfig>>,
    axum::extract::Query(params): axum::extract::Query<StreamParams>,
) -> axum::body::Body {
    let total = Duration::from_millis(params.ms.unwrap_or(60_000));
    let every = Duration::from_millis(params.every.unwrap_or(200).max(10));
    let end = tokio::time::Instant::now() + total;
    let pod = config.pod_name.clone();
    let lines = futures::stream::unfold(Some(0u64), move |tick| {
        let pod = pod.clone();
        async move {
            let n = tick?;
            if n > 0 {
                tokio::time::sleep_until(end.min(tokio::time::Instant::now() + every)).await;
            }
            let (line, next) = if tokio::time::Instant::now() >= end {
                ("done\n".to_string(), None)
            } else {
                (format!("{pod} {n}\n"), Some(n + 1))
            };
            Some((Ok::<_, std::convert::Infallible>(line), next))
        }
    });
    axum::body::Body::from_stream(lines)
}

async fn healthz(State(config): State<Arc<WebConfig>>) -> (StatusCode, &'static str) {
    match &config.unhealthy_file {
        Some(path) if path.exists() => (StatusCode::INTERNAL_SERVER_ERROR, "unhealthy\n"),
        _ => (StatusCode::OK, "ok\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<WebConfig, String> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        WebConfig::from_lookup(|key| env.get(key).cloned())
    }

    #[test]
    fn port_comes_from_port_then_container_port_then_8080() {
        assert_eq!(config(&[]).unwrap().addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(
            config(&[("MINIK_CONTAINER_PORT", "80")])
                .unwrap()
                .addr
                .port(),
            80
        );
        assert_eq!(
            config(&[("MINIK_CONTAINER_PORT", "80"), ("PORT", "9000")])
                .unwrap()
                .addr
                .port(),
            9000
        );
        let pod = config(&[("POD_IP", "127.244.1.7"), ("POD_NAME", "web-1")]).unwrap();
        assert_eq!(pod.addr, "127.244.1.7:8080".parse().unwrap());
        assert_eq!(pod.pod_name, "web-1");
    }

    #[test]
    fn non_loopback_and_garbage_settings_are_refused() {
        assert!(config(&[("POD_IP", "10.0.0.1")]).is_err());
        assert!(config(&[("POD_IP", "0.0.0.0")]).is_err());
        assert!(config(&[("PORT", "http")]).is_err());
        assert!(config(&[("MINIK_WEB_DELAY_MS", "-1")]).is_err());
        assert!(config(&[("MINIK_ON_SIGTERM", "later")]).is_err());
    }
}
