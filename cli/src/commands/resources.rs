//! What the verbs share: the global flags, kind names → paths, and `TYPE/NAME` arguments.
//!
//! Kubernetes counterpart: kubectl's `ConfigFlags` (`--server`, `-n`) and its RESTMapper, which
//! turns `po`, `pods` or `Pod` into the resource and the URL (`staging/src/k8s.io/cli-runtime/pkg/resource/mapper.go`).
//! minik's mapper is the static table in `minik_api::resource` (no discovery round trip).

use std::path::PathBuf;

use anyhow::{anyhow, bail};

use minik_api::resource::{lookup, ResourceInfo};
use minik_client::Client;

use crate::config::resolve;

/// kubectl's global flags: accepted before or after the verb (`minik -n kube-system get pods`,
/// `minik get pods -n kube-system`), as kubectl's persistent flags on its root command. A verb that
/// has no use for one (`minik up -n x`) ignores it, as kubectl does.
#[derive(clap::Args, Clone, Debug, Default, PartialEq)]
pub struct GlobalFlags {
    /// The apiserver (else $MINIK_SERVER, else the kubeconfig's: --kubeconfig, $KUBECONFIG, the
    /// running `minik up`'s DATA/kubeconfig, ~/.kube/config; else http://127.0.0.1:6443).
    #[arg(long, short = 's', global = true, value_name = "URL")]
    pub server: Option<String>,
    /// The kubeconfig file to read the server and credentials from (instead of $KUBECONFIG, the
    /// running cluster's DATA/kubeconfig or ~/.kube/config).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use [default: minik].
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// The namespace of the objects [default: default].
    #[arg(long, short = 'n', global = true)]
    pub namespace: Option<String>,
    /// Output format (`get`: wide, json, yaml or name).
    #[arg(long, short = 'o', global = true)]
    pub output: Option<String>,
}

impl GlobalFlags {
    /// `-n`, else `default` (an empty `-n ""` counts as absent, as kubectl's does).
    pub fn namespace(&self) -> &str {
        self.namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default")
    }

    /// A client for the resolved server (`config.rs` has the order). An https server is reached
    /// with the CA and credentials of the kubeconfig context that names it, as kubectl does.
    pub fn client(&self) -> anyhow::Result<Client> {
        let context = self.context.as_deref();
        let resolved = resolve(self.server.as_deref(), self.kubeconfig.as_deref(), context)?;
        if !resolved.server.starts_with("https://") {
            return Ok(Client::new(&resolved.server)?);
        }
        let context = context.unwrap_or(crate::config::DEFAULT_CONTEXT);
        let mut config = match &resolved.kubeconfig {
            Some(path) => minik_client::kubeconfig::load_context(path, Some(context))?,
            None => minik_client::ClientConfig::default(),
        };
        config.server = resolved.server;
        Ok(Client::from_config(&config)?)
    }
}

/// A kind as the user typed it (`po`, `svc`, `Pod`, `pods`, or qualified by its group as
/// `-o name` prints it: `deployment.apps`), or kubectl's error.
pub fn kind(name: &str) -> anyhow::Result<&'static ResourceInfo> {
    let qualified = || {
        let (resource, group) = name.split_once('.')?;
        lookup(resource).filter(|info| info.group() == group)
    };
    lookup(name)
        .or_else(qualified)
        // Custom kinds, once the verb read discovery (`discovered.rs`).
        .or_else(|| super::discovered::find(name))
        .ok_or_else(|| anyhow!("the server doesn't have a resource type \"{name}\""))
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
            vec!["pods", "services", "deployments", "replicasets"]
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
        let qualified = targets(&args(&["deployment.apps/web", "replicasets.apps/web-1"])).unwrap();
        assert_eq!(
            (qualified[0].0.kind, qualified[1].0.kind),
            ("Deployment", "ReplicaSet")
        );
        assert!(targets(&args(&["deployment.batch/web"])).is_err());
        assert_eq!(
            targets(&args(&["volumeattachments"]))
                .unwrap_err()
                .to_string(),
            "the server doesn't have a resource type \"volumeattachments\""
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

    /// Parses a command line as `main` does.
    fn parse(line: &str) -> crate::commands::Cli {
        use clap::Parser;
        let args = std::iter::once("minik").chain(line.split_whitespace());
        crate::commands::Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    /// The global flags and the `get` positionals of a line.
    fn get_line(line: &str) -> (GlobalFlags, Vec<String>) {
        let cli = parse(line);
        match cli.command {
            crate::commands::Command::Get(get) => (cli.flags, get.args),
            other => panic!("{line}: parsed as {other:?}"),
        }
    }

    #[test]
    fn the_cli_definition_is_consistent() {
        use clap::CommandFactory;
        crate::commands::Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_parse_before_and_after_the_verb() {
        let expected = GlobalFlags {
            server: Some("http://127.0.0.1:7".into()),
            kubeconfig: Some(PathBuf::from("/tmp/kc")),
            context: Some("lab".into()),
            namespace: Some("kube-system".into()),
            output: Some("yaml".into()),
        };
        let flags =
            "-n kube-system -s http://127.0.0.1:7 --kubeconfig /tmp/kc --context lab -o yaml";
        let long = "--namespace kube-system --server=http://127.0.0.1:7 --kubeconfig=/tmp/kc --context=lab --output yaml";
        for line in [
            format!("{flags} get pod p"),
            format!("get pod p {flags}"),
            format!("get {flags} pod p"),
            format!("{long} get pod p"),
            format!("get pod p {long}"),
        ] {
            let (global, args) = get_line(&line);
            assert_eq!(global, expected, "{line}");
            assert_eq!(args, ["pod", "p"], "{line}");
        }
    }

    #[test]
    fn each_global_flag_alone_in_either_place() {
        type Read = fn(&GlobalFlags) -> Option<String>;
        let cases: [(&str, Read); 5] = [
            ("-n ns", |f| Some(f.namespace().to_string())),
            ("--namespace ns", |f| Some(f.namespace().to_string())),
            ("-s ns", |f| f.server.clone()),
            ("--kubeconfig ns", |f| {
                f.kubeconfig.as_ref().map(|p| p.display().to_string())
            }),
            ("-o ns", |f| f.output.clone()),
        ];
        for (flag, read) in cases {
            for line in [format!("{flag} get pods"), format!("get pods {flag}")] {
                let (global, args) = get_line(&line);
                assert_eq!(read(&global).as_deref(), Some("ns"), "{line}");
                assert_eq!(args, ["pods"], "{line}");
            }
        }
        let (global, _) = get_line("get pods");
        assert_eq!(
            (global.namespace(), global.output.as_deref()),
            ("default", None)
        );
        assert_eq!(get_line("-n= get pods").0.namespace(), "default");
    }

    #[test]
    fn the_flags_reach_every_verb_and_are_ignored_where_they_do_not_apply() {
        use crate::commands::Command;
        let cli = parse("-n kube-system -s http://127.0.0.1:7 apply -f x.yaml");
        assert!(matches!(cli.command, Command::Apply(ref a) if a.filenames == ["x.yaml"]));
        assert_eq!(cli.flags.namespace(), "kube-system");
        assert!(matches!(parse("-n x up").command, Command::Up(_)));
        assert!(matches!(parse("up --nodes 2 -n x").command, Command::Up(_)));
        assert!(matches!(
            parse("-n x logs web -c main").command,
            Command::Logs(_)
        ));
        assert!(matches!(
            parse("-o json delete pod web").command,
            Command::Delete(_)
        ));
        // `status` has its own `-o`; given before the verb it still reaches it.
        match parse("-o json status").command {
            Command::Status(status) => assert_eq!(status.output.as_deref(), Some("json")),
            other => panic!("parsed as {other:?}"),
        }
        // The components' own `--server` takes the global one's value.
        match parse("--server http://127.0.0.1:7 scheduler").command {
            Command::Scheduler(args) => assert_eq!(args.server, "http://127.0.0.1:7"),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn a_global_flag_without_its_value_is_a_usage_error() {
        use clap::Parser;
        for line in [
            ["minik", "get", "pods", "-n"],
            ["minik", "-s", "get", "pods"],
        ] {
            assert!(
                crate::commands::Cli::try_parse_from(line).is_err(),
                "{line:?}"
            );
        }
    }
}
