//! `minik bench --quick --output json` runs end to end and reports every measurement.
//!
//! Kubernetes counterpart: none (perf-tests runs its benchmarks in dedicated CI jobs). minik keeps
//! only the harness under test: the quick run starts a private cluster, takes every measurement at
//! a small size and must report each one without an error. The figures themselves are not checked
//! (a debug build on a busy CI machine says nothing about performance); BENCHMARKS.md holds real
//! ones from a release build.

use std::process::Command;

/// Every row id of the report, in the order.
const IDS: &[&str] = &[
    "pod_startup_sequential",
    "pod_startup_concurrent",
    "scheduling_throughput",
    "api_create_throughput",
    "api_write_latency",
    "api_get_latency",
    "watch_fanout",
    "watch_latency",
    "endpoint_propagation",
    "proxy_throughput",
    "proxy_latency",
    "idle_memory",
    "idle_cpu",
    "cold_start_node_ready",
    "cold_start_first_pod",
    "rollout_available",
    "rollout_update",
];

#[test]
fn quick_bench_reports_every_measurement_without_errors() {
    let data = tempfile::tempdir().expect("temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_minik"))
        .args(["bench", "--quick", "--output", "json", "--data-dir"])
        .arg(data.path().join("cluster"))
        .output()
        .expect("running minik bench");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "minik bench failed:\n{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    let rows = report["measurements"]
        .as_array()
        .expect("a measurements array");
    let ids: Vec<&str> = rows.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(ids, IDS, "rows in the issue's order, one per measurement");
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r["result"].as_str().is_some_and(|t| t.starts_with("error")))
        .map(|r| format!("{}: {}", r["id"], r["result"]))
        .collect();
    assert!(
        failed.is_empty(),
        "measurements failed:\n{}\n\nstderr:\n{stderr}",
        failed.join("\n")
    );
    assert!(report["machine"]["cpus"].as_u64().unwrap_or(0) >= 1);
}
