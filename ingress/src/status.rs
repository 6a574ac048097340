//! What the controller writes back: its IngressClass, and each Ingress's load balancer address.
//!
//! Kubernetes counterpart: ingress-nginx's status sync (`internal/ingress/status/status.go`:
//! `status.loadBalancer.ingress` of every Ingress of its class set to the controller's address)
//! and the IngressClass its Helm chart installs (`controller.ingressClassResource.default` adds
//! `ingressclass.kubernetes.io/is-default-class: "true"`). minik's address is 127.0.0.1 and the
//! port it listens on, carried in `ports` since it is not 80.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    Ingress, IngressClass, IngressClassSpec, IngressLoadBalancerIngress, IngressPortStatus,
};
use minik_api::meta::ObjectMeta;
use minik_api::networking::{is_default_class, DEFAULT_CLASS_ANNOTATION};
use minik_client::{Api, Client, Patch};
use serde_json::json;
use tracing::{info, warn};

/// What this controller calls itself in `spec.controller`.
pub const CONTROLLER_NAME: &str = "minik.io/ingress-controller";

/// Creates the IngressClass `name` (default, for [`CONTROLLER_NAME`]) if it does not exist.
pub async fn ensure_class(client: &Client, name: &str) -> minik_client::Result<IngressClass> {
    let api = Api::<IngressClass>::all(client.clone());
    if let Some(existing) = api.get_opt(name).await? {
        return Ok(existing);
    }
    let class = IngressClass {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            annotations: Some(BTreeMap::from([(
                DEFAULT_CLASS_ANNOTATION.to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(IngressClassSpec {
            controller: Some(CONTROLLER_NAME.to_string()),
            parameters: None,
        }),
    };
    match api.create(&class).await {
        Ok(created) => {
            info!(class = name, "created the IngressClass, marked default");
            Ok(created)
        }
        // Another instance created it first.
        Err(error) if error.is_already_exists() => api.get(name).await,
        Err(error) => Err(error),
    }
}

/// Whether an Ingress is this controller's: its class, or no class while ours is the default
/// (what the DefaultIngressClass admission plugin would have filled in).
pub fn is_ours(ingress: &Ingress, class: &IngressClass) -> bool {
    let ours = class.metadata.name.as_deref().unwrap_or("");
    match ingress
        .spec
        .as_ref()
        .and_then(|s| s.ingress_class_name.as_deref())
    {
        Some(name) => name == ours,
        None => is_default_class(class),
    }
}

/// The `status.loadBalancer.ingress` the controller reports.
pub fn load_balancer(port: u16) -> Vec<IngressLoadBalancerIngress> {
    vec![IngressLoadBalancerIngress {
        ip: Some("127.0.0.1".into()),
        hostname: None,
        ports: Some(vec![IngressPortStatus {
            port: i32::from(port),
            protocol: "TCP".into(),
            error: None,
        }]),
    }]
}

/// Writes the address into every given Ingress whose status lacks it.
pub async fn sync_statuses(client: &Client, ingresses: &[std::sync::Arc<Ingress>], port: u16) {
    let wanted = load_balancer(port);
    for ingress in ingresses {
        let current = ingress
            .status
            .as_ref()
            .and_then(|s| s.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.clone());
        if current.as_ref() == Some(&wanted) {
            continue;
        }
        let (Some(namespace), Some(name)) = (&ingress.metadata.namespace, &ingress.metadata.name)
        else {
            continue;
        };
        let api = Api::<Ingress>::namespaced(client.clone(), namespace);
        let patch = Patch::Merge(json!({"status": {"loadBalancer": {"ingress": wanted}}}));
        match api.patch_status(name, &patch).await {
            Ok(_) => {
                info!(ingress = %format!("{namespace}/{name}"), port, "reported the ingress address")
            }
            Err(error) => warn!(ingress = %name, %error, "could not write the ingress status"),
        }
    }
}
