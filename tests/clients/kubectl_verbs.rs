//! kubectl 1.32, unmodified, reading and deleting: `get` (plain, `-o wide`, `-o yaml`, `-w`,
//! events, `all`), `describe`, `wait`, `delete` with and without `--wait`, and `logs` (`-f`,
//! `--tail`), each checked on the output kubectl prints from minik's answers.

use std::process::Stdio;
use std::time::Duration;

use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_tests::wait::{pod, wait_for, wait_for_all};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{
    cells, cluster, kubectl_binary, line_of, pod_yaml, running, stop_clean, Kubectl, RUNNING,
    SERVICE_YAML,
};

#[tokio::test]
async fn kubectl_get_prints_the_server_tables_plain_wide_and_yaml() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    kubectl.apply_web_and_service("app: web").await;
    let live = running(&cluster, "web").await;
    let ip = pod::ip(&live).expect("pod IP").to_string();
    let ready = wait_for(&cluster.pods(), "web", pod::is_ready, RUNNING)
        .await
        .expect("pod Ready");
    assert!(pod::is_ready(&ready));

    let plain = kubectl.ok(&["get", "pods"]).await;
    let mut lines = plain.lines();
    assert_eq!(
        cells(lines.next().unwrap()),
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{plain}"
    );
    let row = cells(line_of(&plain, "web").expect("a row for web"));
    assert_eq!(row[..4], ["web", "1/1", "Running", "0"], "{plain}");

    let wide = kubectl.ok(&["get", "pods", "-o", "wide"]).await;
    let header = cells(wide.lines().next().unwrap());
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED",
            "NODE",
            "READINESS",
            "GATES"
        ]
    );
    let row = cells(line_of(&wide, "web").unwrap());
    assert_eq!(
        row[5..],
        [ip.as_str(), "node-1", "<none>", "<none>"],
        "{wide}"
    );

    let yaml = kubectl.ok(&["get", "pod", "web", "-o", "yaml"]).await;
    for line in [
        "kind: Pod",
        "  nodeName: node-1",
        "  phase: Running",
        &format!("  podIP: {ip}"),
    ] {
        assert!(yaml.lines().any(|l| l == line), "no {line:?} in:\n{yaml}");
    }

    let services = kubectl.ok(&["get", "svc"]).await;
    assert_eq!(
        cells(services.lines().next().unwrap()),
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    let row = cells(line_of(&services, "web").unwrap());
    assert_eq!(
        (row[1], row[3], row[4]),
        ("ClusterIP", "<none>", "80/TCP"),
        "{services}"
    );
    assert!(row[2].starts_with("127.96."), "{services}");

    let events = kubectl.ok(&["get", "events"]).await;
    assert_eq!(
        cells(events.lines().next().unwrap()),
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    assert!(
        events
            .lines()
            .any(|l| l.contains("Scheduled") && l.contains("pod/web")),
        "{events}"
    );
    let all = kubectl.ok(&["get", "all"]).await;
    assert!(
        line_of(&all, "pod/web").is_some() && line_of(&all, "service/web").is_some(),
        "{all}"
    );

    let nodes = kubectl.ok(&["get", "nodes"]).await;
    assert_eq!(
        cells(line_of(&nodes, "node-1").unwrap())[1],
        "Ready",
        "{nodes}"
    );

    let missing = kubectl.run(&["get", "pod", "nope"]).await;
    assert_eq!(missing.code, 1);
    assert_eq!(
        missing.stderr.trim(),
        "Error from server (NotFound): pods \"nope\" not found"
    );

    // Events are written in the background: wait on a watch until both are stored.
    let events: minik_client::Api<minik_api::core::Event> =
        minik_client::Api::namespaced(cluster.client(), "default");
    let has = |all: &[minik_api::core::Event], reason: &str| {
        all.iter().any(|e| e.reason.as_deref() == Some(reason))
    };
    let about_web = minik_client::ListParams::default().fields("involvedObject.name=web");
    minik_tests::wait::wait_for_all(
        &events,
        about_web,
        |all| has(all, "Scheduled") && has(all, "Started"),
        RUNNING,
    )
    .await
    .expect("the Scheduled and Started events");
    let describe = kubectl.ok(&["describe", "pod", "web"]).await;
    let field = |name: &str| {
        describe
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    assert_eq!(field("Name:"), Some("web"), "{describe}");
    assert_eq!(field("Status:"), Some("Running"), "{describe}");
    assert_eq!(field("IP:"), Some(ip.as_str()), "{describe}");
    // The Events block comes from the events list by involvedObject: the scheduler's and the
    // kubelet's, each as `Type Reason Age From Message`.
    let events = describe
        .split_once("\nEvents:")
        .map(|(_, events)| events)
        .unwrap_or_else(|| panic!("no Events block:\n{describe}"));
    let event = |reason: &str| {
        events
            .lines()
            .find(|l| cells(l).get(1) == Some(&reason))
            .unwrap_or_else(|| panic!("no {reason} event:\n{describe}"))
    };
    let scheduled = event("Scheduled");
    assert!(
        cells(scheduled)[0] == "Normal"
            && scheduled.ends_with("Successfully assigned default/web to node-1"),
        "{scheduled}"
    );
    assert!(
        cells(event("Started"))[3].starts_with("kubelet"),
        "{describe}"
    );

    // describe node lists the node's pods with `spec.nodeName=…,status.phase!=Succeeded,…`.
    let node = kubectl.ok(&["describe", "node", "node-1"]).await;
    assert!(
        node.contains("Non-terminated Pods:          (1 in total)"),
        "{node}"
    );
    assert!(
        node.lines()
            .any(|line| cells(line).starts_with(&["default", "web"])),
        "describe node lists the pod:\n{node}"
    );
    stop_clean(cluster).await;
}

#[tokio::test]
async fn kubectl_get_watch_streams_rows_until_the_pod_runs() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    // Discovery first, so the watch starts before the pod exists.
    kubectl.ok(&["get", "pods"]).await;
    let mut child = kubectl
        .command(&["get", "pods", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kubectl");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let manifest = kubectl.manifest("pod.yaml", &pod_yaml("web", "app: web", ""));
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;

    let mut seen = Vec::new();
    let found = tokio::time::timeout(RUNNING, async {
        while let Ok(Some(line)) = lines.next_line().await {
            let row = cells(&line)
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>();
            seen.push(line);
            if row.first().map(String::as_str) == Some("web")
                && row.get(2).map(String::as_str) == Some("Running")
            {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "kubectl get -w printed {seen:#?}");
    assert!(
        child.try_wait().expect("poll kubectl").is_none(),
        "the watch stays open"
    );
    child.kill().await.expect("stop kubectl");
    stop_clean(cluster).await;
}

/// `kubectl wait --for=condition=Ready` on a pod that is not Ready yet: kubectl lists it by
/// `metadata.name`, then watches until a MODIFIED event carries the Ready condition.
#[tokio::test]
async fn kubectl_wait_watches_until_the_pod_is_ready() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    // The first readiness probe runs 5 s after the start: Ready comes well after kubectl asks.
    let probe = "    readinessProbe: {httpGet: {path: /healthz, port: 8080}, initialDelaySeconds: 5, periodSeconds: 1}\n";
    let manifest = kubectl.manifest("late.yaml", &(pod_yaml("late", "app: late", "") + probe));
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    let waited = kubectl
        .run(&[
            "wait",
            "--for=condition=Ready",
            "pod/late",
            "--timeout=60s",
            "-v=6",
        ])
        .await
        .success();
    assert_eq!(waited.stdout.trim(), "pod/late condition met");
    // -v=6 logs each request: the condition came from a watch, not the first GET.
    let watch = waited
        .stderr
        .lines()
        .find(|l| l.contains("watch=true"))
        .unwrap_or_else(|| panic!("kubectl never watched:\n{}", waited.stderr));
    assert!(
        watch.contains("fieldSelector=metadata.name%3Dlate") && watch.contains("200 OK"),
        "{watch}"
    );
    assert!(pod::is_ready(&cluster.pods().get("late").await.unwrap()));
    stop_clean(cluster).await;
}

#[tokio::test]
async fn kubectl_delete_waits_for_graceful_deletion_unless_told_not_to() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    // The web image ignores SIGTERM here, so each pod stays Terminating for its whole grace period.
    let ignoring = "  containers:\n  - name: web\n    image: nginx\n    env: [{name: MINIK_ON_SIGTERM, value: ignore}]\n";
    for name in ["slow", "quick"] {
        let yaml = format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  terminationGracePeriodSeconds: 30\n{ignoring}");
        let file = kubectl.manifest(&format!("{name}.yaml"), &yaml);
        kubectl.ok(&["apply", "-f", file.to_str().unwrap()]).await;
        running(&cluster, name).await;
    }

    let started = std::time::Instant::now();
    let deleted = kubectl
        .ok(&["delete", "pod", "slow", "--grace-period=2"])
        .await;
    assert_eq!(deleted.trim(), "pod \"slow\" deleted");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "kubectl waited for the grace period"
    );
    assert!(
        cluster.pods().get_opt("slow").await.unwrap().is_none(),
        "gone once kubectl returns"
    );

    let not_waiting = kubectl
        .ok(&["delete", "pod", "quick", "--grace-period=5", "--wait=false"])
        .await;
    assert_eq!(not_waiting.trim(), "pod \"quick\" deleted");
    let listed = kubectl.ok(&["get", "pod", "quick"]).await;
    assert_eq!(
        cells(line_of(&listed, "quick").unwrap())[2],
        "Terminating",
        "{listed}"
    );

    let missing = kubectl.run(&["delete", "pod", "nope"]).await;
    assert_eq!(
        (missing.code, missing.stderr.trim()),
        (1, "Error from server (NotFound): pods \"nope\" not found")
    );
    stop_clean(cluster).await;
}

#[tokio::test]
async fn kubectl_logs_prints_tails_and_follows_until_the_container_ends() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: logger}\nspec:\n  restartPolicy: Never\n  containers:\n  \
                - name: main\n    image: busybox\n    command: [sh, -c, 'echo one; echo two; sleep 2; echo three']\n";
    let file = kubectl.manifest("logger.yaml", yaml);
    kubectl.ok(&["apply", "-f", file.to_str().unwrap()]).await;
    running(&cluster, "logger").await;

    let followed = kubectl.ok(&["logs", "-f", "logger"]).await;
    assert_eq!(
        followed.lines().collect::<Vec<_>>(),
        ["one", "two", "three"],
        "logs -f ends with the container"
    );
    let tail = kubectl.ok(&["logs", "logger", "--tail=1"]).await;
    assert_eq!(tail.trim(), "three");
    stop_clean(cluster).await;
}

#[tokio::test]
async fn kubectl_get_services_endpoints_and_delete_with_grace_period_as_the_seeds_show() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    // The whole pipeline this time: the endpoint controller fills the Endpoints.
    let cluster = minik_tests::Cluster::builder()
        .nodes(1)
        .start()
        .await
        .expect("start cluster");
    let kubectl = Kubectl::new(binary, &cluster);
    let manifest = kubectl.manifest(
        "web.yaml",
        &format!("{}---\n{SERVICE_YAML}", pod_yaml("web", "app: web", "")),
    );
    let applied = kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    assert_eq!(
        applied.lines().collect::<Vec<_>>(),
        ["pod/web created", "service/web created"]
    );
    let ip = pod::ip(&running(&cluster, "web").await)
        .expect("pod IP")
        .to_string();
    let has_address = |ep: &minik_api::core::Endpoints| {
        ep.subsets
            .iter()
            .flatten()
            .any(|s| s.addresses.as_ref().is_some_and(|a| !a.is_empty()))
    };
    wait_for(&cluster.endpoints(), "web", has_address, RUNNING)
        .await
        .expect("endpoints filled");

    // Seed 001: `kubectl get services,endpoints` prints one table per kind, names prefixed.
    let both = kubectl.ok(&["get", "services,endpoints"]).await;
    let tables: Vec<&str> = both.split("\n\n").collect();
    assert_eq!(tables.len(), 2, "{both}");
    assert_eq!(
        cells(tables[0].lines().next().unwrap()),
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    let service = cells(line_of(tables[0], "service/web").expect("service row"));
    assert_eq!((service[1], service[4]), ("ClusterIP", "80/TCP"), "{both}");
    assert_eq!(
        cells(tables[1].lines().next().unwrap()),
        ["NAME", "ENDPOINTS", "AGE"]
    );
    let endpoints = cells(line_of(tables[1], "endpoints/web").expect("endpoints row"));
    assert_eq!(endpoints[1], format!("{ip}:8080"), "{both}");

    // kubectl 1.32's describe reads a Service's endpoints from its EndpointSlices, which the
    // EndpointSlice controller computes from the pods (named `web-<random>`, labelled with the
    // Service's name); wait for the ready endpoint on a watch first.
    let slices: minik_client::Api<EndpointSlice> =
        minik_client::Api::namespaced(cluster.client(), "default");
    let of_web = minik_client::ListParams::default().labels("kubernetes.io/service-name=web");
    let ready = |all: &[EndpointSlice]| {
        all.iter().flat_map(|s| &s.endpoints).any(|e| {
            e.addresses == [ip.clone()] && e.conditions.as_ref().and_then(|c| c.ready) == Some(true)
        })
    };
    let found = wait_for_all(&slices, of_web, ready, RUNNING)
        .await
        .expect("the slice lists the ready pod");
    let slice_name = found[0].metadata.name.clone().unwrap_or_default();
    assert!(slice_name.starts_with("web-"), "{slice_name}");
    let described = kubectl.ok(&["describe", "service", "web"]).await;
    let line = described
        .lines()
        .find(|l| l.starts_with("Endpoints:"))
        .unwrap_or_else(|| panic!("no Endpoints line:\n{described}"));
    assert_eq!(
        cells(line),
        ["Endpoints:", &format!("{ip}:8080")],
        "{described}"
    );
    let listed = kubectl.ok(&["get", "endpointslices"]).await;
    assert_eq!(
        cells(line_of(&listed, &slice_name).expect("slice row"))[1..4],
        ["IPv4", "8080", ip.as_str()],
        "{listed}"
    );

    // Seed 002: `kubectl delete pod web --grace-period=100` returns once the pod is gone, which
    // is as soon as the web server exits on SIGTERM, not after 100 s.
    let started = std::time::Instant::now();
    let deleted = kubectl
        .ok(&["delete", "pod", "web", "--grace-period=100"])
        .await;
    assert_eq!(deleted.trim(), "pod \"web\" deleted");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let no_address = |ep: &minik_api::core::Endpoints| !has_address(ep);
    wait_for(&cluster.endpoints(), "web", no_address, RUNNING)
        .await
        .expect("endpoints emptied");
    let emptied = kubectl.ok(&["get", "endpoints", "web"]).await;
    assert_eq!(
        cells(line_of(&emptied, "web").unwrap())[1],
        "<none>",
        "{emptied}"
    );
    stop_clean(cluster).await;
}
