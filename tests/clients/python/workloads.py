"""The Python `kubernetes` client (37.0.2), unmodified, drives minik's workload kinds.

Run by tests/clients/python.rs as `python workloads.py KUBECONFIG`. The same calls the client's own
e2e tests make (`kubernetes/e2e_test/test_batch.py`, `test_apps.py`: create, read, delete a Job,
a Deployment, a DaemonSet), and further: a Job watched until Complete, a CronJob suspended by a
patch, a ReplicationController scaled through its scale subresource, a Deployment's status read
until its replicas are available. Every answer is decoded into the client's strict models. Prints
`ok NAME` per check and `passed N/N`; exits non-zero on the first failure.
"""

import sys
import time

from kubernetes import client, config, watch

NAMESPACE = "default"
CHECKS = []


def check(function):
    CHECKS.append(function)
    return function


def pod_template(labels, command=None):
    container = {"name": "main", "image": "busybox" if command else "nginx"}
    if command:
        container["command"] = command
    spec = {"containers": [container], "terminationGracePeriodSeconds": 1}
    if command:
        spec["restartPolicy"] = "Never"
    return {"metadata": {"labels": labels}, "spec": spec}


def wait_for(what, predicate, timeout=60):
    """Polls `predicate` every 200 ms until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@check
def job_runs_to_complete(batch, apps, core):
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "py-job"},
        "spec": {"template": pod_template({"app": "py-job"}, ["sh", "-c", "echo done"])},
    }
    created = batch.create_namespaced_job(NAMESPACE, body)
    assert created.spec.backoff_limit == 6, created.spec.backoff_limit
    assert created.spec.completions == 1
    read = batch.read_namespaced_job("py-job", NAMESPACE)
    assert read.metadata.uid == created.metadata.uid
    complete = False
    for event in watch.Watch().stream(
        batch.list_namespaced_job,
        NAMESPACE,
        field_selector="metadata.name=py-job",
        timeout_seconds=60,
    ):
        job = event["object"]
        assert isinstance(job, client.V1Job), type(job)
        conditions = (job.status and job.status.conditions) or []
        if any(c.type == "Complete" and c.status == "True" for c in conditions):
            assert job.status.succeeded == 1, job.status
            complete = True
            break
    assert complete, "the Job never completed"
    batch.delete_namespaced_job(
        "py-job", NAMESPACE, body=client.V1DeleteOptions(propagation_policy="Foreground")
    )


@check
def cronjob_is_created_suspended_and_listed(batch, apps, core):
    body = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "py-cron"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": pod_template({"app": "py-cron"}, ["true"])}},
        },
    }
    created = batch.create_namespaced_cron_job(NAMESPACE, body)
    assert created.spec.concurrency_policy == "Allow", created.spec.concurrency_policy
    assert created.spec.suspend is False
    patched = batch.patch_namespaced_cron_job("py-cron", NAMESPACE, {"spec": {"suspend": True}})
    assert patched.spec.suspend is True
    names = [c.metadata.name for c in batch.list_namespaced_cron_job(NAMESPACE).items]
    assert "py-cron" in names, names
    batch.delete_namespaced_cron_job("py-cron", NAMESPACE)


@check
def replication_controller_scales_through_its_subresource(batch, apps, core):
    body = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "py-rc"},
        "spec": {"replicas": 1, "selector": {"app": "py-rc"}, "template": pod_template({"app": "py-rc"})},
    }
    core.create_namespaced_replication_controller(NAMESPACE, body)
    scale = core.read_namespaced_replication_controller_scale("py-rc", NAMESPACE)
    assert isinstance(scale, client.V1Scale) and scale.spec.replicas == 1, scale
    core.patch_namespaced_replication_controller_scale("py-rc", NAMESPACE, {"spec": {"replicas": 2}})
    wait_for(
        "2 ready replicas",
        lambda: core.read_namespaced_replication_controller_status("py-rc", NAMESPACE).status.ready_replicas == 2,
    )
    core.delete_namespaced_replication_controller(
        "py-rc", NAMESPACE, body=client.V1DeleteOptions(propagation_policy="Background")
    )


@check
def daemonset_is_created_read_and_deleted(batch, apps, core):
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "py-ds", "labels": {"app": "py-ds"}},
        "spec": {
            "selector": {"matchLabels": {"app": "py-ds"}},
            "template": pod_template({"app": "py-ds"}),
            "updateStrategy": {"type": "RollingUpdate"},
        },
    }
    apps.create_namespaced_daemon_set(NAMESPACE, body)
    read = apps.read_namespaced_daemon_set("py-ds", NAMESPACE)
    assert read.spec.selector.match_labels["app"] == "py-ds"
    assert read.spec.update_strategy.rolling_update.max_unavailable == 1, read.spec.update_strategy
    wait_for(
        "the DaemonSet's pods ready",
        lambda: (s := apps.read_namespaced_daemon_set_status("py-ds", NAMESPACE).status)
        and s.desired_number_scheduled > 0
        and s.number_ready == s.desired_number_scheduled,
    )
    apps.delete_namespaced_daemon_set("py-ds", NAMESPACE, body=client.V1DeleteOptions())


@check
def deployment_becomes_available_and_is_deleted(batch, apps, core):
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "py-deploy"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "py-deploy"}},
            "template": pod_template({"app": "py-deploy"}),
        },
    }
    apps.create_namespaced_deployment(NAMESPACE, body)
    read = apps.read_namespaced_deployment("py-deploy", NAMESPACE)
    assert read.spec.strategy.type == "RollingUpdate", read.spec.strategy
    assert read.spec.template.spec.containers[0].image == "nginx"
    wait_for(
        "2 available replicas",
        lambda: apps.read_namespaced_deployment_status("py-deploy", NAMESPACE).status.available_replicas == 2,
    )
    apps.delete_namespaced_deployment("py-deploy", NAMESPACE, body=client.V1DeleteOptions())


def main():
    config.load_kube_config(config_file=sys.argv[1])
    batch, apps, core = client.BatchV1Api(), client.AppsV1Api(), client.CoreV1Api()
    for function in CHECKS:
        function(batch, apps, core)
        print(f"ok {function.__name__}", flush=True)
    print(f"passed {len(CHECKS)}/{len(CHECKS)}", flush=True)


if __name__ == "__main__":
    main()
