//! Jobs end to end: completions and parallelism, failures, the active deadline, suspend, and a
//! pod deleted after it succeeded while the controller manager was down, counted once.
//!
//! The fake kubelet here binds each pod and runs it; the image says how it ends: `exit0`
//! succeeds, `exit1` fails, anything else (`sleep`) runs until the test ends it. A deleted pod is
//! finished at once (grace 0), as a kubelet does once its containers stopped.

use futures::StreamExt;
use minik_api::batch::Job;
use minik_api::core::Pod;
use minik_api::jobs::{COMPLETION_INDEX_ANNOTATION, TRACKING_FINALIZER};
use minik_client::{watcher, Api, Client, DeleteParams, Event, ListParams, Patch};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::cluster::{apiserver, wait_until};
use crate::workloads::controller_manager;

fn start_kubelet(client: Client, shutdown: CancellationToken) {
    tokio::spawn(async move {
        let api = Api::<Pod>::all(client.clone());
        let mut events = Box::pin(watcher(api, ListParams::default()));
        loop {
            let event = tokio::select! {
                _ = shutdown.cancelled() => return,
                event = events.next() => event,
            };
            let pods = match event {
                Some(Ok(Event::Applied(pod))) => vec![pod],
                Some(Ok(Event::Restarted(pods))) => pods,
                Some(Ok(Event::Deleted(_))) | Some(Err(_)) => continue,
                None => return,
            };
            for pod in pods {
                run(&client, &pod).await;
            }
        }
    });
}

async fn run(client: &Client, pod: &Pod) {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    if pod.metadata.deletion_timestamp.is_some() {
        let _ = pods.delete(name, &DeleteParams::grace(0)).await;
        return;
    }
    let spec = pod.spec.as_ref().unwrap();
    if spec.node_name.is_none() {
        let _ = pods.bind(name, "node-1").await;
        return;
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if !matches!(phase, None | Some("Pending")) {
        return;
    }
    let image = spec.containers[0].image.as_deref().unwrap_or_default();
    let status = match image {
        "exit0" => finished("Succeeded", 0),
        "exit1" => finished("Failed", 1),
        _ => json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}),
    };
    let _ = pods
        .patch_status(name, &Patch::Merge(json!({ "status": status })))
        .await;
}

fn finished(phase: &str, code: i32) -> serde_json::Value {
    json!({"phase": phase, "containerStatuses": [{"name": "main", "image": "i", "imageID": "",
        "ready": false, "restartCount": 0,
        "state": {"terminated": {"exitCode": code, "finishedAt": minik_api::now()}}}]})
}

fn job(name: &str, image: &str, spec: serde_json::Value) -> Job {
    let mut spec = spec;
    spec["template"] = json!({"spec": {"restartPolicy": "Never",
        "containers": [{"name": "main", "image": image}]}});
    serde_json::from_value(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec}))
    .unwrap()
}

fn condition<'a>(job: &'a Job, type_: &str) -> Option<&'a minik_api::batch::JobCondition> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
}

fn tracked(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == TRACKING_FINALIZER)
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

#[tokio::test]
async fn completions_three_with_parallelism_two_complete_with_each_pod_counted_once() {
    let server = apiserver().await;
    let stop = controller_manager(&server, "cm-1");
    start_kubelet(server.client.clone(), stop.clone());
    let jobs = Api::<Job>::namespaced(server.client.clone(), "default");
    let spec = json!({"completions": 3, "parallelism": 2});
    jobs.create(&job("pi", "exit0", spec)).await.unwrap();
    let done = wait_until(&jobs, |jobs| {
        jobs.iter().any(|j| condition(j, "Complete").is_some())
    })
    .await;
    let status = done[0].status.clone().unwrap();
    assert_eq!(
        (status.succeeded, status.failed, status.active),
        (Some(3), Some(0), Some(0))
    );
    assert!(status.completion_time.is_some() && status.start_time.is_some());
    assert!(condition(&done[0], "SuccessCriteriaMet").is_some());
    let pods = Api::<Pod>::namespaced(server.client.clone(), "default");
    let all = wait_until(&pods, |pods| pods.iter().all(|p| !tracked(p))).await;
    assert_eq!(all.len(), 3, "one pod per completion");
    assert!(all.iter().all(|p| phase(p) == "Succeeded"));
    let labels = all[0].metadata.labels.clone().unwrap();
    assert_eq!(labels["batch.kubernetes.io/job-name"], "pi");
    stop.cancel();
}

#[tokio::test]
async fn a_pod_deleted_after_it_succeeded_while_the_manager_was_down_counts_once() {
    let server = apiserver().await;
    let kubelet = CancellationToken::new();
    start_kubelet(server.client.clone(), kubelet.clone());
    let first = controller_manager(&server, "cm-1");
    let jobs = Api::<Job>::namespaced(server.client.clone(), "default");
    let pods = Api::<Pod>::namespaced(server.client.clone(), "default");
    let spec = json!({"completions": 2, "parallelism": 2});
    jobs.create(&job("batch", "sleep", spec)).await.unwrap();
    let running = wait_until(&pods, |pods| {
        pods.len() == 2 && pods.iter().all(|p| phase(p) == "Running" && tracked(p))
    })
    .await;
    first.cancel();
    // While no controller runs: one pod succeeds and is deleted; its finalizer holds it.
    let (done, other) = (running[0].clone(), running[1].clone());
    let name = done.metadata.name.clone().unwrap();
    let body = json!({"status": finished("Succeeded", 0)});
    pods.patch_status(&name, &Patch::Merge(body)).await.unwrap();
    pods.delete(&name, &DeleteParams::grace(0)).await.unwrap();
    assert!(
        pods.get_opt(&name).await.unwrap().is_some(),
        "held by the finalizer"
    );
    let second = controller_manager(&server, "cm-2");
    wait_until(&jobs, |jobs| {
        let status = jobs[0].status.clone().unwrap_or_default();
        (status.succeeded, status.active) == (Some(1), Some(1))
    })
    .await;
    wait_until(&pods, |pods| pods.len() == 1).await;
    let other_name = other.metadata.name.clone().unwrap();
    let body = json!({"status": finished("Succeeded", 0)});
    pods.patch_status(&other_name, &Patch::Merge(body))
        .await
        .unwrap();
    let complete = wait_until(&jobs, |jobs| {
        jobs.iter().any(|j| condition(j, "Complete").is_some())
    })
    .await;
    assert_eq!(complete[0].status.as_ref().unwrap().succeeded, Some(2));
    let left = pods.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(left.len(), 1, "no replacement pod was created");
    second.cancel();
    kubelet.cancel();
}

#[tokio::test]
async fn a_failure_beyond_the_backoff_limit_fails_the_job() {
    let server = apiserver().await;
    let stop = controller_manager(&server, "cm-1");
    start_kubelet(server.client.clone(), stop.clone());
    let jobs = Api::<Job>::namespaced(server.client.clone(), "default");
    jobs.create(&job("oops", "exit1", json!({"backoffLimit": 0})))
        .await
        .unwrap();
    let failed = wait_until(&jobs, |jobs| {
        jobs.iter().any(|j| condition(j, "Failed").is_some())
    })
    .await;
    let reason = condition(&failed[0], "Failed").unwrap().reason.clone();
    assert_eq!(reason.as_deref(), Some("BackoffLimitExceeded"));
    assert!(condition(&failed[0], "FailureTarget").is_some());
    assert!(condition(&failed[0], "Complete").is_none());
    assert_eq!(failed[0].status.as_ref().unwrap().failed, Some(1));
    let pods = Api::<Pod>::namespaced(server.client.clone(), "default");
    let all = wait_until(&pods, |pods| pods.iter().all(|p| !tracked(p))).await;
    assert_eq!(all.len(), 1, "no replacement after the limit");
    stop.cancel();
}

#[tokio::test]
async fn the_active_deadline_fails_a_running_job_and_ends_its_pods() {
    let server = apiserver().await;
    let stop = controller_manager(&server, "cm-1");
    start_kubelet(server.client.clone(), stop.clone());
    let jobs = Api::<Job>::namespaced(server.client.clone(), "default");
    let spec = json!({"activeDeadlineSeconds": 2, "parallelism": 2, "completions": 4});
    jobs.create(&job("slow", "sleep", spec)).await.unwrap();
    let failed = wait_until(&jobs, |jobs| {
        jobs.iter().any(|j| condition(j, "Failed").is_some())
    })
    .await;
    let reason = condition(&failed[0], "Failed").unwrap().reason.clone();
    assert_eq!(reason.as_deref(), Some("DeadlineExceeded"));
    let status = failed[0].status.clone().unwrap();
    assert_eq!((status.active, status.terminating), (Some(0), Some(0)));
    let pods = Api::<Pod>::namespaced(server.client.clone(), "default");
    wait_until(&pods, |pods| pods.is_empty()).await;
    stop.cancel();
}

#[tokio::test]
async fn suspend_ends_the_pods_without_failures_and_resume_starts_again() {
    let server = apiserver().await;
    let stop = controller_manager(&server, "cm-1");
    start_kubelet(server.client.clone(), stop.clone());
    let jobs = Api::<Job>::namespaced(server.client.clone(), "default");
    let pods = Api::<Pod>::namespaced(server.client.clone(), "default");
    jobs.create(&job("pause", "sleep", json!({})))
        .await
        .unwrap();
    wait_until(&pods, |pods| {
        pods.len() == 1 && phase(&pods[0]) == "Running"
    })
    .await;
    let suspend = |on: bool| Patch::Merge(json!({"spec": {"suspend": on}}));
    jobs.patch("pause", &suspend(true)).await.unwrap();
    wait_until(&pods, |pods| pods.is_empty()).await;
    let suspended = wait_until(&jobs, |jobs| {
        jobs.iter().any(|j| condition(j, "Suspended").is_some())
    })
    .await;
    let status = suspended[0].status.clone().unwrap();
    assert_eq!((status.failed, status.start_time), (Some(0), None));
    jobs.patch("pause", &suspend(false)).await.unwrap();
    wait_until(&pods, |pods| pods.len() == 1).await;
    let resumed = wait_until(&jobs, |jobs| {
        jobs.iter()
            .any(|j| j.status.as_ref().is_some_and(|s| s.start_time.is_some()))
    })
    .await;
    assert!(condition(&resumed[0], "Suspended").is_none());
    stop.cancel();
}

#[tokio::test]
async fn deleting_a_job_in_the_background_removes_its_tracked_pods() {
    let server = apiserver().await;
    let stop = controller_manager(&server, "cm-1");
    start_kubelet(server.client.clone(), stop.clone());
    let jobs = Api::<Job>::namespaced(server.client.clone(), "default");
    let pods = Api::<Pod>::namespaced(server.client.clone(), "default");
    jobs.create(&job(
        "gone",
        "sleep",
        json!({"parallelism": 2, "completions": 2}),
    ))
    .await
    .unwrap();
    wait_until(&pods, |pods| pods.len() == 2 && pods.iter().all(tracked)).await;
    jobs.delete("gone", &DeleteParams::default().propagation("Background"))
        .await
        .unwrap();
    wait_until(&pods, |pods| pods.is_empty()).await;
    stop.cancel();
}

#[tokio::test]
async fn an_indexed_job_runs_each_index_once_and_reports_them() {
    let server = apiserver().await;
    let stop = controller_manager(&server, "cm-1");
    start_kubelet(server.client.clone(), stop.clone());
    let jobs = Api::<Job>::namespaced(server.client.clone(), "default");
    let spec = json!({"completions": 3, "parallelism": 3, "completionMode": "Indexed"});
    jobs.create(&job("idx", "exit0", spec)).await.unwrap();
    let done = wait_until(&jobs, |jobs| {
        jobs.iter().any(|j| condition(j, "Complete").is_some())
    })
    .await;
    let status = done[0].status.clone().unwrap();
    assert_eq!(status.completed_indexes.as_deref(), Some("0-2"));
    assert_eq!(status.succeeded, Some(3));
    let pods = Api::<Pod>::namespaced(server.client.clone(), "default");
    let all = pods.list(&ListParams::default()).await.unwrap().items;
    let mut indexes: Vec<String> = all
        .iter()
        .map(|p| p.metadata.annotations.as_ref().unwrap()[COMPLETION_INDEX_ANNOTATION].clone())
        .collect();
    indexes.sort();
    assert_eq!(indexes, ["0", "1", "2"]);
    let env = all[0].spec.as_ref().unwrap().containers[0]
        .env
        .clone()
        .unwrap();
    assert_eq!(env[0].name, "JOB_COMPLETION_INDEX");
    stop.cancel();
}
