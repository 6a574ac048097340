//! `minik demo --quick`, end to end: the race shows failures without preStop and none with it,
//! the hook timings match the rules, and the HTML report renders in a real browser.
//!
//! This drives the real `minik` binary, which starts private clusters of real processes. The
//! browser check uses headless Chromium (`.ci/run` installs Debian's `chromium`); outside CI it
//! is skipped with a notice when Chromium is absent, under CI its absence fails the test.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// How far a measured hook step may be from the rule's prediction.
const TOLERANCE_MS: f64 = 300.0;

#[test]
fn quick_demo_shows_the_race_its_fix_and_the_hook_rules() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.html");
    let output = Command::new(env!("CARGO_BIN_EXE_minik"))
        .args(["demo", "--quick", "--output", "json", "--report"])
        .arg(&report)
        .output()
        .expect("run minik demo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "minik demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Value = serde_json::from_str(&stdout).expect("--output json prints JSON");

    let variants = results["race"]["variants"]
        .as_array()
        .expect("race variants");
    assert_eq!(variants.len(), 2);
    let (plain, with_pre_stop) = (&variants[0], &variants[1]);
    assert!(plain["requests"].as_u64().unwrap() > 50, "{plain}");
    assert!(
        plain["failed"].as_u64().unwrap() > 0,
        "without preStop, requests fail: {plain}"
    );
    assert!(
        with_pre_stop["requests"].as_u64().unwrap() > 50,
        "{with_pre_stop}"
    );
    assert_eq!(
        with_pre_stop["failed"].as_u64(),
        Some(0),
        "a preStop longer than the lag loses nothing: {with_pre_stop}"
    );
    for variant in variants {
        let marks = variant["timeline"]["marks"].as_array().unwrap();
        let lanes: Vec<&str> = marks
            .iter()
            .map(|m| m["component"].as_str().unwrap())
            .collect();
        // Only what followed the delete, and the proxy's update named for what it did.
        let proxy: Vec<&str> = marks
            .iter()
            .filter(|m| m["component"] == "proxy")
            .map(|m| m["event"].as_str().unwrap())
            .collect();
        assert_eq!(proxy, ["proxy applied the removal"], "{}", variant["name"]);
        assert!(
            marks.iter().all(|m| m["t_ms"].as_f64().unwrap() >= 0.0),
            "nothing from before the delete: {marks:?}"
        );
        for lane in [
            "client",
            "apiserver",
            "endpoint-controller",
            "endpointslice-controller",
            "proxy",
            "kubelet",
            "process",
        ] {
            assert!(
                lanes.contains(&lane),
                "lane {lane} missing from {}",
                variant["name"]
            );
        }
    }

    for row in results["hooks"]["comparison"]
        .as_array()
        .expect("hooks comparison")
    {
        let predicted = row["predicted_ms"].as_f64().unwrap();
        let measured = row["measured_ms"]
            .as_f64()
            .unwrap_or_else(|| panic!("step not observed: {row}"));
        assert!(
            (measured - predicted).abs() <= TOLERANCE_MS,
            "step off the rule by more than {TOLERANCE_MS} ms: {row}"
        );
    }

    let html = std::fs::read_to_string(&report).expect("the report is written where --report says");
    for lane in [
        "apiserver",
        "endpoint-controller",
        "proxy",
        "kubelet",
        "process",
    ] {
        assert!(
            html.contains(&format!("data-lane=\"{lane}\"")),
            "report lane {lane}"
        );
    }
    assert!(
        html.contains("class=\"failed\""),
        "the report draws failed requests"
    );
    check_in_browser(&report, dir.path());
}

/// Renders the report in headless Chromium and checks the lanes are in the rendered DOM and a
/// screenshot was taken.
fn check_in_browser(report: &Path, dir: &Path) {
    let Some(chromium) = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|path| Path::new(path).exists())
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install chromium (see .ci/run)"
        );
        eprintln!("notice: chromium is not installed; the browser check of the report is skipped");
        return;
    };
    let url = format!("file://{}", report.display());
    let profile = dir.join("chromium-profile");
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ];
    let dom = Command::new(chromium)
        .args(flags)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&dom.stdout);
    for lane in ["kubelet", "proxy", "endpoint-controller"] {
        assert!(
            dom.contains(&format!("data-lane=\"{lane}\"")),
            "the browser rendered no {lane} lane"
        );
    }
    let screenshot = dir.join("report.png");
    let status = Command::new(chromium)
        .args(flags)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", screenshot.display()))
        .args(["--window-size=1200,2400", &url])
        .output()
        .expect("run chromium");
    assert!(
        status.status.success(),
        "chromium --screenshot failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(
        std::fs::metadata(&screenshot)
            .map(|m| m.len() > 10_000)
            .unwrap_or(false),
        "the screenshot is empty"
    );
}
