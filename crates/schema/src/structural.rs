//! The structural-schema rules a CRD's `openAPIV3Schema` must follow
//! (`apiextensions-apiserver/pkg/apiserver/schema/validation.go`, `structural.go`,
//! `convert.go`) and the default checks of `defaulting/validation.go`: missing types,
//! `additionalProperties` at the root, embedded-resource and metadata rules, junctor
//! rules, completeness, valid defaults. Start at [`check_structural`], which also runs
//! the OpenAPI keyword rules of [`crate::openapi_rules`] and the CEL compile checks.

use serde_json::{Map, Value};

use crate::access::*;
use crate::cause::*;
use crate::openapi_rules::{Ssv, openapi_check};
use crate::pattern::with_regex;
use crate::prune::prune_value;
use crate::validate::{Res, Validator};

// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Root,
    Item,
    Field,
}

/// The schema errors of one CRD version's `openAPIV3Schema`, as the server reports them
/// on a CRD create/update, with fields below `base` (e.g.
/// `spec.versions[0].schema.openAPIV3Schema`). Order as the server's: `nullable` at the
/// root; then the structural-schema errors (missing `type`s, `additionalProperties` at
/// the root, embedded-resource and metadata rules, junctor rules, invalid patterns,
/// completeness) sorted by text, or — when the schema is structural — the `default`
/// errors (defaults must validate and have no unknown fields); then the OpenAPI rules
/// (valid `type`s, unsupported keywords, `uniqueItems`, `properties` with
/// `additionalProperties`, defaults in top-level metadata, list/map-type rules).
/// Then the `x-kubernetes-validations` rules: their fields, and — when the schema is
/// structural with valid defaults — the rules that do not compile, after every other
/// error.
#[must_use]
pub fn check_structural(schema: &Value, base: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if flag(schema, "nullable") {
        errs.push(forbidden(&child(base, "nullable"), "nullable cannot be true at the root"));
    }
    let mut ssv = Ssv::default();
    if !has_unsupported(schema) {
        let mut structural = Vec::new();
        invariants(schema, Level::Root, base, &mut structural);
        vv_completeness(schema, schema, base, base, &mut structural);
        structural.sort_by_cached_key(Cause::error_string);
        if structural.is_empty() {
            let before = errs.len();
            defaults_check(schema, base, true, &mut errs);
            ssv.cel = errs.len() == before;
        } else {
            errs.extend(structural);
        }
    }
    let mut cel = Vec::new();
    openapi_check(schema, base, &ssv, true, &mut errs, &mut cel);
    errs.extend(cel);
    errs
}

/// Keywords `NewStructural` refuses (then only the OpenAPI errors are shown).
pub(crate) fn has_unsupported(s: &Value) -> bool {
    let Some(m) = s.as_object() else { return false };
    if m.get("id").and_then(Value::as_str).is_some_and(|v| !v.is_empty())
        || m.get("$schema").and_then(Value::as_str).is_some_and(|v| !v.is_empty())
        || m.get("$ref").is_some_and(|v| !v.is_null())
        || m.get("additionalItems").is_some_and(|v| !v.is_null())
        || m.get("items").is_some_and(Value::is_array)
        || ["definitions", "patternProperties", "dependencies"]
            .iter()
            .any(|k| m.get(*k).and_then(Value::as_object).is_some_and(|o| !o.is_empty()))
    {
        return true;
    }
    let mut subs: Vec<&Value> = Vec::new();
    subs.extend(props(s).into_iter().flat_map(|p| p.values()));
    subs.extend(items(s));
    subs.extend(addl_schema(s));
    subs.extend(get(s, "not"));
    for k in ["allOf", "anyOf", "oneOf"] {
        subs.extend(list(s, k));
    }
    subs.into_iter().any(has_unsupported)
}

pub(crate) fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

/// `anyOf: [{type: integer}, {type: string}]`, exactly.
pub(crate) fn is_int_or_string_any_of(any_of: &[Value]) -> bool {
    let only_type = |v: &Value, t: &str| {
        v.as_object().is_some_and(|o| o.iter().all(|(k, v)| if k == "type" { v == t } else { is_zero(v) }))
    };
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

pub(crate) fn invariants(s: &Value, lvl: Level, path: &str, out: &mut Vec<Cause>) {
    let t = s_type(s);
    if t == "array" && items(s).is_none() {
        out.push(required(&child(path, "items"), "must be specified"));
    }
    if let Some(is) = items(s) {
        invariants(is, Level::Item, &child(path, "items"), out);
    }
    for (k, p) in props(s).into_iter().flatten() {
        invariants(p, Level::Field, &key(&child(path, "properties"), k), out);
    }
    if has_addl(s) {
        if lvl == Level::Root {
            out.push(forbidden(&child(path, "additionalProperties"), "must not be used at the root"));
        }
        if let Some(a) = addl_schema(s) {
            invariants(a, Level::Field, &child(path, "additionalProperties"), out);
        }
    }
    let (ios, pres, emb) = (flag(s, INT_OR_STRING), flag(s, PRESERVE), flag(s, EMBEDDED));
    if ios && pres {
        let msg = "must be false if x-kubernetes-int-or-string is true";
        out.push(invalid(&child(path, PRESERVE), Bad::Bool(true), msg));
    }
    if ios && emb {
        let msg = "must be false if x-kubernetes-int-or-string is true";
        out.push(invalid(&child(path, EMBEDDED), Bad::Bool(true), msg));
    }
    let skip_any = is_int_or_string_any_of(list(s, "anyOf"));
    let skip_first_all = list(s, "allOf").first().is_some_and(|a| is_int_or_string_any_of(list(a, "anyOf")));
    value_validation(s, skip_any, skip_first_all, lvl, path, out);

    let check_meta = lvl == Level::Root || emb;
    if emb && t != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if t.is_empty() {
            out.push(required(&child(path, "type"), msg));
        } else {
            out.push(invalid(&child(path, "type"), Bad::Str(t.into()), msg));
        }
    } else if t.is_empty() && !ios && !pres {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(required(&child(path, "type"), msg));
    }
    if emb && has_addl(s) {
        let msg = "must not be used if x-kubernetes-embedded-resource is set";
        out.push(forbidden(&child(path, "additionalProperties"), msg));
    }
    if lvl == Level::Root && !t.is_empty() && t != "object" {
        out.push(invalid(&child(path, "type"), Bad::Str(t.into()), "must be object at the root"));
    }
    for k in ["kind", "apiVersion"] {
        if let Some(p) = prop(s, k).filter(|_| check_meta)
            && s_type(p) != "string"
        {
            let f = child(&key(&child(path, "properties"), k), "type");
            out.push(invalid(&f, Bad::Str(s_type(p).into()), "must be string"));
        }
    }
    if let Some(m) = prop(s, "metadata") {
        let f = key(&child(path, "properties"), "metadata");
        if check_meta && s_type(m) != "object" {
            out.push(invalid(&child(&f, "type"), Bad::Str(s_type(m).into()), "must be object"));
        }
        if lvl == Level::Root && !metadata_only_names(m) {
            let msg = "must not specify anything other than name and generateName, but metadata is implicitly specified";
            out.push(forbidden(&f, msg));
        }
    }
    if emb && !pres && props(s).is_none_or(Map::is_empty) {
        let msg = "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields";
        out.push(required(&child(path, "properties"), msg));
    }
}

/// Whether a root `metadata` schema restricts only `name` / `generateName`.
pub(crate) fn metadata_only_names(m: &Value) -> bool {
    let Some(o) = m.as_object() else { return true };
    const IGNORED: [&str; 5] = ["type", "default", "example", "externalDocs", "$schema"];
    o.iter().all(|(k, v)| match k.as_str() {
        k if IGNORED.contains(&k) => true,
        "properties" => v.as_object().is_none_or(|ps| {
            let names = ps.keys().all(|k| k == "name" || k == "generateName");
            ps.is_empty() || names && ps.len() <= 2
        }),
        _ => is_zero(v),
    })
}

pub(crate) fn value_validation(
    s: &Value,
    skip_any: bool,
    skip_first_all: bool,
    lvl: Level,
    path: &str,
    out: &mut Vec<Cause>,
) {
    if !skip_any {
        for (i, a) in list(s, "anyOf").iter().enumerate() {
            nested_vv(a, false, lvl, &index(&child(path, "anyOf"), i), out);
        }
    }
    for (i, a) in list(s, "allOf").iter().enumerate() {
        nested_vv(a, skip_first_all && i == 0, lvl, &index(&child(path, "allOf"), i), out);
    }
    for (i, a) in list(s, "oneOf").iter().enumerate() {
        nested_vv(a, false, lvl, &index(&child(path, "oneOf"), i), out);
    }
    if let Some(n) = get(s, "not").filter(|v| v.is_object()) {
        nested_vv(n, false, lvl, &child(path, "not"), out);
    }
    if let Some(p) = s_str(s, "pattern").filter(|p| !p.is_empty())
        && let Err(e) = with_regex(p, |_| ())
    {
        let msg = format!("must be a valid regular expression, but isn't: {e}");
        out.push(invalid(&child(path, "pattern"), Bad::Str(p.into()), &msg));
    }
}

pub(crate) fn nested_vv(v: &Value, skip_any: bool, lvl: Level, path: &str, out: &mut Vec<Cause>) {
    value_validation(v, skip_any, false, lvl, path, out);
    if let Some(is) = items(v) {
        nested_vv(is, false, lvl, &child(path, "items"), out);
    }
    for (k, p) in props(v).into_iter().flatten() {
        nested_vv(p, false, Level::Field, &key(&child(path, "properties"), k), out);
    }
    let f = |k: &str| child(path, k);
    if !s_type(v).is_empty() {
        out.push(forbidden(&f("type"), "must be empty to be structural"));
    }
    if has_addl(v) {
        out.push(forbidden(&f("additionalProperties"), "must be undefined to be structural"));
    }
    if default_of(v).is_some() {
        out.push(forbidden(&f("default"), "must be undefined to be structural"));
    }
    for k in ["title", "description"] {
        if s_str(v, k).is_some_and(|t| !t.is_empty()) {
            out.push(forbidden(&f(k), "must be empty to be structural"));
        }
    }
    for k in ["nullable", PRESERVE, EMBEDDED, INT_OR_STRING] {
        if flag(v, k) {
            out.push(forbidden(&f(k), "must be false to be structural"));
        }
    }
    if !list(v, LIST_MAP_KEYS).is_empty() {
        out.push(forbidden(&f(LIST_MAP_KEYS), "must be empty to be structural"));
    }
    for k in [LIST_TYPE, MAP_TYPE] {
        if get(v, k).is_some_and(|x| !x.is_null()) {
            out.push(forbidden(&f(k), "must be undefined to be structural"));
        }
    }
    if !list(v, "x-kubernetes-validations").is_empty() {
        out.push(forbidden(&f("x-kubernetes-validations"), "must be empty to be structural"));
    }
    if prop(v, "metadata").is_some() {
        let msg = "must not be specified in a nested context";
        out.push(forbidden(&key(&f("properties"), "metadata"), msg));
    }
}

/// Specifications in allOf/anyOf/oneOf/not must also exist outside of them (checked for
/// the root's junctors and everything nested in them, as the server does).
pub(crate) fn vv_completeness(v: &Value, s: &Value, spath: &str, vpath: &str, out: &mut Vec<Cause>) {
    if let Some(n) = get(v, "not").filter(|n| n.is_object()) {
        nested_completeness(n, Some(s), spath, &child(vpath, "not"), out);
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        for (i, a) in list(v, k).iter().enumerate() {
            nested_completeness(a, Some(s), spath, &index(&child(vpath, k), i), out);
        }
    }
}

pub(crate) fn nested_completeness(
    v: &Value,
    s: Option<&Value>,
    spath: &str,
    vpath: &str,
    out: &mut Vec<Cause>,
) {
    let Some(s) = s else {
        out.push(required(spath, &format!("because it is defined in {vpath}")));
        return;
    };
    vv_completeness(v, s, spath, vpath, out);
    if let Some(vi) = items(v) {
        nested_completeness(vi, items(s), &child(spath, "items"), &child(vpath, "items"), out);
    }
    for (k, vf) in props(v).into_iter().flatten() {
        let sp = key(&child(spath, "properties"), k);
        let vp = key(&child(vpath, "properties"), k);
        match prop(s, k) {
            Some(sf) => nested_completeness(vf, Some(sf), &sp, &vp, out),
            None => out.push(required(&sp, &format!("because it is defined in {vp}"))),
        }
    }
}

/// Defaults must be pruned and must validate against their schema.
pub(crate) fn defaults_check(s: &Value, path: &str, resource_root: bool, out: &mut Vec<Cause>) {
    if let Some(d) = default_of(s) {
        let f = child(path, "default");
        let mut pruned = d.clone();
        prune_value(&mut pruned, Some(s), resource_root, "", &mut Vec::new());
        if &pruned != d {
            out.push(invalid(&f, Bad::of(d), "must not have unknown fields"));
        }
        let v = Validator { base: Some(&f) };
        let mut r = Res::default();
        v.node(d, s, "", None, &mut r);
        out.extend(r.causes);
    }
    if let Some(is) = items(s) {
        defaults_check(is, &child(path, "items"), false, out);
    }
    for (k, p) in props(s).into_iter().flatten() {
        defaults_check(p, &key(&child(path, "properties"), k), false, out);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::test_util::*;

    const BASE: &str = "spec.versions[0].schema.openAPIV3Schema";

    #[test]
    fn structural_missing_types() {
        let s = json!({"properties": {"spec": {"properties": {"l": {"type": "array"}, "x": {"type": "array", "items": {}}}}}});
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!("{BASE}.properties[spec].properties[l].items: Required value: must be specified"),
                format!(
                    "{BASE}.properties[spec].properties[x].items.type: Required value: must not be empty for specified array items"
                ),
                format!(
                    "{BASE}.properties[spec].type: Required value: must not be empty for specified object fields"
                ),
                format!("{BASE}.type: Required value: must not be empty at the root"),
            ]
        );
        assert!(
            check_structural(
                &spec_schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
                BASE
            )
            .is_empty()
        );
    }

    #[test]
    fn structural_additional_properties_rules() {
        let s = json!({"type": "object", "additionalProperties": {"type": "string"}, "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}});
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!("{BASE}.additionalProperties: Forbidden: must not be used at the root"),
                format!(
                    "{BASE}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
                ),
                format!(
                    "{BASE}.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
                ),
            ]
        );
    }

    #[test]
    fn structural_root_and_metadata_rules() {
        let s = json!({"type": "string", "nullable": true});
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!("{BASE}.nullable: Forbidden: nullable cannot be true at the root"),
                format!(r#"{BASE}.type: Invalid value: "string": must be object at the root"#),
            ]
        );
        let ok_meta = json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}});
        assert!(check_structural(&ok_meta, BASE).is_empty());
        let bad_meta = json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}, "default": {"name": "x"}}}});
        assert_eq!(
            msgs(&check_structural(&bad_meta, BASE)),
            vec![
                format!(
                    "{BASE}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
                ),
                format!(
                    "{BASE}.properties[metadata].default: Forbidden: must not be set in top-level metadata"
                ),
            ]
        );
    }

    #[test]
    fn structural_embedded_resource_rules() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "a": {"x-kubernetes-embedded-resource": true},
            "b": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
                  "properties": {"kind": {"type": "integer"}}},
        }}));
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!(
                    "{BASE}.properties[spec].properties[a].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
                ),
                format!(
                    "{BASE}.properties[spec].properties[a].type: Required value: must be object if x-kubernetes-embedded-resource is true"
                ),
                format!(
                    r#"{BASE}.properties[spec].properties[b].properties[kind].type: Invalid value: "integer": must be string"#
                ),
            ]
        );
    }

    #[test]
    fn structural_junctor_rules_and_completeness() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "v": {"type": "string", "allOf": [{"type": "string", "description": "d"}]}}}},
            "anyOf": [{"properties": {"spec": {"properties": {"missing": {"maxLength": 1}}}}}]});
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!(
                    "{BASE}.properties[spec].properties[missing]: Required value: because it is defined in {BASE}.anyOf[0].properties[spec].properties[missing]"
                ),
                format!(
                    "{BASE}.properties[spec].properties[v].allOf[0].description: Forbidden: must be empty to be structural"
                ),
                format!(
                    "{BASE}.properties[spec].properties[v].allOf[0].type: Forbidden: must be empty to be structural"
                ),
            ]
        );
    }

    #[test]
    fn structural_invalid_pattern() {
        let s = spec_schema(json!({"type": "string", "pattern": "(abc"}));
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![format!(
                r#"{BASE}.properties[spec].pattern: Invalid value: "(abc": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(abc`"#
            )]
        );
    }

    #[test]
    fn defaults_must_validate_and_be_pruned() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 1, "default": 0},
            "conf": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": 1}},
        }}));
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!(
                    r#"{BASE}.properties[spec].properties[conf].default: Invalid value: map[string]interface {{}}{{"a":"x", "b":1}}: must not have unknown fields"#
                ),
                format!(
                    "{BASE}.properties[spec].properties[replicas].default: Invalid value: 0:  in body should be greater than or equal to 1"
                ),
            ]
        );
    }

    #[test]
    fn valid_real_world_schema_has_no_errors() {
        let s = json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
            "spec": {"type": "object", "required": ["image"], "properties": {
                "image": {"type": "string"},
                "replicas": {"type": "integer", "format": "int32", "minimum": 0, "default": 1},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["containerPort"],
                    "items": {"type": "object", "required": ["containerPort"], "properties": {
                        "containerPort": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            }},
            "status": {"type": "object", "properties": {"conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"type": {"type": "string"}}}, "x-kubernetes-list-type": "set"}}},
        }});
        assert_eq!(check_structural(&s, BASE), vec![]);
    }

    // --- shape and printer columns ---------------------------------------------
}
