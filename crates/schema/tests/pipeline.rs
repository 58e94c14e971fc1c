//! The write pipeline end to end through the public API, as kubesim runs it.

use ctop_schema::{apply_defaults, drop_nulls, invalid_message, prune, validate};
use serde_json::{Value, json};

fn spec_schema(spec: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec}})
}

#[test]
fn full_pipeline_and_message() {
    let s = spec_schema(json!({"type": "object", "required": ["replicas"], "properties": {
        "replicas": {"type": "integer", "minimum": 1},
        "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
    }}));
    let mut obj = json!({"apiVersion": "ex.com/v1", "kind": "Foo", "metadata": {"name": "f"}, "spec": {"replicas": 0, "extra": 1, "mode": "z"}});
    let unknown = prune(&mut obj, &s);
    drop_nulls(&mut obj, &s);
    apply_defaults(&mut obj, &s);
    assert_eq!(unknown, vec!["spec.extra"]);
    let causes = validate(&obj, &s);
    assert_eq!(
        invalid_message("Foo.ex.com", "f", &causes),
        r#"Foo.ex.com "f" is invalid: [spec.mode: Unsupported value: "z": supported values: "a", "b", spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1]"#
    );
    assert_eq!(
        invalid_message("Foo.ex.com", "f", &causes[1..]),
        r#"Foo.ex.com "f" is invalid: spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"#
    );
    let dup = vec![causes[1].clone(), causes[1].clone()];
    assert!(!invalid_message("Foo.ex.com", "f", &dup).contains('['));
    assert_eq!(invalid_message("Foo", "f", &[]), r#"Foo "f" is invalid"#);
}
