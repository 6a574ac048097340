//! Builders for the objects tests create: `pod("web").port(8080).build()`, `service("web")…`.
//!
//! Kubernetes counterpart: the e2e framework's pod helpers (`e2epod.NewAgnhostPod`,
//! `test/utils/image`) and the `st.MakePod()` wrappers of the scheduler tests. Objects are built as
//! JSON, the way a manifest reads, then decoded into the typed k8s-openapi object, so a test shows
//! exactly the fields it sets.
//!
//! The default container is named `app` and runs the built-in `minik/web` image (an HTTP server on
//! POD_IP:PORT answering with its pod name; `MINIK_ON_SIGTERM` = `exit` | `drain:MILLIS` | `ignore`).

use std::time::Duration;

use minik_api::core::{Pod, Service};
use serde_json::{json, Value};

/// The image every test pod runs unless told otherwise.
pub const WEB_IMAGE: &str = "minik/web";

/// Starts a pod named `name` with one `minik/web` container named `app`.
pub fn pod(name: &str) -> PodBuilder {
    PodBuilder {
        pod: json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {}},
            "spec": {"containers": [], "restartPolicy": "Always"},
        }),
        container: json!({"name": "app", "image": WEB_IMAGE}),
    }
}

/// A pod under construction: the pod JSON and its main container.
#[derive(Clone, Debug)]
pub struct PodBuilder {
    pod: Value,
    container: Value,
}

impl PodBuilder {
    /// The main container's image.
    pub fn image(mut self, image: &str) -> Self {
        self.container["image"] = json!(image);
        self
    }

    /// The main container's exact argv (`command`), e.g. `["sh", "-c", "exit 3"]`.
    pub fn command(mut self, argv: &[&str]) -> Self {
        self.container["command"] = json!(argv);
        self
    }

    /// A containerPort (named `http`), also passed as PORT so the web image listens on it.
    pub fn port(mut self, port: u16) -> Self {
        self.container["ports"] =
            json!([{"name": "http", "containerPort": port, "protocol": "TCP"}]);
        self.env("PORT", &port.to_string())
    }

    /// An environment variable of the main container.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        let env = self
            .container
            .as_object_mut()
            .map(|c| c.entry("env").or_insert_with(|| json!([])));
        if let Some(Value::Array(list)) = env {
            list.push(json!({"name": key, "value": value}));
        }
        self
    }

    /// What the web image does on SIGTERM: `exit`, `drain:MILLIS` or `ignore`.
    pub fn on_sigterm(self, behaviour: &str) -> Self {
        self.env("MINIK_ON_SIGTERM", behaviour)
    }

    /// A label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.pod["metadata"]["labels"][key] = json!(value);
        self
    }

    /// `spec.restartPolicy`: Always, OnFailure or Never.
    pub fn restart_policy(mut self, policy: &str) -> Self {
        self.pod["spec"]["restartPolicy"] = json!(policy);
        self
    }

    /// `spec.terminationGracePeriodSeconds`.
    pub fn grace(mut self, seconds: i64) -> Self {
        self.pod["spec"]["terminationGracePeriodSeconds"] = json!(seconds);
        self
    }

    /// A preStop hook that sleeps: the `sleep` action for whole seconds, else `exec sleep 0.5`.
    pub fn pre_stop_sleep(mut self, duration: Duration) -> Self {
        self.container["lifecycle"]["preStop"] = sleep_handler(duration);
        self
    }

    /// A preStop hook that runs `argv`.
    pub fn pre_stop_exec(mut self, argv: &[&str]) -> Self {
        self.container["lifecycle"]["preStop"] = json!({"exec": {"command": argv}});
        self
    }

    /// A postStart hook that sleeps.
    pub fn post_start_sleep(mut self, duration: Duration) -> Self {
        self.container["lifecycle"]["postStart"] = sleep_handler(duration);
        self
    }

    /// `spec.nodeSelector[key] = value`.
    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.pod["spec"]["nodeSelector"][key] = json!(value);
        self
    }

    /// CPU and memory requests of the main container (`"500m"`, `"64Mi"`).
    pub fn requests(mut self, cpu: &str, memory: &str) -> Self {
        self.container["resources"]["requests"] = json!({"cpu": cpu, "memory": memory});
        self
    }

    /// An init container running `argv`, appended after the previous ones.
    pub fn init_container(mut self, name: &str, argv: &[&str]) -> Self {
        let spec = &mut self.pod["spec"];
        if spec.get("initContainers").is_none() {
            spec["initContainers"] = json!([]);
        }
        if let Some(list) = spec["initContainers"].as_array_mut() {
            list.push(json!({"name": name, "image": "busybox", "command": argv}));
        }
        self
    }

    /// A readiness probe: HTTP GET `path` on the `http` port, every `period_seconds`.
    pub fn readiness_http(mut self, path: &str, period_seconds: i32) -> Self {
        self.container["readinessProbe"] = json!({"httpGet": {"path": path, "port": "http"}, "periodSeconds": period_seconds, "failureThreshold": 1});
        self
    }

    /// A liveness probe running `argv`, every `period_seconds`, failing after one failure.
    pub fn liveness_exec(mut self, argv: &[&str], period_seconds: i32) -> Self {
        self.container["livenessProbe"] = json!({"exec": {"command": argv}, "periodSeconds": period_seconds, "failureThreshold": 1});
        self
    }

    /// Sets any field of the main container (`"workingDir"`, `json!("/tmp")`).
    pub fn container_field(mut self, field: &str, value: Value) -> Self {
        self.container[field] = value;
        self
    }

    /// The pod as JSON.
    pub fn to_json(&self) -> Value {
        let mut pod = self.pod.clone();
        pod["spec"]["containers"] = json!([self.container.clone()]);
        pod
    }

    /// The typed pod.
    pub fn build(&self) -> Pod {
        // Invariant: every builder method writes valid Pod fields.
        serde_json::from_value(self.to_json()).expect("the pod fixture is a valid Pod")
    }
}

fn sleep_handler(duration: Duration) -> Value {
    if duration.subsec_millis() == 0 {
        json!({"sleep": {"seconds": duration.as_secs()}})
    } else {
        json!({"exec": {"command": ["sleep", format!("{:.3}", duration.as_secs_f64())]}})
    }
}

/// A ClusterIP Service selecting `app=NAME`, port 80 → the pods' `http` port.
pub fn service(name: &str) -> ServiceBuilder {
    ServiceBuilder {
        service: json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]},
        }),
    }
}

/// A Service under construction.
#[derive(Clone, Debug)]
pub struct ServiceBuilder {
    service: Value,
}

impl ServiceBuilder {
    /// Replaces the selector with `key=value`.
    pub fn selector(mut self, key: &str, value: &str) -> Self {
        self.service["spec"]["selector"] = json!({ key: value });
        self
    }

    /// The service port and its target (a number as text, or a port name).
    pub fn port(mut self, port: u16, target: &str) -> Self {
        let target = target
            .parse::<u16>()
            .map(|n| json!(n))
            .unwrap_or_else(|_| json!(target));
        self.service["spec"]["ports"] =
            json!([{"name": "http", "port": port, "targetPort": target, "protocol": "TCP"}]);
        self
    }

    /// The typed service.
    pub fn build(&self) -> Service {
        // Invariant: every builder method writes valid Service fields.
        serde_json::from_value(self.service.clone())
            .expect("the service fixture is a valid Service")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The builder produces the JSON a manifest would hold.
    #[test]
    fn pod_builder_sets_the_fields_it_names() {
        let pod = pod("web")
            .port(8080)
            .grace(3)
            .pre_stop_sleep(Duration::from_millis(1500))
            .label("app", "web")
            .build();
        let spec = pod.spec.unwrap();
        let container = &spec.containers[0];
        assert_eq!(container.image.as_deref(), Some("minik/web"));
        assert_eq!(container.ports.as_ref().unwrap()[0].container_port, 8080);
        assert_eq!(spec.termination_grace_period_seconds, Some(3));
        let pre_stop = container
            .lifecycle
            .as_ref()
            .unwrap()
            .pre_stop
            .as_ref()
            .unwrap();
        assert_eq!(
            pre_stop.exec.as_ref().unwrap().command.as_ref().unwrap(),
            &vec!["sleep".to_string(), "1.500".to_string()]
        );
        assert_eq!(pod.metadata.labels.unwrap()["app"], "web");
    }

    /// Whole-second preStop sleeps use the `sleep` action.
    #[test]
    fn whole_second_sleeps_use_the_sleep_action() {
        let pod = pod("web").pre_stop_sleep(Duration::from_secs(2)).build();
        let container = &pod.spec.unwrap().containers[0];
        assert_eq!(
            container
                .lifecycle
                .as_ref()
                .unwrap()
                .pre_stop
                .as_ref()
                .unwrap()
                .sleep
                .as_ref()
                .unwrap()
                .seconds,
            2
        );
    }
}
