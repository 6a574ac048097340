//! The TTL-after-finished controller with real processes (issue 20): a Job with
//! `ttlSecondsAfterFinished` completes, stays for its TTL, then disappears with its pods; a Job
//! without one stays.

use std::time::{Duration, Instant};

use minik_api::batch::Job;
use minik_client::{Api, ListParams};
use minik_tests::wait::{wait_deleted, wait_for, wait_for_all};
use minik_tests::Cluster;
use serde_json::json;

use crate::support::stop_clean;

const FINISH: Duration = Duration::from_secs(90);

fn job(name: &str, ttl: Option<i32>) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"ttlSecondsAfterFinished": ttl, "backoffLimit": 0,
                 "template": {"spec": {"restartPolicy": "Never", "containers": [
                     {"name": "main", "image": "busybox", "command": ["sh", "-c", "exit 0"]}]}}}
    }))
    .expect("a valid Job")
}

fn complete(job: &Job) -> bool {
    let conditions = job.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Complete" && c.status == "True")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_finished_job_disappears_after_its_ttl_with_its_pods() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    jobs.create(&job("brief", Some(2)))
        .await
        .expect("create brief");
    jobs.create(&job("kept", None)).await.expect("create kept");
    wait_for(&jobs, "brief", complete, FINISH)
        .await
        .expect("brief completes");
    let completed_at = Instant::now();
    wait_for(&jobs, "kept", complete, FINISH)
        .await
        .expect("kept completes");
    wait_deleted(&jobs, "brief", FINISH)
        .await
        .expect("brief deleted by its TTL");
    let waited = completed_at.elapsed();
    assert!(
        waited >= Duration::from_millis(1500),
        "deleted only after its TTL, not at once ({waited:?})"
    );
    let pods = ListParams::default().labels("batch.kubernetes.io/job-name=brief");
    wait_for_all(
        &cluster.pods(),
        pods,
        |pods: &[minik_api::core::Pod]| pods.is_empty(),
        FINISH,
    )
    .await
    .expect("its pods go with it");
    assert!(jobs.get("kept").await.is_ok(), "a Job without a TTL stays");
    stop_clean(cluster).await;
}
