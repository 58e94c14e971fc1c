//! `x-kubernetes-list-type` `set` and `map` uniqueness on write
//! (`apiextensions-apiserver/pkg/apiserver/schema/listtype/validation.go`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::access::*;
use crate::cause::*;
use crate::go::json as go_json;

// --- x-kubernetes-list-type -------------------------------------------------

pub(crate) fn list_sets_and_maps(
    path: Option<&str>,
    s: &Value,
    obj: &Map<String, Value>,
    out: &mut Vec<Cause>,
) {
    if let Some(a) = addl_schema(s) {
        for (k, v) in obj {
            list_sets_and_maps_value(&key(path.unwrap_or(""), k), a, v, out);
        }
    }
    if let Some(ps) = props(s) {
        for (k, v) in obj {
            if let Some(p) = ps.get(k) {
                let f = path.map_or_else(|| k.clone(), |p| child(p, k));
                list_sets_and_maps_value(&f, p, v, out);
            }
        }
    }
}

pub(crate) fn list_sets_and_maps_value(path: &str, s: &Value, v: &Value, out: &mut Vec<Cause>) {
    match v {
        Value::Array(a) => {
            match s_str(s, LIST_TYPE) {
                Some("set") => {
                    for i in non_unique(a.iter().map(scalar_key)) {
                        out.push(duplicate(&index(path, i), Bad::of(&a[i])));
                    }
                }
                Some("map") => list_map(path, s, a, out),
                _ => {}
            }
            if let Some(is) = items(s) {
                for (i, item) in a.iter().enumerate() {
                    list_sets_and_maps_value(&index(path, i), is, item, out);
                }
            }
        }
        Value::Object(m) => list_sets_and_maps(Some(path), s, m, out),
        _ => {}
    }
}

/// A key with Go's equality for unstructured values (int64 1 != float64 1).
pub(crate) fn scalar_key(v: &Value) -> String {
    match v {
        Value::Null => "n".into(),
        Value::Bool(b) => format!("b{b}"),
        Value::String(s) => format!("s{s}"),
        Value::Number(_) => match num(v) {
            Some(Num::I(i)) => format!("i{i}"),
            Some(Num::F(f)) => format!("f{}", if f == 0.0 { 0.0 } else { f }),
            None => format!("?{v}"),
        },
        _ => format!("c{}", go_json(v)),
    }
}

/// Indices of the second appearance of each repeated key.
pub(crate) fn non_unique(keys: impl Iterator<Item = String>) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, k) in keys.enumerate() {
        let n = seen.entry(k).or_insert(0);
        *n += 1;
        if *n == 2 {
            out.push(i);
        }
    }
    out
}

pub(crate) fn list_map(path: &str, s: &Value, a: &[Value], out: &mut Vec<Cause>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(invalid(&index(path, i), Bad::of(x), "must be an object for an array of list-type map"));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    let keys: Vec<&str> = list(s, LIST_MAP_KEYS).iter().filter_map(Value::as_str).collect();
    let key_maps: Vec<Map<String, Value>> = a
        .iter()
        .map(|x| {
            keys.iter()
                .filter_map(|k| Some(((*k).to_owned(), get(x, k)?.clone())))
                .collect::<Map<String, Value>>()
        })
        .collect();
    let ids = key_maps.iter().map(|m| {
        if keys.len() == 1 {
            m.values().next().map_or_else(|| "unspecified".to_owned(), scalar_key)
        } else {
            go_json(&Value::Object(m.clone()))
        }
    });
    for i in non_unique(ids) {
        out.push(duplicate(&index(path, i), Bad::Data(Value::Object(key_maps[i].clone()))));
    }
}

// --- formats ----------------------------------------------------------------

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::test_util::*;
    use crate::validate;

    #[test]
    fn list_type_set_and_map_duplicates() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "byName": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}},
            "byTwo": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}},
        }}));
        let c = validate(&json!({"spec": {"set": ["x", "y", "x", "x"]}}), &s);
        let c = one(&c);
        assert_eq!(
            (c.reason.as_str(), c.field.as_str(), c.message.as_str()),
            (FIELD_VALUE_DUPLICATE, "spec.set[2]", r#"Duplicate value: "x""#)
        );
        let c = validate(
            &json!({"spec": {"byName": [{"name": "a", "v": 1}, {"name": "a", "v": 2}, {"v": 3}, {}]}}),
            &s,
        );
        assert_eq!(
            msgs(&c),
            vec![
                r#"spec.byName[1]: Duplicate value: map[string]interface {}{"name":"a"}"#,
                r#"spec.byName[3]: Duplicate value: map[string]interface {}{}"#,
            ]
        );
        let c = validate(
            &json!({"spec": {"byTwo": [{"a": "x", "b": 1}, {"a": "x", "b": 2}, {"b": 1, "a": "x"}]}}),
            &s,
        );
        assert_eq!(
            one(&c).error_string(),
            r#"spec.byTwo[2]: Duplicate value: map[string]interface {}{"a":"x", "b":1}"#
        );
        let c = validate(&json!({"spec": {"byName": ["str"]}}), &s);
        assert!(
            msgs(&c).contains(
                &r#"spec.byName[0]: Invalid value: "str": must be an object for an array of list-type map"#
                    .to_owned()
            )
        );
    }
}
