//! kubectl 1.32, unmodified, driving a StatefulSet and its storage (issue 20): `apply -f` of a set
//! with a claim template, `rollout status sts/NAME` (the default partition 0 makes kubectl say
//! "partitioned roll out complete", against any cluster), `scale sts --replicas` (the `scale`
//! subresource), `get sts`, `get pvc` and `get sc` (their columns as kubectl prints them, short
//! names `sts`, `pvc`, `sc`, the default class marked `(default)`).

use std::time::Duration;

use minik_api::core::Pod;
use minik_client::ListParams;
use minik_tests::wait::wait_for_all;

use crate::support::{cells, cluster, kubectl_binary, line_of, stop_clean, Kubectl};

const STATEFUL_SET: &str = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  \
    replicas: 1\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    \
    metadata: {labels: {app: db}}\n    spec:\n      terminationGracePeriodSeconds: 1\n      \
    containers:\n      - name: db\n        image: busybox\n        args: [sh, -c, 'exec sleep 3600']\n        \
    volumeMounts: [{name: data, mountPath: /data}]\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    \
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n";

#[tokio::test]
async fn kubectl_rolls_out_and_scales_a_stateful_set_with_claims() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let manifest = kubectl.manifest("sts.yaml", STATEFUL_SET);
    let applied = kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    assert!(applied.contains("statefulset.apps/db created"), "{applied}");
    let rolled = kubectl
        .ok(&["rollout", "status", "sts/db", "--timeout=90s"])
        .await;
    assert!(
        rolled.contains("partitioned roll out complete: 1 new pods have been updated"),
        "{rolled}"
    );

    let scaled = kubectl.ok(&["scale", "sts", "db", "--replicas=2"]).await;
    assert!(scaled.contains("statefulset.apps/db scaled"), "{scaled}");
    let two = |pods: &[Pod]| pods.len() == 2 && pods.iter().all(minik_tests::wait::pod::is_ready);
    wait_for_all(
        &cluster.pods(),
        ListParams::default().labels("app=db"),
        two,
        Duration::from_secs(90),
    )
    .await
    .expect("db-0 and db-1 ready");
    let rolled = kubectl
        .ok(&["rollout", "status", "sts/db", "--timeout=90s"])
        .await;
    assert!(
        rolled.contains("partitioned roll out complete: 2 new pods have been updated"),
        "{rolled}"
    );

    let listed = kubectl.ok(&["get", "sts"]).await;
    assert_eq!(
        cells(listed.lines().next().unwrap()),
        ["NAME", "READY", "AGE"]
    );
    assert_eq!(
        cells(line_of(&listed, "db").expect("a row for db"))[..2],
        ["db", "2/2"]
    );
    let claims = kubectl.ok(&["get", "pvc"]).await;
    assert_eq!(
        cells(claims.lines().next().unwrap()),
        [
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS",
            "MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE"
        ]
    );
    let row = cells(line_of(&claims, "data-db-1").expect("a row for data-db-1"));
    assert_eq!(
        (row[1], row[3], row[4], row[5]),
        ("Bound", "1Gi", "RWO", "standard"),
        "{claims}"
    );
    let classes = kubectl.ok(&["get", "sc"]).await;
    assert!(
        classes.contains("standard (default)   minik.dev/local-path"),
        "{classes}"
    );
    kubectl.ok(&["delete", "sts", "db"]).await;
    stop_clean(cluster).await;
}
