//! `sync_loop`: the kubelet's main loop — watch this node's pods, keep one worker per pod.
//!
//! Kubernetes counterpart: `Kubelet.syncLoop` / `syncLoopIteration` in `pkg/kubelet/kubelet.go`
//! (pod updates from the apiserver source `pkg/kubelet/config/apiserver.go`, which watches
//! `fieldSelector=spec.nodeName=<node>`), `podWorkers.UpdatePod` (`pkg/kubelet/pod_workers.go`)
//! and the cleanup of orphans in `HandlePodCleanups` (`pkg/kubelet/kubelet_pods.go`).
//!
//! The loop:
//! 1. a watcher + reflector keeps a store of the pods bound to this node (list, then watch);
//! 2. every event re-reads the pod from the store and hands it to its worker (created on first
//!    sight, one per pod uid) through a `watch` channel: workers always see the latest version;
//! 3. a pod deleted from the API (DELETED) or missing after a relist is sent as `Removed`;
//! 4. after the first full list, containers of pods that are no longer bound to this node — or
//!    no longer exist — are stopped and cleaned up (pods deleted while the kubelet was down).
//!
//! minik simplifies: one source (the apiserver; no static pods, no file or HTTP sources).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use minik_api::ObjectKey;
use minik_client::{reflector, store, watcher, Api, Client, Event, ListParams};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::cri::{ContainerState, StopSignal};
use crate::pod_worker::{PodUpdate, PodWorker, WorkerContext};

/// Grace given to containers of pods that vanished while the kubelet was down.
const ORPHAN_GRACE: Duration = Duration::from_secs(2);

/// The pod workers, keyed by pod uid.
struct PodWorkers {
    ctx: Arc<WorkerContext>,
    workers: HashMap<String, watch::Sender<PodUpdate>>,
    /// Uids whose worker finished termination: late events about them start nothing.
    finished: BTreeSet<String>,
    done_tx: mpsc::UnboundedSender<String>,
    shutdown: CancellationToken,
}

impl PodWorkers {
    /// `UpdatePod`: hand the latest pod to its worker, starting one if needed.
    fn update_pod(&mut self, update: PodUpdate) {
        let uid = update.pod().metadata.uid.clone().unwrap_or_default();
        if self.finished.contains(&uid) {
            if matches!(update, PodUpdate::Removed(_)) {
                self.finished.remove(&uid);
            }
            return;
        }
        if let Some(sender) = self.workers.get(&uid) {
            let _ = sender.send(update);
            return;
        }
        let key = ObjectKey::of(&update.pod().metadata);
        info!(pod = %key, uid = %uid, "starting pod worker");
        let (sender, receiver) = watch::channel(update);
        let worker = PodWorker::new(self.ctx.clone(), receiver, self.shutdown.child_token());
        let done = self.done_tx.clone();
        self.workers.insert(uid.clone(), sender);
        self.ctx.tracker.spawn(async move {
            worker.run().await;
            let _ = done.send(uid);
        });
    }

    fn worker_done(&mut self, uid: String) {
        self.workers.remove(&uid);
        self.finished.insert(uid);
    }
}

/// Runs until `shutdown`: watches the node's pods and drives their workers.
pub async fn sync_loop(ctx: Arc<WorkerContext>, client: Client, shutdown: CancellationToken) {
    let field_selector = format!("spec.nodeName={}", ctx.node_name);
    let api = Api::<Pod>::all(client);
    let (pod_store, writer) = store::<Pod>();
    let events = reflector(
        writer,
        watcher(api, ListParams::default().fields(&field_selector)),
    );
    tokio::pin!(events);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut workers = PodWorkers {
        ctx: ctx.clone(),
        workers: HashMap::new(),
        finished: BTreeSet::new(),
        done_tx,
        shutdown: shutdown.clone(),
    };
    let mut cleaned_orphans = false;
    loop {
        let event = tokio::select! {
            _ = shutdown.cancelled() => break,
            Some(uid) = done_rx.recv() => { workers.worker_done(uid); continue; }
            event = events.next() => event,
        };
        if matches!(event, Some(Ok(_))) {
            // Watch what the node's pods reference before their workers look it up.
            ctx.sources.register_pods(&pod_store.state());
        }
        match event {
            None => break,
            Some(Err(error)) => warn!(%error, "pod watch error"),
            Some(Ok(Event::Applied(pod))) => {
                // Level-triggered: use the store's copy, the latest we know.
                let latest = pod_store
                    .get(&ObjectKey::of(&pod.metadata))
                    .unwrap_or_else(|| Arc::new(pod));
                debug!(pod = %ObjectKey::of(&latest.metadata), "pod changed");
                workers.update_pod(PodUpdate::Present(latest));
            }
            Some(Ok(Event::Deleted(pod))) => workers.update_pod(PodUpdate::Removed(Arc::new(pod))),
            Some(Ok(Event::Restarted(pods))) => {
                let uids: BTreeSet<String> =
                    pods.iter().filter_map(|p| p.metadata.uid.clone()).collect();
                let gone: Vec<_> = workers
                    .workers
                    .keys()
                    .filter(|uid| !uids.contains(*uid))
                    .cloned()
                    .collect();
                for uid in gone {
                    let last = workers.workers[&uid].borrow().pod().clone();
                    workers.update_pod(PodUpdate::Removed(last));
                }
                for pod in pods {
                    workers.update_pod(PodUpdate::Present(Arc::new(pod)));
                }
                if !cleaned_orphans {
                    cleaned_orphans = true;
                    info!(node = %ctx.node_name, pods = uids.len(), "ready");
                    ctx.tracker.spawn(cleanup_orphans(ctx.clone(), uids));
                }
            }
        }
    }
}

/// Stops and removes containers whose pod uid is not among `known` (SIGTERM, 2 s, SIGKILL).
async fn cleanup_orphans(ctx: Arc<WorkerContext>, known: BTreeSet<String>) {
    let orphans: Vec<_> = ctx
        .runtime
        .list_containers()
        .into_iter()
        .filter(|c| !known.contains(&c.config.pod_uid))
        .collect();
    let uids: BTreeSet<String> = orphans.iter().map(|c| c.config.pod_uid.clone()).collect();
    for container in &orphans {
        if matches!(container.state, ContainerState::Running { .. }) {
            info!(pod = %container.config.pod_key, container = %container.config.name, "stopping orphaned container");
            let _ = ctx
                .runtime
                .signal_container(&container.id, StopSignal::Term);
        }
    }
    for container in &orphans {
        let exited =
            tokio::time::timeout(ORPHAN_GRACE, ctx.runtime.wait_container(&container.id)).await;
        if exited.is_err() {
            let _ = ctx
                .runtime
                .signal_container(&container.id, StopSignal::Kill);
            let _ = ctx.runtime.wait_container(&container.id).await;
        }
        let _ = ctx.runtime.remove_container(&container.id).await;
    }
    let stale = ctx
        .sandbox
        .allocated()
        .into_iter()
        .filter(|uid| !known.contains(uid));
    let gone: BTreeSet<String> = uids.into_iter().chain(stale).collect();
    for uid in &gone {
        info!(pod_uid = %uid, "releasing sandbox of a pod that is gone");
        ctx.sandbox.teardown(uid).await;
    }
    crate::container::remove_pod_log_dirs(&ctx.root_dir, &gone);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cri::fake::{Behavior, FakeRuntime, OnTerm};
    use crate::cri::{ContainerConfig, Runtime};
    use crate::reporter::RecordingReporter;
    use crate::sandbox::{FakeSandbox, PodSandbox};
    use crate::testing::pod;

    /// Containers and sandboxes of pods that vanished while the kubelet was down are stopped
    /// (SIGTERM, then SIGKILL after 2 s) and cleaned, log directories included; those of known
    /// pods are left alone.
    #[tokio::test(start_paused = true)]
    async fn orphans_of_vanished_pods_are_stopped_and_cleaned() {
        let runtime = FakeRuntime::new();
        runtime.set_behavior(
            "stubborn",
            Behavior {
                on_term: OnTerm::Ignore,
                ..Default::default()
            },
        );
        let start = |uid: &str, name: &str| ContainerConfig {
            pod_uid: uid.into(),
            name: name.into(),
            ..Default::default()
        };
        runtime
            .start_container(start("gone", "stubborn"))
            .await
            .expect("start");
        runtime
            .start_container(start("gone", "web"))
            .await
            .expect("start");
        runtime
            .start_container(start("kept", "web"))
            .await
            .expect("start");
        let sandbox = Arc::new(FakeSandbox::default());
        let mut gone = pod(&["web"], "Always");
        gone.metadata.uid = Some("gone".into());
        sandbox.setup(&gone).await.expect("sandbox");
        let root = tempfile::tempdir().expect("tempdir");
        let logs = root.path().join("logs");
        for dir in ["default_a_gone", "default_b_kept"] {
            std::fs::create_dir_all(logs.join(dir).join("web")).expect("log dir");
        }
        let ctx = Arc::new(WorkerContext {
            runtime: Arc::new(runtime.clone()),
            reporter: Arc::new(RecordingReporter::default()),
            sandbox: sandbox.clone(),
            node_name: "node-1".into(),
            host_ip: "127.0.0.1".into(),
            root_dir: root.path().to_path_buf(),
            minik_binary: "minik".into(),
            api_host: "127.0.0.1".into(),
            api_port: "6443".into(),
            backoff: Default::default(),
            tracker: tokio_util::task::TaskTracker::new(),
            sources: Arc::new(crate::sources::StaticLookup::default()),
            source_changes: tokio::sync::watch::channel(0).1,
            allocatable: Default::default(),
        });
        let began = tokio::time::Instant::now();
        cleanup_orphans(ctx, BTreeSet::from(["kept".to_string()])).await;
        let remaining: Vec<String> = runtime
            .list_containers()
            .into_iter()
            .map(|c| c.config.pod_uid)
            .collect();
        assert_eq!(remaining, ["kept"]);
        let kill = runtime
            .signals_for("stubborn")
            .into_iter()
            .find(|s| s.signal == StopSignal::Kill);
        assert_eq!(kill.map(|s| s.at - began), Some(ORPHAN_GRACE));
        assert!(runtime.signals().iter().all(|s| !s.id.starts_with("kept")));
        assert!(sandbox.released().contains("gone"));
        assert!(!logs.join("default_a_gone").exists(), "the gone pod's logs");
        assert!(logs.join("default_b_kept").exists());
    }
}
