//! Restart safety, with components as real processes: `kill -9` a kubelet or the apiserver.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use minik_api::core::Event;
use minik_client::{Api, DeleteParams, ListParams};
use minik_tests::fixtures::pod;
use minik_tests::procs::{self, ProcInfo};
use minik_tests::wait::{pod as p, wait_deleted, wait_for};
use minik_tests::Cluster;
use nix::sys::signal::Signal;

use crate::support::{run_pod, stop_clean};

/// The single container process of a pod (pid and start time), asserting there is exactly one.
fn only_process(cluster: &Cluster, name: &str) -> ProcInfo {
    let found = cluster.pod_processes(name);
    assert_eq!(
        found.len(),
        1,
        "pod {name} has exactly one container process: {found:#?}"
    );
    found.into_iter().next().unwrap()
}

/// After `kill -9` of the kubelet and a restart, the running pods keep their PIDs and start
/// times, nothing is started twice, and the restarted kubelet runs new pods.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubelet_kill_9_and_restart_keeps_pids_and_starts_no_duplicate() {
    let _machine = crate::support::shared().await;
    let mut cluster = Cluster::builder()
        .processes(true)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let names = ["keep-1", "keep-2", "keep-3"];
    for name in names {
        run_pod(&cluster, &pod(name).port(8080).build()).await;
    }
    let before: BTreeMap<&str, ProcInfo> = names
        .iter()
        .map(|n| (*n, only_process(&cluster, n)))
        .collect();
    // A finished `Never` pod must not run again, and one that exits while the kubelet is
    // restarting must still have its exit code reported (the shim keeps it in exit.json).
    let never = |name: &str, script: &str| {
        pod(name)
            .command(&["sh", "-c", script])
            .restart_policy("Never")
            .build()
    };
    cluster
        .pods()
        .create(&never("done", "exit 0"))
        .await
        .expect("create done");
    wait_for(
        &cluster.pods(),
        "done",
        p::is_finished,
        Duration::from_secs(10),
    )
    .await
    .expect("done finished");
    run_pod(&cluster, &never("later", "sleep 2; exit 7")).await;

    cluster
        .kill("kubelet-node-1", Signal::SIGKILL)
        .await
        .expect("kill -9 kubelet");
    for name in names {
        assert!(
            procs::is_alive(before[name].pid),
            "pod {name} survives its kubelet"
        );
    }
    // While the kubelet is down: delete one running pod, and create then delete another one.
    cluster
        .pods()
        .delete("keep-3", &DeleteParams::default())
        .await
        .expect("delete keep-3");
    cluster
        .pods()
        .create(&pod("ghost").port(8080).build())
        .await
        .expect("create ghost");
    wait_for(
        &cluster.pods(),
        "ghost",
        p::is_scheduled,
        Duration::from_secs(10),
    )
    .await
    .expect("ghost bound");
    cluster
        .pods()
        .delete("ghost", &DeleteParams::default())
        .await
        .expect("delete ghost");

    cluster
        .restart("kubelet-node-1")
        .await
        .expect("restart kubelet");
    // A new pod reaching Running proves the restarted kubelet has synced its pods.
    run_pod(&cluster, &pod("after").port(8080).build()).await;
    wait_deleted(&cluster.pods(), "keep-3", Duration::from_secs(10))
        .await
        .expect("keep-3 finished deleting");
    wait_deleted(&cluster.pods(), "ghost", Duration::from_secs(10))
        .await
        .expect("ghost finished deleting");
    assert!(
        !procs::is_alive(before["keep-3"].pid),
        "the pod deleted while the kubelet was down is stopped"
    );
    let events: Api<Event> = Api::namespaced(cluster.client(), "default");
    let ghost_started = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .any(|e| {
            e.involved_object.name.as_deref() == Some("ghost")
                && e.reason.as_deref() == Some("Started")
        });
    assert!(
        !ghost_started,
        "a pod created and deleted while its kubelet was down never starts"
    );

    let done = cluster.pods().get("done").await.expect("get done");
    assert_eq!(
        (p::phase(&done), p::restarts(&done)),
        ("Succeeded", 0),
        "a finished pod does not run again"
    );
    let later = wait_for(
        &cluster.pods(),
        "later",
        p::is_finished,
        Duration::from_secs(10),
    )
    .await
    .expect("later finished");
    assert_eq!(
        (p::phase(&later), p::exit_code(&later)),
        ("Failed", Some(7)),
        "the exit code survives the restart"
    );
    let started = |name: &str, events: &[Event]| {
        events
            .iter()
            .filter(|e| {
                e.involved_object.name.as_deref() == Some(name)
                    && e.reason.as_deref() == Some("Started")
            })
            .count()
    };
    let events = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items;
    assert_eq!(started("done", &events), 1, "the finished pod started once");

    for name in ["keep-1", "keep-2"] {
        let now = only_process(&cluster, name);
        assert_eq!(
            (now.pid, now.start_time),
            (before[name].pid, before[name].start_time),
            "pod {name} kept its process"
        );
        let pod = cluster.pods().get(name).await.expect("get");
        assert!(p::is_running(&pod), "pod {name} is still Running");
        assert_eq!(p::restarts(&pod), 0, "pod {name} was not restarted");
    }
    stop_clean(cluster).await;
}

/// Every create the apiserver acknowledged before a `kill -9` is still there after its restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn apiserver_kill_9_loses_no_acknowledged_create() {
    let _machine = crate::support::shared().await;
    let mut cluster = Cluster::builder()
        .processes(true)
        .nodes(0)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let acknowledged = Arc::new(Mutex::new(Vec::<(String, u64)>::new()));
    let mut writers = Vec::new();
    for writer in 0..4 {
        let (pods, acknowledged) = (cluster.pods(), acknowledged.clone());
        writers.push(tokio::spawn(async move {
            for index in 0.. {
                let name = format!("durable-{writer}-{index}");
                match pods.create(&pod(&name).build()).await {
                    Ok(created) => {
                        let rv = created
                            .metadata
                            .resource_version
                            .as_deref()
                            .unwrap_or("0")
                            .parse()
                            .unwrap_or(0);
                        acknowledged.lock().unwrap().push((name, rv));
                    }
                    Err(_) => return, // the apiserver is gone: stop writing
                }
            }
        }));
    }
    // Kill it once 100 creates have been acknowledged (a watch cannot tell us that; the writers can).
    minik_tests::wait::eventually("100 acknowledged creates", Duration::from_secs(30), || {
        let count = acknowledged.lock().unwrap().len();
        async move { (count >= 100).then_some(()) }
    })
    .await
    .expect("creates");
    cluster
        .kill("apiserver", Signal::SIGKILL)
        .await
        .expect("kill -9 apiserver");
    for writer in writers {
        writer.await.expect("writer");
    }
    cluster
        .restart("apiserver")
        .await
        .expect("restart apiserver");

    let list = cluster
        .pods()
        .list(&ListParams::default())
        .await
        .expect("list");
    let stored: BTreeMap<String, u64> = list
        .items
        .iter()
        .map(|pod| {
            (
                pod.metadata.name.clone().unwrap(),
                pod.metadata
                    .resource_version
                    .as_deref()
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0),
            )
        })
        .collect();
    let acknowledged = acknowledged.lock().unwrap().clone();
    for (name, rv) in &acknowledged {
        assert!(
            stored.contains_key(name),
            "acknowledged create {name} (rv {rv}) survived the kill"
        );
    }
    let max_acked = acknowledged.iter().map(|(_, rv)| *rv).max().unwrap_or(0);
    eprintln!(
        "{} creates acknowledged before the kill, {} stored after the restart",
        acknowledged.len(),
        stored.len()
    );
    let list_rv: u64 = list
        .metadata
        .resource_version
        .as_deref()
        .unwrap_or("0")
        .parse()
        .unwrap_or(0);
    assert!(
        list_rv >= max_acked,
        "the revision never goes back: list rv {list_rv} < acknowledged {max_acked}"
    );
    // A new write gets a larger revision than anything acknowledged before the crash.
    let created = cluster
        .pods()
        .create(&pod("after-restart").build())
        .await
        .expect("create after restart");
    let new_rv: u64 = created.metadata.resource_version.unwrap().parse().unwrap();
    assert!(new_rv > max_acked);
    let _ = wait_for(
        &cluster.pods(),
        "after-restart",
        |_| true,
        Duration::from_secs(5),
    )
    .await;
    stop_clean(cluster).await;
}
