//! `describe deployment` and `describe replicaset`: the sections of kubectl's `DeploymentDescriber`
//! and `ReplicaSetDescriber` (`describe.go`), with the Pod Template of `DescribePodTemplate`.
//!
//! A Deployment shows its replica counts on one line, its strategy, its conditions as a table,
//! and the ReplicaSets it controls: the new one (template equal to the Deployment's) and the old
//! ones that still have pods. A ReplicaSet shows its pods by phase. minik simplifies: no
//! `Host Port` line and no volume details beyond their type in the template.

use std::collections::BTreeMap;

use minik_api::apps::{Deployment, ReplicaSet};
use minik_api::core::{Pod, PodTemplateSpec};
use minik_api::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::pod::{describe_container_at, volume_line};
use super::{describe_time, Lines};
use crate::commands::workloads::{format_selector, new_replica_set, old_replica_sets};

/// Writes the Deployment's sections; `sets` are the ReplicaSets it controls.
pub fn describe_deployment(out: &mut Lines, deployment: &Deployment, sets: &[ReplicaSet]) {
    let meta = &deployment.metadata;
    let spec = deployment.spec.clone().unwrap_or_default();
    let status = deployment.status.clone().unwrap_or_default();
    out.field(0, "Name", meta.name.clone().unwrap_or_default());
    out.field(0, "Namespace", meta.namespace.clone().unwrap_or_default());
    out.field(
        0,
        "CreationTimestamp",
        describe_time(meta.creation_timestamp.as_ref()),
    );
    out.map(0, "Labels", meta.labels.as_ref());
    annotations(out, 0, meta.annotations.as_ref());
    out.field(0, "Selector", format_selector(Some(&spec.selector)));
    out.field(
        0,
        "Replicas",
        format!(
            "{} desired | {} updated | {} total | {} available | {} unavailable",
            spec.replicas.unwrap_or(1),
            status.updated_replicas.unwrap_or(0),
            status.replicas.unwrap_or(0),
            status.available_replicas.unwrap_or(0),
            status.unavailable_replicas.unwrap_or(0)
        ),
    );
    let strategy = spec.strategy.clone().unwrap_or_default();
    let strategy_type = strategy
        .type_
        .clone()
        .unwrap_or_else(|| "RollingUpdate".into());
    out.field(0, "StrategyType", &strategy_type);
    out.field(0, "MinReadySeconds", spec.min_ready_seconds.unwrap_or(0));
    if let Some(rolling) = strategy
        .rolling_update
        .as_ref()
        .filter(|_| strategy_type == "RollingUpdate")
    {
        out.field(
            0,
            "RollingUpdateStrategy",
            format!(
                "{} max unavailable, {} max surge",
                int_or_percent(rolling.max_unavailable.as_ref()),
                int_or_percent(rolling.max_surge.as_ref())
            ),
        );
    }
    pod_template(out, &spec.template);
    let conditions = status.conditions.clone().unwrap_or_default();
    if !conditions.is_empty() {
        out.line(0, "Conditions:");
        out.line(1, "Type\tStatus\tReason");
        out.line(1, "----\t------\t------");
        for c in conditions {
            let reason = c.reason.unwrap_or_default();
            out.line(1, &format!("{}\t{}\t{reason}", c.type_, c.status));
        }
    }
    let old: Vec<String> = old_replica_sets(deployment, sets)
        .into_iter()
        .map(replicas_created)
        .collect();
    out.field(0, "OldReplicaSets", none_if_empty(old.join(", ")));
    let new = new_replica_set(deployment, sets).map(replicas_created);
    out.field(0, "NewReplicaSet", new.unwrap_or_else(|| "<none>".into()));
}

/// Writes the ReplicaSet's sections; `pods` are the pods it controls.
pub fn describe_replica_set(out: &mut Lines, rs: &ReplicaSet, pods: &[Pod]) {
    let meta = &rs.metadata;
    let spec = rs.spec.clone().unwrap_or_default();
    let status = rs.status.clone().unwrap_or_default();
    out.field(0, "Name", meta.name.clone().unwrap_or_default());
    out.field(0, "Namespace", meta.namespace.clone().unwrap_or_default());
    out.field(0, "Selector", format_selector(Some(&spec.selector)));
    out.map(0, "Labels", meta.labels.as_ref());
    annotations(out, 0, meta.annotations.as_ref());
    if let Some(owner) = meta
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
    {
        out.field(0, "Controlled By", format!("{}/{}", owner.kind, owner.name));
    }
    out.field(
        0,
        "Replicas",
        format!(
            "{} current / {} desired",
            status.replicas,
            spec.replicas.unwrap_or(1)
        ),
    );
    out.field(0, "Pods Status", pods_status(pods));
    pod_template(out, &spec.template.clone().unwrap_or_default());
    let conditions = status.conditions.clone().unwrap_or_default();
    if !conditions.is_empty() {
        out.line(0, "Conditions:");
        out.line(1, "Type\tStatus\tReason");
        out.line(1, "----\t------\t------");
        for c in conditions {
            let reason = c.reason.unwrap_or_default();
            out.line(1, &format!("{}\t{}\t{reason}", c.type_, c.status));
        }
    }
}

/// `3 Running / 0 Waiting / 0 Succeeded / 0 Failed` (Waiting counts Pending pods).
pub fn pods_status(pods: &[Pod]) -> String {
    let count = |phase: &str| {
        pods.iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(phase))
            .count()
    };
    format!(
        "{} Running / {} Waiting / {} Succeeded / {} Failed",
        count("Running"),
        count("Pending"),
        count("Succeeded"),
        count("Failed")
    )
}

/// The `Pod Template:` block: labels, annotations, containers, volumes (also `rollout history
/// --revision`'s body).
pub fn pod_template(out: &mut Lines, template: &PodTemplateSpec) {
    out.line(0, "Pod Template:");
    let meta = template.metadata.clone().unwrap_or_default();
    out.map(1, "Labels", meta.labels.as_ref());
    if meta.annotations.as_ref().is_some_and(|a| !a.is_empty()) {
        annotations(out, 1, meta.annotations.as_ref());
    }
    let spec = template.spec.clone().unwrap_or_default();
    if let Some(account) = spec.service_account_name.as_ref().filter(|a| !a.is_empty()) {
        out.field(1, "Service Account", account);
    }
    out.line(1, "Containers:");
    for container in &spec.containers {
        describe_container_at(out, " ", container, None);
    }
    let volumes: Vec<String> = spec.volumes.iter().flatten().map(volume_line).collect();
    out.list(1, "Volumes", &volumes);
    out.map(1, "Node-Selectors", spec.node_selector.as_ref());
    let tolerations: Vec<String> = spec
        .tolerations
        .iter()
        .flatten()
        .map(|t| t.key.clone().unwrap_or_default())
        .collect();
    out.list(1, "Tolerations", &tolerations);
}

/// Annotations as kubectl prints them: `key: value`, without `last-applied-configuration`.
fn annotations(out: &mut Lines, level: usize, map: Option<&BTreeMap<String, String>>) {
    let entries: Vec<String> = map
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != "kubectl.kubernetes.io/last-applied-configuration")
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    out.list(level, "Annotations", &entries);
}

/// `web-7c5ddbdf54 (3/3 replicas created)`.
fn replicas_created(rs: &ReplicaSet) -> String {
    format!(
        "{} ({}/{} replicas created)",
        rs.metadata.name.clone().unwrap_or_default(),
        rs.status.as_ref().map_or(0, |s| s.replicas),
        rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    )
}

/// `25%` or `1` (the defaults apply upstream; minik's API server stores them).
fn int_or_percent(value: Option<&IntOrString>) -> String {
    match value {
        Some(IntOrString::Int(n)) => n.to_string(),
        Some(IntOrString::String(s)) => s.clone(),
        None => "25%".to_string(),
    }
}

fn none_if_empty(text: String) -> String {
    if text.is_empty() {
        "<none>".to_string()
    } else {
        text
    }
}

#[cfg(test)]
#[path = "workloads_tests.rs"]
mod tests;
