//! What `minik demo job` sees: one Job and its pods on a watch, and a pod's log line by line.
//!
//! Kubernetes counterpart: `kubectl get job,pods -l batch.kubernetes.io/job-name=NAME -w` and
//! `kubectl logs -f`. Both watches start from the resourceVersion of a list taken first, so
//! nothing after [`JobWatch::start`] is missed; every change becomes a mark stamped with the
//! moment the demo received it. Pods are numbered in the order they appeared (pod 1, pod 2…).

use std::collections::BTreeMap;
use std::time::Duration;

use futures::stream::{BoxStream, StreamExt};
use jiff::Timestamp;
use minik_api::batch::Job;
use minik_api::core::Pod;
use minik_api::WatchEvent;
use minik_client::{Api, Client, ListParams, LogParams};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::job_worker::{self, WorkerLine};
use super::timeline::Lane;

/// One change from either watch (boxed: a Job is larger than a Pod).
#[allow(clippy::large_enum_variant)]
enum Change {
    Pod(WatchEvent<Pod>),
    Job(Box<WatchEvent<Job>>),
}

/// The Job's pods and conditions as the watches reported them.
pub struct JobWatch {
    stream: BoxStream<'static, (Change, Timestamp)>,
    name: String,
    /// The pods' names, in the order they appeared.
    pub pods: Vec<String>,
    phases: BTreeMap<String, String>,
    /// What happened: `pod 2 created`, `pod 1 Failed`, `job Complete`.
    pub marks: Vec<(Lane, String, Timestamp)>,
    /// When the Job's `Complete` condition was seen.
    pub complete: Option<Timestamp>,
}

impl JobWatch {
    /// Watches the Job `name` and the pods carrying its `job-name` label.
    pub async fn start(client: &Client, namespace: &str, name: &str) -> crate::Result<JobWatch> {
        let pods = Api::<Pod>::namespaced(client.clone(), namespace);
        let selector = format!("batch.kubernetes.io/job-name={name}");
        let params = ListParams::default().labels(&selector);
        let version = pods.list(&params).await?.metadata.resource_version;
        let pod_stream = pods
            .watch(&params.timeout(600), &version.unwrap_or_default())
            .await?
            .filter_map(
                |event| async move { event.ok().map(|e| (Change::Pod(e), Timestamp::now())) },
            );
        let jobs = Api::<Job>::namespaced(client.clone(), namespace);
        let params = ListParams::default().fields(&format!("metadata.name={name}"));
        let version = jobs.list(&params).await?.metadata.resource_version;
        let job_stream = jobs
            .watch(&params.timeout(600), &version.unwrap_or_default())
            .await?
            .filter_map(|event| async move {
                event
                    .ok()
                    .map(|e| (Change::Job(Box::new(e)), Timestamp::now()))
            });
        Ok(JobWatch {
            stream: futures::stream::select(pod_stream, job_stream).boxed(),
            name: name.to_string(),
            pods: Vec::new(),
            phases: BTreeMap::new(),
            marks: Vec::new(),
            complete: None,
        })
    }

    /// Reads changes until `done` holds, for at most `bound`.
    pub async fn until(
        &mut self,
        bound: Duration,
        waiting_for: &str,
        done: impl Fn(&JobWatch) -> bool,
    ) -> crate::Result<()> {
        let deadline = tokio::time::Instant::now() + bound;
        while !done(self) {
            let next = tokio::time::timeout_at(deadline, self.stream.next()).await;
            match next {
                Ok(Some((change, at))) => self.apply(change, at),
                Ok(None) => crate::error::bail!("the watch ended while waiting for {waiting_for}"),
                Err(_) => {
                    crate::error::bail!("timed out after {bound:?} waiting for {waiting_for}")
                }
            }
        }
        Ok(())
    }

    /// Whether the `index`-th pod (0: the first) has been seen Running.
    pub fn running(&self, index: usize) -> bool {
        self.pods
            .get(index)
            .and_then(|name| self.phases.get(name))
            .is_some_and(|phase| phase != "Pending")
    }

    /// The name of the `index`-th pod (it must have been seen).
    pub fn pod_name(&self, index: usize) -> String {
        self.pods[index].clone()
    }

    fn apply(&mut self, change: Change, at: Timestamp) {
        match change {
            Change::Pod(WatchEvent::Added(pod) | WatchEvent::Modified(pod)) => {
                let name = pod.metadata.name.clone().unwrap_or_default();
                if !self.pods.contains(&name) {
                    self.pods.push(name.clone());
                    self.mark(
                        Lane::Apiserver,
                        format!("pod {} created", self.pods.len()),
                        at,
                    );
                }
                let phase = pod.status.and_then(|s| s.phase).unwrap_or_default();
                let previous = self.phases.insert(name.clone(), phase.clone());
                if previous.as_deref() != Some(phase.as_str()) && phase != "Pending" {
                    let number = self.number(&name);
                    self.mark(Lane::Kubelet, format!("pod {number} {phase}"), at);
                }
            }
            Change::Pod(WatchEvent::Deleted(pod)) => {
                let number = self.number(pod.metadata.name.as_deref().unwrap_or_default());
                self.mark(Lane::Apiserver, format!("pod {number} removed"), at);
            }
            Change::Job(event) => {
                let (WatchEvent::Added(job) | WatchEvent::Modified(job)) = *event else {
                    return;
                };
                let ours = job.metadata.name.as_deref() == Some(&self.name);
                if ours && self.complete.is_none() && is_complete(&job) {
                    self.complete = Some(at);
                    self.mark(Lane::Apiserver, "job Complete".to_string(), at);
                }
            }
            _ => {}
        }
    }

    fn number(&self, name: &str) -> usize {
        self.pods
            .iter()
            .position(|pod| pod == name)
            .map_or(0, |i| i + 1)
    }

    fn mark(&mut self, lane: Lane, event: String, at: Timestamp) {
        self.marks.push((lane, event, at));
    }
}

fn is_complete(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
        })
}

/// A pod's log followed as it is written: its worker lines as they come, the whole text at
/// the end.
pub struct LogFollower {
    lines: mpsc::UnboundedReceiver<WorkerLine>,
    text: JoinHandle<String>,
}

/// Starts following `name`'s log (its container must have started).
pub async fn follow(pods: &Api<Pod>, name: &str) -> crate::Result<LogFollower> {
    let params = LogParams {
        follow: true,
        ..LogParams::default()
    };
    let mut stream = pods.log_stream(name, &params).await?;
    let (sender, lines) = mpsc::unbounded_channel();
    let text = tokio::spawn(async move {
        let mut text = String::new();
        let mut partial = String::new();
        while let Ok(Some(Ok(chunk))) =
            tokio::time::timeout(Duration::from_secs(120), stream.next()).await
        {
            partial.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = partial.find('\n') {
                let line: String = partial.drain(..=end).collect();
                if let Some(parsed) = job_worker::parse_line(&line) {
                    let _ = sender.send(parsed);
                }
                text.push_str(&line);
            }
        }
        text + &partial
    });
    Ok(LogFollower { lines, text })
}

impl LogFollower {
    /// Waits for the line saying `units` units are done.
    pub async fn until_units(&mut self, units: u32, bound: Duration) -> crate::Result<()> {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some(line)) if line.units >= units => return Ok(()),
                Ok(Some(_)) => {}
                Ok(None) => crate::error::bail!("the log ended before unit {units}"),
                Err(_) => crate::error::bail!("timed out after {bound:?} waiting for unit {units}"),
            }
        }
    }

    /// The whole log, once the container has exited.
    pub async fn finish(self) -> String {
        self.text.await.unwrap_or_default()
    }
}
