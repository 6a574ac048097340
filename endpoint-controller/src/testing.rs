//! Test fixtures: builders for the Services and pods the endpoints controller's tests use, and
//! filled stores.
//!
//! Kubernetes counterpart: the `newPod`/`addPods` and `newService` helpers at the top of
//! `pkg/controller/endpoint/endpoints_controller_test.go`.

use std::collections::BTreeMap;

use minik_api::core::{
    Container, ContainerPort, Pod, PodCondition, PodSpec, PodStatus, Service, ServicePort,
    ServiceSpec,
};
use minik_api::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use minik_api::meta::ObjectMeta;
use minik_client::store::store;
use minik_client::{Event, Store};

/// A store that has listed `objects`, as an informer's after its first list.
pub fn filled<K: Clone + minik_api::k8s_openapi::Metadata<Ty = ObjectMeta>>(
    objects: Vec<K>,
) -> Store<K> {
    let (reader, mut writer) = store();
    writer.apply_watcher_event(&Event::Restarted(objects));
    reader
}

/// A Service `name` in `default` selecting `app=<name>`, with one port 80 → targetPort 8080.
pub fn service(name: &str) -> ServiceBuilder {
    ServiceBuilder(Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("svc-uid-{name}")),
            labels: Some(BTreeMap::from([("tier".into(), "frontend".into())])),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(BTreeMap::from([("app".into(), name.into())])),
            cluster_ip: Some("127.96.0.10".into()),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: 80,
                target_port: Some(IntOrString::Int(8080)),
                protocol: Some("TCP".into()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}

/// A Service under construction.
pub struct ServiceBuilder(Service);

impl ServiceBuilder {
    fn spec(&mut self) -> &mut ServiceSpec {
        self.0.spec.get_or_insert_with(ServiceSpec::default)
    }

    /// Replaces the selector (`None`: a Service without selector).
    pub fn selector(mut self, selector: Option<&[(&str, &str)]>) -> Self {
        self.spec().selector = selector.map(|pairs| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        });
        self
    }

    /// Replaces the ports with `(name, port, targetPort)` triples.
    pub fn ports(mut self, ports: &[(&str, i32, IntOrString)]) -> Self {
        self.spec().ports = Some(
            ports
                .iter()
                .map(|(name, port, target)| ServicePort {
                    name: Some(name.to_string()),
                    port: *port,
                    target_port: Some(target.clone()),
                    protocol: Some("TCP".into()),
                    ..ServicePort::default()
                })
                .collect(),
        );
        self
    }

    /// Sets `publishNotReadyAddresses`.
    pub fn publish_not_ready(mut self) -> Self {
        self.spec().publish_not_ready_addresses = Some(true);
        self
    }

    /// Makes the Service headless with no ports.
    pub fn headless_without_ports(mut self) -> Self {
        self.spec().cluster_ip = Some("None".into());
        self.spec().ports = None;
        self
    }

    /// The Service.
    pub fn build(self) -> Service {
        self.0
    }
}

/// A running, ready pod `name` in `default` labelled `app=<app>`, with IP `ip` on `node-1`, one
/// container port 8080 named `http`.
pub fn pod(name: &str, app: &str, ip: &str) -> PodBuilder {
    let container = Container {
        name: "web".into(),
        ports: Some(vec![ContainerPort {
            name: Some("http".into()),
            container_port: 8080,
            protocol: Some("TCP".into()),
            ..ContainerPort::default()
        }]),
        ..Container::default()
    };
    PodBuilder(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            labels: Some(BTreeMap::from([("app".into(), app.into())])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![container],
            node_name: Some("node-1".into()),
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            pod_ip: Some(ip.into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        }),
    })
}

/// A pod under construction.
pub struct PodBuilder(Pod);

impl PodBuilder {
    /// Sets the Ready condition to False.
    pub fn not_ready(mut self) -> Self {
        for condition in self
            .0
            .status
            .iter_mut()
            .flat_map(|s| s.conditions.iter_mut().flatten())
        {
            condition.status = "False".into();
        }
        self
    }

    /// Marks the pod as being deleted.
    pub fn deleting(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(minik_api::now());
        self
    }

    /// Sets the phase.
    pub fn phase(mut self, phase: &str) -> Self {
        self.0.status.get_or_insert_with(PodStatus::default).phase = Some(phase.into());
        self
    }

    /// Moves the pod to another namespace.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.into());
        self
    }

    /// Replaces the first container's ports with `(name, containerPort)` pairs.
    pub fn container_ports(mut self, ports: &[(&str, i32)]) -> Self {
        let spec = self.0.spec.get_or_insert_with(PodSpec::default);
        spec.containers[0].ports = Some(
            ports
                .iter()
                .map(|(name, port)| ContainerPort {
                    name: Some(name.to_string()),
                    container_port: *port,
                    ..ContainerPort::default()
                })
                .collect(),
        );
        self
    }

    /// Sets `spec.hostname` and `spec.subdomain`.
    pub fn hostname(mut self, hostname: &str, subdomain: &str) -> Self {
        let spec = self.0.spec.get_or_insert_with(PodSpec::default);
        spec.hostname = Some(hostname.into());
        spec.subdomain = Some(subdomain.into());
        self
    }

    /// Removes the pod IP (not yet started).
    pub fn no_ip(mut self) -> Self {
        self.0.status.get_or_insert_with(PodStatus::default).pod_ip = None;
        self
    }

    /// The pod.
    pub fn build(self) -> Pod {
        self.0
    }
}
