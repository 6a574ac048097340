//! Kinds the static table does not know, learned from the server's discovery: the custom kinds
//! of CustomResourceDefinitions (`minik get crontabs`, `minik delete ct/nightly`).
//!
//! Kubernetes counterpart: kubectl's discovery-backed RESTMapper
//! (`staging/src/k8s.io/client-go/restmapper/discovery.go`): `/apis`, then each group's preferred
//! version's `APIResourceList`, whose entries give the plural, singular, short names, kind and
//! scope. minik asks only when a name typed on the command line is not a built-in kind, and keeps
//! what it learned for the rest of the (short-lived) process.
//!
//! minik simplifies: only the preferred version of each group is read, and there is no disk cache.

use std::sync::Mutex;

use minik_api::resource::{is_builtin, lookup, ResourceInfo};
use minik_client::Client;
use reqwest::Method;
use serde_json::Value;

/// What discovery taught this process.
static DISCOVERED: Mutex<Vec<&'static ResourceInfo>> = Mutex::new(Vec::new());

/// A learned kind by any name a user may type: plural, singular, short name, Kind, or
/// `plural.group`.
pub fn find(name: &str) -> Option<&'static ResourceInfo> {
    let lower = name.to_ascii_lowercase();
    let known = DISCOVERED.lock().unwrap_or_else(|p| p.into_inner());
    known.iter().copied().find(|info| {
        info.plural == lower
            || info.singular == lower
            || info.kind.to_ascii_lowercase() == lower
            || info.short_names.contains(&lower.as_str())
            || format!("{}.{}", info.plural, info.group()) == lower
    })
}

/// The kind names in `get`/`delete` arguments (`KIND[,KIND] NAME…` or `KIND/NAME…`).
fn kind_names(args: &[String]) -> Vec<&str> {
    let Some(first) = args.first() else {
        return Vec::new();
    };
    if first.contains('/') {
        return args
            .iter()
            .filter_map(|a| a.split_once('/'))
            .map(|(k, _)| k)
            .collect();
    }
    first
        .split(',')
        .filter(|k| !k.is_empty() && *k != "all")
        .collect()
}

/// Reads the server's discovery if some kind in `args` is not built in; errors are left to the
/// verb, which then reports the unknown kind as kubectl does.
pub async fn learn_unknown_kinds(client: &Client, args: &[String]) {
    let unknown = kind_names(args).into_iter().any(|name| {
        let qualified = name
            .split_once('.')
            .and_then(|(resource, group)| lookup(resource).filter(|i| i.group() == group));
        lookup(name).or(qualified).is_none()
    });
    if !unknown {
        return;
    }
    let Ok(groups) = client.request_json(Method::GET, "/apis", None).await else {
        return;
    };
    for group in groups["groups"].as_array().into_iter().flatten() {
        let Some(group_version) = group["preferredVersion"]["groupVersion"].as_str() else {
            continue;
        };
        let path = format!("/apis/{group_version}");
        if let Ok(list) = client.request_json(Method::GET, &path, None).await {
            learn(group_version, &list);
        }
    }
}

/// Keeps every resource (not subresource) of one `APIResourceList` that is not built in.
fn learn(group_version: &str, list: &Value) {
    let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
    let mut known = DISCOVERED.lock().unwrap_or_else(|p| p.into_inner());
    for resource in list["resources"].as_array().into_iter().flatten() {
        let text = |field: &str| resource[field].as_str().unwrap_or("");
        if text("name").contains('/') || text("name").is_empty() {
            continue;
        }
        let short_names: Vec<&'static str> = resource["shortNames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(leak)
            .collect();
        let info = ResourceInfo {
            kind: leak(text("kind")),
            plural: leak(text("name")),
            singular: leak(text("singularName")),
            short_names: Box::leak(short_names.into_boxed_slice()),
            namespaced: resource["namespaced"].as_bool().unwrap_or(true),
            api_version: leak(group_version),
        };
        if !is_builtin(&info) {
            known.push(Box::leak(Box::new(info)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_discovered_kind_is_found_by_every_name() {
        let list = json!({"resources": [
            {"name": "crontabs", "singularName": "crontab", "kind": "CronTab", "namespaced": true,
             "shortNames": ["ct"]},
            {"name": "crontabs/status", "singularName": "", "kind": "CronTab", "namespaced": true}]});
        learn("stable.example.com/v1", &list);
        for name in [
            "crontabs",
            "crontab",
            "ct",
            "CronTab",
            "crontabs.stable.example.com",
        ] {
            let info = find(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(info.api_version, "stable.example.com/v1");
        }
        assert!(find("crontabs/status").is_none());
        assert_eq!(kind_names(&["ct/a".into(), "pod/b".into()]), ["ct", "pod"]);
    }
}
