//! Field-level differences between two JSON values: [`field_changes`] walks both and names
//! each field that differs by its path (`spec.template.spec.containers[0].image`), with both
//! values ([`FieldChange`]). Used where ctop shows what a change would do: `ctop replay` and
//! the shadow's report.

use serde::Serialize;
use serde_json::{Map, Value};

/// Longest value text a [`FieldChange`] keeps (longer ones end in `…`).
const MAX_VALUE: usize = 240;

/// One field that differs: where, and its value before and after; `None` is absent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldChange {
    /// `spec.template.spec.containers[0].image`, `conditions[Ready].status`.
    pub path: String,
    /// The value before.
    pub before: Option<Value>,
    /// The value after.
    pub after: Option<Value>,
}

impl std::fmt::Display for FieldChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| match v {
            None => "(absent)".to_owned(),
            Some(v) => v.to_string(),
        };
        write!(f, "{}: {} → {}", self.path, show(&self.before), show(&self.after))
    }
}

/// The fields that differ from `before` to `after`, in path order.
#[must_use]
pub fn field_changes(before: &Value, after: &Value) -> Vec<FieldChange> {
    let mut out = Vec::new();
    fields("", before, after, &mut out);
    out
}

/// The differences between `before` and `after` under `path`, appended to `out`.
pub fn field_changes_at(path: &str, before: &Value, after: &Value, out: &mut Vec<FieldChange>) {
    fields(path, before, after, out);
}

/// Appends the differences between `before` and `after` under `path`: objects key by key,
/// arrays of one length item by item, anything else (and arrays whose length changed) whole.
fn fields(path: &str, before: &Value, after: &Value, out: &mut Vec<FieldChange>) {
    if before == after {
        return;
    }
    let join = |key: &str| if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                match (b.get(key), a.get(key)) {
                    (Some(x), Some(y)) => fields(&join(key), x, y, out),
                    (x, y) => {
                        out.push(FieldChange { path: join(key), before: x.map(clip), after: y.map(clip) })
                    }
                }
            }
        }
        (Value::Array(b), Value::Array(a)) if b.len() == a.len() && !path.is_empty() => {
            for (i, (x, y)) in b.iter().zip(a).enumerate() {
                fields(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (Value::Null, _) | (_, Value::Null) if path.is_empty() => {
            // A whole status patch that is there on one side only: its fields, one by one.
            let empty = Value::Object(Map::new());
            let (b, a) = (
                if before.is_null() { &empty } else { before },
                if after.is_null() { &empty } else { after },
            );
            fields(path, b, a, out);
        }
        _ => out.push(FieldChange {
            path: if path.is_empty() { "(whole)".to_owned() } else { path.to_owned() },
            before: Some(clip(before)),
            after: Some(clip(after)),
        }),
    }
}

/// `v`, or its text cut to [`MAX_VALUE`] bytes when longer.
pub fn clip(v: &Value) -> Value {
    let text = v.to_string();
    if text.len() <= MAX_VALUE {
        return v.clone();
    }
    let mut cut = text[..text.floor_char_boundary(MAX_VALUE)].to_owned();
    cut.push('…');
    Value::String(cut)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn nested_fields_are_named_by_path() {
        let a = json!({"spec": {"ports": [{"port": 80}], "type": "ClusterIP"}});
        let b = json!({"spec": {"ports": [{"port": 8080}]}, "status": {}});
        let shown: Vec<String> = field_changes(&a, &b).iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["spec.ports[0].port: 80 → 8080", "spec.type: \"ClusterIP\" → (absent)", "status: (absent) → {}"]
        );
    }

    #[test]
    fn long_values_are_cut() {
        let long = "x".repeat(1000);
        let d = field_changes(&json!({"a": long}), &json!({"a": "short"}));
        let Some(Value::String(before)) = &d[0].before else { panic!("{d:?}") };
        assert!(before.len() < 300 && before.ends_with('…'), "{before}");
    }
}
