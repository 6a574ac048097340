//! A pod's `/etc/resolv.conf` from its `dnsPolicy` and `dnsConfig`.
//!
//! Kubernetes counterpart: `GetPodDNS` in `pkg/kubelet/network/dns/dns.go`:
//!
//! - `ClusterFirst` (the default; also `ClusterFirstWithHostNet`): the cluster DNS as nameservers,
//!   the search path `NS.svc.DOMAIN svc.DOMAIN DOMAIN` followed by the host's, and `ndots:5`; with
//!   no cluster DNS configured the kubelet falls back to `Default`, as upstream does;
//! - `Default`: the node's resolv.conf (nameservers, search path and options);
//! - `None`: nothing but the pod's `dnsConfig`;
//!
//! then `dnsConfig` is appended (`appendDNSConfig`): its nameservers and searches after the base
//! ones, duplicates dropped, and its options merged by name, a pod option replacing the base one
//! of the same name (`mergeDNSOptions`). minik simplifies: no limit on the number of search paths
//! or their length (upstream trims them with an event), and no `hostNetwork` (pods never have it).
//!
//! Everything here is pure: the caller reads the host's file and writes the result.

use k8s_openapi::api::core::v1::{PodDNSConfig, PodSpec};

/// A resolv.conf's three lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolvConf {
    /// `nameserver` lines.
    pub nameservers: Vec<String>,
    /// The `search` line.
    pub searches: Vec<String>,
    /// The `options` line: `ndots:5`, `edns0`.
    pub options: Vec<String>,
}

/// What the kubelet knows about DNS: its flags and the node's own resolv.conf.
#[derive(Clone, Copy, Debug)]
pub struct NodeDns<'a> {
    /// `--cluster-dns` (empty: none).
    pub cluster_dns: &'a [String],
    /// `--cluster-domain`.
    pub cluster_domain: &'a str,
    /// The node's `/etc/resolv.conf`, parsed.
    pub host: &'a ResolvConf,
}

impl ResolvConf {
    /// Parses resolv.conf text: `nameserver`, `search` (or `domain`) and `options` lines.
    pub fn parse(text: &str) -> ResolvConf {
        let mut conf = ResolvConf::default();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let rest = || line.split_whitespace().skip(1).map(str::to_string);
            match words.next() {
                Some("nameserver") => conf.nameservers.extend(words.next().map(str::to_string)),
                Some("search" | "domain") => conf.searches = rest().collect(),
                Some("options") => conf.options.extend(rest()),
                _ => {}
            }
        }
        conf
    }

    /// The file's text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for server in &self.nameservers {
            out.push_str(&format!("nameserver {server}\n"));
        }
        if !self.searches.is_empty() {
            out.push_str(&format!("search {}\n", self.searches.join(" ")));
        }
        if !self.options.is_empty() {
            out.push_str(&format!("options {}\n", self.options.join(" ")));
        }
        out
    }
}

/// The pod's resolv.conf, or `None` when it is the node's own file unchanged (`Default` with
/// no `dnsConfig`, or `ClusterFirst` with no cluster DNS and no `dnsConfig`): then nothing is
/// mounted over `/etc/resolv.conf`.
pub fn pod_resolv_conf(spec: &PodSpec, namespace: &str, node: NodeDns<'_>) -> Option<ResolvConf> {
    let policy = spec.dns_policy.as_deref().unwrap_or("ClusterFirst");
    let cluster_first = matches!(policy, "ClusterFirst" | "ClusterFirstWithHostNet");
    let base = match policy {
        "None" => ResolvConf::default(),
        _ if cluster_first && !node.cluster_dns.is_empty() => cluster_first_base(namespace, node),
        _ if spec.dns_config.is_none() => return None,
        _ => node.host.clone(),
    };
    Some(match &spec.dns_config {
        Some(config) => append_dns_config(base, config),
        None => base,
    })
}

/// `ClusterFirst`: the cluster DNS, the namespace's search path then the host's, `ndots:5`.
fn cluster_first_base(namespace: &str, node: NodeDns<'_>) -> ResolvConf {
    let domain = node.cluster_domain;
    let cluster = [
        format!("{namespace}.svc.{domain}"),
        format!("svc.{domain}"),
        domain.to_string(),
    ];
    ResolvConf {
        nameservers: node.cluster_dns.to_vec(),
        searches: without_duplicates(cluster.into_iter().chain(node.host.searches.clone())),
        options: vec!["ndots:5".into()],
    }
}

/// `appendDNSConfig`: the pod's nameservers and searches after the base ones (no duplicates),
/// its options merged by name.
fn append_dns_config(base: ResolvConf, config: &PodDNSConfig) -> ResolvConf {
    let extra = |list: &Option<Vec<String>>| list.clone().unwrap_or_default();
    let pod_options: Vec<String> = config
        .options
        .iter()
        .flatten()
        .filter_map(|o| {
            let name = o.name.clone()?;
            Some(match &o.value {
                Some(value) => format!("{name}:{value}"),
                None => name,
            })
        })
        .collect();
    ResolvConf {
        nameservers: without_duplicates(
            base.nameservers
                .into_iter()
                .chain(extra(&config.nameservers)),
        ),
        searches: without_duplicates(base.searches.into_iter().chain(extra(&config.searches))),
        options: merge_options(base.options, pod_options),
    }
}

/// `mergeDNSOptions`: one option per name, the pod's value winning, in first-seen order.
fn merge_options(base: Vec<String>, pod: Vec<String>) -> Vec<String> {
    let name = |option: &str| option.split(':').next().unwrap_or_default().to_string();
    let mut merged: Vec<String> = Vec::new();
    for option in base.into_iter().chain(pod) {
        match merged.iter_mut().find(|o| name(o) == name(&option)) {
            Some(existing) => *existing = option,
            None => merged.push(option),
        }
    }
    merged
}

fn without_duplicates(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodDNSConfigOption;

    const HOST: &str = "# generated\nnameserver 10.0.0.2\nnameserver 10.0.0.3\nsearch corp.example\noptions edns0 ndots:1\n";

    fn spec(policy: Option<&str>, config: Option<PodDNSConfig>) -> PodSpec {
        PodSpec {
            dns_policy: policy.map(String::from),
            dns_config: config,
            ..Default::default()
        }
    }

    fn config(
        servers: &[&str],
        searches: &[&str],
        options: &[(&str, Option<&str>)],
    ) -> PodDNSConfig {
        let strings = |list: &[&str]| Some(list.iter().map(|s| s.to_string()).collect());
        PodDNSConfig {
            nameservers: strings(servers),
            searches: strings(searches),
            options: Some(
                options
                    .iter()
                    .map(|(name, value)| PodDNSConfigOption {
                        name: Some(name.to_string()),
                        value: value.map(String::from),
                    })
                    .collect(),
            ),
        }
    }

    fn resolve(spec: &PodSpec, cluster_dns: &[String]) -> Option<String> {
        let host = ResolvConf::parse(HOST);
        let node = NodeDns {
            cluster_dns,
            cluster_domain: "cluster.local",
            host: &host,
        };
        pod_resolv_conf(spec, "shop", node).map(|conf| conf.render())
    }

    #[test]
    fn cluster_first_puts_the_cluster_dns_and_search_path_before_the_hosts() {
        let dns = ["127.0.0.10".to_string()];
        assert_eq!(
            resolve(&spec(None, None), &dns).unwrap(),
            "nameserver 127.0.0.10\nsearch shop.svc.cluster.local svc.cluster.local cluster.local corp.example\noptions ndots:5\n"
        );
        assert_eq!(
            resolve(&spec(None, None), &[]),
            None,
            "no cluster DNS: the host's file"
        );
    }

    #[test]
    fn default_is_the_hosts_file_and_none_only_the_pods_config() {
        assert_eq!(
            resolve(&spec(Some("Default"), None), &["127.0.0.10".into()]),
            None
        );
        let custom = config(
            &["1.2.3.4"],
            &["ns1.example"],
            &[("ndots", Some("2")), ("edns0", None)],
        );
        assert_eq!(
            resolve(&spec(Some("None"), Some(custom)), &["127.0.0.10".into()]).unwrap(),
            "nameserver 1.2.3.4\nsearch ns1.example\noptions ndots:2 edns0\n"
        );
    }

    #[test]
    fn dns_config_is_appended_without_duplicates_and_options_merge_by_name() {
        let extra = config(
            &["10.0.0.3", "9.9.9.9"],
            &["corp.example", "more.example"],
            &[("ndots", Some("3"))],
        );
        assert_eq!(
            resolve(&spec(Some("Default"), Some(extra.clone())), &[]).unwrap(),
            "nameserver 10.0.0.2\nnameserver 10.0.0.3\nnameserver 9.9.9.9\nsearch corp.example more.example\noptions edns0 ndots:3\n"
        );
        let cluster = resolve(&spec(None, Some(extra)), &["127.0.0.10".into()]).unwrap();
        assert!(
            cluster.starts_with("nameserver 127.0.0.10\nnameserver 10.0.0.3\nnameserver 9.9.9.9\n"),
            "{cluster}"
        );
        assert!(cluster.ends_with("options ndots:3\n"), "{cluster}");
    }

    #[test]
    fn the_hosts_file_is_parsed_line_by_line() {
        let host = ResolvConf::parse(HOST);
        assert_eq!(host.nameservers, ["10.0.0.2", "10.0.0.3"]);
        assert_eq!(host.searches, ["corp.example"]);
        assert_eq!(host.options, ["edns0", "ndots:1"]);
    }
}
