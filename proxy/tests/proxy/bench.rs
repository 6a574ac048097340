//! Micro-benchmarks (ignored by default): bulk throughput through the proxy as a ratio of a direct
//! loopback connection, and the latency the proxy adds per request. Run with
//! `cargo test -p minik-proxy --test proxy -- --ignored --nocapture bench`.
//!
//! Client and backend are plain blocking sockets on their own threads, so the proxy's runtime is
//! the only async code measured; both paths are measured in the same run, alternately.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use crate::support::*;

const BULK_BYTES: usize = 1 << 30;
const CHUNK: usize = 256 * 1024;
const ROUND_TRIPS: usize = 5_000;
const MESSAGE: usize = 64;

/// Bulk throughput: proxied vs direct.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark"]
async fn bench_bulk_throughput_through_the_proxy_vs_direct() {
    let backend = start_sink("127.244.9.61");
    let proxied = proxy_to(&backend, "bulk", "127.96.250.31").await;
    let (mut direct_best, mut proxied_best) = (0f64, 0f64);
    let (mut direct_cpu, mut proxied_cpu) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..3 {
        let (rate, cpu) = bulk(backend).await;
        direct_best = direct_best.max(rate);
        direct_cpu += cpu;
        let (rate, cpu) = bulk(proxied.1).await;
        proxied_best = proxied_best.max(rate);
        proxied_cpu += cpu;
    }
    let gib = |rate: f64| rate / (1u64 << 30) as f64;
    println!(
        "bulk: direct {:.2} GiB/s, proxied {:.2} GiB/s, ratio {:.0} %",
        gib(direct_best),
        gib(proxied_best),
        100.0 * proxied_best / direct_best
    );
    // CPU time of the whole process (client, backend and proxy threads) per GiB moved: less
    // sensitive than wall-clock rates to other load on a small machine.
    let per_gib =
        |cpu: Duration| cpu.as_secs_f64() / 3.0 / (BULK_BYTES as f64 / (1u64 << 30) as f64);
    println!(
        "bulk: CPU per GiB: direct {:.3} s, proxied {:.3} s, ratio {:.0} %",
        per_gib(direct_cpu),
        per_gib(proxied_cpu),
        100.0 * direct_cpu.as_secs_f64() / proxied_cpu.as_secs_f64()
    );
}

/// User + system CPU time of this process so far, from `/proc/self/stat` (clock ticks, 100 Hz).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the command name (which is in parentheses and may hold spaces).
    let after_name = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Request latency on an established connection, and for a new connection per request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark"]
async fn bench_added_latency_per_request() {
    let backend = start_echo("127.244.9.62");
    let proxied = proxy_to(&backend, "latency", "127.96.250.32").await;
    let direct_kept = percentile(round_trips(backend).await, 50);
    let proxied_kept = percentile(round_trips(proxied.1).await, 50);
    let direct_new = percentile(connect_round_trips(backend).await, 50);
    let proxied_new = percentile(connect_round_trips(proxied.1).await, 50);
    println!(
        "latency p50, kept-alive request: direct {direct_kept:?}, proxied {proxied_kept:?}, added {:?}",
        proxied_kept.saturating_sub(direct_kept)
    );
    println!(
        "latency p50, new connection per request: direct {direct_new:?}, proxied {proxied_new:?}, added {:?}",
        proxied_new.saturating_sub(direct_new)
    );
}

/// A proxier forwarding a service to `backend`; returns it (keep it alive) and its address.
async fn proxy_to(backend: &SocketAddr, name: &str, cluster_ip: &str) -> (Harness, SocketAddr) {
    let mut harness = Harness::new();
    harness
        .proxier
        .on_service_update(&service(name, cluster_ip, 18080));
    harness.proxier.on_slices_update(&slices(name, &[*backend]));
    let listen = harness.state.wait_for_listener(&port_name(name)).await;
    (harness, listen)
}

/// A backend that reads each connection to the end, then answers one byte.
fn start_sink(ip: &str) -> SocketAddr {
    serve_threads(ip, |mut stream| {
        let mut buffer = vec![0u8; CHUNK];
        while matches!(stream.read(&mut buffer), Ok(n) if n > 0) {}
        let _ = stream.write_all(b"k");
    })
}

/// A backend that echoes fixed-size messages.
fn start_echo(ip: &str) -> SocketAddr {
    serve_threads(ip, |mut stream| {
        let _ = stream.set_nodelay(true);
        let mut message = [0u8; MESSAGE];
        while stream.read_exact(&mut message).is_ok() {
            if stream.write_all(&message).is_err() {
                break;
            }
        }
    })
}

/// A blocking accept loop on `ip:0`, one thread per connection; lives until the process ends.
fn serve_threads(ip: &str, handle: fn(TcpStream)) -> SocketAddr {
    let listener = TcpListener::bind((ip, 0)).expect("bind backend");
    let address = listener.local_addr().expect("address");
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let spawned = thread::Builder::new()
                .name("backend".into())
                .spawn(move || handle(stream));
            spawned.expect("spawn a backend thread");
        }
    });
    address
}

/// Sends `BULK_BYTES` and waits for the sink's answer; returns bytes per second and the CPU time
/// the process spent meanwhile.
async fn bulk(address: SocketAddr) -> (f64, Duration) {
    let cpu_before = process_cpu();
    let elapsed = blocking(move || {
        let chunk = vec![7u8; CHUNK];
        let started = Instant::now();
        let mut stream = TcpStream::connect(address).expect("connect");
        for _ in 0..BULK_BYTES / CHUNK {
            stream.write_all(&chunk).expect("write");
        }
        stream
            .shutdown(std::net::Shutdown::Write)
            .expect("shutdown");
        let mut answer = [0u8; 1];
        stream.read_exact(&mut answer).expect("the sink answered");
        started.elapsed()
    })
    .await;
    (
        BULK_BYTES as f64 / elapsed.as_secs_f64(),
        process_cpu() - cpu_before,
    )
}

/// `ROUND_TRIPS` request/response times on one connection.
async fn round_trips(address: SocketAddr) -> Vec<Duration> {
    blocking(move || {
        let mut stream = TcpStream::connect(address).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        (0..ROUND_TRIPS)
            .map(|_| one_round_trip(&mut stream))
            .collect()
    })
    .await
}

/// Request/response times including the connect, one connection per request.
async fn connect_round_trips(address: SocketAddr) -> Vec<Duration> {
    blocking(move || {
        (0..ROUND_TRIPS / 5)
            .map(|_| {
                let started = Instant::now();
                let mut stream = TcpStream::connect(address).expect("connect");
                stream.set_nodelay(true).expect("nodelay");
                one_round_trip(&mut stream);
                started.elapsed()
            })
            .collect()
    })
    .await
}

fn one_round_trip(stream: &mut TcpStream) -> Duration {
    let mut message = [1u8; MESSAGE];
    let started = Instant::now();
    stream.write_all(&message).expect("write");
    stream.read_exact(&mut message).expect("read");
    started.elapsed()
}

fn percentile(mut samples: Vec<Duration>, p: usize) -> Duration {
    samples.sort();
    samples[(samples.len() - 1) * p / 100]
}

/// Runs the client side on its own OS thread (named `client`, for `perf`), awaited without
/// blocking the proxy's runtime.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    thread::Builder::new()
        .name("client".into())
        .spawn(move || {
            let _ = done_tx.send(work());
        })
        .expect("spawn the client thread");
    done_rx.await.expect("benchmark thread")
}
