//! Places in a generated value ([`Seg`] paths, reached with [`at_mut`] and named with
//! [`field`] as the server names them) and the server's pipeline run on a value of a
//! schema node ([`Server`]), which [`super::invalid`] and [`super::mutate`] check their
//! results with.

use serde_json::{Value, json};

/// One step from a value to a value inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Seg {
    /// A property of an object (`properties`).
    Prop(String),
    /// An item of an array.
    Item(usize),
    /// An entry of a map (`additionalProperties`).
    Entry(String),
}

/// The value at `at` inside `v`.
pub(super) fn at_mut<'v>(v: &'v mut Value, at: &[Seg]) -> Option<&'v mut Value> {
    at.iter().try_fold(v, |v, seg| match seg {
        Seg::Prop(k) | Seg::Entry(k) => v.as_object_mut()?.get_mut(k),
        Seg::Item(i) => v.as_array_mut()?.get_mut(*i),
    })
}

/// The value at `at` inside `v`.
pub(super) fn at<'v>(v: &'v Value, at: &[Seg]) -> Option<&'v Value> {
    at.iter().try_fold(v, |v, seg| match seg {
        Seg::Prop(k) | Seg::Entry(k) => v.as_object()?.get(k),
        Seg::Item(i) => v.as_array()?.get(*i),
    })
}

/// How a rule's errors name a map entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Style {
    /// kube-openapi's validator: `a.key` (`pkg/validation/validate/object_validator.go`
    /// validates `additionalProperties` values at `path + "." + key`).
    Schema,
    /// apimachinery `field.Path.Key`: `a[key]`, as the `x-kubernetes-list-type`
    /// uniqueness check names them (`apiextensions-apiserver/pkg/apiserver/schema/listtype/validation.go`).
    ListType,
}

/// The field path of `at` below `root` (`root` may be empty), as a 422 cause names it.
pub(super) fn field(root: &str, at: &[Seg], style: Style) -> String {
    let mut out = root.to_owned();
    for seg in at {
        match (seg, style) {
            (Seg::Prop(k), _) | (Seg::Entry(k), Style::Schema) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            (Seg::Entry(k), Style::ListType) => out.push_str(&format!("[{k}]")),
            (Seg::Item(i), _) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The name the value is validated under: the field paths of its causes start with it.
pub(super) const ROOT: &str = "x";

/// The server's write pipeline for values of one schema node, the node held as the only
/// property of an object (so paths below it read as they do below `spec`).
pub(super) struct Server {
    wrapper: Value,
}

impl Server {
    pub(super) fn new(schema: &Value) -> Self {
        Server { wrapper: json!({ "type": "object", "properties": { ROOT: schema } }) }
    }

    /// The fields of the causes the server gives for `v` (prune, drop nulls, default,
    /// validate: as kubesim validates a custom resource write; CEL aside).
    pub(super) fn refusals(&self, v: &Value) -> Vec<String> {
        let mut obj = json!({ ROOT: v });
        ctop_schema::prune(&mut obj, &self.wrapper);
        ctop_schema::drop_nulls(&mut obj, &self.wrapper);
        ctop_schema::apply_defaults(&mut obj, &self.wrapper);
        ctop_schema::validate(&obj, &self.wrapper).into_iter().map(|c| c.field).collect()
    }
}

/// The values directly inside `v` (a value of `s`) with their steps and schema nodes:
/// array items, properties, map entries. Values the schema does not describe are left out.
pub(super) fn children<'v, 's>(v: &'v Value, s: &'s Value) -> Vec<(Seg, &'v Value, &'s Value)> {
    match v {
        Value::Array(a) => ctop_schema::items(s)
            .map_or_else(Vec::new, |is| a.iter().enumerate().map(|(i, x)| (Seg::Item(i), x, is)).collect()),
        Value::Object(m) => m
            .iter()
            .filter_map(|(k, x)| match (super::props(s).and_then(|p| p.get(k)), super::map_values(s)) {
                (Some(p), _) => Some((Seg::Prop(k.clone()), x, p)),
                (None, Some(a)) => Some((Seg::Entry(k.clone()), x, a)),
                (None, None) => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
