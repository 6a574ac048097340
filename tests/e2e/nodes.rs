//! Dead nodes and pod GC (issue 19): a kubelet killed with -9 under a Service with requests
//! flowing, with the node lifecycle controller's timings scaled down; the pod garbage collector's
//! threshold and orphans.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use minik_api::apps::ReplicaSet;
use minik_api::core::{Endpoints, Node, Pod};
use minik_api::taints::TAINT_UNREACHABLE;
use minik_client::{Api, ListParams};
use minik_tests::fixtures::{pod, service};
use minik_tests::wait::{pod as p, wait_deleted, wait_for, wait_for_all};
use minik_tests::Cluster;
use nix::sys::signal::Signal;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{http_answer, http_get, stop_clean, RUNNING};

/// The node lifecycle controller's grace period in this test (upstream 40 s).
const GRACE: Duration = Duration::from_secs(3);
/// The pods' toleration of the unreachable taint (upstream's default 300 s).
const TOLERATION_SECONDS: u64 = 6;

fn ready(node: &Node) -> &str {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_deref());
    let ready = conditions
        .unwrap_or_default()
        .iter()
        .find(|c| c.type_ == "Ready");
    ready.map_or("", |c| c.status.as_str())
}

fn taint_keys(node: &Node) -> Vec<String> {
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    taints
        .iter()
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect()
}

fn ready_ips(endpoints: &Endpoints) -> BTreeSet<String> {
    let subsets = endpoints.subsets.iter().flatten();
    subsets
        .flat_map(|s| s.addresses.iter().flatten().map(|a| a.ip.clone()))
        .collect()
}

/// A ReplicaSet of `replicas` web pods labelled `app=web`, tolerating an unreachable node for
/// [`TOLERATION_SECONDS`].
fn web_replica_set(replicas: i32) -> ReplicaSet {
    let template = pod("web").label("app", "web").port(8080).grace(2).to_json();
    let mut spec = template["spec"].clone();
    spec["tolerations"] = json!([{ "key": TAINT_UNREACHABLE, "operator": "Exists",
        "effect": "NoExecute", "tolerationSeconds": TOLERATION_SECONDS }]);
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": { "name": "web" },
        "spec": { "replicas": replicas, "selector": { "matchLabels": { "app": "web" } },
                  "template": { "metadata": { "labels": { "app": "web" } }, "spec": spec } },
    }))
    .expect("a valid ReplicaSet")
}

/// When each request was sent, and who answered it.
type Samples = Arc<Mutex<Vec<(Instant, Option<String>)>>>;

/// Requests sent every 20 ms to `address` until `stop`: when each was sent, and who answered.
fn load(address: String, stop: CancellationToken) -> Samples {
    let samples = Arc::new(Mutex::new(Vec::new()));
    let record = samples.clone();
    tokio::spawn(async move {
        while !stop.is_cancelled() {
            let sent = Instant::now();
            let answer = http_get(&address).await;
            record.lock().unwrap().push((sent, answer));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    samples
}

/// The dead-node timeline: kill -9 of node-2's kubelet → Unknown and tainted within the grace
/// period, its pod out of the endpoints at once and no new pod placed there, the pod evicted after
/// its toleration and replaced on node-1; the kubelet back → Ready, untainted, and the evicted
/// pod's processes stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_node_is_tainted_its_pods_leave_the_endpoints_and_are_evicted() {
    let _machine = crate::support::exclusive().await;
    let grace = format!("{}ms", GRACE.as_millis());
    let mut cluster = Cluster::builder()
        .processes(true)
        .nodes(2)
        .controller_manager_args(&["--node-monitor-grace-period", &grace])
        .start()
        .await
        .expect("cluster");
    let created = cluster
        .services()
        .create(&service("web").build())
        .await
        .expect("service");
    let address = format!(
        "{}:80",
        created.spec.and_then(|s| s.cluster_ip).expect("clusterIP")
    );
    let replica_sets: Api<ReplicaSet> = Api::namespaced(cluster.client(), "default");
    replica_sets
        .create(&web_replica_set(2))
        .await
        .expect("replicaset");
    let web = ListParams::default().labels("app=web");
    let both_ready = |pods: &[Pod]| pods.len() == 2 && pods.iter().all(p::is_ready);
    let pods = wait_for_all(&cluster.pods(), web.clone(), both_ready, RUNNING)
        .await
        .expect("2 ready");
    let nodes: BTreeSet<_> = pods.iter().filter_map(|pod| p::node(pod)).collect();
    assert_eq!(nodes.len(), 2, "one pod per node");
    let victim = pods
        .iter()
        .find(|pod| p::node(pod) == Some("node-2"))
        .expect("a pod on node-2");
    let victim_name = victim.metadata.name.clone().unwrap();
    let victim_ip = p::ip(victim).unwrap().to_string();
    let all_ips: BTreeSet<String> = pods
        .iter()
        .filter_map(|pod| p::ip(pod).map(String::from))
        .collect();
    wait_for(
        &cluster.endpoints(),
        "web",
        |e| ready_ips(e) == all_ips,
        RUNNING,
    )
    .await
    .expect("endpoints");
    http_answer(&address).await;
    let stop_load = CancellationToken::new();
    let samples = load(address, stop_load.clone());

    let killed = Instant::now();
    cluster
        .kill("kubelet-node-2", Signal::SIGKILL)
        .await
        .expect("kill -9 kubelet");
    let deadline = GRACE + Duration::from_secs(10);
    let unknown = wait_for(
        &cluster.nodes(),
        "node-2",
        |n| ready(n) == "Unknown",
        deadline,
    )
    .await
    .expect("node-2 Unknown");
    let not_ready_at = killed.elapsed();
    let reason = unknown.status.unwrap().conditions.unwrap()[0]
        .reason
        .clone();
    assert_eq!(reason.as_deref(), Some("NodeStatusUnknown"));
    let gone = |e: &Endpoints| !ready_ips(e).contains(&victim_ip);
    wait_for(&cluster.endpoints(), "web", gone, Duration::from_secs(10))
        .await
        .expect("out of endpoints");
    let endpoints_at = killed.elapsed();
    let tainted = |n: &Node| taint_keys(n).contains(&format!("{TAINT_UNREACHABLE}:NoSchedule"));
    let node = wait_for(&cluster.nodes(), "node-2", tainted, Duration::from_secs(10))
        .await
        .expect("tainted");
    assert!(taint_keys(&node).contains(&format!("{TAINT_UNREACHABLE}:NoExecute")));
    // A new pod goes to the live node.
    cluster
        .pods()
        .create(&pod("newcomer").build())
        .await
        .expect("create newcomer");
    let newcomer = wait_for(&cluster.pods(), "newcomer", p::is_scheduled, RUNNING)
        .await
        .expect("scheduled");
    assert_eq!(
        p::node(&newcomer),
        Some("node-1"),
        "nothing is scheduled on the dead node"
    );

    let evicted = |pod: &Pod| pod.metadata.deletion_timestamp.is_some();
    let timeout = Duration::from_secs(TOLERATION_SECONDS + 10);
    let victim_now = wait_for(&cluster.pods(), &victim_name, evicted, timeout)
        .await
        .expect("evicted");
    let evicted_at = killed.elapsed();
    assert_eq!(
        p::condition_reason(&victim_now, "DisruptionTarget"),
        Some("DeletionByTaintManager")
    );
    let replaced = |pods: &[Pod]| {
        let live: Vec<_> = pods
            .iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .collect();
        live.len() == 2
            && live
                .iter()
                .all(|pod| p::is_running(pod) && p::node(pod) == Some("node-1"))
    };
    wait_for_all(&cluster.pods(), web, replaced, RUNNING)
        .await
        .expect("replaced on node-1");
    let replaced_at = killed.elapsed();

    cluster
        .restart("kubelet-node-2")
        .await
        .expect("restart kubelet");
    let healthy = |n: &Node| {
        ready(n) == "True" && !taint_keys(n).iter().any(|t| t.contains(TAINT_UNREACHABLE))
    };
    wait_for(&cluster.nodes(), "node-2", healthy, RUNNING)
        .await
        .expect("node-2 Ready and untainted");
    let back_at = killed.elapsed();
    // The kubelet that came back finishes the pod evicted while it was away.
    wait_deleted(&cluster.pods(), &victim_name, RUNNING)
        .await
        .expect("evicted pod gone");
    assert!(
        cluster.pod_processes(&victim_name).is_empty(),
        "its processes were stopped"
    );
    stop_load.cancel();

    let samples = samples.lock().unwrap().clone();
    let failed = samples
        .iter()
        .filter(|(_, answer)| answer.is_none())
        .count();
    let last_victim = samples
        .iter()
        .filter(|(_, answer)| answer.as_deref().is_some_and(|a| a.contains(&victim_name)))
        .map(|(sent, _)| sent.saturating_duration_since(killed))
        .max();
    eprintln!(
        "dead-node timeline (grace {GRACE:?}, toleration {TOLERATION_SECONDS}s): NotReady +{not_ready_at:.1?}, \
         endpoints removed +{endpoints_at:.1?}, last answer from the dead node's pod +{last_victim:.1?}, \
         evicted +{evicted_at:.1?}, replacement Running +{replaced_at:.1?}, node Ready again +{back_at:.1?}; \
         {} requests, {failed} failed",
        samples.len()
    );
    assert!(
        not_ready_at < GRACE + Duration::from_secs(3),
        "NotReady within the grace period"
    );
    assert!(
        endpoints_at < not_ready_at + Duration::from_secs(2),
        "endpoints follow at once"
    );
    assert!(last_victim.is_none_or(|last| last < endpoints_at + Duration::from_secs(2)));
    // `timeAdded` has a one-second resolution (a metav1.Time), so the countdown may start up to
    // a second before the taint was written.
    let toleration = Duration::from_secs(TOLERATION_SECONDS);
    assert!(
        evicted_at + Duration::from_secs(1) >= not_ready_at + toleration,
        "not before the toleration: evicted +{evicted_at:?}, NotReady +{not_ready_at:?}"
    );
    stop_clean(cluster).await;
}

/// A kubelet that is alive writes its status again as soon as its Node says otherwise (here a
/// Ready=Unknown written by hand, as the node lifecycle controller would after a partition), not
/// five minutes later.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_live_kubelet_puts_ready_back_at_once() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    let unknown = json!({ "status": { "conditions": [{ "type": "Ready", "status": "Unknown",
        "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status." }] } });
    cluster
        .nodes()
        .patch_status("node-1", &minik_client::Patch::Strategic(unknown))
        .await
        .expect("mark Unknown");
    let back = wait_for(
        &cluster.nodes(),
        "node-1",
        |n| ready(n) == "True",
        Duration::from_secs(10),
    )
    .await
    .expect("Ready again");
    let reason = back.status.unwrap().conditions.unwrap()[0].reason.clone();
    assert_eq!(reason.as_deref(), Some("KubeletReady"));
    stop_clean(cluster).await;
}

/// Pod GC: finished pods beyond `--terminated-pod-gc-threshold` go, oldest first; a pod bound to a
/// node that does not exist goes after the quarantine.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pod_gc_deletes_the_oldest_finished_pods_and_orphans() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder()
        .without_services()
        .controller_manager_args(&[
            "--terminated-pod-gc-threshold",
            "2",
            "--pod-gc-orphan-quarantine",
            "1s",
        ])
        .start()
        .await
        .expect("cluster");
    let finished = |name: &str| {
        pod(name)
            .label("app", "done")
            .command(&["sh", "-c", "exit 0"])
            .restart_policy("Never")
            .build()
    };
    for name in ["done-1", "done-2", "done-3", "done-4"] {
        cluster
            .pods()
            .create(&finished(name))
            .await
            .expect("create");
        wait_for(&cluster.pods(), name, p::is_finished, RUNNING)
            .await
            .expect("finished");
        // Creation timestamps have a one-second resolution: keep them apart.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    let two_left = |pods: &[Pod]| pods.len() == 2;
    let done = ListParams::default().labels("app=done");
    let left = wait_for_all(&cluster.pods(), done, two_left, RUNNING)
        .await
        .expect("two left");
    let names: Vec<_> = left
        .iter()
        .filter_map(|pod| pod.metadata.name.as_deref())
        .collect();
    assert_eq!(names, ["done-3", "done-4"], "the oldest went first");

    let mut ghost = pod("ghost-pod").to_json();
    ghost["spec"]["nodeName"] = json!("ghost");
    let ghost: Pod = serde_json::from_value(ghost).expect("pod");
    cluster
        .pods()
        .create(&ghost)
        .await
        .expect("create ghost pod");
    wait_deleted(&cluster.pods(), "ghost-pod", RUNNING)
        .await
        .expect("orphan deleted");
    stop_clean(cluster).await;
}
