//! The rows of `get replicationcontrollers`, `get daemonsets`, `get controllerrevisions` and
//! `get cronjobs`.
//!
//! Kubernetes counterpart: `printReplicationController`, `printDaemonSet` and
//! `printControllerRevision` in `pkg/printers/internalversion/printers.go` (1.32). A
//! ReplicationController prints as a ReplicaSet does (its selector is a plain map); a DaemonSet
//! counts nodes: DESIRED is `desiredNumberScheduled`, CURRENT `currentNumberScheduled`, and NODE
//! SELECTOR is the template's `nodeSelector` (`<none>` when empty). A ControllerRevision names its
//! controller as `kind.group/name`. A CronJob shows its schedule, time zone, suspension, how many
//! Jobs are active and when it last scheduled one (`printCronJob`).

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::ReplicationController;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::duration::age;
use super::workloads::template_cells;
use crate::replication::selector_of;

/// The columns of the kinds printed here (`None` for the others).
pub fn columns(kind: &str) -> Option<&'static [(&'static str, i32)]> {
    Some(match kind {
        "ReplicationController" => &[
            ("Name", 0),
            ("Desired", 0),
            ("Current", 0),
            ("Ready", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1),
        ],
        "DaemonSet" => &[
            ("Name", 0),
            ("Desired", 0),
            ("Current", 0),
            ("Ready", 0),
            ("Up-to-date", 0),
            ("Available", 0),
            ("Node Selector", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1),
        ],
        "ControllerRevision" => &[("Name", 0), ("Controller", 0), ("Revision", 0), ("Age", 0)],
        "CronJob" => &[
            ("Name", 0),
            ("Schedule", 0),
            ("Timezone", 0),
            ("Suspend", 0),
            ("Active", 0),
            ("Last Schedule", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1),
        ],
        _ => return None,
    })
}

/// Every cell of an object of a kind printed here (`None` for the others).
pub fn cells(
    kind: &str,
    object: &Value,
    now: Timestamp,
) -> Option<Result<Vec<String>, serde_json::Error>> {
    fn typed<K: DeserializeOwned>(object: &Value) -> Result<K, serde_json::Error> {
        K::deserialize(object)
    }
    Some(match kind {
        "ReplicationController" => typed(object).map(|rc| replication_controller_row(&rc, now)),
        "DaemonSet" => typed(object).map(|ds| daemon_set_row(&ds, now)),
        "ControllerRevision" => typed(object).map(|cr| controller_revision_row(&cr, now)),
        "CronJob" => typed(object).map(|cj| cron_job_row(&cj, now)),
        _ => return None,
    })
}

/// NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR.
pub fn replication_controller_row(rc: &ReplicationController, now: Timestamp) -> Vec<String> {
    let spec = rc.spec.clone().unwrap_or_default();
    let status = rc.status.clone().unwrap_or_default();
    let mut row = vec![
        rc.metadata.name.clone().unwrap_or_default(),
        spec.replicas.unwrap_or(0).to_string(),
        status.replicas.to_string(),
        status.ready_replicas.unwrap_or(0).to_string(),
        age(rc.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
    ];
    row.extend(template_cells(spec.template.as_ref(), &selector_of(rc)));
    row
}

/// NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE-SELECTOR AGE CONTAINERS IMAGES SELECTOR.
pub fn daemon_set_row(ds: &DaemonSet, now: Timestamp) -> Vec<String> {
    let spec = ds.spec.clone().unwrap_or_default();
    let status = ds.status.clone().unwrap_or_default();
    let node_selector = spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.node_selector.clone())
        .filter(|selector| !selector.is_empty())
        .map(|selector| {
            let pairs: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
            pairs.join(",")
        })
        .unwrap_or_else(|| "<none>".to_string());
    let mut row = vec![
        ds.metadata.name.clone().unwrap_or_default(),
        status.desired_number_scheduled.to_string(),
        status.current_number_scheduled.to_string(),
        status.number_ready.to_string(),
        status.updated_number_scheduled.unwrap_or(0).to_string(),
        status.number_available.unwrap_or(0).to_string(),
        node_selector,
        age(ds.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
    ];
    row.extend(template_cells(Some(&spec.template), &spec.selector));
    row
}

/// NAME CONTROLLER REVISION AGE.
pub fn controller_revision_row(revision: &ControllerRevision, now: Timestamp) -> Vec<String> {
    let owner = revision
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|reference| reference.controller == Some(true));
    let controller = owner.map_or_else(
        || "<none>".to_string(),
        |owner| {
            let group = owner.api_version.split_once('/').map(|(group, _)| group);
            let kind = owner.kind.to_ascii_lowercase();
            match group {
                Some(group) => format!("{kind}.{group}/{}", owner.name),
                None => format!("{kind}/{}", owner.name),
            }
        },
    );
    vec![
        revision.metadata.name.clone().unwrap_or_default(),
        controller,
        revision.revision.to_string(),
        age(
            revision.metadata.creation_timestamp.as_ref().map(|t| t.0),
            now,
        ),
    ]
}

/// NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST-SCHEDULE AGE CONTAINERS IMAGES SELECTOR.
pub fn cron_job_row(cj: &CronJob, now: Timestamp) -> Vec<String> {
    let spec = cj.spec.clone().unwrap_or_default();
    let status = cj.status.clone().unwrap_or_default();
    let last = status
        .last_schedule_time
        .as_ref()
        .map_or_else(|| "<none>".to_string(), |t| age(Some(t.0), now));
    let job_spec = spec.job_template.spec.clone().unwrap_or_default();
    let mut row = vec![
        cj.metadata.name.clone().unwrap_or_default(),
        spec.schedule.clone(),
        spec.time_zone
            .clone()
            .unwrap_or_else(|| "<none>".to_string()),
        match spec.suspend {
            Some(true) => "True",
            Some(false) => "False",
            None => "<unset>",
        }
        .to_string(),
        status.active.as_ref().map_or(0, Vec::len).to_string(),
        last,
        age(cj.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
    ];
    let mut cells = template_cells(
        Some(&job_spec.template),
        &job_spec.selector.clone().unwrap_or_default(),
    );
    if job_spec.selector.is_none() {
        cells[2] = "<none>".to_string();
    }
    row.extend(cells);
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-11-22T02:05:00Z".parse().unwrap()
    }

    fn template() -> Value {
        json!({"metadata": {"labels": {"app": "web"}},
               "spec": {"containers": [{"name": "web", "image": "nginx"}]}})
    }

    #[test]
    fn a_replication_controller_prints_like_a_replica_set_with_its_map_selector() {
        let rc = json!({"metadata": {"name": "web", "creationTimestamp": "2026-11-22T02:03:00Z"},
                        "spec": {"replicas": 3, "selector": {"app": "web"}, "template": template()},
                        "status": {"replicas": 2, "readyReplicas": 1}});
        let cells = cells("ReplicationController", &rc, now()).unwrap().unwrap();
        assert_eq!(
            cells,
            ["web", "3", "2", "1", "2m", "web", "nginx", "app=web"]
        );
    }

    #[test]
    fn a_daemon_set_counts_nodes_and_shows_its_node_selector() {
        let mut spec_template = template();
        spec_template["spec"]["nodeSelector"] = json!({"disk": "ssd"});
        let ds = json!({"metadata": {"name": "agent", "creationTimestamp": "2026-11-22T02:03:00Z"},
                        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": spec_template},
                        "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3,
                                   "numberReady": 2, "numberMisscheduled": 0,
                                   "updatedNumberScheduled": 1, "numberAvailable": 2}});
        let cells = cells("DaemonSet", &ds, now()).unwrap().unwrap();
        assert_eq!(
            cells,
            ["agent", "3", "3", "2", "1", "2", "disk=ssd", "2m", "web", "nginx", "app=web"]
        );
    }

    #[test]
    fn a_cron_job_shows_its_schedule_and_last_run() {
        let cj = json!({"metadata": {"name": "tick", "creationTimestamp": "2026-11-22T02:03:00Z"},
                        "spec": {"schedule": "*/5 * * * *", "suspend": false,
                                 "jobTemplate": {"spec": {"template": template()}}},
                        "status": {"active": [{"name": "tick-1"}], "lastScheduleTime": "2026-11-22T02:04:00Z"}});
        let cells = cells("CronJob", &cj, now()).unwrap().unwrap();
        assert_eq!(
            cells,
            [
                "tick",
                "*/5 * * * *",
                "<none>",
                "False",
                "1",
                "60s",
                "2m",
                "web",
                "nginx",
                "<none>"
            ]
        );
    }

    #[test]
    fn a_controller_revision_names_its_owner_by_kind_and_group() {
        let revision = json!({"metadata": {"name": "agent-5d4f", "creationTimestamp": "2026-11-22T02:03:00Z",
                              "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                                   "uid": "u1", "controller": true}]},
                              "revision": 2});
        let cells = cells("ControllerRevision", &revision, now())
            .unwrap()
            .unwrap();
        assert_eq!(cells, ["agent-5d4f", "daemonset.apps/agent", "2", "2m"]);
    }
}
