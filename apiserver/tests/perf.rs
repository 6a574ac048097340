//! Measurements, not checks: run with `cargo test -p minik-apiserver --test perf -- --ignored --nocapture`.
//! Write latency of durable creates (one client, every write flushed before the answer) and watch
//! throughput (events per second a single HTTP watcher receives while 8 writers write).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{pod, rv, TestServer, PODS};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "measurement; run by hand"]
async fn measure_write_latency_and_watch_throughput() {
    let server = Arc::new(TestServer::start().await);
    let mut latencies = Vec::new();
    for i in 0..500 {
        let started = Instant::now();
        let (code, _) = server.post(PODS, &pod(&format!("lat-{i}"))).await;
        latencies.push(started.elapsed());
        assert_eq!(code, 201);
    }
    latencies.sort();
    println!(
        "durable create latency, 1 client, 500 pods: p50 {:?} p99 {:?} max {:?}",
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        latencies[latencies.len() - 1]
    );

    let (_, list) = server.get(PODS).await;
    let start = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut watch = server
        .watch(&format!("{PODS}?watch=true&resourceVersion={start}"))
        .await;
    let total = 4000;
    let started = Instant::now();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let server = server.clone();
            tokio::spawn(async move {
                for i in 0..total / 8 {
                    assert_eq!(server.post(PODS, &pod(&format!("tp-{w}-{i}"))).await.0, 201);
                }
            })
        })
        .collect();
    let mut received = 0;
    let mut last = 0;
    while received < total {
        let event = watch.next().await.expect("watch open");
        last = rv(&event["object"]);
        received += 1;
    }
    let elapsed = started.elapsed();
    for writer in writers {
        writer.await.unwrap();
    }
    println!(
        "watch throughput: {total} events (8 writers) in {elapsed:?} = {:.0} events/s (last rv {last})",
        total as f64 / elapsed.as_secs_f64()
    );

    // Replay: a watch resuming from the start of those writes reads them from the event log.
    let started = Instant::now();
    let mut replay = server
        .watch(&format!("{PODS}?watch=true&resourceVersion={start}"))
        .await;
    for _ in 0..total {
        replay.next().await.expect("replay");
    }
    let elapsed = started.elapsed();
    println!(
        "watch replay: {total} events in {elapsed:?} = {:.0} events/s",
        total as f64 / elapsed.as_secs_f64()
    );
}
