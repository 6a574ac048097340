//! kube-rs 5 with a CustomResourceDefinition: `Api<CustomResourceDefinition>` creates it,
//! `await_condition(is_crd_established)` waits for it, `Api<DynamicObject>` and a `watcher` drive
//! its objects (ADDED, MODIFIED, DELETED), an invalid object comes back as a 422 `Error::Api`, and a
//! small `kube::runtime::Controller` reconciles each CronTab into a ConfigMap it owns — the loop an
//! operator's test suite runs against envtest.
//!
//! Kubernetes counterpart: kube-rs's own `examples/crd_api.rs`, `dynamic_api.rs` and
//! `configmapgen_controller.rs`, run unmodified in spirit against minik.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use minik_api::core::ConfigMap;
use minik_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;

use crate::support::{stop_clean, Kubectl};

const WAIT: Duration = Duration::from_secs(20);

fn crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {"group": "stable.example.com", "scope": "Namespaced",
            "names": {"plural": "crontabs", "kind": "CronTab"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["cronSpec"],
                        "x-kubernetes-validations": [{"rule": "self.replicas <= 10", "message": "at most 10 replicas"}],
                        "properties": {"cronSpec": {"type": "string", "minLength": 1},
                            "replicas": {"type": "integer", "default": 1}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    }))
    .expect("CRD JSON")
}

fn resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
    ApiResource::from_gvk_with_plural(&gvk, "crontabs")
}

fn crontab(name: &str, spec: serde_json::Value) -> DynamicObject {
    let mut object = DynamicObject::new(name, &resource());
    object.data = json!({"spec": spec});
    object
}

async fn kube_client(cluster: &minik_tests::Cluster) -> Client {
    let files = Kubectl::new("kubectl".into(), cluster);
    let kubeconfig = kube::config::Kubeconfig::read_from(files.kubeconfig()).expect("kubeconfig");
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("config");
    Client::try_from(config).expect("client")
}

/// Drives the watcher through its initial (empty) list, so later objects arrive as changes.
async fn initial_list_done<S>(events: &mut S)
where
    S: Stream<Item = Result<Event<DynamicObject>, watcher::Error>> + Unpin,
{
    loop {
        let event = tokio::time::timeout(WAIT, events.next())
            .await
            .expect("the initial list in time");
        if matches!(event, Some(Ok(Event::InitDone))) {
            return;
        }
    }
}

/// The next watcher event that is not part of the initial list.
async fn next_change<S>(events: &mut S) -> Event<DynamicObject>
where
    S: Stream<Item = Result<Event<DynamicObject>, watcher::Error>> + Unpin,
{
    loop {
        let event = tokio::time::timeout(WAIT, events.next())
            .await
            .expect("a watch event in time")
            .expect("the stream goes on")
            .expect("no watch error");
        if matches!(event, Event::Apply(_) | Event::Delete(_)) {
            return event;
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ReconcileError(#[from] kube::Error);

/// The controller: each CronTab owns a ConfigMap holding its schedule.
async fn reconcile(
    crontab: Arc<DynamicObject>,
    client: Arc<Client>,
) -> Result<Action, ReconcileError> {
    let name = crontab.metadata.name.clone().unwrap_or_default();
    let owner = crontab
        .controller_owner_ref(&resource())
        .expect("an owner reference");
    let schedule = crontab.data["spec"]["cronSpec"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let config_map: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-schedule"), "ownerReferences": [owner]},
        "data": {"schedule": schedule},
    }))
    .expect("ConfigMap JSON");
    let maps: Api<ConfigMap> = Api::namespaced((*client).clone(), "default");
    let apply = PatchParams::apply("crontab-controller").force();
    maps.patch(
        &format!("{name}-schedule"),
        &apply,
        &Patch::Apply(&config_map),
    )
    .await?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<DynamicObject>, _: &ReconcileError, _: Arc<Client>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

async fn schedule_is(maps: &Api<ConfigMap>, name: &str, wanted: &str) {
    let holds = |cm: Option<&ConfigMap>| {
        cm.and_then(|cm| cm.data.as_ref()?.get("schedule").cloned())
            .as_deref()
            == Some(wanted)
    };
    tokio::time::timeout(WAIT, await_condition(maps.clone(), name, holds))
        .await
        .unwrap_or_else(|_| panic!("ConfigMap {name} never held schedule {wanted:?}"))
        .expect("watch the ConfigMap");
}

#[tokio::test]
async fn kube_rs_watches_validates_and_reconciles_custom_resources() {
    let cluster = minik_tests::Cluster::builder()
        .nodes(0)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let client = kube_client(&cluster).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd())
        .await
        .expect("create CRD");
    let established = await_condition(
        crds.clone(),
        "crontabs.stable.example.com",
        conditions::is_crd_established(),
    );
    tokio::time::timeout(WAIT, established)
        .await
        .expect("Established in time")
        .expect("watch CRD");

    let crontabs: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource());
    let mut events = crontab_events(crontabs.clone());
    initial_list_done(&mut events).await;
    let controller = Controller::new_with(crontabs.clone(), watcher::Config::default(), resource())
        .owns(
            Api::<ConfigMap>::namespaced(client.clone(), "default"),
            watcher::Config::default(),
        )
        .run(reconcile, error_policy, Arc::new(client.clone()))
        .for_each(|_| async {});
    let controller = tokio::spawn(controller);
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    let created = crontabs
        .create(
            &PostParams::default(),
            &crontab("nightly", json!({"cronSpec": "0 3 * * *"})),
        )
        .await
        .expect("create CronTab");
    assert_eq!(
        created.data["spec"]["replicas"], 1,
        "defaulted: {created:?}"
    );
    let Event::Apply(added) = next_change(&mut events).await else {
        panic!("expected ADDED")
    };
    assert_eq!(added.metadata.name.as_deref(), Some("nightly"));
    schedule_is(&maps, "nightly-schedule", "0 3 * * *").await;

    let patch = json!({"spec": {"cronSpec": "0 4 * * *"}});
    crontabs
        .patch("nightly", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    let Event::Apply(modified) = next_change(&mut events).await else {
        panic!("expected MODIFIED")
    };
    assert_eq!(modified.data["spec"]["cronSpec"], "0 4 * * *");
    schedule_is(&maps, "nightly-schedule", "0 4 * * *").await;

    let invalid = crontabs
        .create(
            &PostParams::default(),
            &crontab("huge", json!({"cronSpec": "x", "replicas": 11})),
        )
        .await;
    match invalid {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
            assert!(
                status
                    .message
                    .contains(r#"spec: Invalid value: "object": at most 10 replicas"#),
                "{status:?}"
            );
        }
        other => panic!("expected a 422, got {other:?}"),
    }

    crontabs
        .delete("nightly", &DeleteParams::default())
        .await
        .expect("delete");
    let Event::Delete(deleted) = next_change(&mut events).await else {
        panic!("expected DELETED")
    };
    assert_eq!(deleted.metadata.name.as_deref(), Some("nightly"));
    controller.abort();
    stop_clean(cluster).await;
}

fn crontab_events(
    api: Api<DynamicObject>,
) -> impl Stream<Item = Result<Event<DynamicObject>, watcher::Error>> + Unpin {
    Box::pin(watcher::watcher(api, watcher::Config::default()))
}
