//! Job policies with real processes (issue 20): a Job with `ttlSecondsAfterFinished` completes,
//! stays for its TTL, then disappears with its pods (a Job without one stays); a `podFailurePolicy`
//! FailJob rule on exit code 42 fails the Job at its first failure despite `backoffLimit`, and an
//! Ignore rule on `DisruptionTarget` does not count an evicted pod against `backoffLimit: 0`.

use std::time::Duration;

use minik_api::batch::Job;
use minik_api::core::Pod;
use minik_client::{Api, ListParams, Method};
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
    let done = wait_for(&jobs, "brief", complete, FINISH)
        .await
        .expect("brief completes");
    // The condition's time has whole seconds: a TTL of 2 s leaves at least 1 s after it.
    let finished = condition(&done, "Complete")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
        .expect("Complete has a time");
    wait_for(&jobs, "kept", complete, FINISH)
        .await
        .expect("kept completes");
    wait_deleted(&jobs, "brief", FINISH)
        .await
        .expect("brief deleted by its TTL");
    let waited = jiff::Timestamp::now().duration_since(finished);
    assert!(
        waited >= jiff::SignedDuration::from_secs(1),
        "deleted only after its TTL, not at once ({waited:?})"
    );
    let pods = ListParams::default().labels("batch.kubernetes.io/job-name=brief");
    wait_for_all(
        &cluster.pods(),
        pods,
        |pods: &[Pod]| pods.is_empty(),
        FINISH,
    )
    .await
    .expect("its pods go with it");
    assert!(jobs.get("kept").await.is_ok(), "a Job without a TTL stays");
    stop_clean(cluster).await;
}

fn policy_job(name: &str, script: &str, backoff_limit: i32) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"backoffLimit": backoff_limit,
                 "podFailurePolicy": {"rules": [
                     {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
                     {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]},
                 "template": {"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", script]}]}}}
    }))
    .expect("a valid Job")
}

fn condition<'a>(job: &'a Job, type_: &str) -> Option<&'a minik_api::batch::JobCondition> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
}

fn pods_of(job: &str) -> ListParams {
    ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}"))
}

/// Exit code 42 matches the FailJob rule: Failed with reason PodFailurePolicy after one pod,
/// although `backoffLimit: 6` would have allowed six retries.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fail_job_rule_fails_the_job_at_the_first_matching_exit_code() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    jobs.create(&policy_job("fatal", "exit 42", 6))
        .await
        .expect("create");
    let failed = |job: &Job| condition(job, "Failed").is_some();
    let job = wait_for(&jobs, "fatal", failed, FINISH)
        .await
        .expect("Failed");
    let target = condition(&job, "FailureTarget").expect("FailureTarget");
    assert_eq!(target.reason.as_deref(), Some("PodFailurePolicy"));
    assert_eq!(
        condition(&job, "Failed").and_then(|c| c.reason.as_deref()),
        Some("PodFailurePolicy")
    );
    assert_eq!(job.status.as_ref().and_then(|s| s.failed), Some(1));
    let pods = cluster
        .pods()
        .list(&pods_of("fatal"))
        .await
        .expect("list")
        .items;
    assert_eq!(pods.len(), 1, "no retry after a FailJob match");
    stop_clean(cluster).await;
}

/// A pod evicted (DisruptionTarget) matches the Ignore rule: with `backoffLimit: 0` the Job still
/// does not fail, `failed` stays 0, and a replacement pod runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_ignore_rule_does_not_count_an_evicted_pod() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    jobs.create(&policy_job("patient", "exec sleep 3600", 0))
        .await
        .expect("create");
    let running = |pods: &[Pod]| pods.len() == 1 && minik_tests::wait::pod::is_running(&pods[0]);
    let pods = wait_for_all(&cluster.pods(), pods_of("patient"), running, FINISH)
        .await
        .expect("one running pod");
    let victim = pods[0].metadata.name.clone().expect("name");
    let victim_uid = pods[0].metadata.uid.clone();
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": victim, "namespace": "default"}});
    let path = format!("/api/v1/namespaces/default/pods/{victim}/eviction");
    cluster
        .client()
        .request_json(Method::POST, &path, Some(&eviction))
        .await
        .expect("evicted");
    let replaced = move |pods: &[Pod]| {
        pods.len() == 1
            && pods[0].metadata.uid != victim_uid
            && minik_tests::wait::pod::is_running(&pods[0])
    };
    wait_for_all(&cluster.pods(), pods_of("patient"), replaced, FINISH)
        .await
        .expect("the evicted pod replaced, and gone");
    let job = jobs.get("patient").await.expect("job");
    assert_eq!(
        job.status.as_ref().and_then(|s| s.failed).unwrap_or(0),
        0,
        "the failure was ignored"
    );
    assert!(condition(&job, "Failed").is_none() && condition(&job, "FailureTarget").is_none());
    stop_clean(cluster).await;
}
