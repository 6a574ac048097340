//! The operations of one group version's document: the REST paths of each kind and their parameters.
//!
//! Kubernetes counterpart: the paths `k8s.io/apiserver/pkg/endpoints/installer.go` registers per
//! resource (list, create, deletecollection on the collection; read, replace, patch, delete on an
//! object; the `status` subresource), each tagged with `x-kubernetes-action` and
//! `x-kubernetes-group-version-kind`, and named `{verb}{Group}{Version}[Namespaced]{Kind}`.
//! kubectl reads them to decide whether the server validates fields (`fieldValidation`).
//!
//! minik simplifies: no deprecated `watch/` paths, no cluster-wide list paths for namespaced kinds
//! beyond the plain one, and one JSON media type per operation.

use serde_json::{json, Map, Value};

use super::schemas::Flavour;

/// What the path builder needs to know about a kind.
pub struct PathKind<'a> {
    /// `apps/v1` or `v1`.
    pub api_version: &'a str,
    pub kind: &'a str,
    pub plural: &'a str,
    pub namespaced: bool,
    /// The definition the operations read and write: `io.k8s.api.apps.v1.Deployment`.
    pub definition: String,
    /// Whether the kind has a `status` subresource.
    pub status: bool,
    /// Whether `DELETE` on the collection is served.
    pub delete_collection: bool,
}

/// `rbac.authorization.k8s.io` → `RbacAuthorization`, `` → `Core`, as upstream's operation ids.
fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    group
        .trim_end_matches(".k8s.io")
        .split(['.', '-'])
        .map(capitalize)
        .collect()
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

fn parameter(flavour: Flavour, name: &str, location: &str, description: &str) -> Value {
    let mut parameter = json!({"name": name, "in": location, "description": description});
    match flavour {
        Flavour::V2 => {
            parameter["type"] = json!(if name == "limit" || name == "timeoutSeconds" {
                "integer"
            } else {
                "string"
            })
        }
        Flavour::V3 => {
            parameter["schema"] = json!({"type": if name == "limit" || name == "timeoutSeconds" { "integer" } else { "string" }, "uniqueItems": true})
        }
    }
    if location == "path" {
        parameter["required"] = json!(true);
    }
    parameter
}

fn query(flavour: Flavour, names: &[(&str, &str)]) -> Vec<Value> {
    names
        .iter()
        .map(|(name, description)| parameter(flavour, name, "query", description))
        .collect()
}

const WRITE_PARAMETERS: &[(&str, &str)] = &[
    ("dryRun", "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed"),
    ("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."),
    ("fieldValidation", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn (the default) - Strict"),
];

const LIST_PARAMETERS: &[(&str, &str)] = &[
    ("allowWatchBookmarks", "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."),
    ("continue", "The continue option should be set when retrieving more results from the server."),
    ("fieldSelector", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
    ("labelSelector", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
    ("limit", "limit is a maximum number of responses to return for a list call."),
    ("resourceVersion", "resourceVersion sets a constraint on what resource versions a request may be served from."),
    ("sendInitialEvents", "`sendInitialEvents=true` may be set together with `watch=true`: the stream begins with synthetic events for the current state."),
    ("timeoutSeconds", "Timeout for the list/watch call."),
    ("watch", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."),
];

fn reference(flavour: Flavour, definition: &str) -> Value {
    json!({"$ref": format!("{}{definition}", flavour.ref_prefix())})
}

fn body(flavour: Flavour, definition: &str, patch: bool) -> (Option<Value>, Option<Value>) {
    // Upstream also lists application/strategic-merge-patch+json. minik leaves it out on purpose:
    // k8s-openapi's schemas carry no `x-kubernetes-patch-merge-key`, and kubectl apply builds its
    // strategic patch from the v3 schema when the patch operation lists that type
    // (`gvkSupportsPatchOpenAPIV3`), treating every list as atomic; without it kubectl uses its
    // compiled-in struct tags, which have the merge keys. The server still accepts the type.
    let types: &[&str] = if patch {
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]
    } else {
        &["application/json"]
    };
    let target = if patch {
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
    } else {
        definition
    };
    match flavour {
        Flavour::V2 => (
            Some(
                json!({"name": "body", "in": "body", "required": true, "schema": reference(flavour, target)}),
            ),
            None,
        ),
        Flavour::V3 => {
            let content: Map<String, Value> = types
                .iter()
                .map(|t| (t.to_string(), json!({"schema": reference(flavour, target)})))
                .collect();
            (None, Some(json!({"content": content, "required": true})))
        }
    }
}

fn responses(flavour: Flavour, definition: &str, codes: &[&str]) -> Value {
    let mut responses = Map::new();
    for code in codes {
        let response = match flavour {
            Flavour::V2 => json!({"description": "OK", "schema": reference(flavour, definition)}),
            Flavour::V3 => {
                json!({"description": "OK", "content": {"application/json": {"schema": reference(flavour, definition)}}})
            }
        };
        responses.insert(code.to_string(), response);
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    Value::Object(responses)
}

struct Operation<'a> {
    verb: &'a str,
    action: &'a str,
    suffix: &'a str,
    parameters: Vec<Value>,
    body: Option<&'a str>,
    patch: bool,
    answer: &'a str,
    codes: &'a [&'a str],
}

fn operation(kind: &PathKind, flavour: Flavour, op: Operation) -> Value {
    let (group, version) = kind
        .api_version
        .split_once('/')
        .unwrap_or(("", kind.api_version));
    let scope = if kind.namespaced { "Namespaced" } else { "" };
    let id = format!(
        "{}{}{}{scope}{}{}",
        op.verb,
        group_camel(group),
        capitalize(version),
        kind.kind,
        op.suffix
    );
    let mut parameters = op.parameters;
    let mut value = json!({
        "description": format!("{} {}{}", op.action, kind.kind, op.suffix),
        "operationId": id,
        "tags": [format!("{}{}", group_camel(group).to_lowercase(), capitalize(version))],
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": super::schemas::gvk(kind.api_version, kind.kind),
        "responses": responses(flavour, op.answer, op.codes),
    });
    if let Some(definition) = op.body {
        let (parameter, request_body) = body(flavour, definition, op.patch);
        parameters.extend(parameter);
        if let Some(request_body) = request_body {
            value["requestBody"] = request_body;
        }
    }
    value["parameters"] = json!(parameters);
    value
}

/// The paths of one kind: its collection, its objects, and its `status` subresource.
pub fn kind_paths(kind: &PathKind, flavour: Flavour, paths: &mut Map<String, Value>) {
    let base = match kind.api_version {
        "v1" => "/api/v1".to_string(),
        other => format!("/apis/{other}"),
    };
    let collection = if kind.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", kind.plural)
    } else {
        format!("{base}/{}", kind.plural)
    };
    let list = format!("{}List", kind.definition);
    let object = &kind.definition;
    let status = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
    let write = || query(flavour, WRITE_PARAMETERS);
    let mut shared = vec![parameter(
        flavour,
        "pretty",
        "query",
        "If 'true', then the output is pretty printed.",
    )];
    if kind.namespaced {
        shared.push(parameter(
            flavour,
            "namespace",
            "path",
            "object name and auth scope, such as for teams and projects",
        ));
    }
    let mut collection_ops = json!({
        "parameters": shared,
        "get": operation(kind, flavour, Operation { verb: "list", action: "list", suffix: "", parameters: query(flavour, LIST_PARAMETERS), body: None, patch: false, answer: &list, codes: &["200"] }),
        "post": operation(kind, flavour, Operation { verb: "create", action: "post", suffix: "", parameters: write(), body: Some(object), patch: false, answer: object, codes: &["200", "201", "202"] }),
    });
    if kind.delete_collection {
        collection_ops["delete"] = operation(
            kind,
            flavour,
            Operation {
                verb: "deleteCollection",
                action: "deletecollection",
                suffix: "",
                parameters: query(flavour, LIST_PARAMETERS),
                body: None,
                patch: false,
                answer: status,
                codes: &["200"],
            },
        );
    }
    paths.insert(collection.clone(), collection_ops);
    let mut item_shared = shared.clone();
    item_shared.insert(
        0,
        parameter(
            flavour,
            "name",
            "path",
            &format!("name of the {}", kind.kind),
        ),
    );
    paths.insert(format!("{collection}/{{name}}"), json!({
        "parameters": item_shared,
        "get": operation(kind, flavour, Operation { verb: "read", action: "get", suffix: "", parameters: vec![], body: None, patch: false, answer: object, codes: &["200"] }),
        "put": operation(kind, flavour, Operation { verb: "replace", action: "put", suffix: "", parameters: write(), body: Some(object), patch: false, answer: object, codes: &["200", "201"] }),
        "patch": operation(kind, flavour, Operation { verb: "patch", action: "patch", suffix: "", parameters: write(), body: Some(object), patch: true, answer: object, codes: &["200", "201"] }),
        "delete": operation(kind, flavour, Operation { verb: "delete", action: "delete", suffix: "", parameters: query(flavour, &[("gracePeriodSeconds", "The duration in seconds before the object should be deleted."), ("propagationPolicy", "Whether and how garbage collection will be performed.")]), body: None, patch: false, answer: status, codes: &["200", "202"] }),
    }));
    if kind.status {
        paths.insert(format!("{collection}/{{name}}/status"), json!({
            "parameters": item_shared,
            "get": operation(kind, flavour, Operation { verb: "read", action: "get", suffix: "Status", parameters: vec![], body: None, patch: false, answer: object, codes: &["200"] }),
            "put": operation(kind, flavour, Operation { verb: "replace", action: "put", suffix: "Status", parameters: write(), body: Some(object), patch: false, answer: object, codes: &["200", "201"] }),
            "patch": operation(kind, flavour, Operation { verb: "patch", action: "patch", suffix: "Status", parameters: write(), body: Some(object), patch: true, answer: object, codes: &["200", "201"] }),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> PathKind<'static> {
        PathKind {
            api_version: "apps/v1",
            kind: "Deployment",
            plural: "deployments",
            namespaced: true,
            definition: "io.k8s.api.apps.v1.Deployment".into(),
            status: true,
            delete_collection: true,
        }
    }

    #[test]
    fn operations_are_named_and_tagged_as_upstream() {
        let mut paths = Map::new();
        kind_paths(&deployment(), Flavour::V3, &mut paths);
        let item = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
        assert_eq!(
            item["patch"]["operationId"],
            "patchAppsV1NamespacedDeployment"
        );
        assert_eq!(item["patch"]["x-kubernetes-action"], "patch");
        assert_eq!(
            item["patch"]["x-kubernetes-group-version-kind"],
            json!({"group": "apps", "version": "v1", "kind": "Deployment"})
        );
        let names: Vec<&str> = item["patch"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert!(names.contains(&"fieldValidation"), "{names:?}");
        assert!(
            paths.contains_key("/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status")
        );
        assert_eq!(
            group_camel("rbac.authorization.k8s.io"),
            "RbacAuthorization"
        );
        assert_eq!(group_camel(""), "Core");
    }

    #[test]
    fn swagger_two_puts_the_body_among_the_parameters() {
        let mut paths = Map::new();
        kind_paths(&deployment(), Flavour::V2, &mut paths);
        let create = &paths["/apis/apps/v1/namespaces/{namespace}/deployments"]["post"];
        let body = create["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["in"] == "body")
            .unwrap();
        assert_eq!(
            body["schema"]["$ref"],
            "#/definitions/io.k8s.api.apps.v1.Deployment"
        );
        assert!(create.get("requestBody").is_none());
    }
}
