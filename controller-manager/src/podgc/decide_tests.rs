//! Unit tests of the pod garbage collector's plan: threshold, orphans, unscheduled terminating pods.

use super::*;
use minik_api::core::{PodSpec, PodStatus};
use minik_api::meta::{ObjectMeta, Time};

fn pod(name: &str, phase: &str, node: Option<&str>, created: i64) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            creation_timestamp: Some(Time(jiff::Timestamp::from_second(created).unwrap())),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: node.map(String::from),
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some(phase.into()),
            ..PodStatus::default()
        }),
    })
}

fn names(keys: &[ObjectKey]) -> Vec<&str> {
    keys.iter().map(|k| k.name.as_str()).collect()
}

fn nodes(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn terminated_pods_beyond_the_threshold_go_oldest_first_evicted_before_all() {
    let mut evicted = (*pod("evicted", "Failed", Some("n"), 50)).clone();
    evicted.status.as_mut().unwrap().reason = Some("Evicted".into());
    let pods = vec![
        pod("new", "Succeeded", Some("n"), 30),
        pod("old", "Failed", Some("n"), 10),
        pod("b-mid", "Succeeded", Some("n"), 20),
        pod("a-mid", "Succeeded", Some("n"), 20),
        pod("running", "Running", Some("n"), 1),
        Arc::new(evicted),
    ];
    let mut missing = BTreeMap::new();
    let now = Instant::now();
    let plan = plan(
        &pods,
        &nodes(&["n"]),
        2,
        Duration::from_secs(40),
        &mut missing,
        now,
    );
    assert_eq!(names(&plan.terminated), ["evicted", "old", "a-mid"]);
    assert!(plan.orphaned.is_empty() && plan.unscheduled_terminating.is_empty());
    // At or under the threshold, or with the threshold off, nothing goes.
    let under = super::plan(&pods, &nodes(&["n"]), 5, Duration::ZERO, &mut missing, now);
    assert!(under.terminated.is_empty());
    let off = super::plan(&pods, &nodes(&["n"]), 0, Duration::ZERO, &mut missing, now);
    assert!(off.terminated.is_empty());
}

#[test]
fn pods_of_a_missing_node_go_after_the_quarantine() {
    let pods = vec![
        pod("web", "Running", Some("gone"), 1),
        pod("db", "Running", Some("n"), 1),
    ];
    let mut missing = BTreeMap::new();
    let start = Instant::now();
    let quarantine = Duration::from_secs(40);
    let first = plan(&pods, &nodes(&["n"]), 10, quarantine, &mut missing, start);
    assert!(first.orphaned.is_empty());
    assert_eq!(first.recheck_in, Some(quarantine));
    let later = start + Duration::from_secs(40);
    let second = plan(&pods, &nodes(&["n"]), 10, quarantine, &mut missing, later);
    assert_eq!(names(&second.orphaned["gone"]), ["web"]);
    // The node came back: the quarantine is forgotten.
    let back = plan(
        &pods,
        &nodes(&["n", "gone"]),
        10,
        quarantine,
        &mut missing,
        later,
    );
    assert!(back.orphaned.is_empty() && missing.is_empty());
}

#[test]
fn terminating_pods_never_scheduled_go() {
    let mut terminating = (*pod("stuck", "Pending", None, 1)).clone();
    terminating.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
    let pods = vec![Arc::new(terminating), pod("waiting", "Pending", None, 1)];
    let plan = plan(
        &pods,
        &nodes(&[]),
        10,
        Duration::ZERO,
        &mut BTreeMap::new(),
        Instant::now(),
    );
    assert_eq!(names(&plan.unscheduled_terminating), ["stuck"]);
}
