//! Nulls and defaults, in the server's order after pruning: [`drop_nulls`]
//! (`structuraldefaulting.PruneNonNullableNullsWithoutDefaults`) then [`apply_defaults`]
//! (`structuraldefaulting.Default`).

use serde_json::Value;

use crate::access::*;
use crate::prune::prune_value;

/// Drops `null` values of fields whose schema is neither `nullable` nor has a
/// `default` (nulls with a default are left for [`apply_defaults`]). Runs after
/// [`crate::prune`]. Fields without a schema keep their nulls.
pub fn drop_nulls(obj: &mut Value, schema: &Value) {
    drop_nulls_in(obj, Some(schema));
}

pub(crate) fn drop_nulls_in(x: &mut Value, s: Option<&Value>) {
    match x {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let sub = s.and_then(|s| field_schema(s, &k));
                let drop = map.get(&k).is_some_and(Value::is_null)
                    && sub.is_some_and(|ss| !flag(ss, "nullable") && default_of(ss).is_none());
                if drop {
                    map.remove(&k);
                } else if let Some(v) = map.get_mut(&k) {
                    drop_nulls_in(v, sub);
                }
            }
        }
        Value::Array(a) => {
            let sub = s.and_then(items);
            for v in a {
                drop_nulls_in(v, sub);
            }
        }
        _ => {}
    }
}

/// Applies schema `default`s as the server does after pruning: a property with a
/// default is set when it is absent (or `null` and not nullable) inside an object
/// that is present; defaulting then descends into every value, including the ones
/// just defaulted, so nested defaults apply; `null` array items and map values with a
/// non-nullable schema take the items' / `additionalProperties`' default. Default
/// values are deep-copied and pruned to their schema first.
pub fn apply_defaults(obj: &mut Value, schema: &Value) {
    default_in(obj, schema, true);
}

pub(crate) fn pruned_default(d: &Value, s: &Value) -> Value {
    let mut v = d.clone();
    prune_value(&mut v, Some(s), false, "", &mut Vec::new());
    v
}

pub(crate) fn default_in(x: &mut Value, s: &Value, resource_root: bool) {
    match x {
        Value::Object(map) => {
            let embedded = resource_root || flag(s, EMBEDDED);
            if let Some(ps) = props(s) {
                for (k, p) in ps {
                    let Some(d) = default_of(p) else { continue };
                    let missing = match map.get(k) {
                        None => true,
                        Some(Value::Null) => !flag(p, "nullable"),
                        Some(_) => false,
                    };
                    if missing {
                        let v = if embedded && is_meta(k) { d.clone() } else { pruned_default(d, p) };
                        map.insert(k.clone(), v);
                    }
                }
            }
            let a = addl_schema(s);
            for (k, v) in map.iter_mut() {
                if let Some(p) = prop(s, k) {
                    default_in(v, p, false);
                } else if let Some(a) = a {
                    if v.is_null()
                        && !flag(a, "nullable")
                        && let Some(d) = default_of(a)
                    {
                        *v = pruned_default(d, a);
                    }
                    default_in(v, a, false);
                }
            }
        }
        Value::Array(arr) => {
            let Some(is) = items(s) else { return };
            for v in arr {
                if v.is_null()
                    && !flag(is, "nullable")
                    && let Some(d) = default_of(is)
                {
                    *v = pruned_default(d, is);
                }
                default_in(v, is, false);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::test_util::*;

    #[test]
    fn drop_nulls_keeps_nullable_and_defaulted() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "a": {"type": "string", "nullable": true},
            "b": {"type": "string"},
            "c": {"type": "string", "default": "x"},
            "l": {"type": "array", "items": {"type": "object", "properties": {"z": {"type": "string"}}}},
        }}));
        let mut obj = json!({"spec": {"a": null, "b": null, "c": null, "l": [{"z": null}]}, "unknown": null});
        drop_nulls(&mut obj, &s);
        assert_eq!(obj, json!({"spec": {"a": null, "c": null, "l": [{}]}, "unknown": null}));
        apply_defaults(&mut obj, &s);
        assert_eq!(obj["spec"]["c"], "x");
        assert_eq!(obj["spec"]["a"], Value::Null);
    }

    #[test]
    fn defaults_apply_inside_present_parents_only() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "default": 1},
            "nested": {"type": "object", "properties": {"x": {"type": "string", "default": "dx"}}},
        }}));
        let mut none = json!({"apiVersion": "a/v1"});
        apply_defaults(&mut none, &s);
        assert_eq!(none, json!({"apiVersion": "a/v1"}));
        let mut obj = json!({"spec": {"replicas": 3}});
        apply_defaults(&mut obj, &s);
        assert_eq!(obj, json!({"spec": {"replicas": 3}}));
        let mut obj = json!({"spec": {"nested": {}}});
        apply_defaults(&mut obj, &s);
        assert_eq!(obj, json!({"spec": {"replicas": 1, "nested": {"x": "dx"}}}));
    }

    #[test]
    fn defaults_of_objects_are_pruned_and_defaulted() {
        let s = spec_schema(json!({"type": "object", "default": {}, "properties": {
            "conf": {"type": "object", "default": {"a": 1, "unknown": true},
                "properties": {"a": {"type": "integer"}, "b": {"type": "string", "default": "bee"}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {
                "port": {"type": "integer", "default": 80}, "proto": {"type": "string", "default": "TCP"}}}},
            "map": {"type": "object", "additionalProperties": {"type": "string", "default": "dv"}},
        }}));
        let mut obj = json!({});
        apply_defaults(&mut obj, &s);
        assert_eq!(obj, json!({"spec": {"conf": {"a": 1, "b": "bee"}}}));
        let mut obj = json!({"spec": {"list": [{"port": 8080}, {}, null], "map": {"k": null, "j": "x"}}});
        apply_defaults(&mut obj, &s);
        assert_eq!(
            obj["spec"]["list"],
            json!([{"port": 8080, "proto": "TCP"}, {"port": 80, "proto": "TCP"}, null])
        );
        assert_eq!(obj["spec"]["map"], json!({"k": "dv", "j": "x"}));
    }
}
