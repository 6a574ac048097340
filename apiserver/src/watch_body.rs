//! The body of a watch response: the watch's loop runs inside it, on the connection's task.
//!
//! Kubernetes counterpart: `serveWatch` in `k8s.io/apiserver/pkg/endpoints/handlers/watch.go`,
//! which runs the watch loop in the request's own goroutine: it takes each event from the
//! watcher's channel, writes it into the response, and flushes only when no further event is
//! queued (`if len(ch) == 0 { flusher.Flush() }`).
//!
//! minik's watch loop (`run_watch` in `watch.rs`) is a future that queues lines on a bounded
//! channel. It does not get a task of its own: [`WatchBody`] polls it whenever hyper asks for the
//! next chunk, then hands hyper every line queued by then as one chunk. So an event costs each
//! watch one wake-up (the connection's) rather than two (the loop's, then the connection's), and
//! a watch a few events behind gets them in one chunk: one TLS record and one socket write, as
//! upstream's single flush does.
//!
//! Why the queue needs no waker of its own: the loop only runs while the body polls it, and the
//! body looks at the queue right after. While the queue is full the loop waits for room on the
//! channel, and the body's draining of it wakes the connection again.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Bytes;
use futures::future::BoxFuture;
use futures::Stream;
use tokio::sync::mpsc;

/// The most bytes of queued lines gathered into one chunk.
const CHUNK_BYTES: usize = 64 * 1024;

/// A watch response body: drives the watch loop `producer` and sends what it queued on `lines`.
pub(crate) struct WatchBody {
    /// The watch loop, until it ends (it then drops the sending side of `lines`).
    producer: Option<BoxFuture<'static, ()>>,
    lines: mpsc::Receiver<Bytes>,
}

impl WatchBody {
    pub(crate) fn new(producer: BoxFuture<'static, ()>, lines: mpsc::Receiver<Bytes>) -> Self {
        WatchBody {
            producer: Some(producer),
            lines,
        }
    }
}

impl Stream for WatchBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(producer) = this.producer.as_mut() {
            if producer.as_mut().poll(cx).is_ready() {
                this.producer = None;
            }
        }
        match gather(&mut this.lines) {
            Some(chunk) => Poll::Ready(Some(Ok(chunk))),
            None if this.producer.is_none() => Poll::Ready(None),
            // The loop is waiting (for an event, a timer, room, or shutdown) and woke nothing
            // into the queue: its wakers are the connection's, so it comes back here.
            None => Poll::Pending,
        }
    }
}

/// Every line queued now (up to [`CHUNK_BYTES`]) as one chunk; `None` if none is.
fn gather(lines: &mut mpsc::Receiver<Bytes>) -> Option<Bytes> {
    let first = lines.try_recv().ok()?;
    let Ok(second) = lines.try_recv() else {
        return Some(first);
    };
    let mut chunk = Vec::with_capacity(CHUNK_BYTES.min(16 * (first.len() + second.len())));
    chunk.extend_from_slice(&first);
    chunk.extend_from_slice(&second);
    while chunk.len() < CHUNK_BYTES {
        match lines.try_recv() {
            Ok(line) => chunk.extend_from_slice(&line),
            Err(_) => break,
        }
    }
    Some(Bytes::from(chunk))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{FutureExt, StreamExt};

    fn line(n: usize) -> Bytes {
        Bytes::from(format!("{{\"n\":{n}}}\n"))
    }

    /// Lines queued while the loop ran arrive as one chunk, in order, and the body ends with the
    /// loop once everything queued is out.
    #[tokio::test]
    async fn queued_lines_go_out_as_one_chunk_then_the_body_ends() {
        let (tx, rx) = mpsc::channel(8);
        let producer = async move {
            for n in 0..3 {
                tx.send(line(n)).await.expect("body alive");
            }
        };
        let mut body = WatchBody::new(producer.boxed(), rx);
        let chunk = body.next().await.expect("a chunk").expect("infallible");
        assert_eq!(&chunk[..], b"{\"n\":0}\n{\"n\":1}\n{\"n\":2}\n");
        assert!(
            body.next().await.is_none(),
            "the loop ended, so does the body"
        );
    }

    /// A loop that filled the queue waits for room, and resumes once the body has sent the queue:
    /// nothing is lost or reordered across the wait.
    #[tokio::test]
    async fn a_loop_blocked_on_a_full_queue_resumes_after_the_body_drains_it() {
        let (tx, rx) = mpsc::channel(2);
        let producer = async move {
            for n in 0..7 {
                tx.send(line(n)).await.expect("body alive");
            }
        };
        let body = WatchBody::new(producer.boxed(), rx);
        let chunks: Vec<Bytes> = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            body.map(|chunk| chunk.expect("infallible")).collect(),
        )
        .await
        .expect("the body ends");
        assert!(chunks.len() >= 4, "at most two lines per chunk: {chunks:?}");
        let all: Vec<u8> = chunks.concat();
        let expected: Vec<u8> = (0..7).flat_map(|n| line(n).to_vec()).collect();
        assert_eq!(all, expected);
    }
}
