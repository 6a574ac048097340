//! The schema index: every built-in kind's OpenAPI definition, generated from k8s-openapi's types.
//!
//! Kubernetes counterpart: the definitions `hack/update-openapi-spec.sh` generates from the Go types
//! (`pkg/generated/openapi`), named by Go package (`io.k8s.api.core.v1.Pod`), with
//! `x-kubernetes-group-version-kind` on each top-level kind so clients find a kind's schema.
//!
//! minik does not write schemas by hand: k8s-openapi's `schemars` feature carries upstream's
//! definitions (descriptions, types, formats, required fields) and a `schemars` generator collects
//! every definition a kind reaches. minik adds the GVK extensions and the `…List` definitions
//! (k8s-openapi has no schema for its generic `List<T>`), built from the kind's own name.

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::{api, apiextensions_apiserver, kube_aggregator, Resource};
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

/// One built-in kind: its group version, kind, and how to generate its definition.
#[derive(Clone, Copy)]
pub struct KindSchema {
    /// `v1`, `apps/v1`.
    pub api_version: &'static str,
    /// `Pod`.
    pub kind: &'static str,
    /// The definition's name: `io.k8s.api.core.v1.Pod`.
    pub name: fn() -> String,
    /// Adds the kind's definition (and every one it references) to a generator.
    pub add: fn(&mut SchemaGenerator),
}

fn add<T: JsonSchema>(generator: &mut SchemaGenerator) {
    generator.subschema_for::<T>();
}

fn name<T: JsonSchema>() -> String {
    T::schema_name().into_owned()
}

fn kind<T: Resource + JsonSchema>() -> KindSchema {
    KindSchema {
        api_version: T::API_VERSION,
        kind: T::KIND,
        name: name::<T>,
        add: add::<T>,
    }
}

/// Every kind minik serves (`minik_api::resource::RESOURCES`), plus events.k8s.io/v1 Events and
/// autoscaling/v1 HorizontalPodAutoscalers, served by conversion.
pub fn built_in_kinds() -> Vec<KindSchema> {
    vec![
        kind::<api::core::v1::Pod>(),
        kind::<api::core::v1::Service>(),
        kind::<api::core::v1::Endpoints>(),
        kind::<api::core::v1::ConfigMap>(),
        kind::<api::core::v1::Secret>(),
        kind::<api::core::v1::Event>(),
        kind::<api::core::v1::Node>(),
        kind::<api::core::v1::Namespace>(),
        kind::<api::core::v1::ServiceAccount>(),
        kind::<api::core::v1::ReplicationController>(),
        kind::<api::core::v1::PersistentVolume>(),
        kind::<api::core::v1::PersistentVolumeClaim>(),
        kind::<api::coordination::v1::Lease>(),
        kind::<api::discovery::v1::EndpointSlice>(),
        kind::<api::apps::v1::Deployment>(),
        kind::<api::apps::v1::ReplicaSet>(),
        kind::<api::apps::v1::DaemonSet>(),
        kind::<api::apps::v1::StatefulSet>(),
        kind::<api::apps::v1::ControllerRevision>(),
        kind::<api::rbac::v1::Role>(),
        kind::<api::rbac::v1::ClusterRole>(),
        kind::<api::rbac::v1::RoleBinding>(),
        kind::<api::rbac::v1::ClusterRoleBinding>(),
        kind::<api::batch::v1::Job>(),
        kind::<api::batch::v1::CronJob>(),
        kind::<api::policy::v1::PodDisruptionBudget>(),
        kind::<api::networking::v1::Ingress>(),
        kind::<api::networking::v1::IngressClass>(),
        kind::<api::storage::v1::StorageClass>(),
        kind::<kube_aggregator::pkg::apis::apiregistration::v1::APIService>(),
        kind::<apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(),
        kind::<api::autoscaling::v2::HorizontalPodAutoscaler>(),
        kind::<api::autoscaling::v1::HorizontalPodAutoscaler>(),
        kind::<api::events::v1::Event>(),
        // Admission webhooks (issue 21).
        kind::<api::admissionregistration::v1::ValidatingWebhookConfiguration>(),
        kind::<api::admissionregistration::v1::MutatingWebhookConfiguration>(),
    ]
}

/// Which document flavour: Swagger 2.0 (`#/definitions/`) or OpenAPI 3.0 (`#/components/schemas/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    V2,
    V3,
}

impl Flavour {
    /// The prefix of every `$ref`.
    pub fn ref_prefix(self) -> &'static str {
        match self {
            Flavour::V2 => "#/definitions/",
            Flavour::V3 => "#/components/schemas/",
        }
    }

    fn generator(self) -> SchemaGenerator {
        let settings = match self {
            // Swagger 2.0 keeps `description` beside `$ref`, as upstream's v2 document does.
            Flavour::V2 => SchemaSettings::draft07().with(|s| {
                s.transforms.clear();
                s.meta_schema = None;
            }),
            // OpenAPI 3.0 wraps a described `$ref` in `allOf`, as upstream's v3 documents do.
            Flavour::V3 => SchemaSettings::openapi3().with(|s| s.meta_schema = None),
        };
        SchemaGenerator::new(settings)
    }
}

/// The definitions of `kinds` and of the meta types the operations name, by definition name,
/// with GVK extensions and a `…List` definition per kind.
pub fn definitions(kinds: &[KindSchema], flavour: Flavour) -> Map<String, Value> {
    let mut generator = flavour.generator();
    for kind in kinds {
        (kind.add)(&mut generator);
    }
    add::<meta::DeleteOptions>(&mut generator);
    add::<meta::Status>(&mut generator);
    add::<meta::WatchEvent<()>>(&mut generator);
    add::<meta::Patch>(&mut generator);
    add::<meta::APIResourceList>(&mut generator);
    add::<meta::ObjectMeta>(&mut generator);
    add::<meta::ListMeta>(&mut generator);
    let mut definitions: Map<String, Value> =
        generator.take_definitions(true).into_iter().collect();
    for kind in kinds {
        let name = (kind.name)();
        if let Some(definition) = definitions.get_mut(&name) {
            annotate_kind(definition, kind.api_version, kind.kind);
        }
        let list = list_definition(&name, kind.api_version, kind.kind, flavour);
        definitions.insert(format!("{name}List"), list);
    }
    definitions
}

/// `{"group": "apps", "version": "v1", "kind": "Deployment"}`.
pub fn gvk(api_version: &str, kind: &str) -> Value {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    json!({"group": group, "version": version, "kind": kind})
}

/// Adds the GVK extension; upstream requires no `metadata` (k8s-openapi marks it required because
/// its struct field is not optional).
fn annotate_kind(definition: &mut Value, api_version: &str, kind: &str) {
    definition["x-kubernetes-group-version-kind"] = json!([gvk(api_version, kind)]);
    if let Some(required) = definition.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|field| field != "metadata");
        if required.is_empty() {
            definition.as_object_mut().map(|d| d.remove("required"));
        }
    }
}

/// `PodList`: `items` of the kind, `metadata` a ListMeta, as upstream's generated lists.
pub fn list_definition(name: &str, api_version: &str, kind_name: &str, flavour: Flavour) -> Value {
    let prefix = flavour.ref_prefix();
    let reference = |target: &str, description: &str| match flavour {
        Flavour::V2 => json!({"$ref": format!("{prefix}{target}"), "description": description}),
        Flavour::V3 => {
            json!({"allOf": [{"$ref": format!("{prefix}{target}")}], "description": description, "default": {}})
        }
    };
    json!({
        "description": format!("{kind_name}List is a list of {kind_name} objects."),
        "type": "object",
        "properties": {
            "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object.", "type": "string"},
            "kind": {"description": "Kind is a string value representing the REST resource this object represents.", "type": "string"},
            "items": {"description": format!("List of {kind_name} objects."), "type": "array",
                      "items": reference(name, "")},
            "metadata": reference("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
                "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"),
        },
        "required": ["items"],
        "x-kubernetes-group-version-kind": [gvk(api_version, &format!("{kind_name}List"))],
    })
}

/// The names of every definition `value` reaches through `$ref`s, `value` included, looked up in
/// `definitions`: a group version's document carries only what its kinds need.
pub fn reachable(
    roots: impl IntoIterator<Item = String>,
    definitions: &Map<String, Value>,
    flavour: Flavour,
) -> Map<String, Value> {
    let mut found = Map::new();
    let mut pending: Vec<String> = roots.into_iter().collect();
    while let Some(name) = pending.pop() {
        if found.contains_key(&name) {
            continue;
        }
        let Some(definition) = definitions.get(&name) else {
            continue;
        };
        collect_refs(definition, flavour.ref_prefix(), &mut pending);
        found.insert(name, definition.clone());
    }
    found
}

fn collect_refs(value: &Value, prefix: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                match (key.as_str(), inner.as_str()) {
                    ("$ref", Some(target)) => {
                        if let Some(name) = target.strip_prefix(prefix) {
                            out.push(name.to_string());
                        }
                    }
                    _ => collect_refs(inner, prefix, out),
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect_refs(item, prefix, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_api::resource::RESOURCES;

    #[test]
    fn every_served_kind_has_a_definition_with_its_gvk() {
        let kinds = built_in_kinds();
        for flavour in [Flavour::V2, Flavour::V3] {
            let definitions = definitions(&kinds, flavour);
            for info in RESOURCES {
                let kind = kinds
                    .iter()
                    .find(|k| k.api_version == info.api_version && k.kind == info.kind)
                    .unwrap_or_else(|| panic!("no schema for {} {}", info.api_version, info.kind));
                let definition = &definitions[&(kind.name)()];
                assert_eq!(
                    definition["x-kubernetes-group-version-kind"][0],
                    gvk(info.api_version, info.kind)
                );
                assert!(definition["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty()));
                assert!(definitions.contains_key(&format!("{}List", (kind.name)())));
            }
        }
    }

    #[test]
    fn definitions_are_named_and_referenced_as_upstream() {
        let v3 = definitions(&built_in_kinds(), Flavour::V3);
        let pod = &v3["io.k8s.api.core.v1.Pod"];
        assert_eq!(
            pod["properties"]["spec"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.PodSpec"
        );
        assert!(pod.get("required").is_none(), "metadata is not required");
        let container = &v3["io.k8s.api.core.v1.Container"];
        assert_eq!(container["required"], json!(["name"]));
        let v2 = definitions(&built_in_kinds(), Flavour::V2);
        assert_eq!(
            v2["io.k8s.api.core.v1.Pod"]["properties"]["spec"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.PodSpec"
        );
        let deployment = reachable(
            ["io.k8s.api.apps.v1.Deployment".to_string()],
            &v3,
            Flavour::V3,
        );
        assert!(deployment.contains_key("io.k8s.api.apps.v1.DeploymentStrategy"));
        assert!(deployment.contains_key("io.k8s.api.core.v1.Container"));
        assert!(!deployment.contains_key("io.k8s.api.core.v1.Service"));
    }
}
