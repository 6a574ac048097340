//! Slow clients cannot starve the API server (issue 16, docs/security.md#h10): 2,000 connections
//! trickling a request a byte every two seconds stay open while `GET /api/v1/pods` keeps
//! answering quickly and the server's open files stay within its connection cap; a body that
//! trickles past the body-read timeout is a 408 that closes the connection.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SLOW_CLIENTS: usize = 2_000;
/// The server's cap, above the slow clients so that new clients are still accepted.
const MAX_CONNECTIONS: usize = 2_200;
const TIMEOUT: Duration = Duration::from_secs(30);

/// The test process holds 2,000 sockets: raise the soft file limit to the hard one.
fn raise_file_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).expect("setrlimit");
}

fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| dir.count())
        .unwrap_or(0)
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Times one `GET /api/v1/pods` on a new connection (as a new client would open one).
async fn timed_get(url: &str) -> Duration {
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let started = Instant::now();
    let response = tokio::time::timeout(TIMEOUT, http.get(url).send())
        .await
        .expect("answered in time")
        .expect("answered");
    assert_eq!(response.status().as_u16(), 200);
    response.bytes().await.unwrap();
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_slow_connections_do_not_starve_the_api() {
    raise_file_limit();
    let dir = tempfile::tempdir().unwrap();
    let address = format!("127.0.0.1:{}", free_port());
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_minik-apiserver"))
        .args(["--listen", &address, "--data-dir"])
        .arg(dir.path())
        .args(["--max-connections", &MAX_CONNECTIONS.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("apiserver starts");
    let pid = server.id().unwrap();
    let url = format!("http://{address}/api/v1/pods");
    tokio::time::timeout(TIMEOUT, async {
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        while http
            .get(format!("http://{address}/readyz"))
            .send()
            .await
            .is_err()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("apiserver ready");
    let baseline = open_files(pid);

    let mut slow = Vec::with_capacity(SLOW_CLIENTS);
    for _ in 0..SLOW_CLIENTS {
        slow.push(TcpStream::connect(&address).await.expect("connect"));
    }
    // A request whose headers never end, one byte every two seconds.
    let trickle = b"GET /api/v1/pods HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaa";
    let mut latencies = Vec::new();
    for round in 0..6 {
        let byte = &trickle[round..=round];
        for stream in &mut slow {
            stream.write_all(byte).await.expect("still open");
        }
        for _ in 0..4 {
            latencies.push(timed_get(&url).await);
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    let during = open_files(pid);
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    let worst = latencies[latencies.len() - 1];
    eprintln!(
        "slowloris: {SLOW_CLIENTS} slow connections, GET /api/v1/pods median {median:?}, worst {worst:?}; server fds {baseline} → {during}"
    );
    // Every slow connection is held (none was dropped), and no more files than the cap allows.
    assert!(during >= SLOW_CLIENTS, "{during} fds");
    assert!(during <= baseline + MAX_CONNECTIONS, "{during} fds");
    assert!(median < Duration::from_millis(100), "median {median:?}");
    assert!(worst < Duration::from_secs(1), "worst {worst:?}");

    drop(slow);
    tokio::time::timeout(TIMEOUT, async {
        while open_files(pid) > baseline + 8 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the server closed the slow connections once their clients left");
    server.kill().await.unwrap();
}

/// Headers sent, body trickling: 408 after the body-read timeout, and the connection is closed.
#[tokio::test]
async fn a_body_that_trickles_past_the_timeout_is_408() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let options = minik_apiserver::ServeOptions {
        body_read_timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let backend = minik_apiserver::StorageBackend::memory(100);
    tokio::spawn(minik_apiserver::serve_with(
        listener,
        backend,
        options,
        shutdown.clone(),
    ));
    let mut stream = TcpStream::connect(address).await.unwrap();
    let head = "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{";
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let started = Instant::now();
    tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut answer))
        .await
        .expect("the server answered and closed")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"reason\":\"Timeout\""), "{answer}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    shutdown.cancel();
}
