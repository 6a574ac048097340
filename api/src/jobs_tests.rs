//! Table tests of Job defaults, the generated selector and validation.

use super::*;
use serde_json::json;

fn job(spec: serde_json::Value) -> Job {
    let mut spec = spec;
    if spec.get("template").is_none() {
        spec["template"] = json!({"spec": {"restartPolicy": "Never",
            "containers": [{"name": "pi", "image": "perl"}]}});
    }
    serde_json::from_value(json!({"metadata": {"name": "pi", "uid": "u1"}, "spec": spec})).unwrap()
}

fn created(spec: serde_json::Value) -> Job {
    let mut job = job(spec);
    default_job(&mut job);
    generate_selector(&mut job);
    job
}

fn fields(causes: &[StatusCause]) -> Vec<&str> {
    causes.iter().filter_map(|c| c.field.as_deref()).collect()
}

#[test]
fn defaults_fill_completions_parallelism_backoff_and_mode() {
    let both_unset = created(json!({}));
    let spec = both_unset.spec.as_ref().unwrap();
    assert_eq!((spec.completions, spec.parallelism), (Some(1), Some(1)));
    assert_eq!(spec.backoff_limit, Some(6));
    assert_eq!(spec.completion_mode.as_deref(), Some("NonIndexed"));
    assert_eq!(spec.suspend, Some(false));
    assert_eq!(
        spec.pod_replacement_policy.as_deref(),
        Some("TerminatingOrFailed")
    );
    // A work queue: parallelism alone is set, completions stays unset.
    let queue = created(json!({"parallelism": 3}));
    assert_eq!(queue.spec.as_ref().unwrap().completions, None);
    let per_index = created(json!({"completions": 2, "backoffLimitPerIndex": 1,
                                   "completionMode": "Indexed"}));
    assert_eq!(per_index.spec.unwrap().backoff_limit, Some(i32::MAX));
}

#[test]
fn the_server_generates_the_selector_and_the_pod_labels() {
    let job = created(json!({}));
    let spec = job.spec.as_ref().unwrap();
    let selector = spec.selector.as_ref().unwrap();
    assert_eq!(
        selector.match_labels,
        Some(BTreeMap::from([(CONTROLLER_UID_LABEL.into(), "u1".into())]))
    );
    let labels = spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    assert_eq!(labels[CONTROLLER_UID_LABEL], "u1");
    assert_eq!(labels[JOB_NAME_LABEL], "pi");
    assert_eq!(labels[LEGACY_CONTROLLER_UID_LABEL], "u1");
    assert_eq!(labels[LEGACY_JOB_NAME_LABEL], "pi");
    assert_eq!(job.metadata.labels.as_ref(), Some(&labels));
    assert!(validate_job(&job).is_empty(), "{:?}", validate_job(&job));
}

#[test]
fn a_selector_the_server_did_not_generate_needs_manual_selector() {
    let template = json!({"metadata": {"labels": {"app": "pi"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]}});
    let spec = json!({"selector": {"matchLabels": {"app": "pi"}}, "template": template});
    let auto = created(spec.clone());
    assert_eq!(fields(&validate_job(&auto)), ["spec.selector"]);
    let mut manual_spec = spec;
    manual_spec["manualSelector"] = json!(true);
    let manual = created(manual_spec);
    assert!(validate_job(&manual).is_empty());
    let labels = manual
        .spec
        .unwrap()
        .template
        .metadata
        .unwrap()
        .labels
        .unwrap();
    assert!(!labels.contains_key(CONTROLLER_UID_LABEL));
}

#[test]
fn validation_names_each_bad_field() {
    let cases = [
        (json!({"completions": -1}), "spec.completions"),
        (json!({"parallelism": -2}), "spec.parallelism"),
        (json!({"backoffLimit": -1}), "spec.backoffLimit"),
        (
            json!({"activeDeadlineSeconds": -5}),
            "spec.activeDeadlineSeconds",
        ),
        (
            json!({"completionMode": "Sometimes"}),
            "spec.completionMode",
        ),
        (
            json!({"completionMode": "Indexed", "parallelism": 2}),
            "spec.completions",
        ),
        (
            json!({"template": {"spec": {"restartPolicy": "Always",
                "containers": [{"name": "pi", "image": "perl"}]}}}),
            "spec.template.spec.restartPolicy",
        ),
        (
            json!({"template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}}),
            "spec.template.spec.restartPolicy",
        ),
    ];
    for (spec, field) in cases {
        let job = created(spec.clone());
        assert_eq!(fields(&validate_job(&job)), [field], "{spec}");
    }
}

#[test]
fn the_template_selector_and_completions_are_immutable() {
    let old = created(json!({"completions": 3}));
    assert!(validate_job_update(&old, &old).is_empty());
    let mut new = old.clone();
    let spec = new.spec.as_mut().unwrap();
    spec.completions = Some(4);
    spec.template.spec.as_mut().unwrap().containers[0].image = Some("busybox".into());
    spec.parallelism = Some(5);
    assert_eq!(
        fields(&validate_job_update(&new, &old)),
        ["spec.template", "spec.completions"]
    );
}
