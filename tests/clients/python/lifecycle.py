"""The Python `kubernetes` client (37.0.2), unmodified, drives a pod through its life on minik.

Run by tests/clients/python.rs as `python lifecycle.py KUBECONFIG`. Every answer goes through the
client's pydantic models (strict: a missing required field or a wrong type raises), so this also
checks that minik's objects are complete (docs/real-clients.md#python). Prints one line per step and
exits non-zero on the first failure.
"""

import sys

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NAMESPACE = "default"
LABELS = {"app": "py"}


def step(message):
    print(message, flush=True)


def pod_manifest(name):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": LABELS},
        "spec": {
            "terminationGracePeriodSeconds": 5,
            "containers": [
                {
                    "name": "web",
                    "image": "nginx",
                    "env": [{"name": "PORT", "value": "8080"}],
                    "ports": [{"containerPort": 8080}],
                }
            ],
        },
    }


def service_manifest(name):
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": LABELS, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def watch_endpoints(v1, name, ip, timeout):
    """Streams the Service's Endpoints until `ip` is among their addresses."""
    stream = watch.Watch()
    for event in stream.stream(
        v1.list_namespaced_endpoints,
        NAMESPACE,
        field_selector=f"metadata.name={name}",
        timeout_seconds=timeout,
    ):
        endpoints = event["object"]
        assert isinstance(endpoints, client.V1Endpoints), type(endpoints)
        addresses = [a.ip for s in endpoints.subsets or [] for a in s.addresses or []]
        if ip in addresses:
            stream.stop()
            return endpoints
    raise AssertionError(f"watch ended before {ip} was in the Endpoints {name}")


def watch_until(v1, name, done, timeout):
    """Streams pod events (no resourceVersion: the server sends synthetic ADDEDs first)."""
    stream = watch.Watch()
    for event in stream.stream(
        v1.list_namespaced_pod,
        NAMESPACE,
        label_selector="app=py",
        timeout_seconds=timeout,
    ):
        pod = event["object"]
        assert isinstance(pod, client.V1Pod), type(pod)
        if pod.metadata.name == name and done(event["type"], pod):
            stream.stop()
            return pod
    raise AssertionError(f"watch ended before {name} reached the expected state")


def main():
    config.load_kube_config(config_file=sys.argv[1])
    v1 = client.CoreV1Api()

    created = v1.create_namespaced_pod(NAMESPACE, pod_manifest("py-web"))
    assert created.metadata.name == "py-web" and created.metadata.uid, created.metadata
    step("created py-web")

    try:
        v1.create_namespaced_pod(NAMESPACE, pod_manifest("py-web"))
        raise AssertionError("a duplicate create must fail")
    except ApiException as error:
        assert error.status == 409, error
    step("duplicate create is 409")

    listed = v1.list_namespaced_pod(NAMESPACE, label_selector="app=py")
    assert [p.metadata.name for p in listed.items] == ["py-web"], listed.items
    assert listed.metadata.resource_version, "lists carry a resourceVersion"
    step("listed py-web")

    running = watch_until(v1, "py-web", lambda _, p: p.status.phase == "Running", 30)
    statuses = running.status.container_statuses
    assert statuses and statuses[0].name == "web" and statuses[0].restart_count == 0, statuses
    assert running.status.pod_ip, running.status
    step(f"py-web is Running on {running.spec.node_name} at {running.status.pod_ip}")

    log = v1.read_namespaced_pod_log("py-web", NAMESPACE)
    assert isinstance(log, str), type(log)
    step(f"read {len(log)} bytes of log")

    patched = v1.patch_namespaced_pod("py-web", NAMESPACE, {"metadata": {"labels": {"tier": "front"}}})
    assert patched.metadata.labels == {"app": "py", "tier": "front"}, patched.metadata.labels
    step("strategic merge patch applied")

    service = v1.create_namespaced_service(NAMESPACE, service_manifest("py-svc"))
    assert service.spec.cluster_ip, service.spec
    endpoints = watch_endpoints(v1, "py-svc", running.status.pod_ip, 30)
    assert endpoints.subsets[0].ports[0].port == 8080, endpoints.subsets
    step(f"py-svc ({service.spec.cluster_ip}) has py-web in its Endpoints")

    # Every other kind minik serves must deserialize into the client's models too.
    for node in v1.list_node().items:
        assert node.status.conditions, node.status
    v1.list_namespace()
    # `default` also holds the `kubernetes` Service and its Endpoints (the apiserver), as upstream.
    services = sorted(s.metadata.name for s in v1.list_namespaced_service(NAMESPACE).items)
    assert services == ["kubernetes", "py-svc"], services
    endpoints = sorted(e.metadata.name for e in v1.list_namespaced_endpoints(NAMESPACE).items)
    assert endpoints == ["kubernetes", "py-svc"], endpoints
    accounts = [a.metadata.name for a in v1.list_namespaced_service_account(NAMESPACE).items]
    assert accounts == ["default"], accounts
    events = v1.list_namespaced_event(NAMESPACE, field_selector="involvedObject.name=py-web")
    assert any(e.reason == "Scheduled" for e in events.items), [e.reason for e in events.items]
    step(f"read nodes, namespaces, services, endpoints, service accounts and {len(events.items)} events")

    deleted = v1.delete_namespaced_pod("py-web", NAMESPACE, grace_period_seconds=1)
    assert deleted.metadata.name == "py-web", deleted
    watch_until(v1, "py-web", lambda kind, _: kind == "DELETED", 30)
    step("py-web DELETED")

    try:
        v1.read_namespaced_pod("py-web", NAMESPACE)
        raise AssertionError("a read after delete must fail")
    except ApiException as error:
        assert error.status == 404, error
    step("read after delete is 404")

    v1.delete_namespaced_service("py-svc", NAMESPACE)
    step("py-svc deleted")
    print("python client: ok", flush=True)


if __name__ == "__main__":
    main()
