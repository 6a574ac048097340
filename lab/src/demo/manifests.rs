//! The objects the demo applies: `minik/web` pods and a Service in front of them.
//!
//! Kubernetes counterpart: the seeds' `pod.yaml` and `service.yaml`. The `minik/web` program
//! answers every request with its pod name and reads its behaviour from the environment:
//! `MINIK_ON_SIGTERM` (`exit`, `drain:MS`, `ignore`) and `MINIK_WEB_DELAY_MS`.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use minik_api::core::{Pod, Service};
use serde_json::{json, Value};

/// The port every demo pod listens on and every demo Service exposes.
pub const PORT: u16 = 8080;

/// How a demo pod is built.
pub struct WebPod<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// The `app` label the Service selects.
    pub app: &'a str,
    /// What the app does on SIGTERM: `exit`, `drain:MS` or `ignore`.
    pub on_sigterm: String,
    /// A postStart hook that sleeps this long.
    pub post_start: Option<Duration>,
    /// A preStop hook that sleeps this long.
    pub pre_stop: Option<Duration>,
    /// `terminationGracePeriodSeconds`.
    pub grace_seconds: i64,
}

impl WebPod<'_> {
    /// The Pod object.
    pub fn build(&self) -> Pod {
        serde_json::from_value(self.to_json()).expect("the demo's pod manifest is a valid Pod")
    }

    /// The Pod object as JSON (a Deployment's template takes its `spec`).
    fn to_json(&self) -> Value {
        let mut lifecycle = serde_json::Map::new();
        if let Some(post_start) = self.post_start {
            lifecycle.insert("postStart".into(), sleep_handler(post_start));
        }
        if let Some(pre_stop) = self.pre_stop {
            lifecycle.insert("preStop".into(), sleep_handler(pre_stop));
        }
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name, "labels": {"app": self.app}},
            "spec": {
                "terminationGracePeriodSeconds": self.grace_seconds,
                "containers": [{
                    "name": "web",
                    "image": "minik/web",
                    "ports": [{"name": "http", "containerPort": PORT}],
                    "env": [{"name": "MINIK_ON_SIGTERM", "value": self.on_sigterm}],
                    "lifecycle": Value::Object(lifecycle),
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": PORT}, "periodSeconds": 1},
                }],
            },
        })
    }
}

/// A Deployment of `minik/web` pods: `template` gives the pod spec (its `name` is unused), the
/// labels select and label the pods, `image` is what a rolling update changes.
pub fn deployment(
    name: &str,
    labels: &[(&str, &str)],
    replicas: usize,
    image: &str,
    template: &WebPod<'_>,
) -> Deployment {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(key, value)| (key.to_string(), json!(value)))
        .collect();
    let mut spec = template.to_json()["spec"].clone();
    spec["containers"][0]["image"] = json!(image);
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    });
    serde_json::from_value(deployment).expect("the demo's deployment manifest is valid")
}

/// A `sleep` handler for whole seconds (the API's unit), an `exec` of `sleep` otherwise.
fn sleep_handler(duration: Duration) -> Value {
    if duration.subsec_nanos() == 0 {
        json!({"sleep": {"seconds": duration.as_secs()}})
    } else {
        json!({"exec": {"command": ["sleep", format!("{:.3}", duration.as_secs_f64())]}})
    }
}

/// A ClusterIP Service selecting `app`, port `PORT` to the pods' `http` port.
pub fn service(name: &str, app: &str) -> Service {
    service_of_type(name, &[("app", app)], "ClusterIP")
}

/// A Service of `type_` (`ClusterIP`, `LoadBalancer`) selecting `selector`, port `PORT`.
pub fn service_of_type(name: &str, selector: &[(&str, &str)], type_: &str) -> Service {
    let selector: serde_json::Map<String, Value> = selector
        .iter()
        .map(|(key, value)| (key.to_string(), json!(value)))
        .collect();
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"type": type_, "selector": selector, "ports": [{"name": "http", "port": PORT, "targetPort": "http"}]},
    });
    serde_json::from_value(service).expect("the demo's service manifest is a valid Service")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_use_the_sleep_action_for_whole_seconds_and_exec_otherwise() {
        assert_eq!(
            sleep_handler(Duration::from_secs(3)),
            json!({"sleep": {"seconds": 3}})
        );
        assert_eq!(
            sleep_handler(Duration::from_millis(1500)),
            json!({"exec": {"command": ["sleep", "1.500"]}})
        );
    }

    #[test]
    fn web_pods_carry_their_hooks_and_shutdown_behaviour() {
        let pod = WebPod {
            name: "web-1",
            app: "web",
            on_sigterm: "drain:1000".into(),
            post_start: None,
            pre_stop: Some(Duration::from_secs(3)),
            grace_seconds: 30,
        }
        .build();
        let container = &pod.spec.as_ref().unwrap().containers[0];
        assert!(container.lifecycle.as_ref().unwrap().pre_stop.is_some());
        assert!(container.lifecycle.as_ref().unwrap().post_start.is_none());
        assert_eq!(
            container.env.as_ref().unwrap()[0].value.as_deref(),
            Some("drain:1000")
        );
    }
}
