//! The layout of `describe deployment` and `describe replicaset`, line by line.

use super::*;
use serde_json::json;

fn template(hash: Option<&str>) -> serde_json::Value {
    let mut labels = json!({"app": "web"});
    if let Some(hash) = hash {
        labels["pod-template-hash"] = json!(hash);
    }
    json!({"metadata": {"labels": labels},
        "spec": {"containers": [{"name": "busybox", "image": "busybox",
            "command": ["sleep", "3600"], "ports": [{"containerPort": 8080}]}]}})
}

fn replica_set(name: &str, hash: &str, image: &str, replicas: i32) -> ReplicaSet {
    let mut template = template(Some(hash));
    template["spec"]["containers"][0]["image"] = json!(image);
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default",
            "labels": {"app": "web", "pod-template-hash": hash},
            "annotations": {"deployment.kubernetes.io/revision": "1"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                "uid": "u1", "controller": true}]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web", "pod-template-hash": hash}},
            "template": template},
        "status": {"replicas": replicas},
    }))
    .unwrap()
}

fn deployment() -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "default", "uid": "u1",
            "creationTimestamp": "2026-11-25T14:00:00Z", "labels": {"app": "web"},
            "annotations": {"deployment.kubernetes.io/revision": "2"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "template": template(None)},
        "status": {"replicas": 4, "updatedReplicas": 3, "availableReplicas": 3, "unavailableReplicas": 1,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"}]},
    }))
    .unwrap()
}

#[test]
fn a_deployment_is_described_in_kubectls_sections() {
    let sets = [
        replica_set("web-old", "old", "busybox:1", 1),
        replica_set("web-new", "new", "busybox", 3),
        replica_set("web-older", "older", "busybox:0", 0),
    ];
    let mut out = Lines::default();
    describe_deployment(&mut out, &deployment(), &sets);
    let text = out.render();
    let expected = "\
Name:                   web
Namespace:              default
CreationTimestamp:      Wed, 25 Nov 2026 14:00:00 +0000
Labels:                 app=web
Annotations:            deployment.kubernetes.io/revision: 2
Selector:               app=web
Replicas:               3 desired | 3 updated | 4 total | 3 available | 1 unavailable
StrategyType:           RollingUpdate
MinReadySeconds:        0
RollingUpdateStrategy:  25% max unavailable, 25% max surge
Pod Template:
  Labels:  app=web
  Containers:
";
    assert!(text.starts_with(expected), "{text}");
    assert!(
        text.contains("\n   busybox:\n    Image:         busybox\n"),
        "{text}"
    );
    let tail = "\
Conditions:
  Type           Status  Reason
  ----           ------  ------
  Available      True    MinimumReplicasAvailable
  Progressing    True    ReplicaSetUpdated
OldReplicaSets:  web-old (1/1 replicas created)
NewReplicaSet:   web-new (3/3 replicas created)
";
    assert!(text.ends_with(tail), "{text}");
}

#[test]
fn a_replica_set_shows_its_owner_counts_and_pods_by_phase() {
    let rs = replica_set("web-new", "new", "busybox", 3);
    let pod = |phase: &str| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "status": {"phase": phase}}))
            .unwrap()
    };
    let pods = [pod("Running"), pod("Running"), pod("Pending")];
    let mut out = Lines::default();
    describe_replica_set(&mut out, &rs, &pods);
    let text = out.render();
    let expected = "\
Name:           web-new
Namespace:      default
Selector:       app=web,pod-template-hash=new
Labels:         app=web
                pod-template-hash=new
Annotations:    deployment.kubernetes.io/revision: 1
Controlled By:  Deployment/web
Replicas:       3 current / 3 desired
Pods Status:    2 Running / 1 Waiting / 0 Succeeded / 0 Failed
Pod Template:
";
    assert!(text.starts_with(expected), "{text}");
}
