//! Unit tests and the durability benchmark for the sled backend (`sled.rs`): reopen keeps data
//! and revisions, concurrent writers share one flush, events wait for the flush.
//!
//! Kubernetes counterpart: etcd's `server/storage/mvcc/kvstore_test.go` (restore keeps the
//! revision) and its `tools/benchmark put` figures. A real `kill -9` of the apiserver process is
//! tested by the integration suite, not here.

use super::*;
use serde_json::json;

fn pod(name: &str) -> Value {
    json!({"kind": "Pod", "metadata": {"name": name}})
}

fn epochs(s: &SledStorage) -> u64 {
    *s.inner.epoch.borrow()
}

#[tokio::test]
async fn reopen_keeps_objects_and_revisions_keep_growing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (kept, last) = {
        let s = SledStorage::open(dir.path(), 100).expect("open");
        let kept = s
            .create("/registry/pods/a", pod("a"))
            .await
            .expect("create a");
        s.create("/registry/pods/b", pod("b"))
            .await
            .expect("create b");
        // The newest write is a delete: only the persisted counter remembers its revision.
        let last = s.delete("/registry/pods/b", None).await.expect("delete b");
        (kept, last.revision)
    };
    let s = SledStorage::open(dir.path(), 100).expect("reopen");
    assert_eq!(s.current_revision(), last);
    assert_eq!(s.get("/registry/pods/a").expect("get"), Some(kept));
    assert_eq!(s.get("/registry/pods/b").expect("get"), None);
    let (items, revision) = s.list("/registry/").expect("list");
    assert_eq!((items.len(), revision), (1, last));
    let next = s
        .create("/registry/pods/c", pod("c"))
        .await
        .expect("create c");
    assert_eq!(next.revision, last + 1);
    // History is not persisted: resuming from before the restart is a 410, from it is fine.
    assert!(matches!(s.watch("/", last - 1), Err(Error::Expired { .. })));
    assert!(s.watch("/", last).is_ok());
}

#[tokio::test]
async fn after_a_restart_revisions_continue_from_the_newest_write_of_any_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let last = {
        let s = SledStorage::open(dir.path(), 100).expect("open");
        s.create("/registry/pods/a", pod("a")).await.expect("a");
        s.create("/registry/pods/b", pod("b")).await.expect("b");
        s.delete("/registry/pods/b", None).await.expect("delete b");
        // Written after the removal: only the object itself carries this revision.
        let updated = s
            .update("/registry/pods/a", pod("a"), None)
            .await
            .expect("update a");
        updated.revision
    };
    let s = SledStorage::open(dir.path(), 100).expect("reopen");
    assert_eq!(s.current_revision(), last);
    let next = s.create("/registry/pods/c", pod("c")).await.expect("c");
    assert_eq!(next.revision, last + 1);
}

#[test]
fn a_database_held_open_is_refused_after_the_lock_wait() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _held = SledStorage::open(dir.path(), 100).expect("open");
    let started = std::time::Instant::now();
    let second = SledStorage::open(dir.path(), 100);
    assert!(
        matches!(&second, Err(Error::Backend(m)) if m.contains("could not acquire lock")),
        "{:?}",
        second.err()
    );
    assert!(started.elapsed() >= LOCK_PATIENCE);
}

#[tokio::test]
async fn concurrent_writes_share_one_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = SledStorage::open(dir.path(), 100).expect("open");
    let mut watch = s.watch("/", 0).expect("watch");
    // Each write is applied when called; awaiting them together makes the first start a flush
    // epoch that covers all 64.
    let writes: Vec<_> = (0..64)
        .map(|i| s.create(&format!("/registry/pods/p{i}"), pod("p")))
        .collect();
    let records = futures::future::try_join_all(writes).await.expect("writes");
    assert_eq!(records.len(), 64);
    assert_eq!(epochs(&s), 1, "64 concurrent writers, one fsync");
    assert_eq!(s.current_revision(), 64);
    use futures::StreamExt;
    let first = watch.next().await.expect("event").expect("ok");
    assert_eq!(first.revision, 1);
}

#[tokio::test]
async fn events_are_published_only_after_the_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = SledStorage::open(dir.path(), 100).expect("open");
    let write = s.create("/registry/pods/a", pod("a"));
    // Applied to sled (readable) but not yet flushed: no event, not acknowledged.
    assert!(s.get("/registry/pods/a").expect("get").is_some());
    assert_eq!(s.current_revision(), 0);
    write.await.expect("create");
    assert_eq!(s.current_revision(), 1);
}

/// Durable write latency and group-commit throughput on this machine's disk. Run with
/// `cargo test -p minik-apiserver --lib sled::unit::measure -- --ignored --nocapture`
/// (set `MINIK_BENCH_DIR` to pick the disk; default `/var/tmp`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_durable_write_latency_and_group_commit_throughput() {
    let base = std::env::var("MINIK_BENCH_DIR").unwrap_or_else(|_| "/var/tmp".into());
    let dir = tempfile::tempdir_in(base).expect("tempdir");
    let s = SledStorage::open(dir.path(), 10_000).expect("open");
    let body = json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "y".repeat(400)}});
    let mut latencies = Vec::new();
    for i in 0..500 {
        let start = std::time::Instant::now();
        s.create(&format!("/registry/pods/single-{i}"), body.clone())
            .await
            .expect("create");
        latencies.push(start.elapsed());
    }
    latencies.sort();
    let pct = |p: usize| latencies[latencies.len() * p / 100];
    println!(
        "single writer: p50 {:?} p99 {:?} ({} epochs)",
        pct(50),
        pct(99),
        epochs(&s)
    );

    let before = epochs(&s);
    let start = std::time::Instant::now();
    let tasks: Vec<_> = (0..64)
        .map(|w| {
            let (s, body) = (s.clone(), body.clone());
            tokio::spawn(async move {
                for i in 0..100 {
                    s.create(&format!("/registry/pods/w{w}-{i}"), body.clone())
                        .await
                        .expect("create");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("writer");
    }
    let elapsed = start.elapsed();
    println!(
        "64 writers x 100: {:.0} writes/s, {} flushes for 6400 writes, {:?}",
        6400.0 / elapsed.as_secs_f64(),
        epochs(&s) - before,
        elapsed
    );
}
