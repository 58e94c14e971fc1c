//! Custom-resource data as CEL values, typed by the schema the way the API server's
//! `UnstructuredToVal` and `model.SchemaDeclType` type them
//! (`apiextensions-apiserver/pkg/apiserver/schema/cel/model`,
//! `apiserver/pkg/cel/common/values.go`): `integer` is `int`, `number` is `double` (also
//! for integral JSON numbers), `int-or-string` keeps what it holds, strings of format
//! `byte` are `bytes`, `duration` a `duration` and `date` / `date-time` a `timestamp`;
//! objects with `properties` or `additionalProperties` are maps (so `has()`, `size()`
//! and `in` work), lists are lists. At a resource root (the object itself, or an
//! `x-kubernetes-embedded-resource`), `metadata` shows only `name` and `generateName`.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use kube_cel::cel::Value as Cel;
use kube_cel::cel::objects::{Key, Map as CelMap};
use serde_json::Value;

use crate::access::{EMBEDDED, INT_OR_STRING, field_schema, flag, items, s_str, s_type};

/// `value` as CEL sees it under `schema`; `resource_root` for the object itself and
/// embedded resources.
pub(crate) fn to_cel(value: &Value, schema: Option<&Value>, resource_root: bool) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            let number = schema.is_some_and(|s| s_type(s) == "number" && !flag(s, INT_OR_STRING));
            match n.as_i64() {
                Some(i) if !number => Cel::Int(i),
                _ => match n.as_u64() {
                    Some(u) if !number => Cel::UInt(u),
                    _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
                },
            }
        }
        Value::String(s) => string(s, schema),
        Value::Array(a) => {
            let is = schema.and_then(items);
            Cel::List(Arc::new(
                a.iter().map(|v| to_cel(v, is, is.is_some_and(|i| flag(i, EMBEDDED)))).collect(),
            ))
        }
        Value::Object(m) => {
            let mut map = HashMap::with_capacity(m.len());
            for (k, v) in m {
                let sub = schema.and_then(|s| field_schema(s, k));
                let cel = if resource_root && k == "metadata" {
                    metadata(v)
                } else {
                    to_cel(v, sub, sub.is_some_and(|s| flag(s, EMBEDDED)))
                };
                map.insert(Key::String(Arc::new(k.clone())), cel);
            }
            Cel::Map(CelMap { map: Arc::new(map) })
        }
    }
}

/// `metadata` of a resource as CEL sees it: only `name` and `generateName`
/// (`model.WithTypeAndObjectMeta`).
fn metadata(v: &Value) -> Cel {
    let mut map = HashMap::new();
    for k in ["name", "generateName"] {
        if let Some(Value::String(s)) = v.get(k) {
            map.insert(Key::String(Arc::new(k.to_owned())), Cel::String(Arc::new(s.clone())));
        }
    }
    Cel::Map(CelMap { map: Arc::new(map) })
}

fn string(s: &str, schema: Option<&Value>) -> Cel {
    let plain = || Cel::String(Arc::new(s.to_owned()));
    let Some(schema) = schema.filter(|sc| s_type(sc) == "string" && !flag(sc, INT_OR_STRING)) else {
        return plain();
    };
    match s_str(schema, "format") {
        Some("byte") => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_or_else(|_| plain(), |b| Cel::Bytes(Arc::new(b))),
        Some("duration") => duration(s).map_or_else(plain, Cel::Duration),
        Some("date-time") => chrono::DateTime::parse_from_rfc3339(s).map_or_else(|_| plain(), Cel::Timestamp),
        Some("date") => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map_or_else(plain, |t| Cel::Timestamp(t.and_utc().fixed_offset())),
        _ => plain(),
    }
}

/// A Go `time.ParseDuration` string (`1h30m`, `300ms`, `-1.5s`) as a duration, read by
/// `jiff`'s friendly-duration parser, which accepts Go's unit spellings.
fn duration(s: &str) -> Option<chrono::Duration> {
    let span: jiff::SignedDuration = s.parse().ok()?;
    chrono::Duration::from_std(span.unsigned_abs()).ok().map(|d| if span.is_negative() { -d } else { d })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_are_typed_by_the_schema() {
        let s = json!({"type": "object", "properties": {
            "n": {"type": "number"}, "i": {"type": "integer"},
            "ios": {"x-kubernetes-int-or-string": true},
            "b": {"type": "string", "format": "byte"},
            "t": {"type": "string", "format": "date-time"},
            "m": {"type": "object", "additionalProperties": {"type": "number"}},
        }});
        let v = json!({"n": 2, "i": 3, "ios": "50%", "b": "aGk=", "t": "2024-01-02T03:04:05Z", "m": {"a": 1},
            "metadata": {"name": "x", "labels": {"a": "b"}}});
        let Cel::Map(m) = to_cel(&v, Some(&s), true) else { panic!("map") };
        let get = |k: &str| m.map.get(&Key::String(Arc::new(k.to_owned()))).cloned();
        assert_eq!(get("n"), Some(Cel::Float(2.0)));
        assert_eq!(get("i"), Some(Cel::Int(3)));
        assert_eq!(get("ios"), Some(Cel::String(Arc::new("50%".into()))));
        assert_eq!(get("b"), Some(Cel::Bytes(Arc::new(b"hi".to_vec()))));
        assert!(matches!(get("t"), Some(Cel::Timestamp(_))));
        let Some(Cel::Map(meta)) = get("metadata") else { panic!("metadata") };
        assert_eq!(meta.map.len(), 1, "only name and generateName");
        let Some(Cel::Map(mm)) = get("m") else { panic!("m") };
        assert_eq!(mm.map.values().next(), Some(&Cel::Float(1.0)));
    }
}
