//! EndpointSlices during a graceful deletion (issue 17): the pod stays in its slice, `ready: false,
//! serving: true, terminating: true`, while its preStop runs, and the proxy, which reads slices,
//! keeps sending to it only when no other endpoint is ready (upstream's rule for terminating
//! endpoints, docs/kubernetes-rules.md#e4).

use std::time::Duration;

use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_client::{Api, DeleteParams, ListParams};
use minik_tests::fixtures::{pod, service};
use minik_tests::wait::{pod as p, wait_for_all};
use minik_tests::Cluster;

use crate::support::{http_answer, http_get, run_pod, stop_clean, RUNNING};

/// The conditions (ready, serving, terminating) of `ip` in the slices of `service`, if listed.
fn conditions(all: &[EndpointSlice], ip: &str) -> Option<(bool, bool, bool)> {
    let endpoint = all
        .iter()
        .flat_map(|s| &s.endpoints)
        .find(|e| e.addresses.iter().any(|a| a == ip))?;
    let c = endpoint.conditions.clone().unwrap_or_default();
    let ready = c.ready.unwrap_or(true);
    Some((
        ready,
        c.serving.unwrap_or(ready),
        c.terminating.unwrap_or(false),
    ))
}

fn slices_of(cluster: &Cluster, service: &str) -> (Api<EndpointSlice>, ListParams) {
    let api = Api::namespaced(cluster.client(), "default");
    let lp = ListParams::default().labels(&format!("kubernetes.io/service-name={service}"));
    (api, lp)
}

/// A Service with one web pod whose preStop sleeps `pre_stop`; returns (clusterIP:80, pod IP).
async fn one_pod_service(cluster: &Cluster, name: &str, pre_stop: Duration) -> (String, String) {
    let created = cluster
        .services()
        .create(&service(name).build())
        .await
        .expect("create service");
    let cluster_ip = created.spec.and_then(|s| s.cluster_ip).expect("clusterIP");
    let fixture = pod(&format!("{name}-0"))
        .label("app", name)
        .port(8080)
        .grace(30)
        .pre_stop_sleep(pre_stop);
    let running = run_pod(cluster, &fixture.build()).await;
    let ip = p::ip(&running).expect("pod IP").to_string();
    let (slices, lp) = slices_of(cluster, name);
    let ready = |all: &[EndpointSlice]| conditions(all, &ip) == Some((true, true, false));
    wait_for_all(&slices, lp, ready, RUNNING)
        .await
        .expect("the pod is ready in its slice");
    (format!("{cluster_ip}:80"), ip)
}

/// Deleting the only pod of a Service: during its preStop the slice says `ready: false, serving:
/// true, terminating: true`, and requests through the Service are still answered by it (no ready
/// endpoint is left, so the serving terminating one gets the traffic); once the object is gone,
/// so is the endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_terminating_pod_stays_serving_in_its_slice_during_pre_stop() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder().start().await.expect("cluster");
    let (address, ip) = one_pod_service(&cluster, "drain", Duration::from_secs(4)).await;
    http_answer(&address).await;

    cluster
        .pods()
        .delete("drain-0", &DeleteParams::default())
        .await
        .expect("delete");
    let (slices, lp) = slices_of(&cluster, "drain");
    let terminating = |all: &[EndpointSlice]| conditions(all, &ip) == Some((false, true, true));
    wait_for_all(&slices, lp.clone(), terminating, Duration::from_secs(5))
        .await
        .expect("ready: false, serving: true, terminating: true");
    assert!(
        cluster
            .pods()
            .get_opt("drain-0")
            .await
            .expect("get")
            .is_some(),
        "the pod object is still there, in its preStop"
    );
    let answer = http_get(&address).await;
    assert!(
        answer
            .as_deref()
            .is_some_and(|body| body.contains("drain-0")),
        "the serving terminating endpoint still answers: {answer:?}"
    );

    let gone = |all: &[EndpointSlice]| conditions(all, &ip).is_none();
    wait_for_all(&slices, lp, gone, RUNNING)
        .await
        .expect("the endpoint leaves with the object");
    stop_clean(cluster).await;
}

/// With another replica ready, the terminating pod gets no new request: every answer during its
/// preStop comes from the other one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_terminating_pod_gets_no_traffic_while_another_is_ready() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder().start().await.expect("cluster");
    let (address, ip) = one_pod_service(&cluster, "pair", Duration::from_secs(4)).await;
    let other = pod("pair-1").label("app", "pair").port(8080).grace(30);
    let running = run_pod(&cluster, &other.build()).await;
    let other_ip = p::ip(&running).expect("pod IP").to_string();
    let (slices, lp) = slices_of(&cluster, "pair");
    let both = |all: &[EndpointSlice]| conditions(all, &other_ip) == Some((true, true, false));
    wait_for_all(&slices, lp.clone(), both, RUNNING)
        .await
        .expect("both ready");

    cluster
        .pods()
        .delete("pair-0", &DeleteParams::default())
        .await
        .expect("delete");
    let terminating = |all: &[EndpointSlice]| conditions(all, &ip) == Some((false, true, true));
    wait_for_all(&slices, lp, terminating, Duration::from_secs(5))
        .await
        .expect("terminating in its slice");
    // The proxy applies the slice change about when this watch shows it: one early answer from
    // pair-0 is tolerated, no more.
    let mut answers = Vec::new();
    for _ in 0..10 {
        answers.push(http_get(&address).await.unwrap_or_default());
    }
    assert!(
        answers.iter().filter(|a| a.contains("pair-1")).count() >= 9,
        "the terminating pod is a last resort only: {answers:?}"
    );
    stop_clean(cluster).await;
}
