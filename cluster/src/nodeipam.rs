//! Each node's pod CIDR, carved from the cluster's pod range.
//!
//! Kubernetes counterpart: the node IPAM controller of kube-controller-manager
//! (`pkg/controller/nodeipam`, the `RangeAllocator`), which splits `--cluster-cidr` into blocks of
//! `--node-cidr-mask-size` bits (24 by default for IPv4) and writes one into each Node's
//! `spec.podCIDR`. minik's nodes are numbered, so the launcher computes the block before it starts
//! the kubelet and passes it as `--pod-cidr`: node `node-N` gets block `N` of the cluster range
//! (block 0 stays unused, so the default layout is the familiar 127.244.N.0/24). Upstream hands
//! out the first free block instead, and refuses a node once the range is full, as
//! [`node_cidr`] does.
//!
//! The cluster range is `ClusterConfig::cluster_cidr`, or `127.P.0.0/16` with P the config's
//! `pod_network` (the test harness picks P at random so clusters side by side never share an
//! address). It must stay clear of the loopback ranges minik uses for other things.

use minik_kubelet::cidr::{Cidr, NODE_PREFIXES};

use crate::cluster::ClusterConfig;
use crate::{Error, Result};

/// Kubernetes' default `--node-cidr-mask-size` for IPv4: a /24 per node.
pub const DEFAULT_NODE_CIDR_MASK_SIZE: u8 = 24;

/// Loopback ranges already in use: 127.0.0.1 and the DNS's first choice 127.0.0.10, the DNS's
/// fallback addresses, Service cluster IPs and load balancer addresses
/// (docs/architecture.md#cluster-layout).
const RESERVED: [(&str, &str); 4] = [
    ("127.0.0.0/16", "localhost and the cluster DNS"),
    ("127.53.0.0/16", "the cluster DNS's fallback addresses"),
    ("127.96.0.0/16", "Service cluster IPs"),
    ("127.98.0.0/16", "load balancer addresses"),
];

/// The cluster's pod range: `cluster_cidr`, else `127.{pod_network}.0.0/16`.
pub fn cluster_cidr(config: &ClusterConfig) -> Result<Cidr> {
    let text = config
        .cluster_cidr
        .clone()
        .unwrap_or_else(|| format!("127.{}.0.0/16", config.pod_network));
    let cidr = Cidr::loopback(&text, 8..=*NODE_PREFIXES.end())
        .map_err(|e| Error::Start(format!("--cluster-cidr: {e}")))?;
    for (reserved, what) in RESERVED {
        let reserved: Cidr = reserved.parse().expect("a valid reserved range");
        if cidr.overlaps(&reserved) {
            return Err(Error::Start(format!(
                "--cluster-cidr {cidr} overlaps {reserved}, minik's range for {what}"
            )));
        }
    }
    Ok(cidr)
}

/// The pod CIDR of node `node-N`: block `N` of size `/node_cidr_mask_size` in the cluster range.
pub fn node_cidr(config: &ClusterConfig, node: u8) -> Result<Cidr> {
    let cluster = cluster_cidr(config)?;
    let size = config.node_cidr_mask_size;
    if !NODE_PREFIXES.contains(&size) || size < cluster.prefix_len() {
        return Err(Error::Start(format!(
            "--node-cidr-mask-size {size}: must be {} to {} and at least the cluster range's /{}",
            NODE_PREFIXES.start(),
            NODE_PREFIXES.end(),
            cluster.prefix_len()
        )));
    }
    cluster.subnet(size, u64::from(node)).ok_or_else(|| {
        Error::Start(format!(
            "no pod CIDR left for node-{node}: {cluster} holds {} blocks of /{size} (block 0 unused)",
            cluster.subnets(size)
        ))
    })
}

/// Checks the layout for `config.nodes` nodes and `max_pods` pods a node, before anything starts.
pub fn check(config: &ClusterConfig, max_pods: Option<u32>) -> Result<()> {
    let block = node_cidr(config, config.nodes.max(1))?;
    if let Some(max) = max_pods.filter(|max| *max > block.hosts()) {
        return Err(Error::Start(format!(
            "--max-pods {max} does not fit a node's /{} pod CIDR ({} addresses): use a larger --node-cidr-mask-size",
            block.prefix_len(),
            block.hosts()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(cluster: Option<&str>, mask: u8, nodes: u8) -> ClusterConfig {
        ClusterConfig {
            cluster_cidr: cluster.map(String::from),
            node_cidr_mask_size: mask,
            nodes,
            pod_network: 200,
            ..ClusterConfig::default()
        }
    }

    #[test]
    fn the_default_layout_is_a_slash_24_per_node_under_the_pod_network() {
        let c = config(None, 24, 2);
        assert_eq!(node_cidr(&c, 1).unwrap().to_string(), "127.200.1.0/24");
        assert_eq!(node_cidr(&c, 2).unwrap().to_string(), "127.200.2.0/24");
        assert!(check(&c, Some(254)).is_ok());
        assert!(
            check(&c, Some(255)).is_err(),
            "255 pods do not fit 254 addresses"
        );
    }

    #[test]
    fn a_slash_23_per_node_holds_510_pods() {
        let c = config(None, 23, 3);
        assert_eq!(node_cidr(&c, 1).unwrap().to_string(), "127.200.2.0/23");
        assert_eq!(node_cidr(&c, 3).unwrap().to_string(), "127.200.6.0/23");
        assert!(check(&c, Some(400)).is_ok());
        assert!(check(&c, Some(511)).is_err());
    }

    #[test]
    fn a_full_range_refuses_the_next_node() {
        let c = config(Some("127.200.0.0/22"), 24, 3);
        assert_eq!(node_cidr(&c, 3).unwrap().to_string(), "127.200.3.0/24");
        assert!(node_cidr(&c, 4).is_err());
        assert!(check(&config(Some("127.200.0.0/22"), 24, 4), None).is_err());
    }

    #[test]
    fn ranges_outside_loopback_or_over_reserved_ones_are_refused() {
        for bad in [
            "10.244.0.0/16",
            "127.96.0.0/16",
            "127.0.0.0/8",
            "127.0.0.0/12",
        ] {
            assert!(cluster_cidr(&config(Some(bad), 24, 1)).is_err(), "{bad}");
        }
        assert!(
            node_cidr(&config(None, 29, 1), 1).is_err(),
            "a /29 is too small"
        );
        assert!(
            node_cidr(&config(None, 15, 1), 1).is_err(),
            "larger than the range"
        );
    }
}
