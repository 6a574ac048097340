//! A small WebDriver BiDi client: headless Firefox, one tab, `eval`, screenshots.
//!
//! Kubernetes counterpart: none (see `cdp.rs`). Firefox dropped the Chrome DevTools Protocol for
//! the W3C's WebDriver BiDi (https://w3c.github.io/webdriver-bidi/), which it serves without
//! geckodriver: `--remote-debugging-port=0` prints `WebDriver BiDi listening on ws://…` on stderr,
//! `session.new` opens a session on `ws://…/session`, and each command is a JSON message with an
//! `id` whose answer carries the same `id` (`type: "success"` or `"error"`). Values come back as
//! BiDi "remote values"; [`Firefox::eval`] has the page `JSON.stringify` its answer instead, so
//! callers get plain JSON as from the CDP client.
//!
//! The profile is a temporary directory whose `user.js` turns name resolution off and points
//! Mozilla's update, telemetry and settings services at nothing: the browser reaches
//! 127.0.0.1 and no other address (the project binds and connects to loopback only).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The Firefox binary (`FIREFOX`, else Debian's `/usr/bin/firefox-esr`), or `None`.
pub fn firefox() -> Option<PathBuf> {
    let path = std::env::var_os("FIREFOX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/firefox-esr"));
    path.is_file().then_some(path)
}

/// Preferences for a browser that talks to loopback only: no DNS (so no host name outside this
/// machine resolves), no update, telemetry, experiments or safe-browsing downloads.
const USER_JS: &str = r#"
user_pref("network.dns.disabled", true);
user_pref("network.trr.mode", 5);
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
user_pref("services.settings.server", "http://127.0.0.1:9/v1");
user_pref("app.update.auto", false);
user_pref("app.normandy.enabled", false);
user_pref("messaging-system.rsexperimentloader.enabled", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.enabled", false);
user_pref("browser.safebrowsing.malware.enabled", false);
user_pref("browser.safebrowsing.phishing.enabled", false);
user_pref("browser.safebrowsing.downloads.enabled", false);
user_pref("extensions.update.enabled", false);
"#;

/// A headless Firefox with one tab open.
pub struct Firefox {
    child: tokio::process::Child,
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    /// The tab's browsing context id.
    context: String,
    _profile: tempfile::TempDir,
}

impl Firefox {
    /// Starts Firefox, opens a BiDi session and finds its tab.
    pub async fn start(binary: &Path) -> Firefox {
        let profile = tempfile::Builder::new()
            .prefix("minik-firefox-")
            .tempdir()
            .expect("profile");
        std::fs::write(profile.path().join("user.js"), USER_JS).expect("user.js");
        let mut child = tokio::process::Command::new(binary)
            .args(["--headless", "--no-remote", "--remote-debugging-port=0"])
            .arg("--profile")
            .arg(profile.path())
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("start firefox");
        let stderr = child.stderr.take().expect("stderr");
        let endpoint = tokio::time::timeout(
            Duration::from_secs(60),
            super::browser_process::endpoint(stderr, "WebDriver BiDi listening on ", "firefox"),
        )
        .await
        .expect("firefox printed no WebDriver BiDi endpoint within 60 s");
        let (socket, _) = tokio_tungstenite::connect_async(format!("{endpoint}/session"))
            .await
            .expect("BiDi websocket");
        let mut browser = Firefox {
            child,
            socket,
            next_id: 0,
            context: String::new(),
            _profile: profile,
        };
        browser
            .call("session.new", json!({"capabilities": {}}))
            .await;
        let tree = browser.call("browsingContext.getTree", json!({})).await;
        browser.context = tree["contexts"][0]["context"]
            .as_str()
            .expect("a tab")
            .to_string();
        browser
    }

    /// Sends a command and returns its `result` (panics on an error answer).
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"id": id, "method": method, "params": params}).to_string();
        self.socket
            .send(Message::text(message))
            .await
            .expect("send to firefox");
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(60), self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("{method}: no answer within 60 s"))
                .expect("firefox closed the session")
                .expect("websocket");
            let Message::Text(text) = frame else { continue };
            let answer: Value = serde_json::from_str(&text).expect("json");
            if answer["id"] == id {
                assert_ne!(answer["type"], "error", "{method}: {answer}");
                return answer["result"].clone();
            }
        }
    }

    /// Evaluates `expression` (an expression, not statements: wrap those in an arrow function) in
    /// the tab, awaiting a promise, and returns its value as JSON.
    pub async fn eval(&mut self, expression: &str) -> Value {
        let wrapped = format!("(async () => JSON.stringify(await ({expression})))()");
        let params = json!({
            "expression": wrapped,
            "target": {"context": self.context},
            "awaitPromise": true,
            "resultOwnership": "none",
        });
        let result = self.call("script.evaluate", params).await;
        if result["type"] == "exception" {
            panic!(
                "page threw on {expression:?}: {}",
                result["exceptionDetails"]
            );
        }
        match result["result"]["value"].as_str() {
            Some(text) => serde_json::from_str(text).expect("JSON from the page"),
            None => Value::Null, // JSON.stringify(undefined)
        }
    }

    /// Opens `url` and waits until its document has loaded.
    pub async fn navigate(&mut self, url: &str) {
        let params = json!({"context": self.context, "url": url, "wait": "complete"});
        self.call("browsingContext.navigate", params).await;
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

    /// Sets the viewport's size, as a window of that size would have.
    pub async fn resize(&mut self, width: u32, height: u32) {
        let params =
            json!({"context": self.context, "viewport": {"width": width, "height": height}});
        self.call("browsingContext.setViewport", params).await;
    }

    /// Saves a PNG of the tab as it is now.
    pub async fn screenshot(&mut self, path: &Path) {
        let shot = self
            .call(
                "browsingContext.captureScreenshot",
                json!({"context": self.context}),
            )
            .await;
        let data = shot["data"].as_str().expect("png data");
        super::browser_process::save_png(data, path);
    }

    /// Ends the session and waits for Firefox's whole process group to go.
    pub async fn close(mut self) {
        let _ = self.socket.close(None).await;
        super::browser_process::kill_group(&mut self.child).await;
    }
}
