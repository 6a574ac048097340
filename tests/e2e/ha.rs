//! Three apiservers on one etcd behind the front door (issue 22, point 3): a watch that loses
//! its apiserver resumes on another with its last resourceVersion and loses or repeats nothing;
//! generateName under concurrency across apiservers never answers 409; the `kubernetes`
//! Endpoints list the live apiservers (lease reconciler); the scheduler and the kubelet keep
//! working through the door.
//!
//! Kubernetes counterpart: the HA control-plane tests of kubeadm's e2e and etcd's robustness
//! tests (kill a member under load, then check the watch history against the store).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt;
use minik_api::core::{ConfigMap, Endpoints};
use minik_api::meta::ObjectMeta;
use minik_client::{watcher, Api, Event, ListParams};
use minik_tests::fixtures::pod;
use minik_tests::wait::{eventually, pod as p, wait_for};
use minik_tests::Cluster;
use nix::sys::signal::Signal;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::support::{stop_clean, RUNNING};

/// A one-member etcd (Debian's `etcd-server`) on loopback ports in a temp dir, killed on drop.
struct Etcd {
    endpoint: String,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    probe.local_addr().expect("address").port()
}

impl Etcd {
    /// Starts etcd and waits for `/health`; `None` (with a SKIPPED line) if it is not installed.
    async fn start(test: &str) -> Option<Etcd> {
        let binary = ["/usr/bin/etcd", "/usr/local/bin/etcd"]
            .into_iter()
            .find(|p| std::path::Path::new(p).is_file());
        let Some(binary) = binary else {
            println!("SKIPPED {test}: no etcd binary (apt-get install etcd-server)");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("minik-etcd-")
            .tempdir()
            .expect("tempdir");
        let client = format!("http://127.0.0.1:{}", free_port());
        let peer = format!("http://127.0.0.1:{}", free_port());
        let log = std::fs::File::create(dir.path().join("etcd.log")).expect("log");
        let child = std::process::Command::new(binary)
            .arg("--name=ha")
            .arg(format!("--data-dir={}", dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=ha={peer}"))
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start etcd");
        let etcd = Etcd {
            endpoint: client,
            child,
            _dir: dir,
        };
        let health = format!("{}/health", etcd.endpoint);
        eventually("etcd's /health", Duration::from_secs(20), || async {
            let answer = reqwest::get(&health).await.ok()?.text().await.ok()?;
            answer.contains("true").then_some(())
        })
        .await
        .expect("etcd healthy");
        Some(etcd)
    }

    /// `etcd://127.0.0.1:PORT`, the apiservers' `--storage`.
    fn storage(&self) -> String {
        self.endpoint.replace("http://", "etcd://")
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the test's watcher saw: every Applied/Deleted event as (name, resourceVersion), and
/// how many times it (re)listed.
#[derive(Default, Clone)]
struct Seen {
    events: Vec<(String, u64)>,
    lists: usize,
    errors: usize,
}

fn rv(object: &ConfigMap) -> u64 {
    let text = object.metadata.resource_version.as_deref().unwrap_or("0");
    text.parse()
        .expect("numeric resourceVersion (an etcd revision)")
}

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("ha".into(), "seq".into())])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("v".into(), value.into())])),
        ..Default::default()
    }
}

/// Runs `op` until it succeeds (the apiserver behind a connection may have just died).
async fn retry<T, F, Fut>(mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = minik_client::Result<T>>,
{
    let found = eventually(
        "a write through the front door",
        Duration::from_secs(30),
        || {
            let attempt = op();
            async move { attempt.await.ok() }
        },
    );
    found.await.expect("write succeeded within 30 s")
}

/// Creates `seq-N` and updates every third one, until `stop`; returns the resourceVersion of
/// every acknowledged write. A retried create that finds its name taken was a write whose answer
/// was lost with its apiserver: the stored object's version is recorded instead.
async fn write_until(api: Api<ConfigMap>, stop: CancellationToken) -> Vec<u64> {
    let mut acknowledged = Vec::new();
    for i in 0.. {
        if stop.is_cancelled() {
            break;
        }
        let name = format!("seq-{i:05}");
        let created = retry(|| {
            let (api, name) = (api.clone(), name.clone());
            async move {
                match api.create(&config_map(&name, "1")).await {
                    Err(e) if e.is_already_exists() => api.get(&name).await,
                    other => other,
                }
            }
        })
        .await;
        acknowledged.push(rv(&created));
        if i % 3 == 0 {
            let updated = retry(|| {
                let (api, name, base) = (api.clone(), name.clone(), created.clone());
                async move {
                    let mut object = base;
                    object.data = Some(BTreeMap::from([("v".into(), "2".into())]));
                    match api.replace(&name, &object).await {
                        // The first attempt's write landed; its answer was lost.
                        Err(e) if e.is_conflict() => api.get(&name).await,
                        other => other,
                    }
                }
            })
            .await;
            acknowledged.push(rv(&updated));
        }
    }
    acknowledged
}

/// Follows the minik client's watcher; publishes what it saw after every event.
async fn watch_all(api: Api<ConfigMap>, seen: watch::Sender<Seen>, stop: CancellationToken) {
    let lp = ListParams::default().labels("ha=seq");
    let mut stream = std::pin::pin!(watcher(api, lp));
    loop {
        let next = tokio::select! {
            _ = stop.cancelled() => return,
            next = stream.next() => next,
        };
        let Some(next) = next else { return };
        seen.send_modify(|seen| match next {
            Ok(Event::Applied(object)) | Ok(Event::Deleted(object)) => {
                let name = object.metadata.name.clone().unwrap_or_default();
                seen.events.push((name, rv(&object)));
            }
            Ok(Event::Restarted(_)) => seen.lists += 1,
            Err(_) => seen.errors += 1,
        });
    }
}

/// Waits until the watcher has seen `more` events beyond what it has seen now.
async fn advance(seen: &mut watch::Receiver<Seen>, more: usize) {
    let target = seen.borrow().events.len() + more;
    tokio::time::timeout(
        Duration::from_secs(60),
        seen.wait_for(|s| s.events.len() >= target),
    )
    .await
    .expect("the watcher keeps seeing the writes")
    .expect("watcher alive");
}

/// The `kubernetes` Endpoints' addresses, as `IP:PORT`, sorted.
fn endpoint_addresses(endpoints: &Endpoints) -> Vec<SocketAddr> {
    let mut found: Vec<SocketAddr> = Vec::new();
    for subset in endpoints.subsets.iter().flatten() {
        for port in subset.ports.iter().flatten() {
            for address in subset.addresses.iter().flatten() {
                found.push(format!("{}:{}", address.ip, port.port).parse().unwrap());
            }
        }
    }
    found.sort();
    found
}

/// Waits until the `kubernetes` Endpoints list exactly `wanted`.
async fn endpoints_become(cluster: &Cluster, wanted: &[SocketAddr], bound: Duration) {
    let api: Api<Endpoints> = Api::namespaced(cluster.client(), "default");
    let mut wanted = wanted.to_vec();
    wanted.sort();
    eventually(
        "the kubernetes Endpoints list the live apiservers",
        bound,
        || async {
            let endpoints = api.get("kubernetes").await.ok()?;
            (endpoint_addresses(&endpoints) == wanted).then_some(())
        },
    )
    .await
    .expect("kubernetes Endpoints");
}

/// `generateName` creates from three clients at once (their connections spread over the
/// apiservers by the door): every one answers 201, none 409.
async fn generate_names(cluster: &Cluster, per_client: usize) -> usize {
    let creates = (0..3).map(|_| {
        let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
        async move {
            let creates = (0..per_client).map(|_| {
                let mut object = config_map("", "g");
                object.metadata.name = None;
                object.metadata.generate_name = Some("gen-".into());
                object.metadata.labels = Some(BTreeMap::from([("ha".into(), "gen".into())]));
                let api = api.clone();
                async move { api.create(&object).await }
            });
            futures::future::join_all(creates).await
        }
    });
    let results: Vec<_> = futures::future::join_all(creates)
        .await
        .into_iter()
        .flatten()
        .collect();
    for result in &results {
        if let Err(e) = result {
            panic!("a generateName create failed (409 would be a collision not retried): {e}");
        }
    }
    results.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_watch_survives_losing_its_apiserver_on_three_apiservers_over_etcd() {
    let _machine = crate::support::shared().await;
    let Some(etcd) = Etcd::start("ha::a_watch_survives_losing_its_apiserver").await else {
        return;
    };
    let mut cluster = Cluster::builder()
        .processes(true)
        .without_services()
        .storage(&etcd.storage())
        .apiservers(3)
        .start()
        .await
        .expect("start three apiservers on one etcd");
    let apiservers = cluster.apiserver_addresses();
    assert_eq!(apiservers.len(), 3);
    endpoints_become(&cluster, &apiservers, Duration::from_secs(20)).await;

    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let (stop, watch_stop) = (CancellationToken::new(), CancellationToken::new());
    let (seen_tx, mut seen) = watch::channel(Seen::default());
    let watching = tokio::spawn(watch_all(api.clone(), seen_tx, watch_stop.clone()));
    let writing = tokio::spawn(write_until(api.clone(), stop.clone()));
    advance(&mut seen, 10).await;
    assert_eq!(generate_names(&cluster, 40).await, 120);

    // Every apiserver dies once (the first comes back), so wherever the watch's connection was,
    // it was cut at least once and resumed through the door on another apiserver.
    for (victim, come_back) in [
        ("apiserver-1", true),
        ("apiserver-2", false),
        ("apiserver-3", false),
    ] {
        cluster
            .kill(victim, Signal::SIGKILL)
            .await
            .expect("kill -9");
        tracing::info!(victim, "killed");
        advance(&mut seen, 15).await;
        if come_back {
            cluster.restart(victim).await.expect("restart");
            advance(&mut seen, 15).await;
        }
    }

    stop.cancel();
    let acknowledged = writing.await.expect("writer");
    let last = *acknowledged.iter().max().expect("some writes");
    tokio::time::timeout(
        Duration::from_secs(30),
        seen.wait_for(|s| s.events.last().is_some_and(|(_, rv)| *rv >= last)),
    )
    .await
    .expect("the watcher reaches the last write")
    .expect("watcher alive");
    watch_stop.cancel();
    watching.await.expect("watcher");
    let seen = seen.borrow().clone();
    check_history(&api, &seen, &acknowledged).await;

    // The cluster still works through the door with one apiserver left: a pod is scheduled,
    // started and reported Running, and the dead apiservers leave the Endpoints.
    cluster
        .pods()
        .create(&pod("after-failover").build())
        .await
        .expect("create pod");
    wait_for(&cluster.pods(), "after-failover", p::is_running, RUNNING)
        .await
        .expect("pod Running through the front door");
    // A killed apiserver's lease lives 15 s (upstream's TTL) after its last renewal.
    let bound = Duration::from_secs(30);
    endpoints_become(&cluster, &apiservers[..1], bound).await;
    stop_clean(cluster).await;
    drop(etcd);
}

/// Every event once, in order, and none missing: resourceVersions strictly increase, every
/// acknowledged write is an event, and each object's last event is its state in the final list.
async fn check_history(api: &Api<ConfigMap>, seen: &Seen, acknowledged: &[u64]) {
    assert_eq!(
        seen.lists, 1,
        "the watch never had to relist (no 410): {} lists",
        seen.lists
    );
    let revisions: Vec<u64> = seen.events.iter().map(|(_, rv)| *rv).collect();
    for pair in revisions.windows(2) {
        assert!(
            pair[0] < pair[1],
            "events in order, none repeated: {} then {}",
            pair[0],
            pair[1]
        );
    }
    let seen_revisions: BTreeSet<u64> = revisions.iter().copied().collect();
    let missing: Vec<&u64> = acknowledged
        .iter()
        .filter(|rv| !seen_revisions.contains(rv))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged writes the watch never delivered: {missing:?}"
    );
    let last_by_name: BTreeMap<&str, u64> = seen
        .events
        .iter()
        .map(|(name, rv)| (name.as_str(), *rv))
        .collect();
    let listed = api
        .list(&ListParams::default().labels("ha=seq"))
        .await
        .expect("final list");
    assert_eq!(
        listed.items.len(),
        last_by_name.len(),
        "one object per name the watch saw"
    );
    for object in &listed.items {
        let name = object.metadata.name.as_deref().unwrap_or_default();
        assert_eq!(
            last_by_name.get(name),
            Some(&rv(object)),
            "{name}: the watch's last event is the stored state"
        );
    }
    println!(
        "ha: {} events, {} acknowledged writes, {} watch errors while apiservers died, exactly once in order",
        seen.events.len(),
        acknowledged.len(),
        seen.errors
    );
}
