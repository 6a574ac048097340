//! The Python `kubernetes` client 37.0.2, unmodified: create, list, watch until Running, a Service
//! whose Endpoints are watched until they hold the pod, patch, delete until DELETED, with every
//! answer decoded into the client's strict pydantic models.
//!
//! The script is `tests/clients/python/lifecycle.py`; the interpreter comes from `MINIK_PYTHON`
//! (`.ci/run` makes a venv with `kubernetes==37.0.2`). Skipped with a notice when it is missing,
//! except under CI. `tests/clients/python/workloads.py` drives the workload kinds (Job, CronJob,
//! ReplicationController, DaemonSet, Deployment) the way the client's own e2e tests do, and more;
//! `manifests.py` the pod-facing kinds (busybox args, exec, ConfigMaps, ServiceAccounts).

use std::process::Stdio;
use std::time::Duration;

use crate::support::{python_binary, stop_clean, Kubectl};

#[tokio::test]
async fn python_client_creates_watches_patches_and_deletes_a_pod() {
    // The whole pipeline: the endpoint controller fills the Service's Endpoints.
    run_on_a_fresh_cluster("lifecycle.py", "python client: ok").await;
}

#[tokio::test]
async fn python_client_drives_jobs_cronjobs_rcs_daemonsets_and_deployments() {
    run_on_a_fresh_cluster("workloads.py", "passed 5/5").await;
}

/// Issue 18's kinds as the client's own e2e tests use them: a busybox pod given only `args` (its
/// log and an exec through `kubernetes.stream`), ConfigMaps in env, volumes and missing, and
/// ServiceAccounts with their tokens. Secure (the default), so tokens are real.
#[tokio::test]
async fn python_client_runs_busybox_args_configmaps_and_service_accounts() {
    run_on_a_fresh_cluster("manifests.py", "passed 5/5").await;
}

/// Runs `script` against a fresh one-node cluster and checks its output says `expected`; skips
/// when no Python client is installed (as `python_binary` decides).
async fn run_on_a_fresh_cluster(script: &str, expected: &str) {
    let Some(python) = python_binary() else {
        return;
    };
    let cluster = minik_tests::Cluster::builder()
        .nodes(1)
        .start()
        .await
        .expect("start cluster");
    let stdout = run_script(&python, &cluster, script).await;
    assert!(stdout.contains(expected), "{stdout}");
    stop_clean(cluster).await;
}

/// Runs `tests/clients/python/SCRIPT KUBECONFIG` and returns its stdout; it must exit 0 in 120 s.
async fn run_script(
    python: &std::path::Path,
    cluster: &minik_tests::Cluster,
    script: &str,
) -> String {
    // Only the kubeconfig is used: the same file kubectl reads.
    let config = Kubectl::new("kubectl".into(), cluster);
    let script = format!("{}/clients/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let run = tokio::process::Command::new(python)
        .arg(&script)
        .arg(config.kubeconfig())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the python client finished in time")
        .expect("run python");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python {script} failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    stdout
}
