//! Tests of `points.rs`: rates between scrapes, restarts, and pods served only when complete.

use super::*;
use minik_kubelet::stats::{ContainerStats, NodeStats, PodReference, PodStats};

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + seconds).unwrap()
}

fn cpu(time: Timestamp, total: u64) -> Option<CpuStats> {
    Some(CpuStats {
        time: Some(time),
        usage_nano_cores: None,
        usage_core_nano_seconds: Some(total),
    })
}

fn memory(bytes: u64) -> Option<MemoryStats> {
    Some(MemoryStats {
        working_set_bytes: Some(bytes),
        ..MemoryStats::default()
    })
}

fn summary(time: Timestamp, containers: &[(&str, u64, Timestamp)]) -> Summary {
    Summary {
        node: NodeStats {
            node_name: "node-1".into(),
            cpu: cpu(time, 1_000_000_000 * time.as_second() as u64),
            memory: memory(1 << 30),
        },
        pods: vec![PodStats {
            pod_ref: PodReference {
                name: "web".into(),
                namespace: "default".into(),
                uid: "u".into(),
            },
            containers: containers
                .iter()
                .map(|(name, total, start)| ContainerStats {
                    name: name.to_string(),
                    start_time: Some(*start),
                    cpu: cpu(time, *total),
                    memory: memory(4096),
                })
                .collect(),
            ..PodStats::default()
        }],
    }
}

#[test]
fn usage_is_the_cpu_difference_over_the_window() {
    let a = Point {
        time: at(0),
        cpu_total: 1_000_000_000,
        memory: 1,
        start: None,
    };
    let b = Point {
        time: at(2),
        cpu_total: 2_000_000_000,
        memory: 7,
        ..a
    };
    let got = usage(&a, &b).unwrap();
    assert_eq!(got.nano_cores, 500_000_000);
    assert_eq!((got.memory, got.window), (7, Duration::from_secs(2)));
    assert_eq!(usage(&b, &a), None, "time went back");
    let restarted = Point {
        start: Some(at(1)),
        ..b
    };
    assert_eq!(
        usage(&a, &restarted),
        None,
        "a restarted container starts over"
    );
}

#[test]
fn a_pod_has_usage_from_its_second_scrape_and_only_when_every_container_has_one() {
    let start = at(-10);
    let mut store = Store::default();
    store.record(&[summary(at(0), &[("app", 0, start)])]);
    assert_eq!(store.pod("default", "web"), None, "one reading is no rate");
    assert_eq!(store.node("node-1"), None);
    store.record(&[summary(at(1), &[("app", 250_000_000, start)])]);
    let pod = store.pod("default", "web").unwrap();
    assert_eq!(pod[0].0, "app");
    assert_eq!(pod[0].1.nano_cores, 250_000_000);
    assert_eq!(store.node("node-1").unwrap().nano_cores, 1_000_000_000);
    // A sidecar appears: the pod waits for its second reading too.
    store.record(&[summary(
        at(2),
        &[("app", 500_000_000, start), ("log", 0, at(2))],
    )]);
    assert_eq!(store.pod("default", "web"), None);
    // A node that stops answering takes its pods with it.
    store.record(&[]);
    assert!(store.pod_keys().is_empty() && store.node_names().is_empty());
}

#[test]
fn quantities_are_written_as_upstream_writes_them() {
    assert_eq!(cpu_quantity(1_500_000), "1500000n");
    assert_eq!(memory_quantity(4096 * 3), "12Ki");
    assert_eq!(memory_quantity(1000), "1000");
}
