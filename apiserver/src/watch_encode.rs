//! Watch lines, encoded once per event and shared by every watch that sends them.
//!
//! Kubernetes counterpart: the cacher's `cachingObject`
//! (`k8s.io/apiserver/pkg/storage/cacher/caching_object.go`). The watch cache hands the same event
//! to every watcher of a resource; instead of letting each watcher serialize the object again,
//! kube-apiserver wraps it in a `cachingObject` that remembers its serialization per encoding, so
//! 100 watchers of a pod cost one `json.Marshal`, not 100. The framing (`watch.go`'s
//! `{"type":…,"object":…}`) is still written per watcher around the cached bytes.
//!
//! minik does the same with a `SharedEncoding` slot on each
//! storage `Event`: clones of the event (one per watcher) share the slot, and the first watch
//! to send the event fills it with the event's own line, e.g. `{"type":"MODIFIED","object":{…}}\n`.
//! A watch that sends the event as it is just clones those bytes (no copy); one whose selector
//! turned the MODIFIED into an ADDED writes its own `{"type":"ADDED","object":` around the same
//! object bytes. Objects that are not the event's own (a selector's DELETED carrying the last
//! matching state, bookmarks, errors, Table rows) are encoded per watch by [`owned_line`].
//!
//! minik simplifies: one encoding (JSON) instead of a cache per serializer, and the bytes are the
//! whole line rather than the object alone, since minik has no other framing to serve.

use axum::body::Bytes;
use serde_json::Value;

use crate::storage::{Event, EventType};

/// What comes before the event type in a line.
const TYPE_PREFIX: &[u8] = b"{\"type\":\"";
/// What comes between the event type and the object.
const OBJECT_PREFIX: &[u8] = b"\",\"object\":";
/// What ends a line.
const SUFFIX: &[u8] = b"}\n";

/// The object a watch line carries.
#[derive(Debug)]
pub(crate) enum LineObject<'a> {
    /// The storage event's own object: encoded once, shared by every watch.
    Shared(&'a Event),
    /// An object made for this watch alone (the last matching state of an object that left the
    /// watch's selector).
    Owned(Value),
}

impl LineObject<'_> {
    /// The object itself (for Table rows and tests).
    pub(crate) fn value(&self) -> &Value {
        match self {
            LineObject::Shared(event) => &event.object,
            LineObject::Owned(value) => value,
        }
    }

    /// The line `{"type":"<event_type>","object":{…}}\n`, reusing the event's shared encoding.
    pub(crate) fn line(&self, event_type: &'static str) -> Bytes {
        match self {
            LineObject::Shared(event) => shared_line(event_type, event),
            LineObject::Owned(value) => owned_line(event_type, value),
        }
    }
}

/// The type a storage event has when a watch passes it on unchanged.
pub(crate) fn own_type(event_type: EventType) -> &'static str {
    match event_type {
        EventType::Added => "ADDED",
        EventType::Modified => "MODIFIED",
        EventType::Deleted => "DELETED",
    }
}

/// The event's own line, encoded by the first watch that needs it and shared from then on.
pub(crate) fn own_line(event: &Event) -> &Bytes {
    event
        .encoded
        .get_or_init(|| owned_line(own_type(event.event_type), &event.object))
}

/// The event's object as sent in every watch line: a slice of the shared line, not a copy.
pub(crate) fn shared_object(event: &Event) -> Bytes {
    let line = own_line(event);
    let start = TYPE_PREFIX.len() + own_type(event.event_type).len() + OBJECT_PREFIX.len();
    line.slice(start..line.len() - SUFFIX.len())
}

/// The line for `event` sent as `event_type`: the shared bytes themselves when the type is the
/// event's own, else a new line framing the shared object bytes.
pub(crate) fn shared_line(event_type: &'static str, event: &Event) -> Bytes {
    if event_type == own_type(event.event_type) {
        return own_line(event).clone();
    }
    let object = shared_object(event);
    frame(event_type, object.len(), |buf| {
        buf.extend_from_slice(&object);
    })
}

/// A line for an object this watch encodes itself.
pub(crate) fn owned_line(event_type: &'static str, object: &Value) -> Bytes {
    frame(event_type, 1024, |buf| {
        // Writing a `Value` into a `Vec` cannot fail (its map keys are strings and the writer
        // never errors); should it ever, the line carries `null` rather than half an object.
        if serde_json::to_writer(&mut *buf, object).is_err() {
            buf.extend_from_slice(b"null");
        }
    })
}

/// Writes the wrapper around the object `write_object` appends. The event types are fixed
/// upper-case words, so they need no JSON escaping.
fn frame(
    event_type: &'static str,
    object_len: usize,
    write_object: impl FnOnce(&mut Vec<u8>),
) -> Bytes {
    debug_assert!(event_type.bytes().all(|b| b.is_ascii_uppercase()));
    let mut buf = Vec::with_capacity(
        TYPE_PREFIX.len() + event_type.len() + OBJECT_PREFIX.len() + object_len + SUFFIX.len(),
    );
    buf.extend_from_slice(TYPE_PREFIX);
    buf.extend_from_slice(event_type.as_bytes());
    buf.extend_from_slice(OBJECT_PREFIX);
    write_object(&mut buf);
    buf.extend_from_slice(SUFFIX);
    Bytes::from(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::events::EventLog;
    use futures::StreamExt;
    use serde::Serialize;
    use serde_json::json;
    use std::sync::Arc;

    /// A line as serde writes it: the format the watch used before sharing, and Kubernetes'.
    #[derive(Serialize)]
    struct Line<'a> {
        #[serde(rename = "type")]
        event_type: &'a str,
        object: &'a Value,
    }

    fn serde_line(event_type: &str, object: &Value) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(&Line { event_type, object }).expect("encode");
        bytes.push(b'\n');
        bytes
    }

    fn pod() -> Value {
        json!({
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {"name": "wéb \"1\"", "resourceVersion": "7", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "args": ["a\nb", 1.5, null]}]}
        })
    }

    fn event(event_type: EventType) -> Event {
        Event {
            revision: 7,
            event_type,
            key: "/registry/pods/default/web".into(),
            object: Arc::new(pod()),
            prev: None,
            encoded: Default::default(),
        }
    }

    #[test]
    fn lines_are_byte_for_byte_what_serde_writes() {
        let event = event(EventType::Modified);
        for event_type in ["ADDED", "MODIFIED", "DELETED"] {
            assert_eq!(
                shared_line(event_type, &event),
                serde_line(event_type, &pod())
            );
        }
        let status = json!({"kind": "Status", "code": 410});
        assert_eq!(owned_line("ERROR", &status), serde_line("ERROR", &status));
        assert_eq!(shared_object(&event), serde_json::to_vec(&pod()).unwrap());
    }

    #[tokio::test]
    async fn two_watches_of_one_event_send_the_bytes_of_one_encoding() {
        let log = EventLog::new(6, 10, 10);
        let mut first = log.watch("/registry/pods/", 6).expect("watch");
        let mut second = log.watch("/registry/pods/", 6).expect("watch");
        log.publish(event(EventType::Added));
        let a = first.next().await.expect("event").expect("ok");
        let b = second.next().await.expect("event").expect("ok");
        assert!(
            a.encoded.get().is_none(),
            "nothing encoded before a watch sends"
        );

        let line_a = shared_line("ADDED", &a);
        let line_b = shared_line("ADDED", &b);
        assert_eq!(line_a, serde_line("ADDED", &pod()));
        assert_eq!(
            line_a.as_ptr(),
            line_b.as_ptr(),
            "the second watch sends the first one's bytes, not a new encoding"
        );
    }

    #[test]
    fn a_type_changed_by_a_selector_frames_the_shared_object() {
        let event = event(EventType::Modified);
        let modified = shared_line("MODIFIED", &event);
        let added = shared_line("ADDED", &event);
        assert_eq!(added, serde_line("ADDED", &pod()));
        let object = shared_object(&event);
        let start = modified.len() - SUFFIX.len() - object.len();
        assert_eq!(
            object.as_ptr(),
            modified[start..].as_ptr(),
            "the object is a slice of the one encoded line, not a second encoding"
        );
        assert!(added.ends_with(&[&object[..], SUFFIX].concat()));
    }
}
