//! A rough figure, not a timed test (`--ignored`): 1,000 replicas from `create` to Available with
//! the fake kubelet, and a full rolling update of them. The real benchmark is the lab's, on hollow
//! nodes.

use std::time::Instant;

use minik_client::Patch;
use serde_json::json;

use crate::cluster::wait_until;
use crate::workloads::{complete, controller_manager, deployment, revision, workloads, Guard};

#[tokio::test]
#[ignore = "a measurement; run with --ignored --nocapture"]
async fn a_thousand_replicas_become_available_and_roll() {
    let w = workloads().await;
    let _cm = Guard(controller_manager(&w.server, "cm-1"));
    let started = Instant::now();
    w.deployments
        .create(&deployment(1000, "web:v1"))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| all.iter().any(|d| complete(d, 1000))).await;
    let available = started.elapsed();
    let started = Instant::now();
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:v2"}]}}}});
    w.deployments
        .patch("web", &Patch::Strategic(patch))
        .await
        .unwrap();
    wait_until(&w.deployments, |all| {
        all.iter().any(|d| revision(d) == "2" && complete(d, 1000))
    })
    .await;
    println!(
        "1000 replicas available in {available:?}; rolled to v2 in {:?}",
        started.elapsed()
    );
}
