//! Event correlation: aggregation of repeated and similar Events, and the spam filter.
//!
//! Kubernetes counterpart: client-go's `EventCorrelator` (`tools/record/events_cache.go`), which
//! every recorder runs before writing an Event:
//!
//! 1. **Aggregate**: events that differ only in their message (same source, object, type, reason)
//!    are counted per 10 minutes; from the 10th distinct message on they become one event whose
//!    message starts "(combined from similar events): ".
//! 2. **Observe**: an event identical to one already written (same key, message included) is not
//!    created again: the existing object is patched with `count + 1`, `lastTimestamp` and
//!    `message`.
//! 3. **Filter**: a token bucket per source and object (burst 25, one token per 5 minutes) drops
//!    the excess.
//!
//! All of it is pure: the clock is an argument, and the caller writes what [`Decision`] says,
//! then reports the written object back with [`Correlator::written`].
//!
//! minik simplifies: the caches are bounded maps that forget their oldest entry instead of LRUs.

use std::collections::{BTreeSet, HashMap};

use jiff::{SignedDuration, Timestamp};
use minik_api::core::Event;
use minik_api::meta::Time;
use serde_json::{json, Value};

/// The tunables, upstream's defaults in [`Default`].
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Distinct messages per object and reason before they are combined (10).
    pub max_similar: usize,
    /// The window those are counted in (10 minutes).
    pub similar_window: SignedDuration,
    /// Events a source may write about one object at once (25).
    pub spam_burst: f64,
    /// Tokens regained per second (one per 5 minutes).
    pub spam_qps: f64,
    /// Entries each cache holds (4096).
    pub cache_size: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_similar: 10,
            similar_window: SignedDuration::from_secs(600),
            spam_burst: 25.0,
            spam_qps: 1.0 / 300.0,
            cache_size: 4096,
        }
    }
}

/// What the recorder should do with an event.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Rate-limited: write nothing.
    Skip,
    /// A new object.
    Create(Event),
    /// An existing object seen again: patch it (a strategic merge patch) with `patch`; if it is
    /// gone, create `event` instead.
    Patch { event: Event, patch: Value },
}

/// What was last written under one key.
#[derive(Clone, Debug)]
struct Observed {
    count: i32,
    first_timestamp: Option<Time>,
    name: Option<String>,
}

#[derive(Clone, Debug)]
struct Similar {
    messages: BTreeSet<String>,
    last: Timestamp,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    last: Timestamp,
}

/// The state of one recorder's correlation (shared by its clones).
#[derive(Debug, Default)]
pub struct Correlator {
    options: Options,
    similar: HashMap<String, Similar>,
    observed: HashMap<String, Observed>,
    buckets: HashMap<String, Bucket>,
}

fn source_and_object(event: &Event) -> Vec<String> {
    let source = event.source.clone().unwrap_or_default();
    let object = &event.involved_object;
    vec![
        source.component.unwrap_or_default(),
        source.host.unwrap_or_default(),
        object.kind.clone().unwrap_or_default(),
        object.namespace.clone().unwrap_or_default(),
        object.name.clone().unwrap_or_default(),
        object.uid.clone().unwrap_or_default(),
        object.api_version.clone().unwrap_or_default(),
    ]
}

/// `getSpamKey`: the source and the object.
fn spam_key(event: &Event) -> String {
    source_and_object(event).join("\u{0}")
}

/// `EventAggregatorByReasonFunc`: everything but the message.
fn aggregate_key(event: &Event) -> String {
    let mut parts = source_and_object(event);
    parts.push(event.type_.clone().unwrap_or_default());
    parts.push(event.reason.clone().unwrap_or_default());
    parts.push(event.reporting_component.clone().unwrap_or_default());
    parts.push(event.reporting_instance.clone().unwrap_or_default());
    parts.join("\u{0}")
}

/// `getEventKey`: the source, the object (with its field path), type, reason and message.
fn event_key(event: &Event) -> String {
    let mut parts = source_and_object(event);
    parts.push(event.involved_object.field_path.clone().unwrap_or_default());
    parts.push(event.type_.clone().unwrap_or_default());
    parts.push(event.reason.clone().unwrap_or_default());
    parts.push(event.message.clone().unwrap_or_default());
    parts.join("\u{0}")
}

/// Forgets the entry that was touched longest ago once a cache is full.
fn bound<V>(cache: &mut HashMap<String, V>, size: usize, age: impl Fn(&V) -> Timestamp) {
    if cache.len() <= size {
        return;
    }
    if let Some(oldest) = cache
        .iter()
        .min_by_key(|(_, v)| age(v))
        .map(|(k, _)| k.clone())
    {
        cache.remove(&oldest);
    }
}

impl Correlator {
    pub fn new(options: Options) -> Self {
        Correlator {
            options,
            ..Correlator::default()
        }
    }

    /// Decides what to write for `event`, which happened at `now`.
    pub fn correlate(&mut self, event: Event, now: Timestamp) -> Decision {
        let (event, key) = self.aggregate(event, now);
        let decision = self.observe(event, key, now);
        if !self.allow(&decision, now) {
            return Decision::Skip;
        }
        decision
    }

    /// Step 1: combine similar events once `max_similar` distinct messages were seen.
    fn aggregate(&mut self, event: Event, now: Timestamp) -> (Event, String) {
        let key = aggregate_key(&event);
        let window = self.options.similar_window;
        let record = self.similar.entry(key.clone()).or_insert_with(|| Similar {
            messages: BTreeSet::new(),
            last: now,
        });
        if now.duration_since(record.last) > window {
            record.messages.clear();
        }
        record
            .messages
            .insert(event.message.clone().unwrap_or_default());
        record.last = now;
        let similar = record.messages.len();
        if similar >= self.options.max_similar {
            // Upstream keeps the set from growing past the limit.
            record.messages.pop_first();
        }
        bound(&mut self.similar, self.options.cache_size, |r| r.last);
        if similar < self.options.max_similar {
            let key = event_key(&event);
            return (event, key);
        }
        let time = Time(now);
        let name = event.involved_object.name.clone().unwrap_or_default();
        let combined = Event {
            metadata: minik_api::meta::ObjectMeta {
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                namespace: event.metadata.namespace.clone(),
                ..Default::default()
            },
            message: Some(format!(
                "(combined from similar events): {}",
                event.message.clone().unwrap_or_default()
            )),
            count: Some(1),
            first_timestamp: Some(time.clone()),
            last_timestamp: Some(time),
            ..event
        };
        (combined, key)
    }

    /// Step 2: an event already written under `key` is patched, not created.
    fn observe(&mut self, mut event: Event, key: String, now: Timestamp) -> Decision {
        let Some(last) = self.observed.get(&key).cloned() else {
            self.observed.insert(
                key,
                Observed {
                    count: event.count.unwrap_or(1),
                    first_timestamp: event.first_timestamp.clone(),
                    name: event.metadata.name.clone(),
                },
            );
            bound(&mut self.observed, self.options.cache_size, |o| {
                o.first_timestamp
                    .as_ref()
                    .map_or(Timestamp::UNIX_EPOCH, |t| t.0)
            });
            return Decision::Create(event);
        };
        let count = last.count + 1;
        event.count = Some(count);
        event.first_timestamp = last.first_timestamp.clone();
        event.last_timestamp = Some(Time(now));
        event.metadata.name = last.name.clone();
        let patch = json!({
            "count": count,
            "lastTimestamp": event.last_timestamp,
            "message": event.message,
        });
        self.observed.insert(key, Observed { count, ..last });
        Decision::Patch { event, patch }
    }

    /// Step 3: the token bucket of the event's source and object.
    fn allow(&mut self, decision: &Decision, now: Timestamp) -> bool {
        let event = match decision {
            Decision::Skip => return false,
            Decision::Create(event) | Decision::Patch { event, .. } => event,
        };
        let options = self.options;
        let bucket = self.buckets.entry(spam_key(event)).or_insert(Bucket {
            tokens: options.spam_burst,
            last: now,
        });
        let elapsed = now.duration_since(bucket.last).as_secs_f64().max(0.0);
        bucket.tokens = (bucket.tokens + elapsed * options.spam_qps).min(options.spam_burst);
        bucket.last = now;
        let allowed = bucket.tokens >= 1.0;
        if allowed {
            bucket.tokens -= 1.0;
        }
        bound(&mut self.buckets, options.cache_size, |b| b.last);
        allowed
    }

    /// Records what the server answered for a written event (`UpdateState`): its name, count and
    /// first timestamp are what the next identical event patches.
    pub fn written(&mut self, event: &Event) {
        let key = event_key(event);
        let key = if self.observed.contains_key(&key) {
            key
        } else {
            aggregate_key(event)
        };
        if let Some(observed) = self.observed.get_mut(&key) {
            observed.count = event.count.unwrap_or(observed.count);
            observed.name = event.metadata.name.clone();
            observed.first_timestamp = event.first_timestamp.clone();
        }
    }
}

#[cfg(test)]
#[path = "correlator_tests.rs"]
mod tests;
