//! A fake kubelet for the tests: binds every pod to `node-1`, reports it Running and Ready (never
//! Ready when its image contains `unready`), and finishes a graceful delete at once (as a kubelet
//! does once the containers stopped).

use futures::StreamExt;
use minik_api::core::Pod;
use minik_client::{watcher, Api, Client, DeleteParams, Event, ListParams, Patch};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Runs until `shutdown`. With `finish_deletes` false, a deleted pod stays Terminating for ever, as if
/// its process took longer than the test to exit (seed 002's slow shutdown).
pub fn start_with(client: Client, shutdown: CancellationToken, finish_deletes: bool) {
    tokio::spawn(async move {
        let mut events = Box::pin(watcher(
            Api::<Pod>::all(client.clone()),
            ListParams::default(),
        ));
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
                act(&client, &pod, finish_deletes).await;
            }
        }
    });
}

async fn act(client: &Client, pod: &Pod, finish_deletes: bool) {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    if pod.metadata.deletion_timestamp.is_some() {
        if finish_deletes {
            let _ = pods.delete(name, &DeleteParams::grace(0)).await;
        }
        return;
    }
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some();
    if !bound {
        let _ = pods.bind(name, "node-1").await;
        return;
    }
    let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    if !running {
        let now = minik_api::now();
        let image = pod
            .spec
            .as_ref()
            .and_then(|s| s.containers[0].image.as_deref());
        let ready = if image.unwrap_or_default().contains("unready") {
            "False"
        } else {
            "True"
        };
        let status = json!({ "status": {
            "phase": "Running", "podIP": "127.244.1.2",
            "conditions": [{ "type": "Ready", "status": ready, "lastTransitionTime": now }]
        }});
        let _ = pods.patch_status(name, &Patch::Merge(status)).await;
    }
}
