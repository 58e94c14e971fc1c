//! The CEL rules of a schema, on create and update, and their CRD-time checks. Messages
//! are those of `apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go`
//! (`fieldErrorForReason`, `ruleMessageOrDefault`) and, at CRD time,
//! `apis/apiextensions/validation/validation.go`.

use serde_json::{Value, json};

use super::*;
use crate::check_structural;
use crate::test_util::*;

const BASE: &str = "spec.versions[0].schema.openAPIV3Schema";

fn rules(v: Value) -> Value {
    json!(v)
}

fn run(schema: &Value, new: Value, old: Option<Value>) -> (Vec<String>, Vec<String>) {
    let out = CelRules::compile(schema).validate(&new, old.as_ref());
    (msgs(&out.causes), out.warnings)
}

#[test]
fn failed_rules_use_the_message_or_the_default() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "min": {"type": "integer"}, "max": {"type": "integer"},
    }, "x-kubernetes-validations": rules(json!([
        {"rule": "self.min <= self.max", "message": " min must not exceed max "},
        {"rule": "self.min >= 0"},
    ]))}));
    let (causes, _) = run(&s, json!({"spec": {"min": -5, "max": -7}}), None);
    assert_eq!(
        causes,
        vec![
            r#"spec: Invalid value: "object": min must not exceed max"#,
            r#"spec: Invalid value: "object": failed rule: self.min >= 0"#,
        ]
    );
    assert!(run(&s, json!({"spec": {"min": 1, "max": 2}}), None).0.is_empty());
}

#[test]
fn root_rules_report_nil_and_see_only_name_in_metadata() {
    let s = json!({"type": "object", "x-kubernetes-validations": [
        {"rule": "self.metadata.name.startsWith('a')", "message": "name must start with a"},
        {"rule": "!has(self.metadata.labels)"},
    ], "properties": {"spec": {"type": "object"}}});
    let (causes, _) = run(&s, json!({"metadata": {"name": "b", "labels": {"x": "y"}}, "spec": {}}), None);
    assert_eq!(causes, vec![r#"<nil>: Invalid value: "object": name must start with a"#]);
}

#[test]
fn message_expression_reason_and_field_path() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "replicas": {"type": "integer"},
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
    }, "x-kubernetes-validations": [
        {"rule": "self.replicas < 10", "messageExpression": "'replicas is ' + string(self.replicas)",
         "fieldPath": ".replicas", "reason": "FieldValueForbidden"},
        {"rule": "size(self.tags) < 2", "reason": "FieldValueRequired", "fieldPath": ".tags['a.b']"},
        {"rule": "false", "reason": "FieldValueDuplicate", "message": "dup"},
        {"rule": "false", "messageExpression": "''", "message": "fallback"},
    ]}));
    let (causes, _) = run(&s, json!({"spec": {"replicas": 12, "tags": {"a": "1", "b": "2"}}}), None);
    assert_eq!(
        causes,
        vec![
            "spec.replicas: Forbidden: replicas is 12",
            "spec.tags[a.b]: Required value: failed rule: size(self.tags) < 2",
            r#"spec: Duplicate value: "object""#,
            r#"spec: Invalid value: "object": fallback"#,
        ]
    );
    let c = CelRules::compile(&s).validate(&json!({"spec": {"replicas": 12, "tags": {}}}), None);
    assert_eq!(c.causes[0].reason, "FieldValueForbidden");
}

#[test]
fn transition_rules_run_on_update_where_the_old_value_correlates() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "mode": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self == oldSelf", "message": "mode is immutable"},
        ]},
        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "size": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.size >= oldSelf.size", "message": "cannot shrink"}]}},
        "atomic": {"type": "array", "items": {"type": "integer"}},
    }}));
    assert!(run(&s, json!({"spec": {"mode": "a"}}), None).0.is_empty(), "no oldSelf on create");
    let old = json!({"spec": {"mode": "a", "items": [{"name": "x", "size": 3}, {"name": "y", "size": 1}]}});
    let new = json!({"spec": {"mode": "b", "items": [{"name": "y", "size": 0}, {"name": "z", "size": 0}]}});
    let (causes, _) = run(&s, new, Some(old));
    assert_eq!(
        causes,
        vec![
            r#"spec.items[0]: Invalid value: "object": cannot shrink"#,
            r#"spec.mode: Invalid value: "string": mode is immutable"#,
        ]
    );
}

#[test]
fn optional_old_self_runs_on_create() {
    let s = spec_schema(json!({"type": "object", "properties": {"n": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "oldSelf.hasValue() || self.n == 1", "optionalOldSelf": true,
            "message": "must start at 1"}]}));
    assert_eq!(
        run(&s, json!({"spec": {"n": 2}}), None).0,
        vec![r#"spec: Invalid value: "object": must start at 1"#]
    );
    assert!(run(&s, json!({"spec": {"n": 2}}), Some(json!({"spec": {"n": 1}}))).0.is_empty());
}

#[test]
fn unchanged_values_ratchet_failures_into_warnings() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "a": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 5"}]},
        "b": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 5"}]},
    }}));
    let old = json!({"spec": {"a": 7, "b": 1}});
    let (causes, warnings) = run(&s, json!({"spec": {"a": 7, "b": 9}}), Some(old));
    assert_eq!(causes, vec![r#"spec.b: Invalid value: "integer": failed rule: self < 5"#]);
    assert_eq!(warnings, vec![r#"spec.a: Invalid value: "integer": failed rule: self < 5"#]);
}

#[test]
fn self_is_typed_by_the_schema() {
    let s = spec_schema(json!({"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": true, "x-kubernetes-validations": [
            {"rule": "string(self) != '0'"}]},
        "ratio": {"type": "number", "x-kubernetes-validations": [{"rule": "self < 1.0"}]},
        "labels": {"type": "object", "additionalProperties": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "'app' in self && self.all(k, self[k] != '')"}]},
        "list": {"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "size(self) <= 2 && self.exists(x, x == 'a')"}]},
        "opt": {"type": "object", "properties": {"x": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "!has(self.x) || self.x != ''"}]},
    }}));
    let ok = json!({"spec": {"port": "50%", "ratio": 0.5, "labels": {"app": "w"}, "list": ["a"], "opt": {}}});
    assert_eq!(run(&s, ok, None).0, Vec::<String>::new());
    let bad = json!({"spec": {"port": 0, "ratio": 2, "labels": {"x": ""}, "list": ["b", "c", "d"], "opt": {"x": ""}}});
    let (causes, _) = run(&s, bad, None);
    assert_eq!(causes.len(), 5, "{causes:#?}");
    assert!(causes[0].starts_with(r#"spec.labels: Invalid value: "object": failed rule"#), "{causes:#?}");
}

#[test]
fn evaluation_errors_are_worded_like_the_server() {
    let s = spec_schema(json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.b == 1", "message": "needs b"}]}));
    assert_eq!(
        run(&s, json!({"spec": {"a": 1}}), None).0,
        vec![r#"spec: Invalid value: "object": no such key: b evaluating rule: needs b"#]
    );
}

#[test]
fn blocking_errors_skip_the_rules() {
    assert_eq!(
        CelRules::blocking_cause(["FieldValueInvalid", "FieldValueRequired"])
            .map(|c| c.error_string())
            .as_deref(),
        Some(
            r#"<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#
        )
    );
    assert_eq!(CelRules::blocking_cause(["FieldValueForbidden", "FieldValueInvalid"]), None);
}

// --- CRD time ---------------------------------------------------------------------

#[test]
fn rules_that_do_not_compile_refuse_the_crd() {
    let s = spec_schema(json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.a >"}]}));
    assert_eq!(
        msgs(&check_structural(&s, BASE)),
        vec![
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \
             apiextensions.ValidationRule{Rule:\"self.a >\", Message:\"\", MessageExpression:\"\", \
             Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: \
             compilation failed: ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.a >\n | ........^"
        ]
    );
}

#[test]
fn rule_fields_are_checked() {
    let s = spec_schema(
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-validations": [
            {"rule": " "},
            {"rule": "true", "message": "two\nlines"},
            {"rule": "true", "reason": "Nope"},
            {"rule": "true", "fieldPath": ".b"},
        ]}),
    );
    let f = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(
        msgs(&check_structural(&s, BASE)),
        [
            format!("{f}[0].rule: Required value: rule is not specified"),
            format!("{f}[1].message: Invalid value: \"two\\nlines\": message must not contain line breaks"),
            format!(
                "{f}[2].reason: Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
            ),
            format!("{f}[3].fieldPath: Invalid value: \".b\": fieldPath must be a valid path"),
        ]
    );
}

#[test]
fn transition_rules_below_atomic_lists_are_refused() {
    let s = spec_schema(json!({"type": "object", "properties": {"l": {"type": "array",
        "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}));
    assert_eq!(
        msgs(&check_structural(&s, BASE)),
        vec![
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[l].items.x-kubernetes-validations[0].rule: \
             Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within \
             spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[l]"
        ]
    );
}
