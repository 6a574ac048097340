//! Jobs with real processes: `sh -c "exit 0"` pods run to `completions` two at a time, and a
//! Job whose controller manager is killed with -9 mid-run still ends with each completion
//! counted once and no extra pod (the `batch.kubernetes.io/job-tracking` finalizer at work); an
//! Indexed Job's pods each print their own `JOB_COMPLETION_INDEX`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use minik_api::batch::Job;
use minik_api::core::Pod;
use minik_client::{Api, DeleteParams, ListParams};
use minik_tests::wait::{pod::phase, wait_for, wait_for_all};
use minik_tests::Cluster;
use nix::sys::signal::Signal;
use serde_json::json;

use crate::support::stop_clean;

/// Bound for a whole Job on a loaded 2-core machine.
const FINISH: Duration = Duration::from_secs(90);

fn job(name: &str, script: &str, completions: i32, parallelism: i32) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"completions": completions, "parallelism": parallelism, "backoffLimit": 0,
                 "template": {"spec": {"restartPolicy": "Never", "containers": [
                     {"name": "main", "image": "busybox", "command": ["sh", "-c", script]}]}}}
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

fn pods_of(name: &str) -> ListParams {
    ListParams::default().labels(&format!("batch.kubernetes.io/job-name={name}"))
}

/// Runs the Job to Complete; returns the most pods that were running at once.
async fn run_to_completion(cluster: &Cluster, fixture: &Job) -> (Job, usize) {
    let name = fixture.metadata.name.clone().unwrap_or_default();
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let peak = std::sync::Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (pods, peak, lp) = (cluster.pods(), peak.clone(), pods_of(&name));
        tokio::spawn(async move {
            let _ = wait_for_all(
                &pods,
                lp,
                |pods: &[Pod]| {
                    let running = pods.iter().filter(|p| !is_terminal(p)).count();
                    peak.fetch_max(running, Ordering::SeqCst);
                    false
                },
                FINISH,
            )
            .await;
        })
    };
    jobs.create(fixture).await.expect("create job");
    let done = wait_for(&jobs, &name, complete, FINISH)
        .await
        .expect("the Job completes");
    sampler.abort();
    (done, peak.load(Ordering::SeqCst))
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// completions 3, parallelism 2: three pods succeed, never more than two at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_completions_two_at_a_time() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let (done, peak) = run_to_completion(&cluster, &job("three", "exit 0", 3, 2)).await;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!((status.succeeded, status.failed), (Some(3), Some(0)));
    assert!(peak <= 2, "at most parallelism pods at once, saw {peak}");
    let pods = cluster
        .pods()
        .list(&pods_of("three"))
        .await
        .expect("list")
        .items;
    assert_eq!(pods.len(), 3, "one pod per completion");
    assert!(pods.iter().all(|p| phase(p) == "Succeeded"));
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let background = DeleteParams::default().propagation("Background");
    jobs.delete("three", &background).await.expect("delete");
    wait_for_all(
        &cluster.pods(),
        pods_of("three"),
        |p: &[Pod]| p.is_empty(),
        FINISH,
    )
    .await
    .expect("the pods go with the Job");
    stop_clean(cluster).await;
}

/// An Indexed Job: each pod reads its own `JOB_COMPLETION_INDEX` (downward API from the
/// completion-index annotation) and prints it; the three logs are the three indexes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn indexed_pods_read_their_own_completion_index() {
    let _machine = crate::support::exclusive().await;
    let cluster = crate::support::one_node().await;
    let mut fixture = job("idx", "echo index=$JOB_COMPLETION_INDEX", 3, 3);
    if let Some(spec) = fixture.spec.as_mut() {
        spec.completion_mode = Some("Indexed".into());
    }
    let (done, _) = run_to_completion(&cluster, &fixture).await;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.completed_indexes.as_deref(), Some("0-2"));
    let pods = cluster
        .pods()
        .list(&pods_of("idx"))
        .await
        .expect("list")
        .items;
    let mut printed = Vec::new();
    for pod in &pods {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let logs = cluster
            .pods()
            .logs(name, &Default::default())
            .await
            .expect("logs");
        printed.push(logs.trim().to_string());
    }
    printed.sort();
    assert_eq!(printed, ["index=0", "index=1", "index=2"]);
    stop_clean(cluster).await;
}

/// kill -9 of the controller manager while pods run: the successor counts each completion once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn controller_manager_killed_mid_job_loses_and_doubles_nothing() {
    let _machine = crate::support::exclusive().await;
    let mut cluster = Cluster::builder()
        .processes(true)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    jobs.create(&job("crash", "sleep 1; exit 0", 4, 2))
        .await
        .expect("create job");
    let one_done = |pods: &[Pod]| pods.iter().any(|p| phase(p) == "Succeeded");
    wait_for_all(&cluster.pods(), pods_of("crash"), one_done, FINISH)
        .await
        .expect("a first completion");
    cluster
        .kill("controller-manager", Signal::SIGKILL)
        .await
        .expect("kill -9");
    cluster
        .restart("controller-manager")
        .await
        .expect("restart");
    let done = wait_for(&jobs, "crash", complete, FINISH)
        .await
        .expect("the successor completes the Job");
    assert_eq!(done.status.as_ref().and_then(|s| s.succeeded), Some(4));
    let pods = cluster
        .pods()
        .list(&pods_of("crash"))
        .await
        .expect("list")
        .items;
    assert_eq!(pods.len(), 4, "no pod beyond completions");
    stop_clean(cluster).await;
}
