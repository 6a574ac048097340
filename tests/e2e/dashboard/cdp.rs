//! A small Chrome DevTools Protocol client: headless Chromium, one page, `eval`, screenshots.
//!
//! Kubernetes counterpart: none; the Kubernetes Dashboard tests its UI with Cypress. This drives
//! Debian's `/usr/bin/chromium` (`CHROMIUM` overrides) over the DevTools websocket
//! (https://chromedevtools.github.io/devtools-protocol/): `--remote-debugging-port=0` prints the
//! browser's endpoint on stderr, `PUT /json/new` opens a page, and each command is a JSON message
//! with an `id` whose answer carries the same `id`. Chromium runs in its own process group, killed
//! whole on drop, with a temporary profile.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The Chromium binary, or `None` (the tests then skip, saying so).
pub fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    path.is_file().then_some(path)
}

/// A headless Chromium with one page open.
pub struct Browser {
    child: tokio::process::Child,
    page: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium and opens a blank page.
    pub async fn start(binary: &Path) -> Browser {
        let profile = tempfile::Builder::new()
            .prefix("minik-chromium-")
            .tempdir()
            .expect("profile");
        let mut child = tokio::process::Command::new(binary)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .args([
                "--no-default-browser-check",
                "--disable-extensions",
                "--mute-audio",
            ])
            .args([
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("start chromium");
        let stderr = child.stderr.take().expect("stderr");
        let endpoint = tokio::time::timeout(
            Duration::from_secs(30),
            super::browser_process::endpoint(stderr, "DevTools listening on ", "chromium"),
        )
        .await
        .expect("chromium printed no DevTools endpoint within 30 s");
        let port = endpoint
            .split(':')
            .nth(2)
            .and_then(|p| p.split('/').next())
            .expect("port");
        let http = reqwest::Client::builder().no_proxy().build().expect("http");
        let target: Value = http
            .put(format!("http://127.0.0.1:{port}/json/new?about:blank"))
            .send()
            .await
            .expect("open a page")
            .json()
            .await
            .expect("page json");
        let url = target["webSocketDebuggerUrl"]
            .as_str()
            .expect("page websocket")
            .to_string();
        let (page, _) = tokio_tungstenite::connect_async(url)
            .await
            .expect("page websocket");
        let mut browser = Browser {
            child,
            page,
            next_id: 0,
            _profile: profile,
        };
        browser.call("Page.enable", json!({})).await;
        browser.call("Runtime.enable", json!({})).await;
        // A page in front, focused, as a user's: timers and frames are not throttled.
        browser.call("Page.bringToFront", json!({})).await;
        browser
            .call(
                "Emulation.setFocusEmulationEnabled",
                json!({"enabled": true}),
            )
            .await;
        browser
    }

    /// Sends a command and returns its `result` (panics on a protocol error).
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"id": id, "method": method, "params": params}).to_string();
        self.page
            .send(Message::text(message))
            .await
            .expect("send to chromium");
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(60), self.page.next())
                .await
                .unwrap_or_else(|_| panic!("{method}: no answer within 60 s"))
                .expect("chromium closed the page")
                .expect("websocket");
            let Message::Text(text) = frame else { continue };
            let answer: Value = serde_json::from_str(&text).expect("json");
            if answer["id"] == id {
                assert!(
                    answer.get("error").is_none(),
                    "{method}: {}",
                    answer["error"]
                );
                return answer["result"].clone();
            }
        }
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its value.
    pub async fn eval(&mut self, expression: &str) -> Value {
        let params = json!({"expression": expression, "awaitPromise": true, "returnByValue": true});
        let result = self.call("Runtime.evaluate", params).await;
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("page threw on {expression:?}: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// Opens `url` and waits until its document has loaded.
    pub async fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url})).await;
        self.wait_for(
            "document.readyState === 'complete'",
            Duration::from_secs(20),
        )
        .await;
    }

    /// Polls `condition` (a JS expression) until it is true, or panics after `timeout`.
    pub async fn wait_for(&mut self, condition: &str, timeout: Duration) {
        let expression = format!(
            "new Promise((ok) => {{ const end = Date.now() + {}; (function poll() {{
                let v = false; try {{ v = !!({condition}); }} catch (e) {{}}
                if (v || Date.now() > end) ok(v); else setTimeout(poll, 20); }})(); }})",
            timeout.as_millis()
        );
        assert_eq!(
            self.eval(&expression).await,
            json!(true),
            "timed out waiting for {condition}"
        );
    }

    /// Sets the viewport's width (and height) as a window of that size would.
    pub async fn resize(&mut self, width: u32, height: u32) {
        let params =
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false});
        self.call("Emulation.setDeviceMetricsOverride", params)
            .await;
    }

    /// Saves a PNG of the page as it is now.
    pub async fn screenshot(&mut self, path: &Path) {
        let shot = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await;
        let data = shot["data"].as_str().expect("png data");
        super::browser_process::save_png(data, path);
    }

    /// Closes the browser and waits for its whole process group to go.
    pub async fn close(mut self) {
        let _ = self.page.close(None).await;
        super::browser_process::kill_group(&mut self.child).await;
    }
}

/// Where a test's artifacts go: `$MINIK_TEST_ARTIFACTS/NAME`, else `target/test-artifacts/NAME`.
pub fn artifacts(name: &str) -> PathBuf {
    let base = std::env::var_os("MINIK_TEST_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let exe = std::env::current_exe().expect("test executable");
            // target/debug/deps/e2e-… → target/test-artifacts
            exe.ancestors()
                .nth(3)
                .expect("target dir")
                .join("test-artifacts")
        });
    let dir = base.join(name);
    std::fs::create_dir_all(&dir).expect("artifacts dir");
    dir
}
