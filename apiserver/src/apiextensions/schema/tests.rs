//! Unit tests of the schema steps: validation, defaulting, pruning, CEL rules and the checks of a
//! schema itself, each a pure function over JSON.

use serde_json::{json, Value};

use super::*;

fn schema(value: Value) -> Schema {
    serde_json::from_value(value).expect("a JSONSchemaProps")
}

/// A CronTab-like schema with every kind of constraint minik checks.
fn crontab() -> Schema {
    schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["cronSpec"], "properties": {
            "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
            "image": {"type": "string", "maxLength": 5, "minLength": 1},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
            "port": {"x-kubernetes-int-or-string": true},
            "startAt": {"type": "string", "format": "date-time"},
            "note": {"type": "string", "nullable": true},
            "ports": {"type": "array", "maxItems": 2, "items": {"type": "object",
                "required": ["name"], "properties": {"name": {"type": "string"},
                "protocol": {"type": "string", "default": "TCP"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
            "limits": {"type": "object", "default": {}, "properties": {
                "cpu": {"type": "string", "default": "1"}}},
        }},
        "status": {"type": "object", "properties": {"ready": {"type": "integer"}}},
    }}))
}

fn messages(errors: &[crate::apiextensions::field::FieldError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn validation_errors_carry_upstream_paths_and_words() {
    let object = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "x"},
        "spec": {"cronSpec": "nope", "image": "too-long", "replicas": 11, "mode": "odd",
                 "port": true, "startAt": "yesterday", "note": null,
                 "ports": [{"protocol": "UDP"}, {"name": "b"}, {"name": "c"}],
                 "labels": {"a": 1}}});
    let found = messages(&validate::validate(&crontab(), &object, ""));
    let expected = [
        r#"spec.cronSpec: Invalid value: "nope": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#,
        r#"spec.image: Too long: may not be more than 5 bytes"#,
        r#"spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer""#,
        r#"spec.mode: Unsupported value: "odd": supported values: "fast", "slow""#,
        r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#,
        r#"spec.ports[0].name: Required value"#,
        r#"spec.ports: Too many: 3: must have at most 2 items"#,
        r#"spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"#,
        r#"spec.startAt: Invalid value: "yesterday": spec.startAt in body must be of type date-time: "yesterday""#,
    ];
    for line in expected {
        assert!(
            found.contains(&line.to_string()),
            "missing {line}\nin {found:#?}"
        );
    }
    assert_eq!(found.len(), expected.len(), "{found:#?}");
    let missing = messages(&validate::validate(&crontab(), &json!({"spec": {}}), ""));
    assert_eq!(missing, ["spec.cronSpec: Required value"]);
}

#[test]
fn valid_objects_pass_and_whole_floats_count_as_integers() {
    let object = json!({"spec": {"cronSpec": "*/5 * * * *", "replicas": 3.0, "port": "http",
        "startAt": "2026-01-02T03:04:05Z", "note": null, "labels": {"a": "b"}}});
    assert!(validate::validate(&crontab(), &object, "").is_empty());
    let port = json!({"spec": {"cronSpec": "* * * * *", "port": 8080}});
    assert!(validate::validate(&crontab(), &port, "").is_empty());
}

#[test]
fn defaults_fill_missing_fields_top_down_and_replace_disallowed_nulls() {
    let mut object = json!({"metadata": {"name": "x"},
        "spec": {"replicas": null, "note": null, "ports": [{"name": "a"}]}});
    defaults::apply(&crontab(), &mut object);
    assert_eq!(
        object["spec"],
        json!({"replicas": 1, "mode": "slow", "note": null, "limits": {"cpu": "1"},
               "ports": [{"name": "a", "protocol": "TCP"}]})
    );
    assert_eq!(
        object["metadata"],
        json!({"name": "x"}),
        "metadata untouched"
    );
    let mut given = json!({"spec": {"replicas": 4, "mode": "fast"}});
    defaults::apply(&crontab(), &mut given);
    assert_eq!(
        (
            given["spec"]["replicas"].clone(),
            given["spec"]["mode"].clone()
        ),
        (json!(4), json!("fast"))
    );
}

#[test]
fn pruning_drops_unknown_fields_and_keeps_what_the_schema_allows() {
    let mut object = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "x", "bogus": 1},
        "spec": {"cronSpec": "* * * * *", "unknown": 1,
            "ports": [{"name": "a", "colour": "red"}],
            "labels": {"any": "key"},
            "extra": {"anything": {"goes": true}},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"x": "y", "z": 1}, "other": 2}},
        "topLevel": true});
    let mut pruned = prune::prune(&crontab(), &mut object);
    pruned.sort();
    let expected = [
        "metadata.bogus",
        "spec.ports[0].colour",
        "spec.template.other",
        "spec.template.spec.z",
        "spec.unknown",
        "topLevel",
    ];
    assert_eq!(pruned, expected);
    assert_eq!(object["metadata"], json!({"name": "x"}));
    assert_eq!(object["spec"]["extra"], json!({"anything": {"goes": true}}));
    assert_eq!(object["spec"]["labels"], json!({"any": "key"}));
    assert_eq!(
        object["spec"]["template"],
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "y"}})
    );
    assert!(object.get("topLevel").is_none());
}

fn with_rules() -> Schema {
    schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"},
            {"rule": "self.replicas >= 0", "messageExpression": "'replicas is ' + string(self.replicas)"},
            {"rule": "self.name == oldSelf.name", "message": "name is immutable", "fieldPath": ".name"},
            {"rule": "!has(self.forbidden)", "reason": "FieldValueForbidden", "message": "no"},
        ],
        "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
                       "name": {"type": "string"}, "forbidden": {"type": "string"}}}}}),
    )
}

#[test]
fn cel_rules_check_self_and_transition_rules_check_old_self_on_update() {
    let ok = json!({"spec": {"replicas": 2, "maxReplicas": 3, "name": "a"}});
    assert!(cel::check(&with_rules(), &ok, None).is_empty());
    let bad = json!({"spec": {"replicas": -4, "maxReplicas": -5, "name": "b", "forbidden": "x"}});
    assert_eq!(
        messages(&cel::check(&with_rules(), &bad, None)),
        [
            r#"spec: Invalid value: "object": replicas must not exceed maxReplicas"#,
            r#"spec: Invalid value: "object": replicas is -4"#,
            r#"spec: Forbidden: no"#,
        ]
    );
    let renamed = messages(&cel::check(
        &with_rules(),
        &ok,
        Some(&json!({"spec": {"name": "z"}})),
    ));
    assert_eq!(
        renamed,
        [r#"spec.name: Invalid value: "object": name is immutable"#]
    );
}

#[test]
fn a_rule_that_cannot_run_is_an_error_not_a_pass() {
    let broken = schema(json!({"type": "object", "x-kubernetes-validations": [
        {"rule": "self.missing.deeper == 1"}]}));
    let errors = cel::check(&broken, &json!({"a": 1}), None);
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].detail.contains("error evaluating rule"),
        "{}",
        errors[0]
    );
}

#[test]
fn schemas_are_checked_when_the_crd_is_written() {
    let bad = schema(json!({"type": "object", "properties": {
        "a": {"properties": {}},
        "b": {"type": "str"},
        "c": {"type": "string", "pattern": "("},
        "d": {"type": "array"},
        "e": {"type": "integer", "default": "one"},
        "f": {"type": "object", "x-kubernetes-validations": [{"rule": "self.x ==="}]},
        "g": {"x-kubernetes-int-or-string": true},
        "h": {"x-kubernetes-preserve-unknown-fields": true},
    }}));
    let path = "spec.versions[0].schema.openAPIV3Schema";
    let found = messages(&structural::check(&bad, path));
    let fields: Vec<&str> = found
        .iter()
        .map(|m| m.split(": ").next().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            format!("{path}.properties[a].type"),
            format!("{path}.properties[b].type"),
            format!("{path}.properties[c].pattern"),
            format!("{path}.properties[d].items"),
            format!("{path}.properties[e].default"),
            format!("{path}.properties[f].x-kubernetes-validations[0].rule"),
        ]
    );
    assert!(found[0].ends_with("Required value: must not be empty for specified object fields"));
    let not_object = schema(json!({"type": "string"}));
    assert_eq!(structural::check(&not_object, path).len(), 1);
}
