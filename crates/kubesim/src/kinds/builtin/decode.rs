//! Go's JSON decoder on a built-in object, as the API server runs it on a create or update
//! body and on the result of a JSON or merge patch: the first value of the wrong JSON type
//! (`json: cannot unmarshal bool into Go struct field EnvVar.spec.template.spec.containers.env.value
//! of type string`), the errors of the types that decode themselves (quantities, times,
//! int-or-strings, base64 bytes), and the unknown fields strict decoding reports
//! (`spec.template.spec.containers[0].foo`), which are dropped like Go drops them. `null`
//! fields of structs are dropped too (Go leaves the zero value, which it does not write).
//!
//! The rules are those of sigs.k8s.io/json (internal/golang/encoding/json/decode.go and
//! kubernetes_patch.go): a type mismatch is saved and decoding goes on (the first one is
//! reported), with the innermost struct's name and the path of JSON field names from the
//! root (no list indices or map keys); an error from a type's own `UnmarshalJSON` stops
//! decoding at once and gets the same context; strict errors carry indices (`[0]`) and map
//! keys. kubesim's objects keep their keys sorted, so "first" means first in key order
//! rather than in the request's text.

use ctop_schema::go::json_type;
use serde_json::Value;

use super::golang;
use super::tree::{NodeId, Shape, Tree};

/// Why an object cannot be decoded: the decoder's message, e.g. `json: cannot unmarshal
/// string into Go struct field PodSpec.spec.containers of type []v1.Container`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct DecodeError(pub(crate) String);

/// One step from the root to a value.
#[derive(Clone, Copy)]
enum Seg<'a> {
    /// A struct field, with the Go name of the struct that has it.
    Field { name: &'a str, owner: &'a str },
    /// A list item.
    Index(usize),
    /// A map entry.
    Key(&'a str),
}

/// The path to a value, as a chain of frames on the walk's call stack.
struct Frame<'a> {
    parent: Option<&'a Frame<'a>>,
    seg: Seg<'a>,
}

fn segments<'a>(at: Option<&'a Frame<'a>>) -> Vec<Seg<'a>> {
    let mut out = Vec::new();
    let mut f = at;
    while let Some(frame) = f {
        out.push(frame.seg);
        f = frame.parent;
    }
    out.reverse();
    out
}

/// `json: cannot unmarshal <what> into Go struct field <Struct>.<path> of type <go>`, or
/// `into Go value of type` at the root.
fn type_error(what: &str, go: &str, at: Option<&Frame<'_>>) -> String {
    let segs = segments(at);
    let mut owner = "";
    let mut path = Vec::new();
    for s in &segs {
        if let Seg::Field { name, owner: o } = s {
            owner = o;
            path.push(*name);
        }
    }
    if path.is_empty() {
        format!("json: cannot unmarshal {what} into Go value of type {go}")
    } else {
        format!("json: cannot unmarshal {what} into Go struct field {owner}.{} of type {go}", path.join("."))
    }
}

/// The path strict decoding reports for the unknown field `key` under `at`.
fn strict_path(at: Option<&Frame<'_>>, key: &str) -> String {
    let mut out = String::new();
    for s in segments(at) {
        match s {
            Seg::Field { name, .. } | Seg::Key(name) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            Seg::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    if !out.is_empty() {
        out.push('.');
    }
    out.push_str(key);
    out
}

/// Whether `n` is an integer that fits `bits`.
fn fits(n: &serde_json::Number, bits: u32) -> bool {
    match n.as_i64() {
        Some(i) if bits == 32 => i32::try_from(i).is_ok(),
        Some(_) => true,
        None => false,
    }
}

struct Walk<'t> {
    tree: &'t Tree,
    /// Whether to drop unknown and `null` fields (else only note that there are some).
    mutate: bool,
    /// Whether there is something to drop.
    dirty: bool,
    /// The first saved (non-fatal) error.
    saved: Option<String>,
    /// Unknown fields, in walk order.
    unknown: Vec<String>,
}

impl Walk<'_> {
    fn save(&mut self, e: String) {
        self.saved.get_or_insert(e);
    }

    /// Decodes `v` as node `id`; `Err` is an error that stops decoding.
    fn value(&mut self, id: NodeId, v: &mut Value, at: Option<&Frame<'_>>) -> Result<(), String> {
        let tree = self.tree;
        let node = tree.node(id);
        let go = &*node.go;
        if v.is_null() {
            return Ok(());
        }
        match (&node.shape, &mut *v) {
            (Shape::Struct { name, fields }, Value::Object(map)) => {
                let mut fatal = None;
                map.retain(|key, child| {
                    if fatal.is_some() {
                        return true;
                    }
                    let Some(field) = tree.field(fields, key) else {
                        self.dirty = true;
                        if self.mutate {
                            self.unknown.push(strict_path(at, key));
                        }
                        return !self.mutate;
                    };
                    if child.is_null() {
                        self.dirty = true;
                        return !self.mutate;
                    }
                    let frame = Frame { parent: at, seg: Seg::Field { name: key, owner: name } };
                    if let Err(e) = self.value(field, child, Some(&frame)) {
                        fatal = Some(e);
                    }
                    true
                });
                fatal.map_or(Ok(()), Err)
            }
            (Shape::Slice(elem), Value::Array(items)) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let frame = Frame { parent: at, seg: Seg::Index(i) };
                    self.value(*elem, item, Some(&frame))?;
                }
                Ok(())
            }
            (Shape::Map(elem), Value::Object(map)) => {
                for (key, item) in map.iter_mut() {
                    let frame = Frame { parent: at, seg: Seg::Key(key) };
                    self.value(*elem, item, Some(&frame))?;
                }
                Ok(())
            }
            (Shape::Str, Value::String(_))
            | (Shape::Bool, Value::Bool(_))
            | (Shape::Float, Value::Number(_))
            | (Shape::Any, _) => Ok(()),
            (Shape::Int { bits }, Value::Number(n)) => {
                if !fits(n, *bits) {
                    self.save(type_error(&format!("number {n}"), go, at));
                }
                Ok(())
            }
            (Shape::Bytes, Value::String(s)) => {
                if let Some(at_byte) = golang::base64_error(s) {
                    self.save(format!("illegal base64 data at input byte {at_byte}"));
                }
                Ok(())
            }
            (Shape::Bytes, Value::Array(items)) => {
                // Go decodes a list of numbers into []byte too; it is written back as base64.
                let mut bytes = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let frame = Frame { parent: at, seg: Seg::Index(i) };
                    match item.as_u64().and_then(|b| u8::try_from(b).ok()) {
                        Some(b) => bytes.push(b),
                        None => {
                            let what = match item {
                                Value::Number(n) => format!("number {n}"),
                                other => json_type(other).to_owned(),
                            };
                            self.save(type_error(&what, "uint8", Some(&frame)));
                        }
                    }
                }
                self.dirty = true;
                if self.mutate {
                    use base64::Engine as _;
                    *v = Value::String(base64::engine::general_purpose::STANDARD.encode(bytes));
                }
                Ok(())
            }
            (Shape::IntOrString, Value::String(_)) => Ok(()),
            (Shape::IntOrString, other) => match other {
                Value::Number(n) if fits(n, 32) => Ok(()),
                Value::Number(n) => Err(type_error(&format!("number {n}"), "int32", at)),
                other => Err(type_error(json_type(other), "int32", at)),
            },
            (Shape::Quantity, other) => {
                let text = match other {
                    Value::String(s) => s.trim().to_owned(),
                    other => other.to_string(),
                };
                golang::quantity_error(&text).map_or(Ok(()), |e| Err(e.to_owned()))
            }
            (Shape::Time | Shape::MicroTime, other) => {
                let layout =
                    if matches!(node.shape, Shape::Time) { golang::RFC3339 } else { golang::RFC3339_MICRO };
                match other {
                    Value::String(s) => golang::time_error(layout, s).map_or(Ok(()), Err),
                    other => Err(type_error(json_type(other), "string", at)),
                }
            }
            (_, other) => {
                let what = match (&node.shape, &*other) {
                    (Shape::Int { .. }, Value::Number(n)) => format!("number {n}"),
                    (_, other) => json_type(other).to_owned(),
                };
                self.save(type_error(&what, go, at));
                Ok(())
            }
        }
    }
}

/// Decodes `obj` as the tree's node `root` (see the module docs). The object is first
/// only read; `before_change` sees it as it came whenever decoding fails or will change
/// it (drop unknown or `null` fields), which a second walk then does.
pub(super) fn decode(
    tree: &Tree,
    root: NodeId,
    obj: &mut Value,
    before_change: &mut dyn FnMut(&Value),
) -> Result<Vec<String>, DecodeError> {
    let mut walk = Walk { tree, mutate: false, dirty: false, saved: None, unknown: Vec::new() };
    let first = walk.value(root, obj, None);
    if first.is_err() || walk.saved.is_some() || walk.dirty {
        before_change(obj);
    }
    first.map_err(DecodeError)?;
    if let Some(e) = walk.saved {
        return Err(DecodeError(e));
    }
    if !walk.dirty {
        return Ok(Vec::new());
    }
    let mut walk = Walk { tree, mutate: true, dirty: false, saved: None, unknown: Vec::new() };
    walk.value(root, obj, None).map_err(DecodeError)?;
    Ok(walk.unknown)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::kinds::builtin::catalog;

    fn decode(
        kind: (&str, &str),
        mut obj: serde_json::Value,
    ) -> Result<(Vec<String>, serde_json::Value), String> {
        let (group, k) = kind;
        let version = if group == "autoscaling" { "v2" } else { "v1" };
        catalog().decode((group, version, k), &mut obj, &mut |_| {}).map(|u| (u, obj)).map_err(|e| e.0)
    }

    fn deployment(container: serde_json::Value) -> serde_json::Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [container]}}}})
    }

    #[test]
    fn wrong_types_in_the_decoders_words() {
        let e = decode(
            ("apps", "Deployment"),
            deployment(json!({"name": "c", "env": [{"name": "A", "value": true}]})),
        );
        assert_eq!(
            e.unwrap_err(),
            "json: cannot unmarshal bool into Go struct field EnvVar.spec.template.spec.containers.env.value of type string"
        );
        let mut d = deployment(json!({"name": "c"}));
        d["spec"]["template"]["spec"]["containers"] = json!("oops");
        assert_eq!(
            decode(("apps", "Deployment"), d).unwrap_err(),
            "json: cannot unmarshal string into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container"
        );
        let mut d = deployment(json!({"name": "c"}));
        d["spec"]["replicas"] = json!(1.5);
        assert_eq!(
            decode(("apps", "Deployment"), d).unwrap_err(),
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
        let mut d = deployment(json!({"name": "c"}));
        d["spec"]["replicas"] = json!("3");
        assert_eq!(
            decode(("apps", "Deployment"), d).unwrap_err(),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
        let e = decode(("apps", "Deployment"), deployment(json!({"name": "c", "imagePullPolicy": 1})));
        assert_eq!(
            e.unwrap_err(),
            "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.imagePullPolicy of type v1.PullPolicy"
        );
        let e = decode(("", "ConfigMap"), json!({"metadata": {"name": "x", "labels": {"a": 1}}}));
        assert_eq!(
            e.unwrap_err(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
        );
        let e = decode(("", "ConfigMap"), json!({"metadata": "x"}));
        assert_eq!(
            e.unwrap_err(),
            "json: cannot unmarshal string into Go struct field ConfigMap.metadata of type v1.ObjectMeta"
        );
        let e = decode(("", "Secret"), json!({"metadata": {"name": "x"}, "data": {"a": "hello"}}));
        assert_eq!(e.unwrap_err(), "illegal base64 data at input byte 4");
    }

    #[test]
    fn own_decoders_stop_at_once() {
        let svc = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "targetPort": true}]}});
        assert_eq!(
            decode(("", "Service"), svc).unwrap_err(),
            "json: cannot unmarshal bool into Go struct field ServicePort.spec.ports.targetPort of type int32"
        );
        let e = decode(
            ("apps", "Deployment"),
            deployment(json!({"name": "c", "resources": {"limits": {"cpu": "lots"}}})),
        );
        assert_eq!(
            e.unwrap_err(),
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
        let e = decode(("", "ConfigMap"), json!({"metadata": {"name": "x", "creationTimestamp": 5}}));
        assert_eq!(
            e.unwrap_err(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"
        );
    }

    #[test]
    fn unknown_fields_are_reported_and_dropped() {
        let mut d = deployment(json!({"name": "c", "foo": 1}));
        d["spec"]["replica"] = json!(2);
        d["spec"]["template"]["spec"]["containers"][0]["env"] = json!(null);
        let (unknown, obj) = decode(("apps", "Deployment"), d).expect("decodes");
        assert_eq!(unknown, ["spec.replica", "spec.template.spec.containers[0].foo"]);
        assert!(obj["spec"].get("replica").is_none());
        assert!(obj["spec"]["template"]["spec"]["containers"][0].get("foo").is_none());
        assert!(obj["spec"]["template"]["spec"]["containers"][0].get("env").is_none(), "nulls dropped");
        let (unknown, _) = decode(("", "ConfigMap"), json!({"metadata": {"name": "x"}, "bogus": {"a": 1}}))
            .expect("decodes");
        assert_eq!(unknown, ["bogus"]);
        let (unknown, _) = decode(
            ("autoscaling", "HorizontalPodAutoscaler"),
            json!({"metadata": {"name": "h"}, "spec": {"maxReplicas": 3}}),
        )
        .expect("decodes");
        assert!(unknown.is_empty());
    }
}
