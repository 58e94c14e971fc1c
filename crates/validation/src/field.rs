//! The small vocabulary every rule module shares: field paths written as apimachinery's
//! `field.Path` prints them ([`Path`]), typed reads of the stored JSON ([`str_at`],
//! [`list`], ...), the cause constructors of `ctop_schema` under short names, and Go's
//! `%#v` of the values the server puts into messages (`map[string]string{...}`,
//! `v1.LabelSelector{...}`, `intstr.IntOrString{...}`).

use serde_json::{Map, Value};

pub(crate) use ctop_schema::causes::{duplicate, forbidden, invalid, not_found, not_supported, required};
pub(crate) use ctop_schema::{Bad, Cause};

use ctop_schema::go::quote;

/// A field path as `field.Path.String()` prints it: `spec.containers[0].name`,
/// `metadata.labels[app]` (a map key is not quoted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Path(String);

impl Path {
    /// The root `name` (`field.NewPath(name)`).
    pub(crate) fn new(name: &str) -> Path {
        Path(name.to_owned())
    }

    /// `p.Child(name)`.
    pub(crate) fn child(&self, name: &str) -> Path {
        if self.0.is_empty() { Path(name.to_owned()) } else { Path(format!("{}.{name}", self.0)) }
    }

    /// `p.Index(i)`.
    pub(crate) fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }

    /// `p.Key(k)`.
    pub(crate) fn key(&self, k: &str) -> Path {
        Path(format!("{}[{k}]", self.0))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// A string field, if it is one.
pub(crate) fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A string field, `""` when absent (Go's zero value).
pub(crate) fn string<'a>(v: &'a Value, key: &str) -> &'a str {
    str_at(v, key).unwrap_or_default()
}

/// An integer field.
pub(crate) fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// A list field, empty when absent.
pub(crate) fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// An object field, if present and an object.
pub(crate) fn object<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

/// A present, non-null field (a Go pointer that is not nil).
pub(crate) fn set<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// A `map[string]string` field as sorted pairs (non-strings skipped: the decoder
/// refused them already).
pub(crate) fn string_map<'a>(v: &'a Value, key: &str) -> Vec<(&'a str, &'a str)> {
    object(v, key)
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.as_str(), v.as_str()?))).collect())
        .unwrap_or_default()
}

/// The given values, sorted as `sets.List` returns them.
pub(crate) fn sorted(values: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = values.iter().map(|s| (*s).to_owned()).collect();
    out.sort();
    out
}

/// The given values, in the order the server lists them.
pub(crate) fn listed(values: &[&str]) -> Vec<String> {
    values.iter().map(|s| (*s).to_owned()).collect()
}

/// `Invalid value: "x": detail` of a string.
pub(crate) fn invalid_str(p: &Path, value: &str, detail: &str) -> Cause {
    invalid(p.as_str(), Bad::Str(value.to_owned()), detail)
}

/// `Invalid value: 5: detail` of an integer.
pub(crate) fn invalid_int(p: &Path, value: i64, detail: &str) -> Cause {
    invalid(p.as_str(), Bad::Int(value), detail)
}

/// `Required value[: detail]`.
pub(crate) fn req(p: &Path, detail: &str) -> Cause {
    required(p.as_str(), detail)
}

/// `Forbidden: detail`.
pub(crate) fn forbid(p: &Path, detail: &str) -> Cause {
    forbidden(p.as_str(), detail)
}

/// `Unsupported value: "x": supported values: ...`.
pub(crate) fn unsupported(p: &Path, value: &str, valid: &[String]) -> Cause {
    not_supported(p.as_str(), Bad::Str(value.to_owned()), valid)
}

/// Go's `%#v` of a `map[string]string` field (`map[string]string(nil)` when absent).
pub(crate) fn go_string_map(v: Option<&Value>) -> String {
    match v.and_then(Value::as_object) {
        None => "map[string]string(nil)".to_owned(),
        Some(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", quote(k), quote(v.as_str().unwrap_or_default())))
                .collect();
            format!("map[string]string{{{}}}", items.join(", "))
        }
    }
}

/// Go's `%#v` of a `[]string` field (`[]string(nil)` when absent).
pub(crate) fn go_string_list(v: Option<&Value>) -> String {
    match v.and_then(Value::as_array) {
        None => "[]string(nil)".to_owned(),
        Some(a) => {
            let items: Vec<String> = a.iter().map(|s| quote(s.as_str().unwrap_or_default())).collect();
            format!("[]string{{{}}}", items.join(", "))
        }
    }
}

/// Go's `%#v` of a `metav1.LabelSelector` (the value behind a non-nil pointer).
pub(crate) fn go_label_selector(sel: &Value) -> String {
    let exprs = match sel.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
        Some(list) => {
            let items: Vec<String> = list
                .iter()
                .map(|e| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        quote(string(e, "key")),
                        quote(string(e, "operator")),
                        go_string_list(e.get("values"))
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{exprs}}}",
        go_string_map(sel.get("matchLabels"))
    )
}

/// Go's `%#v` of an `intstr.IntOrString` value.
pub(crate) fn go_int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}", quote(s)),
        other => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            other.as_i64().unwrap_or_default()
        ),
    }
}
