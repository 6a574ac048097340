//! `kill -9` of the apiserver under a mixed write load (reliability.md P1–P3): creates, updates and
//! deletes from several writers at once; after the restart every acknowledged write is there (a
//! ConfigMap holds at least the last counter it was acknowledged with, an acknowledged delete stays
//! deleted) and the revision has not gone backwards.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use minik_api::core::ConfigMap;
use minik_api::meta::ObjectMeta;
use minik_client::{Api, DeleteParams, ListParams};
use minik_tests::wait::eventually;
use minik_tests::Cluster;
use nix::sys::signal::Signal;

/// What the writers were told succeeded.
#[derive(Default)]
struct Acknowledged {
    /// The last counter each ConfigMap was acknowledged with.
    counters: BTreeMap<String, u64>,
    /// ConfigMaps whose delete was acknowledged.
    deleted: Vec<String>,
    /// ConfigMaps whose delete was sent (it may have happened without an answer).
    deleting: Vec<String>,
    /// The highest resourceVersion acknowledged.
    revision: u64,
    writes: usize,
}

fn config_map(name: &str, counter: u64) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some([("counter".to_string(), counter.to_string())].into()),
        ..ConfigMap::default()
    }
}

fn revision(object: &ConfigMap) -> u64 {
    let rv = object.metadata.resource_version.as_deref().unwrap_or("0");
    rv.parse().unwrap_or(0)
}

/// One writer: creates `w{writer}-{i}`, updates it three times, deletes every other one; stops at
/// the first error (the apiserver is gone).
async fn writer(api: Api<ConfigMap>, writer: usize, acked: Arc<Mutex<Acknowledged>>) {
    for i in 0.. {
        let name = format!("w{writer}-{i}");
        for counter in 0..4u64 {
            let result = if counter == 0 {
                api.create(&config_map(&name, 0)).await
            } else {
                api.replace(&name, &config_map(&name, counter)).await
            };
            let Ok(stored) = result else { return };
            let mut acked = acked.lock().unwrap();
            acked.counters.insert(name.clone(), counter);
            acked.revision = acked.revision.max(revision(&stored));
            acked.writes += 1;
        }
        if i % 2 == 0 {
            acked.lock().unwrap().deleting.push(name.clone());
            if api.delete(&name, &DeleteParams::default()).await.is_err() {
                return;
            }
            let mut acked = acked.lock().unwrap();
            acked.deleted.push(name);
            acked.writes += 1;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn apiserver_kill_9_under_mixed_writes_loses_no_acknowledged_write() {
    let mut cluster = Cluster::builder()
        .processes(true)
        .nodes(0)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let acked = Arc::new(Mutex::new(Acknowledged::default()));
    let writers: Vec<_> = (0..4)
        .map(|w| tokio::spawn(writer(api.clone(), w, acked.clone())))
        .collect();
    eventually("300 acknowledged writes", Duration::from_secs(60), || {
        let writes = acked.lock().unwrap().writes;
        async move { (writes >= 300).then_some(()) }
    })
    .await
    .expect("writes");
    cluster
        .kill("apiserver", Signal::SIGKILL)
        .await
        .expect("kill -9 apiserver");
    for writer in writers {
        writer.await.expect("writer");
    }
    cluster.restart("apiserver").await.expect("restart");

    let list = api.list(&ListParams::default()).await.expect("list");
    let list_revision: u64 = list
        .metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0);
    let stored: BTreeMap<String, u64> = list
        .items
        .iter()
        .map(|cm| {
            let counter = cm.data.as_ref().and_then(|d| d.get("counter"));
            let counter = counter.and_then(|c| c.parse().ok()).unwrap_or(0);
            (cm.metadata.name.clone().unwrap_or_default(), counter)
        })
        .collect();
    // The writers have all returned: take what they recorded.
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    let mut lost = Vec::new();
    for (name, counter) in &acked.counters {
        let deleted = acked.deleted.contains(name);
        match stored.get(name) {
            Some(_) if deleted => lost.push(format!("{name}: its delete was undone")),
            Some(found) if found < counter => {
                lost.push(format!("{name}: counter {found}, acknowledged {counter}"))
            }
            None if !acked.deleting.contains(name) => lost.push(format!("{name}: missing")),
            _ => {}
        }
    }
    eprintln!(
        "{} writes acknowledged before the kill ({} objects, {} deletes), {} lost; revision {} → {}",
        acked.writes,
        acked.counters.len(),
        acked.deleted.len(),
        lost.len(),
        acked.revision,
        list_revision
    );
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:#?}");
    assert!(
        list_revision >= acked.revision,
        "the revision went back: {list_revision} < {}",
        acked.revision
    );
    let report = cluster.stop().await.expect("stop");
    assert!(report.leftovers.is_empty(), "{:?}", report.leftovers);
}
