"""The Python `kubernetes` client (37.0.2), unmodified, on what issue 18 makes real: pods with
busybox `args`, ConfigMaps consumed by pods, ServiceAccounts and their tokens.

Run by tests/clients/python.rs as `python manifests.py KUBECONFIG`. It makes the calls of the
client's own e2e tests (`kubernetes/e2e_test/test_client.py`: a busybox pod given only `args`, its
log and an exec through the `stream` module; the ConfigMap create/read/patch/list/delete cycle)
and checks what a pod sees of them: a ConfigMap in its env and at its volume's mountPath, a
missing one holding it in CreateContainerConfigError, its ServiceAccount defaulted and its token
mounted. Prints `ok NAME` per check and `passed N/N`; exits non-zero on the first failure.
"""

import sys
import time

from kubernetes import client, config
from kubernetes.stream import stream

NAMESPACE = "default"
CHECKS = []


def check(function):
    CHECKS.append(function)
    return function


def wait_for(what, predicate, timeout=60):
    """Polls `predicate` every 200 ms until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def busybox_pod(name, args, **spec):
    container = {"name": "main", "image": "busybox", "args": args}
    container.update(spec.pop("container", {}))
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 1, **spec},
    }
    return body


def running(core, name):
    pod = core.read_namespaced_pod(name, NAMESPACE)
    return pod if pod.status.phase == "Running" else None


def log_contains(core, name, text):
    def seen():
        try:
            return text in core.read_namespaced_pod_log(name, NAMESPACE)
        except client.ApiException:
            return False

    return wait_for(f"{text!r} in the log of {name}", seen)


def delete_pod(core, name):
    core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)


@check
def busybox_with_only_args_runs_logs_and_execs(core):
    # The image's entrypoint is a shell: `args` alone is the command line (Docker's rule).
    core.create_namespaced_pod(NAMESPACE, busybox_pod("py-busybox", ["sh", "-c", "echo hello from args; sleep 600"]))
    wait_for("py-busybox Running", lambda: running(core, "py-busybox"))
    log_contains(core, "py-busybox", "hello from args")
    output = stream(
        core.connect_get_namespaced_pod_exec,
        "py-busybox",
        NAMESPACE,
        command=["/bin/sh", "-c", "echo exec says $((6 * 7))"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
    )
    assert "exec says 42" in output, output
    delete_pod(core, "py-busybox")


@check
def configmap_create_read_patch_list_delete(core):
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "py-config", "labels": {"e2e-tests": "true"}},
        "data": {"config.json": '{"command":"/usr/bin/mysqld_safe"}', "greeting": "hello"},
    }
    created = core.create_namespaced_config_map(NAMESPACE, body)
    assert created.data["greeting"] == "hello", created.data
    read = core.read_namespaced_config_map("py-config", NAMESPACE)
    assert read.metadata.uid == created.metadata.uid
    patched = core.patch_namespaced_config_map("py-config", NAMESPACE, {"data": {"config.json": "{}"}})
    assert patched.data["config.json"] == "{}" and patched.data["greeting"] == "hello", patched.data
    listed = core.list_namespaced_config_map(NAMESPACE, label_selector="e2e-tests=true")
    assert [c.metadata.name for c in listed.items] == ["py-config"], listed.items


@check
def a_pod_reads_the_configmap_from_env_and_its_mount_path(core):
    args = ["sh", "-c", "echo greeting=$GREETING; cat /etc/config/greeting; echo; sleep 600"]
    body = busybox_pod(
        "py-consumer",
        args,
        container={
            "env": [{"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "py-config", "key": "greeting"}}}],
            "volumeMounts": [{"name": "config", "mountPath": "/etc/config"}],
        },
        volumes=[{"name": "config", "configMap": {"name": "py-config"}}],
    )
    core.create_namespaced_pod(NAMESPACE, body)
    log_contains(core, "py-consumer", "greeting=hello")
    log = log_contains(core, "py-consumer", "greeting=hello") and core.read_namespaced_pod_log("py-consumer", NAMESPACE)
    assert log.count("hello") >= 2, f"the mounted file as well as the env: {log!r}"
    delete_pod(core, "py-consumer")
    core.delete_namespaced_config_map("py-config", NAMESPACE)
    gone = core.list_namespaced_config_map(NAMESPACE, label_selector="e2e-tests=true")
    assert gone.items == [], gone.items


@check
def a_missing_configmap_holds_the_container_in_create_container_config_error(core):
    body = busybox_pod(
        "py-missing",
        ["sh", "-c", "sleep 600"],
        container={"envFrom": [{"configMapRef": {"name": "py-absent"}}]},
    )
    core.create_namespaced_pod(NAMESPACE, body)

    def waiting_reason():
        status = core.read_namespaced_pod("py-missing", NAMESPACE).status
        for container in status.container_statuses or []:
            if container.state.waiting and container.state.waiting.reason == "CreateContainerConfigError":
                return True
        return False

    wait_for("CreateContainerConfigError", waiting_reason)
    core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": "py-absent"}, "data": {"A": "1"}})
    wait_for("py-missing Running once its ConfigMap exists", lambda: running(core, "py-missing"))
    delete_pod(core, "py-missing")
    core.delete_namespaced_config_map("py-absent", NAMESPACE)


@check
def service_accounts_default_token_and_mount(core):
    wait_for("the default ServiceAccount", lambda: core.read_namespaced_service_account("default", NAMESPACE))
    core.create_namespace({"metadata": {"name": "py-ns"}})
    wait_for(
        "a default ServiceAccount in a new namespace",
        lambda: [sa for sa in core.list_namespaced_service_account("py-ns").items if sa.metadata.name == "default"],
    )
    request = core.create_namespaced_service_account_token(
        "default", NAMESPACE, {"spec": {"audiences": [], "expirationSeconds": 3600}}
    )
    assert request.status.token.count(".") == 2, "a JWT"
    args = ["sh", "-c", "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; sleep 600"]
    core.create_namespaced_pod(NAMESPACE, busybox_pod("py-sa", args))
    pod = core.read_namespaced_pod("py-sa", NAMESPACE)
    assert pod.spec.service_account_name == "default", pod.spec.service_account_name
    log_contains(core, "py-sa", "default")
    delete_pod(core, "py-sa")
    core.delete_namespace("py-ns")


def main():
    config.load_kube_config(config_file=sys.argv[1])
    core = client.CoreV1Api()
    for function in CHECKS:
        function(core)
        print(f"ok {function.__name__}", flush=True)
    print(f"passed {len(CHECKS)}/{len(CHECKS)}", flush=True)


if __name__ == "__main__":
    main()
