//! The dashboard in Firefox (issue 23: "works in Chromium and Firefox"): the same page, driven
//! over WebDriver BiDi (`bidi.rs`) instead of the DevTools protocol, follows a pod from creation
//! to gone and draws its journey; screenshots at 800 and 1440 px as `firefox-*.png`.
//!
//! Skips, saying so, when Firefox is absent (`.ci/run` installs Debian's `firefox-esr`).

use std::time::Duration;

use minik_tests::fixtures::pod;
use minik_tests::wait::{pod as pod_is, wait_deleted, wait_for};
use serde_json::json;

use super::bidi::{firefox, Firefox};
use super::cdp::artifacts;
use crate::support::{stop_clean, RUNNING};

/// The page goes live in Firefox, shows a pod Ready, then Terminating and gone, and lists its
/// journey from `created` to `gone`.
#[tokio::test]
async fn the_page_follows_a_pod_in_firefox() {
    let Some(binary) = firefox() else {
        eprintln!("SKIPPED: no Firefox at /usr/bin/firefox-esr (set FIREFOX); .ci/run installs it");
        return;
    };
    let (cluster, url) = super::cluster_with_dashboard().await;
    let mut browser = Firefox::start(&binary).await;
    browser.resize(1440, 900).await;
    browser.navigate(&url).await;
    let live = "document.getElementById('connection').dataset.state === 'live' && window.__minik.patches > 0";
    browser.wait_for(live, Duration::from_secs(30)).await;
    assert_eq!(
        browser.eval("location.search").await,
        json!(""),
        "the token left the address bar"
    );

    // Terminating for a second (preStop), longer than the page's 100 ms batches.
    let fixture = pod("web")
        .label("app", "web")
        .port(8080)
        .pre_stop_sleep(Duration::from_secs(1))
        .build();
    cluster.pods().create(&fixture).await.expect("create");
    wait_for(&cluster.pods(), "web", pod_is::is_ready, RUNNING)
        .await
        .expect("Ready");
    let card = r#"document.querySelector('[data-pod="default/web"]')"#;
    let ready = format!("{card}?.dataset.state === 'Ready'");
    browser.wait_for(&ready, Duration::from_secs(10)).await;
    let dir = artifacts("dashboard");
    for width in [800, 1440] {
        browser.resize(width, 900).await;
        browser
            .screenshot(&dir.join(format!("firefox-{width}.png")))
            .await;
    }

    let record = format!(
        "(() => {{ window.__states = []; setInterval(() => {{ const s = {card}?.dataset.state;
         if (s && window.__states[window.__states.length - 1] !== s) window.__states.push(s); }}, 10); return true; }})()"
    );
    browser.eval(&record).await;
    let params = minik_client::DeleteParams {
        grace_period_seconds: Some(2),
        ..Default::default()
    };
    cluster.pods().delete("web", &params).await.expect("delete");
    wait_deleted(&cluster.pods(), "web", RUNNING)
        .await
        .expect("gone");
    browser
        .wait_for(&format!("!{card}"), Duration::from_secs(10))
        .await;
    let states = browser.eval("window.__states").await;
    assert!(
        states
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "Terminating"),
        "seen: {states}"
    );

    let show = r#"(() => { state.selected = Object.values(state.tables.journeys).find((j) => j.key === 'default/web').uid;
        window.__minik.show('journey'); return true; })()"#;
    browser.eval(show).await;
    let has = |step: &str| {
        format!("[...document.querySelectorAll('#journey li')].some((li) => li.dataset.step === '{step}')")
    };
    browser
        .wait_for(&has("gone"), Duration::from_secs(10))
        .await;
    let steps = browser
        .eval("[...document.querySelectorAll('#journey li')].map((li) => li.dataset.step)")
        .await;
    eprintln!("dashboard (firefox): journey of default/web: {steps}");
    let steps: Vec<&str> = steps
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    let at = |step: &str| steps.iter().position(|s| *s == step);
    for step in ["created", "scheduled", "Ready", "deletionTimestamp", "gone"] {
        assert!(at(step).is_some(), "no step {step} in {steps:?}");
    }
    assert!(at("created") < at("Ready") && at("Ready") < at("deletionTimestamp"));
    assert!(at("deletionTimestamp") < at("gone"), "{steps:?}");
    browser.close().await;
    stop_clean(cluster).await;
}
