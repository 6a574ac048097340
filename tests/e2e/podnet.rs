//! Each pod its own network (issue 18, point 6): apps that listen on `0.0.0.0:8080` (Python's
//! `http.server`, as most images do) run side by side, each on its own pod IP and Service, and
//! nothing of theirs listens on the host's wildcard address; containers of a pod, and its exec
//! probes, reach each other on localhost.
//!
//! Kubernetes counterpart: `test/e2e/network/networking.go` (pods reach each other and their
//! Services) and `test/e2e/common/node/` pods with two containers sharing localhost. minik does
//! it by rewriting binds (`kubelet/src/shim/bind_rewrite/`); on a kernel without seccomp user
//! notification these tests say so and skip.

use std::collections::BTreeSet;
use std::time::Duration;

use minik_api::core::{Pod, Service};
use minik_client::LogParams;
use minik_tests::wait::{eventually, pod as p, wait_for};
use minik_tests::Cluster;
use serde_json::{json, Value};

use crate::support::{run_pod, stop_clean, RUNNING};

fn pod(name: &str, containers: Value) -> Pod {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": containers}}))
    .expect("pod")
}

/// A python container serving its own directory, where `who` holds the pod's name, on `port` of
/// `bind` (none: http.server's default, the dual-stack `::`).
fn python_server(port: u16, bind: Option<&str>) -> Value {
    let bind = bind.map(|b| format!(" --bind {b}")).unwrap_or_default();
    json!({"name": "web", "image": "python:3.12",
        "command": ["sh", "-c", format!("echo -n $POD_NAME > who && exec python3 -m http.server {port}{bind}")],
        "ports": [{"name": "http", "containerPort": port}]})
}

/// Whether the kernel offers seccomp user notification (what the kubelet detects at start).
fn available() -> bool {
    let actions = std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail");
    let ok = actions.is_ok_and(|a| a.split_whitespace().any(|x| x == "user_notif"));
    if !ok {
        println!("skipped: this kernel has no seccomp user notification to rewrite binds");
    }
    ok
}

/// The local addresses of the sockets that `pid` listens on (TCP, from `/proc/net/tcp*`).
fn listening_addresses(pid: u32) -> Vec<String> {
    let inodes: BTreeSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .filter_map(|link| {
                    let link = link.to_string_lossy().into_owned();
                    Some(
                        link.strip_prefix("socket:[")?
                            .strip_suffix(']')?
                            .to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table).unwrap_or_default().lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                found.push(f[1].to_string());
            }
        }
    }
    found
}

/// An address as `/proc/net/tcp` writes it: the IPv4 address as a native-endian word, in hex.
fn proc_hex(ip: &str, port: u16) -> String {
    let ip: std::net::Ipv4Addr = ip.parse().unwrap();
    format!("{:08X}:{port:04X}", u32::from_ne_bytes(ip.octets()))
}

async fn service_address(cluster: &Cluster, name: &str) -> String {
    let service: Service = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": "http"}]}}))
    .unwrap();
    let created = cluster.services().create(&service).await.expect("service");
    let ip = created.spec.and_then(|s| s.cluster_ip).expect("clusterIP");
    format!("{ip}:80")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_pods_serve_wildcard_8080_side_by_side_each_on_its_own_ip() {
    let _machine = crate::support::shared().await;
    if !available() {
        return;
    }
    let cluster = Cluster::builder().start().await.expect("cluster");
    let mut ips = Vec::new();
    // `alpha` binds `::` (a dual-stack socket), `beta` 0.0.0.0, `gamma` 0.0.0.0:80.
    for (name, port, bind) in [("alpha", 8080, None), ("beta", 8080, Some("0.0.0.0"))]
        .into_iter()
        // Port 80 also from inside a pod's user namespace (mount namespaces on): the shim's binder
        // binds it from the host's (kubelet/src/shim/bind_rewrite/binder.rs). Only where the host
        // itself may bind port 80 (root, or a lowered `ip_unprivileged_port_start`).
        .chain(privileged_ports_allowed().then_some(("gamma", 80, Some("0.0.0.0"))))
    {
        let running = run_pod(&cluster, &pod(name, json!([python_server(port, bind)]))).await;
        let ip = p::ip(&running).expect("pod IP").to_string();
        let who = http_answer_path(&format!("{ip}:{port}"), "/who").await;
        assert_eq!(who, name, "{name} answers on its own IP");
        let via_service = http_answer_path(&service_address(&cluster, name).await, "/who").await;
        assert_eq!(via_service, name, "{name} answers through its Service");
        // Every socket the pod listens on is on its pod IP (v4-mapped for `::`), none wildcard.
        let processes = cluster.pod_processes(name);
        let addresses: Vec<String> = processes
            .iter()
            .flat_map(|proc| listening_addresses(proc.pid))
            .collect();
        let v4 = proc_hex(&ip, port);
        let mapped = format!("0000000000000000FFFF0000{v4}");
        assert!(
            !addresses.is_empty() && addresses.iter().all(|a| *a == v4 || *a == mapped),
            "{name} ({ip}) listens on {addresses:?}"
        );
        ips.push(ip);
    }
    assert_ne!(ips[0], ips[1]);
    let refused = std::net::TcpStream::connect(("127.0.0.1", 8080)).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    stop_clean(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn containers_of_a_pod_and_its_exec_probe_talk_over_localhost() {
    let _machine = crate::support::shared().await;
    if !available() {
        return;
    }
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    let fetch = "import urllib.request as u; print('sidecar got', u.urlopen('http://127.0.0.1:8080/who').read().decode(), flush=True)";
    let mut web = python_server(8080, Some("0.0.0.0"));
    // Ready only if an exec into the pod reaches it on localhost.
    web["readinessProbe"] =
        json!({"exec": {"command": ["python3", "-c", fetch]}, "periodSeconds": 1});
    let sidecar = json!({"name": "sidecar", "image": "python:3.12", "command": ["sh", "-c",
        format!("until python3 -c \"{fetch}\"; do sleep 0.2; done; exec sleep 3600")]});
    cluster
        .pods()
        .create(&pod("pair", json!([web, sidecar])))
        .await
        .expect("create");
    let ready = wait_for(&cluster.pods(), "pair", p::is_ready, RUNNING).await;
    assert!(ready.is_ok(), "the exec probe reached the pod on localhost");
    // The sidecar has no probe, so the pod can be Ready before its loop gets through: wait for
    // its log line (its failed tries before that print connection-refused tracebacks).
    let pods = minik_client::Api::<Pod>::namespaced(cluster.client(), "default");
    let params = LogParams {
        container: Some("sidecar".into()),
        ..Default::default()
    };
    let reached = eventually("the sidecar's answer", RUNNING, || {
        let (pods, params) = (pods.clone(), params.clone());
        async move {
            let logs = pods.logs("pair", &params).await.ok()?;
            logs.contains("sidecar got pair").then_some(())
        }
    })
    .await;
    assert!(reached.is_ok(), "the sidecar reached its peer on localhost");
    stop_clean(cluster).await;
}

/// `GET http://ADDR/PATH` until it answers.
async fn http_answer_path(address: &str, path: &str) -> String {
    let url = format!("http://{address}{path}");
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let get = || async { http.get(&url).send().await.ok()?.text().await.ok() };
    eventually(
        &format!("an answer from {url}"),
        Duration::from_secs(10),
        get,
    )
    .await
    .expect("HTTP answer")
}

/// Whether this user may bind port 80 on the host: root, or a lowered
/// `net.ipv4.ip_unprivileged_port_start`.
fn privileged_ports_allowed() -> bool {
    let start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_unprivileged_port_start");
    let start: u16 = start
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1024);
    nix::unistd::geteuid().is_root() || start <= 80
}
