//! `rollout history` and `rollout undo`: a Deployment's revisions are its ReplicaSets.
//!
//! Kubernetes counterpart: `DeploymentHistoryViewer` (`pkg/polymorphichelpers/history.go`) and
//! `DeploymentRollbacker` (`rollback.go`). Each ReplicaSet the Deployment controls carries a
//! `deployment.kubernetes.io/revision` annotation; history prints them with their
//! `kubernetes.io/change-cause`. Undo picks the revision (the one before the newest, or
//! `--to-revision`), and copies that ReplicaSet's template, minus its `pod-template-hash` label,
//! back into the Deployment with its annotations, in one JSON patch as kubectl does.

use std::collections::BTreeMap;
use std::io::Write as _;

use anyhow::{anyhow, bail};
use serde_json::json;

use minik_api::apps::{Deployment, ReplicaSet};
use minik_api::core::PodTemplateSpec;
use minik_client::{Api, Patch};

use super::named;
use crate::commands::describe::workloads::pod_template;
use crate::commands::describe::Lines;
use crate::commands::workloads::{equal_ignore_hash, owned_replica_sets, revision, without_hash};

/// The annotation `kubectl --record` (and users) put the reason for a change in.
const CHANGE_CAUSE: &str = "kubernetes.io/change-cause";

/// Deployment annotations that are the controller's or kubectl's own: undo keeps the Deployment's
/// values instead of copying the ReplicaSet's (kubectl's `annotationsToSkip`).
const ANNOTATIONS_TO_SKIP: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/revision-history",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    "deprecated.deployment.rollback.to",
];

/// Runs `rollout history`: the table, or with `revision` > 0 that revision's pod template.
pub async fn history(api: &Api<Deployment>, name: &str, revision: i64) -> anyhow::Result<()> {
    let deployment = api.get(name).await?;
    let sets = owned_replica_sets(api.client(), &deployment).await?;
    if revision > 0 {
        print!("{}", revision_details(name, &sets, revision)?);
        return Ok(());
    }
    println!("{}", named(name));
    println!("{}", history_table(&sets));
    Ok(())
}

/// `deployment.apps/web with revision #2`, then that ReplicaSet's `Pod Template:` block.
pub fn revision_details(name: &str, sets: &[ReplicaSet], revision: i64) -> anyhow::Result<String> {
    let rs = revisions(sets)
        .remove(&revision)
        .ok_or_else(|| anyhow!("unable to find the specified revision"))?;
    let mut out = Lines::default();
    let template = rs.spec.as_ref().and_then(|s| s.template.clone());
    pod_template(&mut out, &template.unwrap_or_default());
    Ok(format!(
        "{} with revision #{revision}\n{}\n",
        named(name),
        out.render()
    ))
}

/// `REVISION  CHANGE-CAUSE` and one row per revision, oldest first.
pub fn history_table(sets: &[ReplicaSet]) -> String {
    let mut text = String::from("REVISION\tCHANGE-CAUSE\n");
    for (number, rs) in revisions(sets) {
        let cause = rs
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(CHANGE_CAUSE))
            .filter(|c| !c.is_empty())
            .map_or("<none>", String::as_str);
        text.push_str(&format!("{number}\t{cause}\n"));
    }
    // kubectl's `tabbedString`: minwidth 0, padding 2.
    let mut writer = tabwriter::TabWriter::new(Vec::new()).minwidth(0).padding(2);
    let _ = writer.write_all(text.as_bytes());
    match writer.into_inner() {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => text,
    }
}

fn revisions(sets: &[ReplicaSet]) -> BTreeMap<i64, &ReplicaSet> {
    sets.iter()
        .filter_map(|rs| Some((revision(rs)?, rs)))
        .collect()
}

/// What `rollout undo` does.
#[derive(Debug, PartialEq)]
pub enum Undo {
    /// The Deployment already runs that revision's template.
    Skip { revision: i64 },
    /// Write this template and these annotations into the Deployment.
    Rollback {
        revision: i64,
        template: Box<PodTemplateSpec>,
        annotations: BTreeMap<String, String>,
    },
}

/// Chooses what undo writes: revision `to_revision`, or (0) the newest revision but one.
pub fn plan_undo(
    deployment: &Deployment,
    sets: &[ReplicaSet],
    to_revision: i64,
) -> anyhow::Result<Undo> {
    let name = deployment.metadata.name.clone().unwrap_or_default();
    let spec = deployment.spec.clone().unwrap_or_default();
    if spec.paused == Some(true) {
        bail!("you cannot rollback a paused deployment; resume it first with 'minik rollout resume deployment/{name}' and try again");
    }
    let revisions = revisions(sets);
    let (revision, rs) = if to_revision > 0 {
        revisions
            .get_key_value(&to_revision)
            .ok_or_else(|| anyhow!("unable to find specified revision {to_revision} in history"))?
    } else {
        revisions
            .iter()
            .rev()
            .nth(1)
            .ok_or_else(|| anyhow!("no rollout history found for deployment \"{name}\""))?
    };
    let template = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default();
    if equal_ignore_hash(&template, &spec.template) {
        return Ok(Undo::Skip {
            revision: *revision,
        });
    }
    let keep = |key: &String| ANNOTATIONS_TO_SKIP.contains(&key.as_str());
    let mut annotations: BTreeMap<String, String> = deployment
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    annotations.extend(
        rs.metadata
            .annotations
            .iter()
            .flatten()
            .filter(|(k, _)| !keep(k))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    Ok(Undo::Rollback {
        revision: *revision,
        template: Box::new(without_hash(&template)),
        annotations,
    })
}

/// Runs `rollout undo`.
pub async fn undo(api: &Api<Deployment>, name: &str, to_revision: i64) -> anyhow::Result<()> {
    let deployment = api.get(name).await?;
    let sets = owned_replica_sets(api.client(), &deployment).await?;
    match plan_undo(&deployment, &sets, to_revision)? {
        Undo::Skip { revision } => println!(
            "{} skipped rollback (current template already matches revision {revision})",
            named(name)
        ),
        Undo::Rollback {
            template,
            annotations,
            ..
        } => {
            // `add` replaces an existing member and, unlike kubectl's `replace`, also works when
            // the Deployment has no annotations at all.
            let patch = json!([
                {"op": "replace", "path": "/spec/template", "value": template},
                {"op": "add", "path": "/metadata/annotations", "value": annotations},
            ]);
            api.patch(name, &Patch::Json(patch)).await?;
            println!("{} rolled back", named(name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn rs(revision: &str, image: &str, cause: Option<&str>) -> ReplicaSet {
        let mut annotations = json!({"deployment.kubernetes.io/revision": revision,
            "deployment.kubernetes.io/desired-replicas": "3"});
        if let Some(cause) = cause {
            annotations[CHANGE_CAUSE] = Value::from(cause);
        }
        serde_json::from_value(json!({
            "metadata": {"name": format!("web-{image}"), "annotations": annotations},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": image}},
                "spec": {"containers": [{"name": "main", "image": image}]}}},
        }))
        .unwrap()
    }

    fn deployment(image: &str, paused: bool) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "annotations": {"deployment.kubernetes.io/revision": "3"}},
            "spec": {"paused": paused, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": image}]}}},
        }))
        .unwrap()
    }

    fn sets() -> Vec<ReplicaSet> {
        vec![
            rs("3", "v3", None),
            rs("1", "v1", Some("first")),
            rs("2", "v2", None),
        ]
    }

    #[test]
    fn history_lists_revisions_oldest_first_with_their_change_cause() {
        assert_eq!(
            history_table(&sets()),
            "REVISION  CHANGE-CAUSE\n1         first\n2         <none>\n3         <none>\n"
        );
    }

    #[test]
    fn one_revision_shows_its_pod_template() {
        let text = revision_details("web", &sets(), 2).unwrap();
        assert!(
            text.starts_with("deployment.apps/web with revision #2\nPod Template:\n  Labels:"),
            "{text}"
        );
        assert!(text.contains("pod-template-hash=v2"), "{text}");
        assert!(text.contains("   main:\n    Image:         v2\n"), "{text}");
        assert_eq!(
            revision_details("web", &sets(), 9).unwrap_err().to_string(),
            "unable to find the specified revision"
        );
    }

    #[test]
    fn undo_goes_back_one_revision_and_drops_the_hash_label() {
        let Undo::Rollback {
            revision,
            template,
            annotations,
        } = plan_undo(&deployment("v3", false), &sets(), 0).unwrap()
        else {
            panic!("expected a rollback");
        };
        assert_eq!(revision, 2);
        assert_eq!(
            template.spec.unwrap().containers[0].image.as_deref(),
            Some("v2")
        );
        let labels = template.metadata.unwrap().labels.unwrap();
        assert_eq!(labels.keys().collect::<Vec<_>>(), ["app"]);
        // The Deployment's own revision stays; the ReplicaSet's controller annotations are not copied.
        assert_eq!(
            annotations,
            BTreeMap::from([("deployment.kubernetes.io/revision".into(), "3".into())])
        );
    }

    #[test]
    fn undo_to_a_revision_skips_refuses_or_rolls_back() {
        let with_cause = plan_undo(&deployment("v3", false), &sets(), 1).unwrap();
        assert!(
            matches!(&with_cause, Undo::Rollback { revision: 1, annotations, .. }
            if annotations.get(CHANGE_CAUSE).map(String::as_str) == Some("first"))
        );
        assert_eq!(
            plan_undo(&deployment("v3", false), &sets(), 3).unwrap(),
            Undo::Skip { revision: 3 }
        );
        let error = |d: &Deployment, sets: &[ReplicaSet], to: i64| {
            plan_undo(d, sets, to).unwrap_err().to_string()
        };
        assert_eq!(
            error(&deployment("v3", false), &sets(), 7),
            "unable to find specified revision 7 in history"
        );
        assert_eq!(
            error(&deployment("v3", false), &sets()[..1], 0),
            "no rollout history found for deployment \"web\""
        );
        assert!(error(&deployment("v3", true), &sets(), 0)
            .starts_with("you cannot rollback a paused deployment"));
    }
}
