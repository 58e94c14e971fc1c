//! apimachinery's unstructured converter on a built-in object, as the API server runs it on
//! the result of a strategic merge patch (`FromUnstructuredWithValidation` in
//! k8s.io/apimachinery/pkg/runtime/converter.go): its first error stops it, in its own words
//! (`cannot restore slice from string`, `cannot convert float64 to int32`, `unrecognized
//! type: int32`; types with their own JSON decoding answer with that decoder's error), and
//! the unknown fields it finds are reported sorted (`unknown field "spec.replica"`, map
//! keys left out of the path) and dropped.
//!
//! The patched map's numbers are Go `int64` when they are integers and `float64` otherwise,
//! as the API server's decoding of the patch and of the stored object leaves them.

use std::fmt::Write as _;

use serde_json::Value;

use super::golang;
use super::tree::{NodeId, Shape, Tree};

/// The Go `reflect.Kind` of an unstructured value.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "invalid",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "slice",
        Value::Object(_) => "map",
    }
}

/// The Go `reflect.Kind` name of a scalar node.
fn node_kind(shape: &Shape) -> &'static str {
    match shape {
        Shape::Bool => "bool",
        Shape::Int { bits: 32 } => "int32",
        Shape::Int { .. } => "int64",
        Shape::Float => "float64",
        _ => "string",
    }
}

/// `json: cannot unmarshal <what> into Go value of type <go>`: the error of a type's own
/// `UnmarshalJSON`, with no context here.
fn unmarshal_error(v: &Value, go: &str, integer: bool) -> String {
    let what = match v {
        Value::Number(n) if integer => format!("number {n}"),
        Value::Bool(_) => "bool".to_owned(),
        Value::Number(_) => "number".to_owned(),
        Value::String(_) => "string".to_owned(),
        Value::Array(_) => "array".to_owned(),
        _ => "object".to_owned(),
    };
    format!("json: cannot unmarshal {what} into Go value of type {go}")
}

struct Convert<'t> {
    tree: &'t Tree,
    /// The path to the value being converted, in one buffer.
    path: String,
    unknown: Vec<String>,
}

impl Convert<'_> {
    /// Appends `key` to the path; returns the length to truncate back to.
    fn push_key(&mut self, key: &str) -> usize {
        let len = self.path.len();
        if len > 0 {
            self.path.push('.');
        }
        self.path.push_str(key);
        len
    }

    fn value(&mut self, id: NodeId, v: &mut Value) -> Result<(), String> {
        let tree = self.tree;
        let node = tree.node(id);
        if v.is_null() {
            return Ok(());
        }
        match (&node.shape, &mut *v) {
            (Shape::Struct { fields, .. }, Value::Object(map)) => {
                let mut result = Ok(());
                map.retain(|key, child| {
                    if result.is_err() {
                        return true;
                    }
                    let Some(field) = tree.field(fields, key) else {
                        let len = self.push_key(key);
                        self.unknown.push(format!("unknown field \"{}\"", self.path));
                        self.path.truncate(len);
                        return false;
                    };
                    if child.is_null() {
                        return false;
                    }
                    let len = self.push_key(key);
                    result = self.value(field, child);
                    self.path.truncate(len);
                    true
                });
                result
            }
            (Shape::Struct { .. }, other) => Err(format!("cannot restore struct from: {}", kind_of(other))),
            (Shape::Bytes, Value::String(s)) => match golang::base64_error(s) {
                Some(at) => Err(format!("error decoding from json: illegal base64 data at input byte {at}")),
                None => Ok(()),
            },
            (Shape::Slice(elem), Value::Array(items)) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let len = self.path.len();
                    let _ = write!(self.path, "[{i}]");
                    let r = self.value(*elem, item);
                    self.path.truncate(len);
                    r?;
                }
                Ok(())
            }
            (Shape::Slice(_) | Shape::Bytes, other) => {
                Err(format!("cannot restore slice from {}", kind_of(other)))
            }
            (Shape::Map(elem), Value::Object(map)) => {
                // Map values are converted without their key in the path.
                for item in map.values_mut() {
                    self.value(*elem, item)?;
                }
                Ok(())
            }
            (Shape::Map(_), other) => Err(format!("cannot restore map from {}", kind_of(other))),
            (Shape::Any, _) => Ok(()),
            (Shape::IntOrString, Value::String(_)) => Ok(()),
            (Shape::IntOrString, Value::Number(n))
                if n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()) =>
            {
                Ok(())
            }
            (Shape::IntOrString, other) => Err(unmarshal_error(other, "int32", true)),
            (Shape::Quantity, other) => {
                let text = match other {
                    Value::String(s) => s.trim().to_owned(),
                    other => other.to_string(),
                };
                golang::quantity_error(&text).map_or(Ok(()), |e| Err(e.to_owned()))
            }
            (Shape::Time | Shape::MicroTime, Value::String(s)) => {
                let layout =
                    if matches!(node.shape, Shape::Time) { golang::RFC3339 } else { golang::RFC3339_MICRO };
                golang::time_error(layout, s).map_or(Ok(()), Err)
            }
            (Shape::Time | Shape::MicroTime, other) => Err(unmarshal_error(other, "string", false)),
            (scalar, other) => scalar_error(scalar, &node.go, other).map_or(Ok(()), Err),
        }
    }
}

/// `fromUnstructured`'s rules for a value into a scalar Go type: the assignments and
/// conversions JSON allows, else its error.
fn scalar_error(shape: &Shape, go: &str, v: &Value) -> Option<String> {
    let target = node_kind(shape);
    let unrecognized = || Some(format!("unrecognized type: {target}"));
    match (shape, v) {
        (Shape::Str, Value::String(_)) | (Shape::Bool, Value::Bool(_)) => None,
        (Shape::Int { .. } | Shape::Float, Value::Number(n)) if n.is_i64() || n.is_u64() => None,
        (Shape::Float, Value::Number(_)) => None,
        (Shape::Int { .. }, Value::Number(n)) => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            (f != f.trunc()).then(|| format!("cannot convert float64 to {go}"))
        }
        // An int64 converts to a string type in Go (to the rune it names), which the
        // converter refuses with its own words.
        (Shape::Str, Value::Number(n)) if n.is_i64() => Some(format!("cannot convert int64 to {go}")),
        _ => unrecognized(),
    }
}

/// Converts `obj` as node `root`; the unknown fields come back sorted.
pub(super) fn convert(tree: &Tree, root: NodeId, obj: &mut Value) -> Result<Vec<String>, String> {
    let mut c = Convert { tree, path: String::new(), unknown: Vec::new() };
    c.value(root, obj)?;
    c.unknown.sort();
    Ok(c.unknown)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::kinds::builtin::catalog;

    fn convert(mut obj: serde_json::Value) -> Result<Vec<String>, String> {
        catalog().convert_unstructured(("apps", "v1", "Deployment"), &mut obj)
    }

    #[test]
    fn converter_errors_in_its_words() {
        let d = |spec: serde_json::Value| json!({"metadata": {"name": "d"}, "spec": spec});
        assert_eq!(
            convert(d(json!({"template": {"spec": {"containers": "oops"}}}))).unwrap_err(),
            "cannot restore slice from string"
        );
        assert_eq!(convert(d(json!({"replicas": 1.5}))).unwrap_err(), "cannot convert float64 to int32");
        assert_eq!(convert(d(json!({"replicas": "3"}))).unwrap_err(), "unrecognized type: int32");
        assert_eq!(convert(d(json!({"paused": "yes"}))).unwrap_err(), "unrecognized type: bool");
        assert_eq!(convert(d(json!({"template": "x"}))).unwrap_err(), "cannot restore struct from: string");
        assert_eq!(
            convert(d(json!({"template": {"spec": {"containers": [{"name": "c", "image": 5}]}}})))
                .unwrap_err(),
            "cannot convert int64 to string"
        );
        assert_eq!(convert(d(json!({"replicas": 2.0}))), Ok(vec![]));
    }

    #[test]
    fn unknown_fields_sorted_with_indices() {
        let obj = json!({"metadata": {"name": "d", "labels": {"a": "b"}}, "spec": {"replica": 2,
            "template": {"spec": {"containers": [{"name": "c", "foo": 1}]}}}});
        assert_eq!(
            convert(obj).expect("converts"),
            ["unknown field \"spec.replica\"", "unknown field \"spec.template.spec.containers[0].foo\""]
        );
    }
}
