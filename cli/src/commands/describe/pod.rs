//! `describe pod`: the sections of kubectl's `PodDescriber` (`describe.go`, `describePod`).

use minik_api::core::{Container, ContainerState, ContainerStatus, Pod, Probe};

use super::{describe_time, Lines};

/// Writes the pod's sections (the Events are added by the caller).
pub fn describe(out: &mut Lines, pod: &Pod) {
    let spec = pod.spec.clone().unwrap_or_default();
    let status = pod.status.clone().unwrap_or_default();
    out.field(0, "Name", pod.metadata.name.clone().unwrap_or_default());
    out.field(
        0,
        "Namespace",
        pod.metadata.namespace.clone().unwrap_or_default(),
    );
    out.field(0, "Priority", spec.priority.unwrap_or(0));
    out.field(
        0,
        "Service Account",
        spec.service_account_name
            .clone()
            .unwrap_or_else(|| "default".to_string()),
    );
    let node = match (&spec.node_name, &status.host_ip) {
        (Some(node), Some(ip)) => format!("{node}/{ip}"),
        (Some(node), None) => node.clone(),
        _ => "<none>".to_string(),
    };
    out.field(0, "Node", node);
    if let Some(start) = &status.start_time {
        out.field(0, "Start Time", describe_time(Some(start)));
    }
    out.map(0, "Labels", pod.metadata.labels.as_ref());
    out.map(0, "Annotations", pod.metadata.annotations.as_ref());
    match &pod.metadata.deletion_timestamp {
        Some(deletion) => {
            let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
            out.field(
                0,
                "Status",
                format!(
                    "Terminating (lasts until {})",
                    describe_time(Some(deletion))
                ),
            );
            out.field(0, "Termination Grace Period", format!("{grace}s"));
        }
        None => out.field(0, "Status", status.phase.clone().unwrap_or_default()),
    }
    if let Some(reason) = status.reason.as_ref().filter(|r| !r.is_empty()) {
        out.field(0, "Reason", reason);
    }
    if let Some(message) = status.message.as_ref().filter(|m| !m.is_empty()) {
        out.field(0, "Message", message);
    }
    out.field(0, "IP", status.pod_ip.clone().unwrap_or_default());
    let ips: Vec<String> = status
        .pod_ips
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|ip| ip.ip)
        .collect();
    if ips.is_empty() {
        out.field(0, "IPs", "<none>");
    } else {
        out.line(0, "IPs:");
        for ip in ips {
            out.field(1, "IP", ip);
        }
    }
    let init_statuses = status.init_container_statuses.clone().unwrap_or_default();
    if let Some(init_containers) = spec.init_containers.as_ref().filter(|c| !c.is_empty()) {
        out.line(0, "Init Containers:");
        for container in init_containers {
            describe_container(
                out,
                container,
                init_statuses.iter().find(|s| s.name == container.name),
            );
        }
    }
    let statuses = status.container_statuses.clone().unwrap_or_default();
    out.line(0, "Containers:");
    for container in &spec.containers {
        describe_container(
            out,
            container,
            statuses.iter().find(|s| s.name == container.name),
        );
    }
    describe_conditions(out, pod);
    let volumes: Vec<String> = spec
        .volumes
        .clone()
        .unwrap_or_default()
        .iter()
        .map(volume_line)
        .collect();
    out.list(0, "Volumes", &volumes);
    out.map(0, "Node-Selectors", spec.node_selector.as_ref());
    let tolerations: Vec<String> = spec
        .tolerations
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|t| {
            let mut text = t.key.clone().unwrap_or_default();
            if let Some(value) = t.value.as_ref().filter(|v| !v.is_empty()) {
                text.push_str(&format!("={value}"));
            }
            if let Some(effect) = &t.effect {
                text.push_str(&format!(":{effect}"));
            }
            text
        })
        .collect();
    out.list(0, "Tolerations", &tolerations);
}

fn describe_container(out: &mut Lines, container: &Container, status: Option<&ContainerStatus>) {
    describe_container_at(out, "", container, status);
}

/// A container's block; `indent` goes before its name (a pod template's containers are one
/// space further in: kubectl's `DescribePodTemplate`).
pub(super) fn describe_container_at(
    out: &mut Lines,
    indent: &str,
    container: &Container,
    status: Option<&ContainerStatus>,
) {
    out.line(1, &format!("{indent}{}:", container.name));
    if let Some(status) = status {
        out.field(
            2,
            "Container ID",
            status.container_id.clone().unwrap_or_default(),
        );
    }
    out.field(2, "Image", container.image.clone().unwrap_or_default());
    if let Some(status) = status {
        out.field(2, "Image ID", &status.image_id);
    }
    let ports: Vec<String> = container
        .ports
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                p.container_port,
                p.protocol.clone().unwrap_or_else(|| "TCP".into())
            )
        })
        .collect();
    out.field(
        2,
        "Port",
        if ports.is_empty() {
            "<none>".to_string()
        } else {
            ports.join(", ")
        },
    );
    if let Some(command) = container.command.as_ref().filter(|c| !c.is_empty()) {
        out.list(2, "Command", command);
    }
    if let Some(args) = container.args.as_ref().filter(|a| !a.is_empty()) {
        out.list(2, "Args", args);
    }
    if let Some(status) = status {
        describe_state(out, "State", status.state.as_ref());
        if status
            .last_state
            .as_ref()
            .is_some_and(|s| s.terminated.is_some() || s.running.is_some() || s.waiting.is_some())
        {
            describe_state(out, "Last State", status.last_state.as_ref());
        }
        out.field(2, "Ready", if status.ready { "True" } else { "False" });
        out.field(2, "Restart Count", status.restart_count);
    }
    for (name, probe) in [
        ("Liveness", &container.liveness_probe),
        ("Readiness", &container.readiness_probe),
        ("Startup", &container.startup_probe),
    ] {
        if let Some(probe) = probe {
            out.field(2, name, probe_line(probe));
        }
    }
    let env: Vec<String> = container
        .env
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|e| format!("{}:\t{}", e.name, e.value.clone().unwrap_or_default()))
        .collect();
    if env.is_empty() {
        out.field(2, "Environment", "<none>");
    } else {
        out.line(2, "Environment:");
        for line in env {
            out.line(3, &line);
        }
    }
    let mounts: Vec<String> = container
        .volume_mounts
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|m| {
            let mode = if m.read_only == Some(true) {
                "ro"
            } else {
                "rw"
            };
            format!("{} from {} ({mode})", m.mount_path, m.name)
        })
        .collect();
    out.list(2, "Mounts", &mounts);
}

fn describe_state(out: &mut Lines, label: &str, state: Option<&ContainerState>) {
    let Some(state) = state else {
        out.field(2, label, "Waiting");
        return;
    };
    if let Some(running) = &state.running {
        out.field(2, label, "Running");
        out.field(3, "Started", describe_time(running.started_at.as_ref()));
    } else if let Some(waiting) = &state.waiting {
        out.field(2, label, "Waiting");
        out.field(3, "Reason", waiting.reason.clone().unwrap_or_default());
        if let Some(message) = waiting.message.as_ref().filter(|m| !m.is_empty()) {
            out.field(3, "Message", message);
        }
    } else if let Some(terminated) = &state.terminated {
        out.field(2, label, "Terminated");
        out.field(3, "Reason", terminated.reason.clone().unwrap_or_default());
        if let Some(message) = terminated.message.as_ref().filter(|m| !m.is_empty()) {
            out.field(3, "Message", message);
        }
        out.field(3, "Exit Code", terminated.exit_code);
        if let Some(signal) = terminated.signal.filter(|s| *s != 0) {
            out.field(3, "Signal", signal);
        }
        out.field(3, "Started", describe_time(terminated.started_at.as_ref()));
        out.field(
            3,
            "Finished",
            describe_time(terminated.finished_at.as_ref()),
        );
    } else {
        out.field(2, label, "Waiting");
    }
}

/// `http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3`.
fn probe_line(probe: &Probe) -> String {
    let action = if let Some(http) = &probe.http_get {
        let port = match &http.port {
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(port) => {
                port.to_string()
            }
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(name) => name.clone(),
        };
        format!(
            "http-get http://{}:{port}{}",
            http.host.clone().unwrap_or_default(),
            http.path.clone().unwrap_or_else(|| "/".into())
        )
    } else if let Some(tcp) = &probe.tcp_socket {
        format!(
            "tcp-socket :{}",
            match &tcp.port {
                k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(port) =>
                    port.to_string(),
                k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(name) =>
                    name.clone(),
            }
        )
    } else if let Some(exec) = &probe.exec {
        format!(
            "exec [{}]",
            exec.command.clone().unwrap_or_default().join(" ")
        )
    } else {
        "unknown".to_string()
    };
    format!(
        "{action} delay={}s timeout={}s period={}s #success={} #failure={}",
        probe.initial_delay_seconds.unwrap_or(0),
        probe.timeout_seconds.unwrap_or(1),
        probe.period_seconds.unwrap_or(10),
        probe.success_threshold.unwrap_or(1),
        probe.failure_threshold.unwrap_or(3)
    )
}

fn describe_conditions(out: &mut Lines, pod: &Pod) {
    let conditions = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    if conditions.is_empty() {
        return;
    }
    out.line(0, "Conditions:");
    out.line(1, "Type\tStatus");
    for condition in conditions {
        out.line(1, &format!("{}\t{}", condition.type_, condition.status));
    }
}

pub(super) fn volume_line(volume: &minik_api::core::Volume) -> String {
    let source = if volume.empty_dir.is_some() {
        "EmptyDir (a temporary directory that shares a pod's lifetime)".to_string()
    } else if let Some(host_path) = &volume.host_path {
        format!("HostPath ({})", host_path.path)
    } else if volume.config_map.is_some() {
        "ConfigMap".to_string()
    } else {
        "<unknown>".to_string()
    };
    format!("{}: {source}", volume.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_running_pod_has_kubectls_sections() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}],
                     "readinessProbe": {"httpGet": {"path": "/", "port": 80}}}]},
            "status": {"phase": "Running", "hostIP": "127.0.0.1", "podIP": "127.244.1.2", "podIPs": [{"ip": "127.244.1.2"}],
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0, "image": "nginx", "imageID": "minik://web",
                                              "state": {"running": {"startedAt": "2026-11-22T02:00:00Z"}}}]},
        }))
        .unwrap();
        let mut out = Lines::default();
        describe(&mut out, &pod);
        let text = out.render();
        for expected in [
            "Node:             node-1/127.0.0.1\n",
            "Labels:           app=web\n",
            "Status:           Running\n",
            "Containers:\n  web:\n",
            "    State:          Running\n      Started:      Sun, 22 Nov 2026 02:00:00 +0000\n",
            "    Readiness:      http-get http://:80/ delay=0s timeout=1s period=10s #success=1 #failure=3\n",
            "Conditions:\n  Type           Status\n  Ready          True\nVolumes:         <none>\n",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
    }
}
