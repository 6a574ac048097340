//! `minik controller-manager` as a real process, killed with SIGKILL in the middle of a rollout
//! and started again: the new process waits out the old lease, then finishes the rollout with
//! exactly the right pods.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use minik_client::Patch;
use serde_json::json;
use tokio::process::{Child, Command};

use crate::cluster::wait_until;
use crate::workloads::{complete, deployment, image, live, revision, workloads};

/// `$MINIK_BIN`, else `target/debug/minik` next to the test executable (`cargo build --bins -p
/// minik-cli` first).
fn minik_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("MINIK_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().unwrap();
    let candidate = exe.parent().and_then(Path::parent).unwrap().join("minik");
    assert!(
        candidate.is_file(),
        "{} is missing: run `cargo build --bins -p minik-cli` first",
        candidate.display()
    );
    candidate
}

fn start(server: &str) -> Child {
    Command::new(minik_binary())
        .args(["controller-manager", "--server", server, "--workers", "2"])
        .args([
            "--leader-elect-lease-duration",
            "2s",
            "--leader-elect-renew-deadline",
            "1s",
        ])
        .args(["--leader-elect-retry-period", "100ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn a_controller_manager_killed_mid_rollout_is_replaced_without_extra_pods() {
    let w = workloads().await;
    let mut first = start(&w.server.url);
    w.deployments
        .create(&deployment(6, "web:v1"))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| all.iter().any(|d| complete(d, 6))).await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:v2"}]}}}});
    w.deployments
        .patch("web", &Patch::Strategic(patch))
        .await
        .unwrap();
    wait_until(&w.replica_sets, |all| all.len() == 2).await;
    first.kill().await.unwrap();

    let _second = start(&w.server.url);
    wait_until(&w.deployments, |all| {
        all.iter().any(|d| revision(d) == "2" && complete(d, 6))
    })
    .await;
    let pods = wait_until(&w.pods, |all| {
        live(all).len() == 6 && live(all).iter().all(|p| image(p) == "web:v2")
    })
    .await;
    assert_eq!(pods.len(), 6, "no extra pods, none left behind");
}
