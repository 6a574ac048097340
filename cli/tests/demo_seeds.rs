//! `minik demo rollout`, `rainbow`, `race` and `job`, end to end at a high `--speed` and small sizes:
//! the counts each report gives are the seeds' claims (seed 002: old pods Terminating beside
//! new ones, rainbow deployments cut no connection; seed 003: the slowest consumer of endpoint
//! changes decides how long preStop must wait).
//!
//! Each test drives the real `minik` binary, which starts a private cluster of real processes.

use std::process::Command;

use serde_json::Value;

/// Runs `minik demo ARGS --output json` and returns its JSON.
fn demo(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.html");
    let output = Command::new(env!("CARGO_BIN_EXE_minik"))
        .arg("demo")
        .args(args)
        .args(["--output", "json", "--report"])
        .arg(&report)
        .output()
        .expect("run minik demo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "minik demo {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = std::fs::read_to_string(&report).expect("the report is written");
    assert!(html.contains("<svg"), "the report has a picture");
    serde_json::from_str(&stdout).expect("--output json prints JSON")
}

#[test]
fn rollout_runs_old_terminating_beside_new_ready_pods_and_loses_no_request() {
    let results = demo(&[
        "rollout",
        "--speed",
        "10",
        "--replicas",
        "3",
        "--large-replicas",
        "3",
        "--rate",
        "50",
    ]);
    let runs = results["rollout"]["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    for run in runs {
        let peak = &run["peak"];
        assert!(run["requests"].as_u64().unwrap() > 100, "{run}");
        assert_eq!(run["failed"].as_u64(), Some(0), "no request fails: {run}");
        assert!(
            run["rolled_ms"].as_f64().is_some(),
            "every new pod became Ready: {run}"
        );
        // The second run's 12 s preStop outlasts the rollout by far: every old pod is still
        // Terminating when the last new one is Ready (seed 002's "80 pods", at this size 6).
        if run["name"].as_str().unwrap().contains("preStop") {
            assert_eq!(peak["pods"].as_u64(), Some(6), "{run}");
            assert_eq!(peak["old"].as_u64(), Some(3), "{run}");
            assert_eq!(peak["new"].as_u64(), Some(3), "{run}");
            assert_eq!(peak["terminating"].as_u64(), Some(3), "{run}");
            assert_eq!(peak["ready"].as_u64(), Some(3), "{run}");
        } else {
            assert!(
                peak["pods"].as_u64().unwrap() > 3,
                "old and new side by side: {run}"
            );
            assert!(peak["terminating"].as_u64().unwrap() > 0, "{run}");
        }
    }
}

/// Issue 24: with small nodes the preStop run's old pods, lingering, make new ones
/// Unschedulable: the cluster autoscaler adds nodes (never past --max-nodes) and removes them
/// once the old pods are gone.
#[test]
fn rollout_on_small_nodes_adds_nodes_and_removes_them_after() {
    let results = demo(&[
        "rollout",
        "--speed",
        "10",
        "--replicas",
        "3",
        "--large-replicas",
        "3",
        "--rate",
        "20",
        "--max-nodes",
        "4",
    ]);
    let runs = results["rollout"]["runs"].as_array().expect("runs");
    let pre_stop = runs
        .iter()
        .find(|r| r["name"].as_str().unwrap().contains("preStop"))
        .expect("the preStop run");
    let peak = pre_stop["node_peak"]
        .as_u64()
        .expect("the node count is followed");
    assert!(peak > 2 && peak <= 4, "nodes added, at most 4: {pre_stop}");
    assert_eq!(pre_stop["nodes_after"].as_u64(), Some(2), "{pre_stop}");
    let back = pre_stop["nodes_back_ms"]
        .as_f64()
        .expect("the added nodes removed");
    for run in runs {
        let (name, peak, finished) = (&run["name"], &run["node_peak"], &run["finished_ms"]);
        let back = &run["nodes_back_ms"];
        println!("rollout {name}: nodes 2 → {peak}; old pods gone +{finished} ms; back to 2 at +{back} ms");
    }
    assert!(
        back > pre_stop["finished_ms"].as_f64().unwrap(),
        "after the old pods: {pre_stop}"
    );
    assert_eq!(
        pre_stop["failed"].as_u64(),
        Some(0),
        "no request fails: {pre_stop}"
    );
}

#[test]
fn rainbow_cuts_no_connection_where_a_rolling_update_cuts_some() {
    let results = demo(&[
        "rainbow",
        "--speed",
        "16",
        "--replicas",
        "2",
        "--connections",
        "6",
    ]);
    let rolling = &results["rainbow"]["rolling"];
    let rainbow = &results["rainbow"]["rainbow"];
    assert!(
        rolling["connections_cut"].as_u64().unwrap() > 0,
        "{rolling}"
    );
    assert_eq!(rainbow["connections_cut"].as_u64(), Some(0), "{rainbow}");
    assert!(
        rainbow["completed"].as_u64().unwrap() >= 6,
        "every stream ran to its end: {rainbow}"
    );
    assert_eq!(
        rainbow["peak"]["pods"].as_u64(),
        Some(4),
        "blue and green side by side: {rainbow}"
    );
    // Blue went to 0 by the idle rule: after its last stream had been closed for the
    // annotation's time (less the demo's 200 ms polling), within a few seconds of slack.
    let idle = rainbow["idle_ms"].as_f64().expect("the idle rule's time");
    let scaled = rainbow["idle_scaled_ms"]
        .as_f64()
        .expect("scaled to 0 by the idle rule");
    println!(
        "rainbow: blue scaled to 0 {scaled:.0} ms after its last stream (idle rule {idle:.0} ms)"
    );
    assert!(
        scaled >= idle - 500.0,
        "not before the idle time: {rainbow}"
    );
    assert!(scaled <= idle + 6000.0, "within the slack: {rainbow}");
}

#[test]
fn race_marks_every_consumer_and_a_long_enough_pre_stop_loses_nothing() {
    let results = demo(&["race", "--quick"]);
    let variants = results["race"]["variants"].as_array().expect("variants");
    assert_eq!(variants.len(), 2);
    for variant in variants {
        let marks = variant["timeline"]["marks"].as_array().unwrap();
        for (lane, event) in [
            ("proxy", "proxy applied the removal"),
            ("ingress", "ingress applied the removal"),
            ("loadbalancer", "load balancer applied the removal"),
        ] {
            assert!(
                marks
                    .iter()
                    .any(|m| m["component"] == lane && m["event"] == event),
                "{lane} not marked in {}: {marks:?}",
                variant["name"]
            );
        }
        let consumers = variant["consumers"].as_array().unwrap();
        let names: Vec<&str> = consumers
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["proxy", "ingress", "load balancer"]);
        let lag = |name: &str| {
            consumers.iter().find(|c| c["name"] == name).unwrap()["applied_ms"]
                .as_f64()
                .unwrap()
        };
        assert!(
            lag("load balancer") > lag("ingress"),
            "the batched balancer is slower: {consumers:?}"
        );
    }
    let (plain, with_pre_stop) = (&variants[0], &variants[1]);
    let through_lb = plain["consumers"][2]["failed"].as_u64().unwrap();
    assert!(
        through_lb > 0,
        "without preStop, requests fail through the balancer: {plain}"
    );
    assert_eq!(with_pre_stop["failed"].as_u64(), Some(0), "{with_pre_stop}");
}

#[test]
fn job_worker_without_a_checkpoint_starts_over_and_with_one_resumes() {
    let results = demo(&["job", "--speed", "8"]);
    let runs = results["job"]["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    for run in runs {
        // Two pods ran, the Job counted one success and one failure (the deleted pod), and the
        // work was reported done once.
        assert_eq!(run["pods"].as_u64(), Some(2), "{run}");
        assert_eq!(run["succeeded"].as_u64(), Some(1), "{run}");
        assert_eq!(run["failed"].as_u64(), Some(1), "{run}");
        assert_eq!(run["done_lines"].as_u64(), Some(1), "{run}");
        assert!(run["done_by_first"].as_u64().unwrap() >= 8, "{run}");
        // podReplacementPolicy Failed: the replacement is created once pod 1 is Failed.
        let marks = run["timeline"]["marks"].as_array().unwrap();
        let at = |event: &str| {
            marks
                .iter()
                .find(|m| m["event"] == event)
                .unwrap_or_else(|| panic!("{event} not marked: {marks:?}"))["t_ms"]
                .as_f64()
                .unwrap()
        };
        assert!(at("pod 2 created") > at("pod 1 Failed"), "{marks:?}");
        assert!(
            at("job Complete") > at("pod 2 done (20 units)"),
            "{marks:?}"
        );
    }
    let (plain, checkpoint) = (&runs[0], &runs[1]);
    assert_eq!(plain["checkpoint"], Value::Null, "{plain}");
    assert_eq!(plain["resumed_from"].as_u64(), Some(0), "{plain}");
    assert_eq!(plain["units_lost"], plain["done_by_first"], "{plain}");
    assert!(plain["units_run"].as_u64().unwrap() >= 28, "{plain}");
    assert_eq!(
        checkpoint["resumed_from"], checkpoint["checkpoint"],
        "{checkpoint}"
    );
    assert_eq!(checkpoint["units_lost"].as_u64(), Some(0), "{checkpoint}");
    assert_eq!(checkpoint["units_run"].as_u64(), Some(20), "{checkpoint}");
}
