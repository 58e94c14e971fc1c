//! structured-merge-diff's validation of a server-side apply configuration against a
//! built-in kind's schema (sigs.k8s.io/structured-merge-diff/v4 typed/validate.go and
//! helpers.go), which the API server runs before it applies: a field the schema does not
//! declare (`.spec.replica: field not declared in schema`) and a value of the wrong type
//! (`.spec.replicas: expected numeric (int or float), got string`) are errors whatever
//! `fieldValidation` says. Paths name list items by their keys (`[name="app"]`), set items
//! by value (`[="x"]`) and other items by index.
//!
//! structured-merge-diff stops at the first undeclared field of an object and visits an
//! object's fields in Go's map order, so with several errors the real server's order
//! varies; kubesim reports them in key order. Items of keyed lists that lack a key are left
//! to `crate::merge::ssa`, which reports them.

use std::fmt::Write as _;

use serde_json::Value;

use super::tree::{ListKind, NodeId, Shape, Tree};
use ctop_schema::go::{percent_v as go_v, sharp_v as go_sharp_v};

/// What the validator calls a value: `&{x}` (Go's `%v` of its value wrapper).
fn wrapped(v: &Value) -> String {
    format!("&{{{}}}", go_v(v))
}

/// Go's `%T` of an unstructured value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// `value.ToString` of a key value in a path element: strings quoted, numbers and bools
/// plain.
fn key_string(v: &Value) -> String {
    match v {
        Value::String(s) => ctop_schema::go::quote(s),
        other => go_v(other),
    }
}

struct Validate<'t> {
    tree: &'t Tree,
    errors: Vec<String>,
}

impl Validate<'_> {
    fn error(&mut self, path: &str, message: String) {
        self.errors.push(format!("{path}: {message}"));
    }

    fn value(&mut self, id: NodeId, v: &Value, path: &mut String) {
        let tree = self.tree;
        let node = tree.node(id);
        if v.is_null() {
            return;
        }
        match (&node.shape, v) {
            (Shape::Struct { fields, .. }, Value::Object(map)) => {
                for (key, child) in map {
                    let len = path.len();
                    path.push('.');
                    path.push_str(key);
                    match tree.field(fields, key) {
                        Some(field) => self.value(field, child, path),
                        None => {
                            self.error(path, "field not declared in schema".into());
                            path.truncate(len);
                            return;
                        }
                    }
                    path.truncate(len);
                }
            }
            (Shape::Map(elem), Value::Object(map)) => {
                for (key, child) in map {
                    let len = path.len();
                    path.push('.');
                    path.push_str(key);
                    self.value(*elem, child, path);
                    path.truncate(len);
                }
            }
            (Shape::Struct { .. } | Shape::Map(_), other) => {
                self.error(path, format!("expected map, got {}", wrapped(other)));
            }
            (Shape::Slice(elem), Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    match &node.list {
                        ListKind::Atomic => {
                            let _ = write!(path, "[{i}]");
                        }
                        ListKind::Set => {
                            let _ = write!(path, "[={}]", key_string(item));
                        }
                        ListKind::Map(keys) => {
                            if !keys.iter().all(|k| item.get(&**k).is_some()) {
                                continue;
                            }
                            path.push('[');
                            for (n, k) in keys.iter().enumerate() {
                                let sep = if n == 0 { "" } else { "," };
                                let _ = write!(path, "{sep}{k}={}", key_string(&item[&**k]));
                            }
                            path.push(']');
                        }
                    }
                    self.value(*elem, item, path);
                    path.truncate(len);
                }
            }
            (Shape::Slice(_), other) => self.error(path, format!("expected list, got {}", wrapped(other))),
            (Shape::Any, _) => {}
            (Shape::Str | Shape::Bytes | Shape::Time | Shape::MicroTime, Value::String(_))
            | (Shape::Int { .. } | Shape::Float, Value::Number(_))
            | (Shape::Bool, Value::Bool(_))
            | (Shape::IntOrString | Shape::Quantity, Value::String(_) | Value::Number(_) | Value::Bool(_)) => {
            }
            (Shape::Str | Shape::Bytes | Shape::Time | Shape::MicroTime, other) => {
                self.error(
                    path,
                    format!("expected string, got &value.valueUnstructured{{Value:{}}}", go_sharp_v(other)),
                );
            }
            (Shape::Int { .. } | Shape::Float, other) => {
                self.error(path, format!("expected numeric (int or float), got {}", go_type(other)));
            }
            (Shape::Bool, other) => self.error(path, format!("expected boolean, got {}", wrapped(other))),
            (Shape::IntOrString | Shape::Quantity, other) => {
                self.error(path, format!("expected any scalar, got {}", wrapped(other)));
            }
        }
    }
}

/// The validation errors of `config` as node `root`.
pub(super) fn validate(tree: &Tree, root: NodeId, config: &Value) -> Vec<String> {
    let mut v = Validate { tree, errors: Vec::new() };
    v.value(root, config, &mut String::new());
    v.errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::kinds::builtin::catalog;

    fn errors(config: serde_json::Value) -> Vec<String> {
        catalog().apply_errors(("apps", "v1", "Deployment"), &config)
    }

    #[test]
    fn undeclared_fields_and_wrong_types() {
        let d = |spec: serde_json::Value| json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec});
        assert_eq!(errors(d(json!({"replica": 2}))), [".spec.replica: field not declared in schema"]);
        assert_eq!(
            errors(d(json!({"replicas": "2"}))),
            [".spec.replicas: expected numeric (int or float), got string"]
        );
        assert_eq!(
            errors(d(json!({"template": {"spec": {"containers": [{"name": "app", "image": 5, "foo": 1}]}}}))),
            [".spec.template.spec.containers[name=\"app\"].foo: field not declared in schema",]
        );
        assert_eq!(
            errors(d(json!({"template": {"spec": {"containers": [{"name": "app", "image": 5}]}}}))),
            [
                ".spec.template.spec.containers[name=\"app\"].image: expected string, got &value.valueUnstructured{Value:5}"
            ]
        );
        assert_eq!(
            errors(d(json!({"template": {"spec": {"containers": "oops"}}}))),
            [".spec.template.spec.containers: expected list, got &{oops}"]
        );
        assert_eq!(errors(d(json!({"paused": "yes"}))), [".spec.paused: expected boolean, got &{yes}"]);
        assert!(
            errors(d(json!({"replicas": 2, "strategy": {"rollingUpdate": {"maxSurge": "25%"}}}))).is_empty()
        );
    }
}
