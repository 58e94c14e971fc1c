//! Reading schema nodes and data: the `x-kubernetes-*` keys, typed getters over a
//! `JSONSchemaProps` held as JSON, numbers as the decoder holds them ([`Num`]) and
//! field-path builders in apimachinery's `field.Path` form (`a.b`, `a[k]`, `a[0]`).

use serde_json::{Map, Value};

/// Keeps unknown fields below a node.
pub const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
/// Marks an object as a Kubernetes resource (apiVersion, kind, metadata).
pub const EMBEDDED: &str = "x-kubernetes-embedded-resource";
/// An integer or a string.
pub const INT_OR_STRING: &str = "x-kubernetes-int-or-string";
/// `atomic`, `set` or `map`: how a list merges and what its items must be.
pub const LIST_TYPE: &str = "x-kubernetes-list-type";
/// The keys of a `map` list's items.
pub const LIST_MAP_KEYS: &str = "x-kubernetes-list-map-keys";
/// `atomic` or `granular`: how an object merges.
pub const MAP_TYPE: &str = "x-kubernetes-map-type";
pub(crate) const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

pub(crate) fn is_meta(k: &str) -> bool {
    META_FIELDS.contains(&k)
}

pub(crate) fn get<'a>(s: &'a Value, k: &str) -> Option<&'a Value> {
    s.as_object()?.get(k)
}

pub(crate) fn s_str<'a>(s: &'a Value, k: &str) -> Option<&'a str> {
    get(s, k).and_then(Value::as_str)
}

pub(crate) fn s_type(s: &Value) -> &str {
    s_str(s, "type").unwrap_or("")
}

pub(crate) fn flag(s: &Value, k: &str) -> bool {
    get(s, k).and_then(Value::as_bool).unwrap_or(false)
}

pub(crate) fn props(s: &Value) -> Option<&Map<String, Value>> {
    get(s, "properties")?.as_object()
}

pub(crate) fn prop<'a>(s: &'a Value, k: &str) -> Option<&'a Value> {
    props(s)?.get(k)
}

/// The `items` schema of an array schema.
#[must_use]
pub fn items(s: &Value) -> Option<&Value> {
    get(s, "items").filter(|v| v.is_object())
}

pub(crate) fn list<'a>(s: &'a Value, k: &str) -> &'a [Value] {
    get(s, k).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `additionalProperties`: absent, a boolean, or a schema.
pub(crate) enum Addl<'a> {
    Absent,
    Bool(bool),
    Schema(&'a Value),
}

pub(crate) fn addl(s: &Value) -> Addl<'_> {
    match get(s, "additionalProperties") {
        None | Some(Value::Null) => Addl::Absent,
        Some(Value::Bool(b)) => Addl::Bool(*b),
        Some(v) => Addl::Schema(v),
    }
}

/// The schema of an object's field `k`: its property, else `additionalProperties`.
#[must_use]
pub fn field_schema<'a>(s: &'a Value, k: &str) -> Option<&'a Value> {
    prop(s, k).or_else(|| addl_schema(s))
}

pub(crate) fn addl_schema(s: &Value) -> Option<&Value> {
    match addl(s) {
        Addl::Schema(v) => Some(v),
        _ => None,
    }
}

pub(crate) fn has_addl(s: &Value) -> bool {
    !matches!(addl(s), Addl::Absent)
}

pub(crate) fn default_of(s: &Value) -> Option<&Value> {
    get(s, "default").filter(|v| !v.is_null())
}

pub(crate) fn f64_of(s: &Value, k: &str) -> Option<f64> {
    get(s, k).and_then(Value::as_f64)
}

pub(crate) fn i64_of(s: &Value, k: &str) -> Option<i64> {
    get(s, k).and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
}

/// A JSON number as the apiserver's decoder holds it: int64 when it fits, else float64.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Num {
    I(i64),
    F(f64),
}

pub(crate) fn num(v: &Value) -> Option<Num> {
    let n = v.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(Num::I(i));
    }
    n.as_f64().map(Num::F)
}

pub(crate) fn child(path: &str, k: &str) -> String {
    if path.is_empty() { k.to_owned() } else { format!("{path}.{k}") }
}

pub(crate) fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

// ---------------------------------------------------------------------------
// Pruning, nulls, defaulting
