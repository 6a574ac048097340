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
    "idle_memory_one_process",
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

/// `minik bench --scale --quick` runs the scale study's three tiny points, each on a fresh
/// cluster, reports one row per point with its throughput and relist time, and draws the chart.
#[test]
fn quick_scale_study_reports_every_point_and_draws_the_chart() {
    let data = tempfile::tempdir().expect("temp dir");
    let svg = data.path().join("scale.svg");
    let output = Command::new(env!("CARGO_BIN_EXE_minik"))
        .args([
            "bench",
            "--scale",
            "--quick",
            "--output",
            "json",
            "--data-dir",
        ])
        .arg(data.path().join("cluster"))
        .arg("--svg")
        .arg(&svg)
        .output()
        .expect("running minik bench --scale");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "minik bench --scale failed:\n{stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("stdout is the JSON report");
    let rows = report["measurements"].as_array().expect("measurements");
    // Raw numbers are floats in the JSON (`20.0`).
    let sizes: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| {
            let v = &r["values"];
            (
                v["nodes"].as_f64().unwrap_or(0.0),
                v["pods"].as_f64().unwrap_or(0.0),
            )
        })
        .collect();
    assert_eq!(
        sizes,
        [(20.0, 100.0), (50.0, 100.0), (50.0, 300.0)],
        "stderr:\n{stderr}"
    );
    for row in rows {
        assert!(
            row["values"]["pods_per_s"].as_f64().unwrap_or(0.0) > 0.0
                && row["values"]["relist_ms"].as_f64().is_some(),
            "a point without figures: {row}\n\nstderr:\n{stderr}"
        );
    }
    let chart = std::fs::read_to_string(&svg).expect("the chart was written");
    assert!(chart.starts_with("<svg") && chart.contains("Throughput vs nodes"));
    let left: Vec<_> = std::fs::read_dir(data.path().join("cluster"))
        .expect("the data dir")
        .collect();
    assert!(left.is_empty(), "each point's cluster data is removed");
}
