//! kubectl 1.32, unmodified, driving Jobs (issue 20): `create job NAME --image=busybox -- CMD`
//! (a protobuf body), `wait --for=condition=complete`, `get jobs` (plain and wide), `describe job`, `logs
//! job/NAME` and `delete job`; `create cronjob`, `get cj` and `create job --from=cronjob/NAME`.
//! Every answer is checked on what kubectl prints.

use minik_api::batch::Job;
use minik_api::core::Pod;
use minik_client::{Api, ListParams};
use minik_tests::wait::wait_for_all;

use crate::support::{cells, cluster, kubectl_binary, line_of, stop_clean, Kubectl};

#[tokio::test]
async fn kubectl_creates_waits_for_and_gets_a_job() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let args = [
        "create",
        "job",
        "hello",
        "--image=busybox",
        "--",
        "sh",
        "-c",
        "echo hi",
    ];
    let created = kubectl.ok(&args).await;
    assert!(created.contains("job.batch/hello created"), "{created}");
    let waited = kubectl
        .ok(&[
            "wait",
            "--for=condition=complete",
            "job/hello",
            "--timeout=90s",
        ])
        .await;
    assert!(waited.contains("job.batch/hello condition met"), "{waited}");

    let plain = kubectl.ok(&["get", "jobs"]).await;
    let header = cells(plain.lines().next().unwrap());
    assert_eq!(header, ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]);
    let row = cells(line_of(&plain, "hello").expect("a row for hello"));
    assert_eq!(row[..3], ["hello", "Complete", "1/1"], "{plain}");
    let wide = kubectl.ok(&["get", "job", "hello", "-o", "wide"]).await;
    let header = cells(wide.lines().next().unwrap());
    assert_eq!(header[5..], ["CONTAINERS", "IMAGES", "SELECTOR"], "{wide}");
    let row = cells(line_of(&wide, "hello").expect("a wide row"));
    assert!(
        row[7].starts_with("batch.kubernetes.io/controller-uid="),
        "{wide}"
    );

    let described = kubectl.ok(&["describe", "job", "hello"]).await;
    assert!(described.contains("Completions:      1"), "{described}");
    assert!(described.contains("1 Succeeded / 0 Failed"), "{described}");

    let logs = kubectl.ok(&["logs", "job/hello"]).await;
    assert_eq!(logs.trim(), "hi");

    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let job = jobs.get("hello").await.expect("get job");
    assert_eq!(job.status.and_then(|s| s.succeeded), Some(1));
    let deleted = kubectl.ok(&["delete", "job", "hello"]).await;
    assert!(deleted.contains("job.batch \"hello\" deleted"), "{deleted}");
    let lp = ListParams::default().labels("batch.kubernetes.io/job-name=hello");
    wait_for_all(
        &cluster.pods(),
        lp,
        |pods: &[Pod]| pods.is_empty(),
        std::time::Duration::from_secs(60),
    )
    .await
    .expect("kubectl deletes the pods in the background");
    stop_clean(cluster).await;
}

/// `create cronjob` (a protobuf body), `get cronjobs` / `get cj`, and `create job --from=cronjob/`
/// running the template at once.
#[tokio::test]
async fn kubectl_creates_a_cron_job_and_a_job_from_it() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let args = [
        "create",
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=0 0 1 1 *",
        "--",
        "sh",
        "-c",
        "echo tick",
    ];
    let created = kubectl.ok(&args).await;
    assert!(created.contains("cronjob.batch/tick created"), "{created}");
    let listed = kubectl.ok(&["get", "cj"]).await;
    let header = cells(listed.lines().next().unwrap());
    assert_eq!(
        header,
        ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    );
    let row = cells(line_of(&listed, "tick").expect("a row for tick"));
    assert_eq!(
        row[..9],
        ["tick", "0", "0", "1", "1", "*", "<none>", "False", "0"],
        "{listed}"
    );
    let from = kubectl
        .ok(&["create", "job", "manual", "--from=cronjob/tick"])
        .await;
    assert!(from.contains("job.batch/manual created"), "{from}");
    let waited = kubectl
        .ok(&[
            "wait",
            "--for=condition=complete",
            "job/manual",
            "--timeout=90s",
        ])
        .await;
    assert!(waited.contains("condition met"), "{waited}");
    let logs = kubectl.ok(&["logs", "job/manual"]).await;
    assert_eq!(logs.trim(), "tick");
    kubectl.ok(&["delete", "cronjob", "tick"]).await;
    kubectl.ok(&["delete", "job", "manual"]).await;
    stop_clean(cluster).await;
}
