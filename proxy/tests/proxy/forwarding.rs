//! The byte path of one connection (`forward_bidirectional`) on real loopback sockets: small
//! exchanges (the copy path), bulk data (the switch to `splice`), and half-closes passed on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use minik_proxy::forward::forward_bidirectional;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::support::PATIENCE;

/// What a test holds: the client's end, the backend's end, and the forwarding task with its
/// byte counters (client → backend, backend → client).
struct Forwarded {
    client: TcpStream,
    backend: TcpStream,
    task: JoinHandle<std::io::Result<()>>,
    counters: Arc<(AtomicU64, AtomicU64)>,
}

/// Two connected socket pairs on 127.244.9.x with `forward_bidirectional` between them.
async fn forwarded() -> Forwarded {
    let front = TcpListener::bind("127.244.9.71:0").await.unwrap();
    let back = TcpListener::bind("127.244.9.72:0").await.unwrap();
    let client = TcpStream::connect(front.local_addr().unwrap())
        .await
        .unwrap();
    let (mut proxy_client, _) = front.accept().await.unwrap();
    let mut proxy_backend = TcpStream::connect(back.local_addr().unwrap())
        .await
        .unwrap();
    let (backend, _) = back.accept().await.unwrap();
    let counters = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let shared = counters.clone();
    let task = tokio::spawn(async move {
        let (bytes_in, bytes_out) = (&shared.0, &shared.1);
        forward_bidirectional(&mut proxy_client, &mut proxy_backend, bytes_in, bytes_out).await
    });
    Forwarded {
        client,
        backend,
        task,
        counters,
    }
}

/// Many request/answer exchanges on one connection arrive intact and in order, and are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_exchanges_are_copied_both_ways() {
    let Forwarded {
        mut client,
        mut backend,
        task,
        counters,
    } = forwarded().await;
    for round in 0..200u32 {
        let request = format!("GET /{round} HTTP/1.1\r\n\r\n");
        client.write_all(request.as_bytes()).await.unwrap();
        let mut got = vec![0; request.len()];
        tokio::time::timeout(PATIENCE, backend.read_exact(&mut got))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, request.as_bytes());
        let answer = format!("ok {round}\n");
        backend.write_all(answer.as_bytes()).await.unwrap();
        let mut got = vec![0; answer.len()];
        tokio::time::timeout(PATIENCE, client.read_exact(&mut got))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, answer.as_bytes());
    }
    drop(client);
    drop(backend);
    let ended = tokio::time::timeout(PATIENCE, task).await;
    assert!(
        ended.is_ok(),
        "forwarding did not end when both sides closed"
    );
    let sent: usize = (0..200)
        .map(|r| format!("GET /{r} HTTP/1.1\r\n\r\n").len())
        .sum();
    assert_eq!(counters.0.load(Ordering::Relaxed), sent as u64);
}

/// Bulk data (far more than the copy buffer, so the direction switches to splice) arrives byte
/// for byte, and the client's EOF reaches the backend, which can still answer afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_data_is_spliced_intact_and_half_closes_are_passed_on() {
    let Forwarded {
        mut client,
        mut backend,
        task,
        counters,
    } = forwarded().await;
    let payload: Vec<u8> = (0..8 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let sent = payload.clone();
    let writer = tokio::spawn(async move {
        client.write_all(&sent).await.unwrap();
        client.shutdown().await.unwrap(); // half-close: the backend must see EOF
        client
    });
    let mut received = Vec::new();
    tokio::time::timeout(PATIENCE, backend.read_to_end(&mut received))
        .await
        .expect("the backend saw EOF")
        .unwrap();
    assert!(received == payload, "bulk bytes changed on the way");
    let mut client = writer.await.unwrap();
    backend.write_all(b"after eof\n").await.unwrap();
    drop(backend);
    let mut answer = Vec::new();
    tokio::time::timeout(PATIENCE, client.read_to_end(&mut answer))
        .await
        .expect("the client saw the answer and EOF")
        .unwrap();
    assert_eq!(answer, b"after eof\n");
    tokio::time::timeout(PATIENCE, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(counters.0.load(Ordering::Relaxed), payload.len() as u64);
    assert_eq!(counters.1.load(Ordering::Relaxed), 10);
}
