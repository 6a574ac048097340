//! What the verbs share: the client flags, kind names → paths, and `TYPE/NAME` arguments.
//!
//! Kubernetes counterpart: kubectl's `ConfigFlags` (`--server`, `-n`) and its RESTMapper, which
//! turns `po`, `pods` or `Pod` into the resource and the URL (`staging/src/k8s.io/cli-runtime/pkg/resource/mapper.go`).
//! minik's mapper is the static table in `minik_api::resource` (no discovery round trip).

use anyhow::{anyhow, bail};

use minik_api::resource::{lookup, ResourceInfo};
use minik_client::Client;

use crate::config::resolve_server;

/// The flags every verb that talks to the apiserver takes.
#[derive(clap::Args, Clone, Debug)]
pub struct ClientFlags {
    /// The apiserver (else $MINIK_SERVER, else the `minik` kubeconfig context, else http://127.0.0.1:6443).
    #[arg(long, short = 's')]
    pub server: Option<String>,
    /// The namespace of the objects.
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
}

impl ClientFlags {
    /// A client for the resolved server.
    pub fn client(&self) -> anyhow::Result<Client> {
        Ok(Client::new(&resolve_server(self.server.as_deref()))?)
    }
}

/// A kind as the user typed it (`po`, `svc`, `Pod`, `pods`), or kubectl's error.
pub fn kind(name: &str) -> anyhow::Result<&'static ResourceInfo> {
    lookup(name).ok_or_else(|| anyhow!("the server doesn't have a resource type \"{name}\""))
}

/// `/api/v1/namespaces/{ns}/pods` (or every namespace / cluster-scoped: `/api/v1/pods`, `/api/v1/nodes`).
pub fn collection_path(info: &ResourceInfo, namespace: Option<&str>) -> String {
    match namespace {
        Some(namespace) if info.namespaced => format!(
            "{}/namespaces/{namespace}/{}",
            info.group_version_path(),
            info.plural
        ),
        _ => format!("{}/{}", info.group_version_path(), info.plural),
    }
}

/// `…/pods/{name}`.
pub fn object_path(info: &ResourceInfo, namespace: &str, name: &str) -> String {
    format!("{}/{name}", collection_path(info, Some(namespace)))
}

/// `path?key=value&…` with the values percent-encoded (pairs with empty values are left out).
pub fn with_query(path: &str, pairs: &[(&str, Option<&str>)]) -> String {
    let mut url = match reqwest::Url::parse(&format!("http://localhost{path}")) {
        Ok(url) => url,
        Err(_) => return path.to_string(),
    };
    {
        let mut query = url.query_pairs_mut();
        for (key, value) in pairs {
            if let Some(value) = value.filter(|v| !v.is_empty()) {
                query.append_pair(key, value);
            }
        }
    }
    match url.query().filter(|q| !q.is_empty()) {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    }
}

/// Splits the positional arguments of get/delete/describe: either `KIND[,KIND] [NAME…]` or
/// `KIND/NAME…`. Returns (kind, name) pairs where a `None` name means "all of that kind".
pub fn targets(args: &[String]) -> anyhow::Result<Vec<(&'static ResourceInfo, Option<String>)>> {
    let Some(first) = args.first() else {
        bail!("you must specify the type of resource to get");
    };
    if first.contains('/') {
        return args
            .iter()
            .map(|arg| match arg.split_once('/') {
                Some((kind_name, name)) if !name.is_empty() => Ok((kind(kind_name)?, Some(name.to_string()))),
                _ => bail!("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'minik get resource/<resource_name>' instead of 'minik get resource resource/<resource_name>'"),
            })
            .collect();
    }
    // kubectl's `all` category, as far as minik serves its kinds.
    let expanded = first.split(',').flat_map(|k| {
        if k == "all" {
            vec!["pods", "services"]
        } else {
            vec![k]
        }
    });
    let kinds: Vec<&'static ResourceInfo> = expanded
        .filter(|k| !k.is_empty())
        .map(kind)
        .collect::<anyhow::Result<_>>()?;
    let names = &args[1..];
    if names.is_empty() {
        return Ok(kinds.into_iter().map(|info| (info, None)).collect());
    }
    if kinds.len() > 1 {
        bail!("you may only specify a single resource type when naming objects");
    }
    Ok(names
        .iter()
        .map(|name| (kinds[0], Some(name.clone())))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn targets_accept_kind_lists_names_and_kind_slash_name() {
        let all = targets(&args(&["svc,ep"])).unwrap();
        assert_eq!(
            all.iter()
                .map(|(i, n)| (i.plural, n.clone()))
                .collect::<Vec<_>>(),
            [("services", None), ("endpoints", None)]
        );
        let named = targets(&args(&["po", "a", "b"])).unwrap();
        assert_eq!(named[1].1.as_deref(), Some("b"));
        let slashed = targets(&args(&["pod/a", "svc/b"])).unwrap();
        assert_eq!(
            (slashed[1].0.plural, slashed[1].1.as_deref()),
            ("services", Some("b"))
        );
        assert_eq!(
            targets(&args(&["statefulsets"])).unwrap_err().to_string(),
            "the server doesn't have a resource type \"statefulsets\""
        );
    }

    #[test]
    fn queries_are_encoded_and_empty_values_dropped() {
        let path = with_query(
            "/api/v1/pods",
            &[
                ("labelSelector", Some("app=web")),
                ("fieldSelector", None),
                ("watch", Some("true")),
            ],
        );
        assert_eq!(path, "/api/v1/pods?labelSelector=app%3Dweb&watch=true");
        assert_eq!(with_query("/api/v1/pods", &[]), "/api/v1/pods");
    }

    #[test]
    fn paths_are_namespaced_only_for_namespaced_kinds() {
        assert_eq!(
            object_path(kind("po").unwrap(), "default", "web"),
            "/api/v1/namespaces/default/pods/web"
        );
        assert_eq!(
            object_path(kind("no").unwrap(), "default", "node-1"),
            "/api/v1/nodes/node-1"
        );
        assert_eq!(collection_path(kind("po").unwrap(), None), "/api/v1/pods");
    }
}
