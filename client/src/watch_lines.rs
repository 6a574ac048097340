//! Decoding a watch response: a chunked body of newline-delimited JSON, one `WatchEvent` per line.
//!
//! Kubernetes counterpart: client-go's `watch.StreamWatcher` fed by a `json.Decoder` over the
//! response body (`staging/src/k8s.io/apimachinery/pkg/watch/streamwatcher.go`). HTTP chunks and
//! lines are unrelated: one chunk may hold several events, or half of one, so bytes are buffered
//! until a `\n` completes a line.

use bytes::Bytes;
use futures::stream::{self, BoxStream, Stream, StreamExt};
use serde::de::DeserializeOwned;

use minik_api::WatchEvent;

use crate::error::Result;

/// The decoder's state between two chunks.
struct LineBuffer<S> {
    body: S,
    /// Bytes received but not yet ended by a newline.
    pending: Vec<u8>,
    /// The body ended (or failed): only what is still in `pending` remains.
    finished: bool,
}

/// Turns a response body into the watch events it carries, in order. A transport error ends the
/// stream after being yielded once; a line that is not a valid event is yielded as an error and
/// decoding goes on with the next line.
pub(crate) fn watch_events<T, S>(body: S) -> impl Stream<Item = Result<WatchEvent<T>>> + Send
where
    T: DeserializeOwned + Send + 'static,
    S: Stream<Item = Result<Bytes>> + Send + 'static,
{
    let state = LineBuffer {
        body: body.boxed(),
        pending: Vec::new(),
        finished: false,
    };
    stream::unfold(state, |mut state| async move {
        let line = next_line(&mut state).await?;
        let event = line.and_then(|line| Ok(serde_json::from_slice::<WatchEvent<T>>(&line)?));
        Some((event, state))
    })
}

/// The next non-empty line of the body, `None` at its end.
async fn next_line(
    state: &mut LineBuffer<BoxStream<'static, Result<Bytes>>>,
) -> Option<Result<Vec<u8>>> {
    loop {
        if let Some(newline) = state.pending.iter().position(|&byte| byte == b'\n') {
            let line: Vec<u8> = state.pending.drain(..=newline).collect();
            if is_blank(&line) {
                continue;
            }
            return Some(Ok(line));
        }
        if state.finished {
            // A last line without its newline still counts.
            let rest = std::mem::take(&mut state.pending);
            return (!is_blank(&rest)).then_some(Ok(rest));
        }
        match state.body.next().await {
            Some(Ok(chunk)) => state.pending.extend_from_slice(&chunk),
            Some(Err(error)) => {
                state.finished = true;
                state.pending.clear();
                return Some(Err(error));
            }
            None => state.finished = true,
        }
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;
    use minik_api::core::Pod;

    fn chunks(parts: &[&'static str]) -> impl Stream<Item = Result<Bytes>> + Send + 'static {
        stream::iter(
            parts
                .iter()
                .map(|part| Ok(Bytes::from_static(part.as_bytes())))
                .collect::<Vec<_>>(),
        )
    }

    #[tokio::test]
    async fn events_split_across_chunks_are_reassembled() {
        let body = chunks(&[
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\"}}}\n{\"type\":\"MOD",
            "IFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"6\"}}}\n\n",
            "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"7\"}}}",
        ]);
        let events: Vec<WatchEvent<Pod>> = watch_events(body).try_collect().await.unwrap();
        assert_eq!(events.len(), 3);
        assert!(
            matches!(&events[0], WatchEvent::Added(pod) if pod.metadata.name.as_deref() == Some("a"))
        );
        assert!(
            matches!(&events[1], WatchEvent::Modified(pod) if pod.metadata.resource_version.as_deref() == Some("6"))
        );
        assert!(matches!(&events[2], WatchEvent::Deleted(_)));
    }

    #[tokio::test]
    async fn error_event_carries_the_status() {
        let body = chunks(&[
            "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"Expired\",\"code\":410,\"message\":\"too old resource version: 1 (5)\"}}\n",
        ]);
        let events: Vec<WatchEvent<Pod>> = watch_events(body).try_collect().await.unwrap();
        assert!(matches!(&events[0], WatchEvent::Error(status) if status.code == Some(410)));
    }

    #[tokio::test]
    async fn a_malformed_line_is_an_error_and_decoding_continues() {
        let body = chunks(&[
            "not json\n",
            "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"9\"}}}\n",
        ]);
        let events: Vec<Result<WatchEvent<Pod>>> = watch_events(body).collect().await;
        assert!(events[0].is_err());
        assert!(
            matches!(&events[1], Ok(WatchEvent::Bookmark(pod)) if pod.metadata.resource_version.as_deref() == Some("9"))
        );
    }
}
