//! Tests of the usage arithmetic in `stats.rs`: `/proc` parsing, process trees, rates, the summary.

use super::*;

fn usage(pid: u32, ppid: u32, session: u32, cpu_ticks: u64, rss_pages: u64) -> ProcUsage {
    ProcUsage {
        proc: Proc { pid, ppid, session },
        cpu_ticks,
        rss_pages,
    }
}

#[test]
fn a_stat_line_gives_the_tree_and_the_counters_even_with_spaces_in_the_name() {
    let line = "42 (my (odd) app) S 10 42 10 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 \
                12345 10000000 300 18446744073709551615";
    let parsed = parse_stat(42, line).unwrap();
    assert_eq!(
        parsed.proc,
        Proc {
            pid: 42,
            ppid: 10,
            session: 10
        }
    );
    assert_eq!(parsed.cpu_ticks, 250 + 50 + 7 + 3);
    assert_eq!(parsed.rss_pages, 300);
    let zombie = line.replace(") S ", ") Z ");
    assert_eq!(parse_stat(42, &zombie), None);
}

#[test]
fn a_container_sums_its_process_tree_and_not_its_shim_or_neighbours() {
    // Shim 10 runs container 11, which forked 12; shim 20 runs another pod's 21.
    let procs = [
        usage(10, 1, 10, 1000, 1000),
        usage(11, 10, 10, 100, 10),
        usage(12, 11, 10, 50, 5),
        usage(20, 1, 20, 0, 0),
        usage(21, 20, 20, 999, 999),
    ];
    let container = RunningContainer {
        pod_key: "default/burn".into(),
        pod_uid: "a".into(),
        pid: 11,
    };
    let got = container_usage(&procs, &container);
    assert_eq!(got.cpu_nanos, 150 * NANOS_PER_TICK);
    assert_eq!(got.rss_bytes, 15 * PAGE_SIZE);
}

#[test]
fn the_rate_is_cpu_time_over_wall_time_and_never_negative() {
    let second = Duration::from_secs(1);
    assert_eq!(nano_cores(0, 500_000_000, second), 500_000_000);
    assert_eq!(nano_cores(0, 2_000_000_000, second), 2_000_000_000);
    assert_eq!(nano_cores(900, 100, second), 0);
}

#[test]
fn the_node_counts_every_busy_tick_and_memory_in_bytes() {
    let stat = "cpu  100 5 50 1000 20 1 2 3 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n";
    assert_eq!(busy_ticks(stat), Some(100 + 5 + 50 + 1 + 2 + 3));
    let meminfo = "MemTotal:       16000 kB\nMemFree:  1 kB\nMemAvailable:    4000 kB\n";
    assert_eq!(meminfo_bytes(meminfo, "MemTotal"), Some(16000 * 1024));
    assert_eq!(meminfo_bytes(meminfo, "MemAvailable"), Some(4000 * 1024));
}

#[test]
fn the_summary_groups_containers_by_pod_and_sums_them() {
    let now = Timestamp::now();
    let sampled = |id: &str, name: &str, uid: &str, cpu: u64, rss: u64| Sampled {
        id: id.into(),
        name: name.into(),
        container: RunningContainer {
            pod_key: format!("shop/{uid}-pod"),
            pod_uid: uid.into(),
            pid: 1,
        },
        started_at: now,
        usage: Usage {
            cpu_nanos: cpu * 10,
            rss_bytes: rss,
        },
        nano_cores: Some(cpu),
    };
    let summary = summarize(
        NodeStats::default(),
        &[
            sampled("a-web-0", "web", "a", 300, 1000),
            sampled("a-log-0", "log", "a", 200, 500),
            sampled("b-web-0", "web", "b", 7, 1),
        ],
        now,
    );
    assert_eq!(summary.pods.len(), 2);
    let a = &summary.pods[0];
    assert_eq!(
        (a.pod_ref.namespace.as_str(), a.pod_ref.name.as_str()),
        ("shop", "a-pod")
    );
    assert_eq!(a.containers.len(), 2);
    assert_eq!(a.cpu.as_ref().unwrap().usage_nano_cores, Some(500));
    assert_eq!(a.cpu.as_ref().unwrap().usage_core_nano_seconds, Some(5000));
    assert_eq!(a.memory.as_ref().unwrap().working_set_bytes, Some(1500));
    let json = serde_json::to_value(&summary).unwrap();
    assert!(json["pods"][0]["podRef"]["uid"] == "a");
    assert!(json["pods"][0]["containers"][0]["cpu"]["usageNanoCores"] == 300);
}
