//! Unit tests of `compute`, after the cases of upstream's `endpoints_controller_test.go`
//! (`TestSyncEndpointsItemsPreserveNoSelector`, `TestSyncEndpointsItemsEmptySelectorSelectsAll`,
//! `TestSyncEndpointsItemsWithLabels`, `TestPodToEndpointAddressForService`, …) and of
//! `ShouldPodBeInEndpoints`.

use super::*;
use crate::testing::{pod, service};

fn ips(list: &Option<Vec<EndpointAddress>>) -> Vec<&str> {
    list.iter().flatten().map(|a| a.ip.as_str()).collect()
}

fn port_numbers(subset: &EndpointSubset) -> Vec<i32> {
    subset.ports.iter().flatten().map(|p| p.port).collect()
}

#[test]
fn selected_ready_pods_become_addresses_with_node_and_target_ref() {
    let pods = [
        pod("web-1", "web", "127.244.1.2").build(),
        pod("other", "db", "127.244.1.3").build(),
    ];
    let subsets = compute(&service("web").build(), &pods).unwrap();
    assert_eq!(subsets.len(), 1);
    let address = &subsets[0].addresses.as_ref().unwrap()[0];
    assert_eq!(address.ip, "127.244.1.2");
    assert_eq!(address.node_name.as_deref(), Some("node-1"));
    let target = address.target_ref.as_ref().unwrap();
    assert_eq!(
        (
            target.kind.as_deref(),
            target.name.as_deref(),
            target.namespace.as_deref(),
            target.uid.as_deref()
        ),
        (
            Some("Pod"),
            Some("web-1"),
            Some("default"),
            Some("uid-web-1")
        )
    );
    assert_eq!(subsets[0].not_ready_addresses, None);
    let port = &subsets[0].ports.as_ref().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.port, port.protocol.as_deref()),
        (Some("http"), 8080, Some("TCP"))
    );
}

#[test]
fn service_without_selector_is_not_managed() {
    let svc = service("web").selector(None).build();
    assert_eq!(
        compute(&svc, &[pod("web-1", "web", "127.244.1.2").build()]),
        None
    );
}

#[test]
fn empty_selector_selects_every_pod_of_the_namespace() {
    let svc = service("web").selector(Some(&[])).build();
    let pods = [
        pod("a", "x", "127.244.1.2").build(),
        pod("b", "y", "127.244.1.3").build(),
        pod("c", "x", "127.244.1.4").namespace("other").build(),
    ];
    let subsets = compute(&svc, &pods).unwrap();
    assert_eq!(ips(&subsets[0].addresses), ["127.244.1.2", "127.244.1.3"]);
}

#[test]
fn no_matching_pod_gives_no_subsets() {
    assert_eq!(compute(&service("web").build(), &[]), Some(vec![]));
}

#[test]
fn pods_without_ip_or_finished_are_left_out() {
    let pods = [
        pod("starting", "web", "").no_ip().build(),
        pod("done", "web", "127.244.1.3").phase("Succeeded").build(),
        pod("failed", "web", "127.244.1.4").phase("Failed").build(),
        pod("live", "web", "127.244.1.5").build(),
    ];
    let subsets = compute(&service("web").build(), &pods).unwrap();
    assert_eq!(ips(&subsets[0].addresses), ["127.244.1.5"]);
}

#[test]
fn unready_pod_goes_to_not_ready_addresses() {
    let pods = [
        pod("a", "web", "127.244.1.2").build(),
        pod("b", "web", "127.244.1.3").not_ready().build(),
    ];
    let subsets = compute(&service("web").build(), &pods).unwrap();
    assert_eq!(subsets.len(), 1);
    assert_eq!(ips(&subsets[0].addresses), ["127.244.1.2"]);
    assert_eq!(ips(&subsets[0].not_ready_addresses), ["127.244.1.3"]);
}

#[test]
fn terminating_pod_leaves_at_once_even_while_ready() {
    let pods = [
        pod("a", "web", "127.244.1.2").deleting().build(),
        pod("b", "web", "127.244.1.3").build(),
    ];
    let subsets = compute(&service("web").build(), &pods).unwrap();
    assert_eq!(ips(&subsets[0].addresses), ["127.244.1.3"]);
    assert_eq!(
        subsets[0].not_ready_addresses, None,
        "not even as not ready"
    );
}

#[test]
fn publish_not_ready_addresses_lists_every_pod_as_ready_including_terminating() {
    let svc = service("web").publish_not_ready().build();
    let pods = [
        pod("a", "web", "127.244.1.2").not_ready().build(),
        pod("b", "web", "127.244.1.3").deleting().build(),
    ];
    let subsets = compute(&svc, &pods).unwrap();
    assert_eq!(ips(&subsets[0].addresses), ["127.244.1.2", "127.244.1.3"]);
}

#[test]
fn named_target_port_is_resolved_per_pod_and_groups_subsets() {
    let svc = service("web")
        .ports(&[("http", 80, IntOrString::String("http".into()))])
        .build();
    let pods = [
        pod("a", "web", "127.244.1.2").build(),
        pod("b", "web", "127.244.1.3")
            .container_ports(&[("http", 9090)])
            .build(),
        pod("c", "web", "127.244.1.4")
            .container_ports(&[("metrics", 9100)])
            .build(),
    ];
    let subsets = compute(&svc, &pods).unwrap();
    assert_eq!(
        subsets.len(),
        2,
        "one subset per distinct port set; the pod lacking the name is skipped"
    );
    assert_eq!(
        (port_numbers(&subsets[0]), ips(&subsets[0].addresses)),
        (vec![8080], vec!["127.244.1.2"])
    );
    assert_eq!(
        (port_numbers(&subsets[1]), ips(&subsets[1].addresses)),
        (vec![9090], vec!["127.244.1.3"])
    );
}

#[test]
fn pod_missing_one_of_two_named_ports_serves_only_the_other() {
    let svc = service("web")
        .ports(&[
            ("http", 80, IntOrString::String("http".into())),
            ("metrics", 9100, IntOrString::String("metrics".into())),
        ])
        .build();
    let pods = [
        pod("both", "web", "127.244.1.2")
            .container_ports(&[("http", 8080), ("metrics", 9100)])
            .build(),
        pod("http-only", "web", "127.244.1.3").build(),
    ];
    let subsets = compute(&svc, &pods).unwrap();
    assert_eq!(subsets.len(), 2);
    let by_ports: BTreeMap<Vec<i32>, Vec<&str>> = subsets
        .iter()
        .map(|s| (port_numbers(s), ips(&s.addresses)))
        .collect();
    assert_eq!(by_ports[&vec![8080]], ["127.244.1.3"]);
    assert_eq!(by_ports[&vec![8080, 9100]], ["127.244.1.2"]);
}

#[test]
fn equal_inputs_in_any_order_give_equal_outputs() {
    let svc = service("web").build();
    let mut pods: Vec<_> = (2..12)
        .map(|i| pod(&format!("p{i}"), "web", &format!("127.244.1.{i}")).build())
        .collect();
    pods[3] = pod("p5", "web", "127.244.1.5").not_ready().build();
    let forward = compute(&svc, &pods).unwrap();
    pods.reverse();
    assert_eq!(compute(&svc, &pods).unwrap(), forward);
    let ready = ips(&forward[0].addresses);
    let mut sorted = ready.clone();
    sorted.sort();
    assert_eq!(ready, sorted);
}

#[test]
fn headless_service_without_ports_lists_addresses_without_ports() {
    let svc = service("web").headless_without_ports().build();
    let subsets = compute(&svc, &[pod("a", "web", "127.244.1.2").build()]).unwrap();
    assert_eq!(ips(&subsets[0].addresses), ["127.244.1.2"]);
    assert_eq!(subsets[0].ports, None);
}

#[test]
fn hostname_is_set_only_under_the_services_subdomain() {
    let pods = [
        pod("a", "web", "127.244.1.2")
            .hostname("web-0", "web")
            .build(),
        pod("b", "web", "127.244.1.3")
            .hostname("web-1", "elsewhere")
            .build(),
    ];
    let subsets = compute(&service("web").build(), &pods).unwrap();
    let hostnames: Vec<_> = subsets[0]
        .addresses
        .iter()
        .flatten()
        .map(|a| a.hostname.as_deref())
        .collect();
    assert_eq!(hostnames, [Some("web-0"), None]);
}

#[test]
fn pod_address_sets_and_counts_summarise_subsets() {
    let pods = [
        pod("a", "web", "127.244.1.2").build(),
        pod("b", "web", "127.244.1.3").not_ready().build(),
    ];
    let subsets = compute(&service("web").build(), &pods).unwrap();
    assert_eq!(counts(&subsets), (1, 1));
    let ready: Vec<_> = pod_addresses(&subsets, true).into_iter().collect();
    assert_eq!(ready, [("a".to_string(), "127.244.1.2".to_string())]);
}
