//! Test harness: a real apiserver on `127.0.0.1:0` over sled in a temp dir, and a tiny reqwest
//! client speaking to it (deliberately not minik-client, so the wire format itself is tested).

#![allow(dead_code)]

use std::time::Duration;

use minik_apiserver::ServeOptions;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Every wait in these tests is bounded by this.
pub const TIMEOUT: Duration = Duration::from_secs(20);

pub struct TestServer {
    pub base: String,
    pub http: reqwest::Client,
    pub dir: TempDir,
    shutdown: CancellationToken,
    handle: JoinHandle<minik_apiserver::Result<()>>,
}

pub struct Options {
    pub event_window: usize,
    pub bookmark_interval: Duration,
    pub header_read_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            event_window: 10_000,
            bookmark_interval: Duration::from_secs(60),
            header_read_timeout: Duration::from_secs(30),
        }
    }
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_in(TempDir::new().expect("tempdir"), Options::default()).await
    }

    pub async fn start_with(options: Options) -> Self {
        Self::start_in(TempDir::new().expect("tempdir"), options).await
    }

    /// Starts a server on an existing data directory (to test restarts).
    pub async fn start_in(dir: TempDir, options: Options) -> Self {
        let backend =
            minik_apiserver::StorageBackend::sled(&dir.path().join("sled"), options.event_window)
                .expect("open sled");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let shutdown = CancellationToken::new();
        let handle = tokio::spawn(minik_apiserver::serve_with(
            listener,
            backend,
            ServeOptions {
                bookmark_interval: options.bookmark_interval,
                header_read_timeout: options.header_read_timeout,
                ..ServeOptions::default()
            },
            shutdown.clone(),
        ));
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let server = TestServer {
            base,
            http,
            dir,
            shutdown,
            handle,
        };
        // Ready when /readyz answers (the namespaces are bootstrapped before accepting).
        tokio::time::timeout(TIMEOUT, async {
            while server.http.get(server.url("/readyz")).send().await.is_err() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("server ready");
        server
    }

    /// Stops the server, waits for it to finish, and hands back the data directory.
    pub async fn stop(self) -> TempDir {
        self.shutdown.cancel();
        let result = tokio::time::timeout(TIMEOUT, self.handle)
            .await
            .expect("server stops in time");
        result.expect("server task").expect("server result");
        self.dir
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let response = tokio::time::timeout(TIMEOUT, request.send())
            .await
            .expect("request in time")
            .expect("request");
        let code = response.status().as_u16();
        let text = response.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (code, body)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.send(self.http.get(self.url(path))).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send(self.http.post(self.url(path)).json(body)).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send(self.http.put(self.url(path)).json(body)).await
    }

    pub async fn patch(&self, path: &str, content_type: &str, body: &Value) -> (u16, Value) {
        let request = self
            .http
            .patch(self.url(path))
            .header("content-type", content_type)
            .body(body.to_string());
        self.send(request).await
    }

    pub async fn delete(&self, path: &str, body: Option<&Value>) -> (u16, Value) {
        let mut request = self.http.delete(self.url(path));
        if let Some(body) = body {
            request = request.json(body);
        }
        self.send(request).await
    }

    /// Opens a watch and returns its line reader.
    pub async fn watch(&self, path_and_query: &str) -> WatchLines {
        let response =
            tokio::time::timeout(TIMEOUT, self.http.get(self.url(path_and_query)).send())
                .await
                .expect("watch in time")
                .expect("watch");
        assert_eq!(response.status().as_u16(), 200, "watch {path_and_query}");
        assert_eq!(response.headers()["content-type"], "application/json");
        WatchLines::new(response)
    }
}

/// Reads one JSON event per line from a watch response.
pub struct WatchLines {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl WatchLines {
    /// Reads the events of a watch response opened by hand (say, with other headers).
    pub fn new(response: reqwest::Response) -> Self {
        WatchLines {
            response,
            buffer: Vec::new(),
        }
    }

    /// The next event, or `None` when the stream ended. Panics after [`TIMEOUT`].
    pub async fn next(&mut self) -> Option<Value> {
        self.next_within(TIMEOUT)
            .await
            .expect("watch event in time")
    }

    /// The next event within `limit`: `Err(())` on timeout, `Ok(None)` at the end of the stream.
    pub async fn next_within(&mut self, limit: Duration) -> Result<Option<Value>, ()> {
        loop {
            if let Some(newline) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=newline).collect();
                return Ok(Some(
                    serde_json::from_slice(&line).expect("watch line is JSON"),
                ));
            }
            match tokio::time::timeout(limit, self.response.chunk()).await {
                Err(_) => return Err(()),
                Ok(Ok(Some(chunk))) => self.buffer.extend_from_slice(&chunk),
                Ok(Ok(None)) | Ok(Err(_)) => return Ok(None),
            }
        }
    }
}

pub fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "minik/web", "ports": [{"containerPort": 8080}]}]}
    })
}

pub fn service(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}
    })
}

pub const PODS: &str = "/api/v1/namespaces/default/pods";

pub fn rv(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .parse()
        .expect("numeric resourceVersion")
}

/// Runs unmodified kubectl against `api` (skipped with a notice when it is missing, failed
/// under CI): exit success, stdout, stderr.
pub async fn kubectl(
    api: &TestServer,
    home: &std::path::Path,
    args: &[&str],
) -> Option<(bool, String, String)> {
    let binary = std::env::var_os("MINIK_KUBECTL")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/usr/bin/kubectl".into());
    if !binary.exists() {
        assert!(std::env::var_os("CI").is_none(), "CI must provide kubectl");
        eprintln!("SKIPPED: kubectl not found at {}", binary.display());
        return None;
    }
    let output = tokio::process::Command::new(binary)
        .env("HOME", home)
        .args(["--server", &api.base, "--cache-dir"])
        .arg(home.join("cache"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("kubectl in time")
        .expect("run kubectl");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    Some((
        output.status.success(),
        text(&output.stdout),
        text(&output.stderr),
    ))
}

/// The field of every cause in a 422 Status, in order.
pub fn cause_fields(status: &serde_json::Value) -> Vec<&str> {
    status["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect()
}
