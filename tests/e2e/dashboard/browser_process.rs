//! What the Chromium (`cdp.rs`) and Firefox (`bidi.rs`) drivers share: finding the browser's
//! protocol endpoint on its stderr, saving a screenshot, and killing its whole process group.

use std::path::Path;

use tokio::io::{AsyncBufReadExt, BufReader};

/// Reads `stderr` up to the line starting with `prefix` (`DevTools listening on `, `WebDriver
/// BiDi listening on `) and answers the URL after it; the rest is drained in the background.
pub async fn endpoint(stderr: tokio::process::ChildStderr, prefix: &str, browser: &str) -> String {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(url) = line.strip_prefix(prefix) {
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return url.trim().to_string();
        }
    }
    panic!("{browser} exited before printing its endpoint ({prefix:?})");
}

/// Writes a screenshot the browser answered as base64 PNG `data` to `path`.
pub fn save_png(data: &str, path: &Path) {
    let png =
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data).expect("base64");
    std::fs::write(path, png).expect("write screenshot");
}

/// Kills the browser's process group (it was started as a group leader) and reaps it.
pub async fn kill_group(child: &mut tokio::process::Child) {
    if let Some(pid) = child.id() {
        let group = nix::unistd::Pid::from_raw(-(pid as i32));
        let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
    }
    let _ = child.wait().await;
}
