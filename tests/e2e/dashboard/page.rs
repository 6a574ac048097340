//! What the dashboard tests do in the page: open it, time a pod's arrival in the DOM, record a
//! card's states, read a journey, take screenshots, and pour 1,000 pods in.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use minik_api::core::Pod;
use minik_tests::fixtures::pod;
use minik_tests::Cluster;
use serde_json::{json, Value};

use super::cdp::{artifacts, Browser};

/// Starts Chromium on the dashboard's URL and waits for the first snapshot.
pub async fn open(chromium: &Path, url: &str) -> Browser {
    let mut browser = Browser::start(chromium).await;
    browser.resize(1440, 900).await;
    browser.navigate(url).await;
    let live = "document.getElementById('connection').dataset.state === 'live' && window.__minik.patches > 0";
    browser.wait_for(live, Duration::from_secs(20)).await;
    assert_eq!(
        browser.eval("location.search").await,
        json!(""),
        "the token left the address bar"
    );
    browser
}

fn now_ms() -> f64 {
    jiff::Timestamp::now().as_microsecond() as f64 / 1000.0
}

/// Creates `fixture` through the API and returns the milliseconds until its card was in the DOM
/// (both clocks are this machine's wall clock: `performance.timeOrigin + now()` in the page).
pub async fn created_to_dom(browser: &mut Browser, cluster: &Cluster, fixture: &Pod) -> f64 {
    let key = format!(
        "default/{}",
        fixture.metadata.name.as_deref().unwrap_or_default()
    );
    let install = format!(
        r#"window.__seen = new Promise((ok) => {{
            const check = () => document.querySelector('[data-pod="{key}"]') && (ok(performance.timeOrigin + performance.now()), true);
            if (!check()) new MutationObserver((_, o) => check() && o.disconnect())
                .observe(document.body, {{childList: true, subtree: true}}); }}); true"#
    );
    browser.eval(&install).await;
    let sent = now_ms();
    cluster.pods().create(fixture).await.expect("create pod");
    let seen = browser
        .eval("window.__seen")
        .await
        .as_f64()
        .expect("DOM time");
    seen - sent
}

/// Records every state the card of `key` shows from now on in `window.__states`.
pub async fn record_states(browser: &mut Browser, key: &str) {
    let install = format!(
        r#"window.__states = [];
        const note = () => {{ const el = document.querySelector('[data-pod="{key}"]');
            if (el && window.__states[window.__states.length - 1] !== el.dataset.state) window.__states.push(el.dataset.state); }};
        note(); new MutationObserver(note).observe(document.getElementById('lanes'), {{childList: true, subtree: true, attributes: true}}); true"#
    );
    browser.eval(&install).await;
}

/// One step of a journey as the page lists it.
#[derive(Debug)]
pub struct Step {
    pub step: String,
    pub at: i64,
    pub text: String,
}

/// Shows the journey of the pod once called `key` and returns its steps.
///
/// Events reach the page on their own schedule (the proxy posts its own after it applied a
/// change), so this waits until the journey holds `last`, the step the caller expects last.
pub async fn journey(browser: &mut Browser, key: &str, last: &str) -> Vec<Step> {
    let select = format!(
        r#"state.selected = Object.values(state.tables.journeys).find((j) => j.key === '{key}').uid;
        window.__minik.show('journey'); true"#
    );
    browser.eval(&select).await;
    browser
        .wait_for(
            &format!(r#"document.querySelector('[data-journey="{key}"]')"#),
            Duration::from_secs(5),
        )
        .await;
    browser
        .wait_for(
            &format!(r#"[...document.querySelectorAll('#journey li')].some((li) => li.dataset.step === '{last}')"#),
            Duration::from_secs(15),
        )
        .await;
    let rows = browser
        .eval(r#"[...document.querySelectorAll('#journey li')].map((li) => ({step: li.dataset.step, at: Number(li.dataset.at), text: [...li.children].map((c) => c.textContent.trim()).join('  ')}))"#)
        .await;
    rows.as_array()
        .expect("steps")
        .iter()
        .map(|row| Step {
            step: row["step"].as_str().unwrap_or_default().to_string(),
            at: row["at"].as_i64().unwrap_or_default(),
            text: row["text"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

/// Each of `names` is a step, in this order, and the whole journey is in time order.
pub fn assert_in_order(steps: &[Step], names: &[&str]) {
    assert!(
        steps.windows(2).all(|w| w[0].at <= w[1].at),
        "not in time order: {steps:#?}"
    );
    let mut last = 0;
    for name in names {
        let found = steps.iter().skip(last).position(|s| s.step == *name);
        let at =
            found.unwrap_or_else(|| panic!("no step {name:?} after step {last} in {steps:#?}"));
        last += at;
    }
}

/// Screenshots of the page at 800 and 1440 px wide, as `NAME-800.png` and `NAME-1440.png`, and
/// at 1440 px in the dark theme (`NAME-1440-dark.png`).
pub async fn screenshots(browser: &mut Browser, name: &str) {
    let dir = artifacts("dashboard");
    for width in [800, 1440] {
        browser.resize(width, 900).await;
        browser.eval("new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => ok(true))))").await;
        let path = dir.join(format!("{name}-{width}.png"));
        browser.screenshot(&path).await;
        eprintln!("dashboard: screenshot {}", path.display());
    }
    browser.resize(1440, 900).await;
    // The dark theme, as a system set to dark would ask for it (prefers-color-scheme).
    let dark = json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]});
    browser.call("Emulation.setEmulatedMedia", dark).await;
    browser
        .screenshot(&dir.join(format!("{name}-1440-dark.png")))
        .await;
    browser
        .call("Emulation.setEmulatedMedia", json!({"features": []}))
        .await;
}

/// A Deployment of 3 `minik/web` pods.
pub fn deployment(name: &str, version: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "minik/web",
                    "env": [{"name": "VERSION", "value": version}]}]}}}
    })
}

/// Starts a watch of pods from now on; its task returns the seconds since `started` when it had
/// seen 1,000 `many-` pods added (0 if it ended first).
async fn watch_all_added(
    pods: &minik_client::Api<Pod>,
    started: Instant,
) -> tokio::task::JoinHandle<f64> {
    let list = pods
        .list(&minik_client::ListParams::default())
        .await
        .expect("list");
    let version = list.metadata.resource_version.unwrap_or_default();
    let params = minik_client::ListParams::default().timeout(120);
    let mut stream = pods.watch(&params, &version).await.expect("watch");
    tokio::spawn(async move {
        let mut added = 0;
        while let Ok(Some(event)) =
            tokio::time::timeout(Duration::from_secs(60), stream.next()).await
        {
            if let Ok(minik_api::WatchEvent::Added(pod)) = event {
                added += pod.metadata.name.is_some_and(|n| n.starts_with("many-")) as usize;
                if added == 1000 {
                    return started.elapsed().as_secs_f64();
                }
            }
        }
        0.0
    })
}

/// Creates 1,000 pods no node can take (they stay Pending, no process starts), waits until the
/// page shows them all, then deletes them and waits until it shows none; returns what it measured.
pub async fn thousand_pods(browser: &mut Browser, cluster: &Cluster) -> Value {
    // The longest the main thread was busy: the gap between ticks of a 20 ms timer.
    let monitor = r#"window.__frames = {last: performance.now(), longest: 0};
        setInterval(() => { const now = performance.now();
          window.__frames.longest = Math.max(window.__frames.longest, now - window.__frames.last - 20);
          window.__frames.last = now;
          if (!window.__received && Object.keys(state.tables.pods).length >= 1000) window.__received = Date.now();
          if (!window.__drawn && document.querySelectorAll('.pod').length >= 1000) window.__drawn = Date.now(); }, 20);
        window.__base = window.__minik.patches; document.visibilityState"#;
    assert_eq!(
        browser.eval(monitor).await,
        json!("visible"),
        "timers run at full speed"
    );
    let started = Instant::now();
    let pods = cluster.pods();
    let watched = watch_all_added(&pods, started).await;
    futures::stream::iter(0..1000)
        .map(|i| {
            let pods = pods.clone();
            async move {
                let fixture = pod(&format!("many-{i:04}"))
                    .node_selector("minik.test/none", "x")
                    .build();
                pods.create(&fixture).await.map(|_| ())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await
        .expect("create 1,000 pods");
    let created = started.elapsed();
    browser
        .wait_for(
            "document.querySelectorAll('.pod').length === 1000",
            Duration::from_secs(60),
        )
        .await;
    let shown = started.elapsed();
    let patches = browser.eval("window.__minik.patches - window.__base").await;
    let longest = browser.eval("window.__frames.longest").await;
    let cards = browser
        .eval("document.querySelectorAll('.pod').length")
        .await;
    let start_ms = now_ms() - started.elapsed().as_secs_f64() * 1000.0;
    let received = browser
        .eval("window.__received")
        .await
        .as_f64()
        .unwrap_or_default();
    let drawn = browser
        .eval("window.__drawn")
        .await
        .as_f64()
        .unwrap_or_default();
    // A watch of the test's own: when the API had told a watcher of all 1,000 (the rest is the page's).
    let watched = watched.await.expect("watch task");
    let report = json!({
        "watched_s": watched,
        "received_s": (received - start_ms) / 1000.0, "drawn_s": (drawn - start_ms) / 1000.0,
        "cards": cards, "patches": patches, "longest_frame_ms": longest,
        "created_s": created.as_secs_f64(), "all_shown_s": shown.as_secs_f64(),
    });
    screenshots(browser, "thousand").await;
    futures::stream::iter(0..1000)
        .map(|i| {
            let pods = pods.clone();
            async move {
                pods.delete(
                    &format!("many-{i:04}"),
                    &minik_client::DeleteParams::grace(0),
                )
                .await
                .map(|_| ())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await
        .expect("delete 1,000 pods");
    browser
        .wait_for(
            "document.querySelectorAll('.pod').length === 0",
            Duration::from_secs(60),
        )
        .await;
    let mut report = report;
    report["all_gone_s"] = json!(started.elapsed().as_secs_f64());
    report["longest_frame_ms_with_deletes"] = browser.eval("window.__frames.longest").await;
    report
}
