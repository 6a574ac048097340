//! `minik describe pod|service|node|deployment|replicaset NAME`: an object in kubectl's sections, then its Events.
//!
//! Kubernetes counterpart: `kubectl describe` (`staging/src/k8s.io/kubectl/pkg/describe/describe.go`,
//! `PodDescriber`, `ServiceDescriber`, `NodeDescriber`, `DeploymentDescriber`, `ReplicaSetDescriber`). Output is written as `Key:\tvalue` lines
//! and aligned by an elastic tabwriter (minwidth 0, padding 2), as kubectl does. The Events come
//! from a list with `fieldSelector=involvedObject.name=…,involvedObject.namespace=…,involvedObject.uid=…`.
//!
//! minik simplifies: fewer fields than kubectl (no volumes' details beyond their type, no QoS
//! computation beyond requests/limits, no resource summary on nodes).

mod node;
mod pod;
mod service;
pub mod workloads;

use std::io::Write as _;

use anyhow::bail;
use jiff::Timestamp;
use reqwest::Method;
use serde_json::Value;

use minik_api::core::Event;
use minik_client::Client;

use super::resources::{kind, object_path, with_query, GlobalFlags};
use crate::printers::cluster::event_last_seen;
use crate::printers::duration::{age, human_duration};

/// Flags of `minik describe`.
#[derive(clap::Args, Debug)]
pub struct DescribeArgs {
    /// The kind (pod, service, node), or KIND/NAME.
    pub kind: String,
    /// The object's name.
    pub name: Option<String>,
}

/// Runs `minik describe`.
pub async fn describe(args: DescribeArgs, flags: &GlobalFlags) -> anyhow::Result<()> {
    let (kind_name, name) = match args.kind.split_once('/') {
        Some((kind_name, name)) => (kind_name.to_string(), name.to_string()),
        None => match &args.name {
            Some(name) => (args.kind.clone(), name.clone()),
            None => bail!("you must specify the name of the resource to describe"),
        },
    };
    let info = kind(&kind_name)?;
    let client = flags.client()?;
    let object = client
        .request_json(
            Method::GET,
            &object_path(info, flags.namespace(), &name),
            None,
        )
        .await?;
    let mut out = Lines::default();
    match info.kind {
        "Pod" => pod::describe(&mut out, &serde_json::from_value(object.clone())?),
        "Service" => {
            let endpoints_path = object_path(kind("endpoints")?, flags.namespace(), &name);
            let endpoints = client
                .request_json(Method::GET, &endpoints_path, None)
                .await
                .ok();
            service::describe(
                &mut out,
                &serde_json::from_value(object.clone())?,
                endpoints
                    .and_then(|e| serde_json::from_value(e).ok())
                    .as_ref(),
            );
        }
        "Node" => {
            let pods_path = with_query(
                "/api/v1/pods",
                &[("fieldSelector", Some(&format!("spec.nodeName={name}")))],
            );
            let pods = client.request_json(Method::GET, &pods_path, None).await?;
            node::describe(&mut out, &serde_json::from_value(object.clone())?, &pods);
        }
        "Deployment" => {
            let deployment = serde_json::from_value(object.clone())?;
            let sets = crate::commands::workloads::owned_replica_sets(&client, &deployment).await?;
            workloads::describe_deployment(&mut out, &deployment, &sets);
        }
        "ReplicaSet" => {
            let rs = serde_json::from_value(object.clone())?;
            let pods = controlled_pods(&client, flags.namespace(), &object).await?;
            workloads::describe_replica_set(&mut out, &rs, &pods);
        }
        other => bail!("describing a {other} is not supported by minik (pod, service, node, deployment, replicaset are)"),
    }
    events(
        &mut out,
        &events_of(&client, &object).await?,
        Timestamp::now(),
    );
    print!("{}", out.render());
    Ok(())
}

/// The pods whose controller is `owner` (a ReplicaSet), for its `Pods Status` line.
async fn controlled_pods(
    client: &Client,
    namespace: &str,
    owner: &Value,
) -> anyhow::Result<Vec<minik_api::core::Pod>> {
    let uid = owner.pointer("/metadata/uid").and_then(Value::as_str);
    let list = client
        .request_json(
            Method::GET,
            &format!("/api/v1/namespaces/{namespace}/pods"),
            None,
        )
        .await?;
    let pods: Vec<minik_api::core::Pod> = match list.get("items") {
        Some(items) => serde_json::from_value(items.clone())?,
        None => Vec::new(),
    };
    Ok(pods
        .into_iter()
        .filter(|pod| {
            pod.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true) && Some(o.uid.as_str()) == uid)
        })
        .collect())
}

/// The Events about an object, oldest first.
async fn events_of(client: &Client, object: &Value) -> anyhow::Result<Vec<Event>> {
    let field = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let namespace = Some(field("/metadata/namespace"))
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_string());
    let mut selector = format!(
        "involvedObject.name={},involvedObject.namespace={}",
        field("/metadata/name"),
        field("/metadata/namespace")
    );
    let uid = field("/metadata/uid");
    if !uid.is_empty() {
        selector.push_str(&format!(",involvedObject.uid={uid}"));
    }
    let path = with_query(
        &format!("/api/v1/namespaces/{namespace}/events"),
        &[("fieldSelector", Some(&selector))],
    );
    let list = client.request_json(Method::GET, &path, None).await?;
    let mut events: Vec<Event> = match list.get("items") {
        Some(items) => serde_json::from_value(items.clone())?,
        None => Vec::new(),
    };
    events.sort_by_key(event_last_seen);
    Ok(events)
}

/// The `Events:` section: Type Reason Age From Message.
fn events(out: &mut Lines, events: &[Event], now: Timestamp) {
    if events.is_empty() {
        out.line(0, "Events:\t<none>");
        return;
    }
    out.line(0, "Events:");
    out.line(1, "Type\tReason\tAge\tFrom\tMessage");
    out.line(1, "----\t------\t----\t----\t-------");
    for event in events {
        let from = event
            .source
            .as_ref()
            .and_then(|s| s.component.clone())
            .or_else(|| event.reporting_component.clone())
            .unwrap_or_default();
        out.line(
            1,
            &format!(
                "{}\t{}\t{}\t{from}\t{}",
                event.type_.clone().unwrap_or_default(),
                event.reason.clone().unwrap_or_default(),
                event_age(event, now),
                event.message.clone().unwrap_or_default().trim()
            ),
        );
    }
}

/// `10s`, or `3m (x4 over 10m)` for a repeated event.
fn event_age(event: &Event, now: Timestamp) -> String {
    let last = age(event_last_seen(event), now);
    match (event.count, event.first_timestamp.as_ref()) {
        (Some(count), Some(first)) if count > 1 => format!(
            "{last} (x{count} over {})",
            human_duration(now.as_second() - first.0.as_second())
        ),
        _ => last,
    }
}

/// Describe's output: indented `Key:\tvalue` lines, aligned on render.
#[derive(Default)]
pub struct Lines {
    text: String,
}

impl Lines {
    /// One line at an indentation level (two spaces per level).
    pub fn line(&mut self, level: usize, text: &str) {
        self.text.push_str(&"  ".repeat(level));
        self.text.push_str(text);
        self.text.push('\n');
    }

    /// `Key:\tvalue`.
    pub fn field(&mut self, level: usize, key: &str, value: impl std::fmt::Display) {
        self.line(level, &format!("{key}:\t{value}"));
    }

    /// A map as `Key:\tk=v` then one `\tk=v` line per further entry, or `<none>`.
    pub fn map(
        &mut self,
        level: usize,
        key: &str,
        map: Option<&std::collections::BTreeMap<String, String>>,
    ) {
        let entries: Vec<String> = map
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        self.list(level, key, &entries);
    }

    /// A list as `Key:\tfirst` then `\tnext` lines, or `<none>`.
    pub fn list(&mut self, level: usize, key: &str, entries: &[String]) {
        match entries.split_first() {
            None => self.field(level, key, "<none>"),
            Some((first, rest)) => {
                self.field(level, key, first);
                for entry in rest {
                    self.line(level, &format!("\t{entry}"));
                }
            }
        }
    }

    /// The aligned text.
    pub fn render(&self) -> String {
        let mut writer = tabwriter::TabWriter::new(Vec::new()).minwidth(0).padding(2);
        let _ = writer.write_all(self.text.as_bytes());
        match writer.into_inner() {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(_) => self.text.replace('\t', "  "),
        }
    }
}

/// kubectl's describe time format (RFC 1123 with a numeric zone), in UTC.
pub fn describe_time(time: Option<&minik_api::meta::Time>) -> String {
    match time {
        Some(time) => time.0.strftime("%a, %d %b %Y %H:%M:%S +0000").to_string(),
        None => "<unset>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_aligned_per_block_and_maps_continue_on_new_lines() {
        let mut out = Lines::default();
        out.field(0, "Name", "web");
        out.field(0, "Namespace", "default");
        out.map(
            0,
            "Labels",
            Some(
                &[
                    ("a".to_string(), "1".to_string()),
                    ("b".to_string(), "2".to_string()),
                ]
                .into(),
            ),
        );
        assert_eq!(
            out.render(),
            "Name:       web\nNamespace:  default\nLabels:     a=1\n            b=2\n"
        );
    }

    #[test]
    fn events_render_type_reason_age_from_message() {
        let now: Timestamp = "2026-11-22T02:05:00Z".parse().unwrap();
        let event: Event = serde_json::from_value(json!({
            "metadata": {"name": "web.1"}, "involvedObject": {"kind": "Pod", "name": "web"},
            "type": "Normal", "reason": "Scheduled", "message": "Successfully assigned default/web to node-1",
            "source": {"component": "default-scheduler"}, "lastTimestamp": "2026-11-22T02:04:50Z", "count": 1,
        }))
        .unwrap();
        let mut out = Lines::default();
        events(&mut out, &[event], now);
        let text = out.render();
        assert!(
            text.starts_with("Events:\n  Type    Reason     Age   From               Message\n"),
            "{text}"
        );
        assert!(text.contains("  Normal  Scheduled  10s   default-scheduler  Successfully assigned default/web to node-1\n"), "{text}");
    }
}
