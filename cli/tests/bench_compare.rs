//! `minik bench --quick --compare` runs minik and its peers (etcd, HAProxy under wrk) side by side
//! and reports every ratio row; a peer that is not installed is reported, not a failure.
//!
//! Kubernetes counterpart: none (perf-tests compares with thresholds, not with other programs).
//! Only the API and proxy sections run, at the smallest size, so the test stays well under a
//! minute in a debug build. The figures are not checked, only that each peer that is installed
//! gave a ratio and each that is not says so.

use std::process::Command;

/// The ratio rows `--compare` adds, in order.
const COMPARE_IDS: &[&str] = &[
    "compare_creates_vs_etcd",
    "compare_creates_vs_kube_apiserver",
    "compare_proxy_keep_alive",
    "compare_proxy_per_request",
    "compare_watch_fanout",
    "compare_scheduling",
    "compare_idle_rss",
    "compare_apply_p99",
];

fn installed(program: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into()])
        .any(|dir| dir.join(program).is_file())
}

#[test]
fn quick_compare_reports_a_ratio_per_installed_peer() {
    let data = tempfile::tempdir().expect("temp dir");
    let output = Command::new(env!("CARGO_BIN_EXE_minik"))
        .args(["bench", "--quick", "--compare", "--only", "api,proxy"])
        .args(["--output", "json", "--data-dir"])
        .arg(data.path().join("cluster"))
        .output()
        .expect("running minik bench --compare");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "minik bench failed:\n{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON report");
    let rows = report["measurements"].as_array().expect("measurements");
    let ratios: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| {
            r["id"]
                .as_str()
                .is_some_and(|id| id.starts_with("compare_"))
        })
        .collect();
    let ids: Vec<&str> = ratios.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(ids, COMPARE_IDS, "one row per goal, after the measurements");
    let result = |id: &str| {
        let row = ratios.iter().find(|r| r["id"] == id).expect("row");
        (
            row["result"].as_str().unwrap_or("").to_string(),
            row["values"]["ratio"].as_f64(),
        )
    };
    let expect = |id: &str, peer: bool, name: &str| {
        let (text, ratio) = result(id);
        if peer {
            assert!(
                ratio.is_some_and(|r| r > 0.0),
                "{id} has no ratio: {text}\n{stderr}"
            );
        } else {
            assert!(
                text.contains(&format!("{name} not installed")),
                "{id}: {text}"
            );
        }
    };
    expect("compare_creates_vs_etcd", installed("etcd"), "etcd");
    let proxy_peers = installed("haproxy") && installed("wrk");
    let missing = if installed("wrk") { "haproxy" } else { "wrk" };
    expect("compare_proxy_keep_alive", proxy_peers, missing);
    expect("compare_proxy_per_request", proxy_peers, missing);
    // Sections that did not run leave their goal rows without a verdict, never an error row.
    let (text, ratio) = result("compare_scheduling");
    assert!(ratio.is_none() && text.contains("not run"), "{text}");
}
