//! `minik get pods -w` outlives an apiserver restart (issue 19): killed with -9 and started again,
//! the apiserver is found again and the watch resumes from the last resourceVersion printed, so a
//! pod created afterwards still shows up.

use std::time::Duration;

use minik_tests::fixtures::pod;
use minik_tests::Cluster;
use nix::sys::signal::Signal;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::ChildStdout;

/// The next line `get -w` prints, within `bound`.
async fn next_line(lines: &mut Lines<BufReader<ChildStdout>>, bound: Duration) -> String {
    tokio::time::timeout(bound, lines.next_line())
        .await
        .expect("a line in time")
        .expect("read")
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_watch_resumes_after_the_apiserver_restarts() {
    let _machine = crate::support::shared().await;
    let mut cluster = Cluster::builder()
        .nodes(0)
        .processes(true)
        .without_services()
        .start()
        .await
        .expect("start cluster");
    let mut child = tokio::process::Command::new(cluster.minik_binary())
        .args(["get", "pods", "-w"])
        .env("KUBECONFIG", cluster.kubeconfig())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start minik get -w");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    cluster
        .pods()
        .create(&pod("first").build())
        .await
        .expect("create");
    let bound = Duration::from_secs(10);
    let mut line = next_line(&mut lines, bound).await;
    if line.starts_with("NAME") {
        line = next_line(&mut lines, bound).await;
    }
    assert!(line.starts_with("first "), "{line}");
    cluster
        .kill("apiserver", Signal::SIGKILL)
        .await
        .expect("kill");
    cluster.restart("apiserver").await.expect("restart");
    cluster
        .pods()
        .create(&pod("second").build())
        .await
        .expect("create");
    // Lines about `first` (the scheduler's updates) may come before; `second` must come.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let line = next_line(&mut lines, left).await;
        if line.starts_with("second ") {
            break;
        }
        if line.is_empty() {
            let output = child.wait_with_output().await.expect("get -w output");
            panic!("get -w ended: {}", String::from_utf8_lossy(&output.stderr));
        }
        assert!(line.starts_with("first "), "{line}");
    }
    child.kill().await.expect("stop get -w");
    cluster.stop().await.expect("stop");
}
