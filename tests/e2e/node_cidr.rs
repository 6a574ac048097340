//! A node's pod CIDR larger than a /24 (issue 19): with `--node-cidr-mask-size 23` (`minik up
//! --pods-per-node-cidr /23`) and `--max-pods 400`, 300 pods on one node all run, each with its
//! own address of the node's 510, spilling past the first 256 (before, the kubelet only knew a
//! /24 and `--max-pods` stopped at 254).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use futures::{stream, StreamExt};
use minik_client::ListParams;
use minik_tests::fixtures::pod;
use minik_tests::wait::{pod as p, wait_for_all};
use minik_tests::Cluster;

use crate::support::stop_clean;

const PODS: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hundred_pods_on_one_node_with_a_slash_23_get_distinct_ips() {
    let _machine = crate::support::exclusive().await;
    let cluster = Cluster::builder()
        .without_services()
        .node_cidr_mask_size(23)
        .kubelet_args(&["--max-pods", "400"])
        .start()
        .await
        .expect("cluster");
    let started = Instant::now();
    let pods = cluster.pods();
    stream::iter(0..PODS)
        .for_each_concurrent(16, |i| {
            let pods = pods.clone();
            async move {
                let fixture = pod(&format!("p-{i:03}"))
                    .image("registry.k8s.io/pause")
                    .label("batch", "cidr")
                    .build();
                pods.create(&fixture).await.expect("create pod");
            }
        })
        .await;
    let all_running = |list: &[_]| list.len() == PODS && list.iter().all(p::is_running);
    let running = wait_for_all(
        &pods,
        ListParams::default().labels("batch=cidr"),
        all_running,
        Duration::from_secs(300),
    )
    .await
    .expect("300 pods Running on one node");
    eprintln!(
        "{PODS} pods Running on one node in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    let ips: Vec<Ipv4Addr> = running
        .iter()
        .map(|pod| p::ip(pod).expect("podIP").parse().expect("an IPv4 pod IP"))
        .collect();
    let distinct: BTreeSet<Ipv4Addr> = ips.iter().copied().collect();
    assert_eq!(distinct.len(), PODS, "every pod has its own address");
    // node-1 owns block 1 of the cluster's 127.P.0.0/16 in /23s: 127.P.2.0/23.
    let thirds: BTreeSet<u8> = distinct.iter().map(|ip| ip.octets()[2]).collect();
    assert_eq!(
        thirds,
        BTreeSet::from([2, 3]),
        "300 addresses fill both halves of 127.P.2.0/23"
    );
    assert!(
        running.iter().all(|pod| p::node(pod) == Some("node-1")),
        "all on the one node"
    );
    let node = cluster.nodes().get("node-1").await.expect("node-1");
    let cidr = node.spec.and_then(|s| s.pod_cidr).expect("podCIDR");
    let (network, len) = cidr.split_once('/').expect("ADDRESS/PREFIX");
    let network: Ipv4Addr = network.parse().expect("network address");
    assert_eq!(len, "23", "node-1's podCIDR {cidr}");
    assert_eq!(network.octets()[2], 2, "block 1 of the /16: {cidr}");
    let broadcast = Ipv4Addr::from(u32::from(network) | 0x1ff);
    assert!(
        distinct
            .iter()
            .all(|ip| (network..broadcast).contains(ip) && *ip != network),
        "every address inside {cidr}, neither its network nor its broadcast address"
    );
    stop_clean(cluster).await;
}
