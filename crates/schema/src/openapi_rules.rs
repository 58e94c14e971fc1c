//! The OpenAPI keyword rules of `ValidateCustomResourceDefinitionOpenAPISchema`
//! (`apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`): valid
//! types, unsupported keywords, `uniqueItems`, `properties` with `additionalProperties`,
//! defaults in resource metadata, and the `x-kubernetes-list-type` / `map-type` rules.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::access::*;
use crate::cause::*;

pub(crate) const OPENAPI_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// The state of the server's `specStandardValidatorV3`.
#[derive(Clone)]
pub(crate) struct Ssv {
    allow_defaults: bool,
    disallow_reason: String,
    inside_meta: bool,
    /// The path of the highest list above that is not a `map` list: transition rules
    /// below it have no old value to correlate with.
    uncorrelatable: Option<String>,
    /// Whether CEL rules are compiled here (the server's non-nil `CELSchemaContext`): the
    /// schema is structural with valid defaults, and this is not inside a junctor.
    pub(crate) cel: bool,
}

impl Default for Ssv {
    fn default() -> Self {
        Ssv {
            allow_defaults: true,
            disallow_reason: String::new(),
            inside_meta: false,
            uncorrelatable: None,
            cel: false,
        }
    }
}

impl Ssv {
    fn forbid_defaults(&self, reason: String) -> Ssv {
        Ssv { allow_defaults: false, disallow_reason: reason, ..self.clone() }
    }

    fn without_cel(&self) -> Ssv {
        Ssv { cel: false, ..self.clone() }
    }

    fn forbid_old_self(&self, path: &str) -> Ssv {
        let uncorrelatable = self.uncorrelatable.clone().or_else(|| Some(path.to_owned()));
        Ssv { uncorrelatable, ..self.clone() }
    }
}

pub(crate) fn openapi_check(
    s: &Value,
    path: &str,
    ssv: &Ssv,
    is_root: bool,
    out: &mut Vec<Cause>,
    cel: &mut Vec<Cause>,
) {
    let entry = out.len();
    let f = |k: &str| child(path, k);
    let t = s_type(s);
    let emb = flag(s, EMBEDDED);
    // specStandardValidatorV3.validate
    if !t.is_empty() && !OPENAPI_TYPES.contains(&t) {
        let valid: Vec<String> = OPENAPI_TYPES.iter().map(|v| (*v).to_owned()).collect();
        out.push(not_supported(&f("type"), Bad::Str(t.into()), &valid));
    }
    if default_of(s).is_some() && !ssv.allow_defaults {
        let mut detail = "must not be set".to_owned();
        if !ssv.disallow_reason.is_empty() {
            detail = format!("{detail} {}", ssv.disallow_reason);
        }
        out.push(forbidden(&f("default"), &detail));
    }
    if s_str(s, "id").is_some_and(|v| !v.is_empty()) {
        out.push(forbidden(&f("id"), "id is not supported"));
    }
    if get(s, "additionalItems").is_some_and(|v| !v.is_null()) {
        out.push(forbidden(&f("additionalItems"), "additionalItems is not supported"));
    }
    for k in ["patternProperties", "definitions"] {
        if get(s, k).and_then(Value::as_object).is_some_and(|o| !o.is_empty()) {
            out.push(forbidden(&f(k), &format!("{k} is not supported")));
        }
    }
    if get(s, "dependencies").is_some_and(|v| !v.is_null()) {
        out.push(forbidden(&f("dependencies"), "dependencies is not supported"));
    }
    if get(s, "$ref").is_some_and(|v| !v.is_null()) {
        out.push(forbidden(&f("$ref"), "$ref is not supported"));
    }
    if t == "null" {
        out.push(forbidden(&f("type"), "type cannot be set to null, use nullable as an alternative"));
    }
    if get(s, "items").and_then(Value::as_array).is_some_and(|a| !a.is_empty()) {
        out.push(forbidden(&f("items"), "items must be a schema object and not an array"));
    }
    if ssv.inside_meta && emb {
        out.push(forbidden(&f(EMBEDDED), "must not be used inside of resource meta"));
    }

    if flag(s, "uniqueItems") {
        let msg = "uniqueItems cannot be set to true since the runtime complexity becomes quadratic";
        out.push(forbidden(&f("uniqueItems"), msg));
    }
    let has_props = props(s).is_some_and(|p| !p.is_empty());
    match addl(s) {
        Addl::Absent => {}
        a => {
            if has_props && matches!(a, Addl::Bool(false) | Addl::Schema(_)) {
                let msg = "additionalProperties and properties are mutual exclusive";
                out.push(forbidden(&f("additionalProperties"), msg));
            }
            if let Addl::Schema(sub) = a {
                let sub_ssv = if ssv.inside_meta {
                    ssv.forbid_defaults("inside additionalProperties applying to object metadata".into())
                } else {
                    ssv.clone()
                };
                openapi_check(sub, &f("additionalProperties"), &sub_ssv, false, out, cel);
            }
        }
    }
    for (k, p) in props(s).into_iter().flatten() {
        let mut sub = ssv.clone();
        if (is_root || emb) && is_meta(k) {
            sub.inside_meta = true;
            if is_root {
                sub = sub.forbid_defaults(format!("in top-level {k}"));
            }
        }
        openapi_check(p, &key(&f("properties"), k), &sub, false, out, cel);
    }
    if let Some(n) = get(s, "not").filter(|v| v.is_object()) {
        openapi_check(n, &f("not"), &ssv.without_cel(), false, out, cel);
    }
    for k in ["allOf", "oneOf", "anyOf"] {
        for (i, sub) in list(s, k).iter().enumerate() {
            openapi_check(sub, &index(&f(k), i), &ssv.without_cel(), false, out, cel);
        }
    }
    for (k, d) in get(s, "definitions").and_then(Value::as_object).into_iter().flatten() {
        openapi_check(d, &key(&f("definitions"), k), &ssv.without_cel(), false, out, cel);
    }
    // Only `map` list items correlate with old items, so transition rules below any
    // other list cannot run.
    let item_ssv = if s_str(s, LIST_TYPE) == Some("map") { ssv.clone() } else { ssv.forbid_old_self(path) };
    match get(s, "items") {
        Some(is @ Value::Object(_)) => openapi_check(is, &f("items"), &item_ssv, false, out, cel),
        Some(Value::Array(a)) => {
            for (i, is) in a.iter().enumerate() {
                openapi_check(is, &index(&f("items"), i), &item_ssv, false, out, cel);
            }
        }
        _ => {}
    }

    if get(s, PRESERVE) == Some(&Value::Bool(false)) {
        out.push(invalid(&f(PRESERVE), Bad::Bool(false), "must be true or undefined"));
    }
    let map_type = get(s, MAP_TYPE).filter(|v| !v.is_null()).map(|v| v.as_str().unwrap_or(""));
    if let Some(mt) = map_type {
        let msg = "must be object if x-kubernetes-map-type is specified";
        if t.is_empty() {
            out.push(required(&f("type"), msg));
        } else if t != "object" {
            out.push(invalid(&f("type"), Bad::Str(t.into()), msg));
        }
        if mt != "atomic" && mt != "granular" {
            let valid = ["atomic".to_owned(), "granular".to_owned()];
            out.push(not_supported(&f(MAP_TYPE), Bad::Str(mt.into()), &valid));
        }
    }
    let list_type = get(s, LIST_TYPE).filter(|v| !v.is_null()).map(|v| v.as_str().unwrap_or(""));
    let item_schema = items(s);
    if list_type.is_some() && t != "array" {
        let msg = "must be array if x-kubernetes-list-type is specified";
        if t.is_empty() {
            out.push(required(&f("type"), msg));
        } else {
            out.push(invalid(&f("type"), Bad::Str(t.into()), msg));
        }
    } else if list_type == Some("set")
        && let Some(is) = item_schema
    {
        let msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
        let item_list_type = s_str(is, LIST_TYPE);
        match s_type(is) {
            "array" => {
                if let Some(ilt) = item_list_type.filter(|l| *l != "atomic") {
                    out.push(invalid(&child(&f("items"), LIST_TYPE), Bad::Str(ilt.into()), msg));
                }
            }
            "object" if s_str(is, MAP_TYPE) != Some("atomic") => {
                let shown = item_list_type.unwrap_or("null").to_owned();
                out.push(invalid(&child(&f("items"), MAP_TYPE), Bad::Str(shown), msg));
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type
        && !["atomic", "set", "map"].contains(&lt)
    {
        let valid: Vec<String> = ["atomic", "set", "map"].iter().map(|v| (*v).to_owned()).collect();
        out.push(not_supported(&f(LIST_TYPE), Bad::Str(lt.into()), &valid));
    }
    let keys: Vec<String> =
        list(s, LIST_MAP_KEYS).iter().filter_map(Value::as_str).map(str::to_owned).collect();
    if !keys.is_empty() {
        let msg = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => out.push(required(&f(LIST_TYPE), msg)),
            Some(lt) if lt != "map" => out.push(invalid(&f(LIST_TYPE), Bad::Str(lt.into()), msg)),
            _ => {}
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            out.push(required(&f(LIST_MAP_KEYS), "must not be empty if x-kubernetes-list-type is map"));
        }
        if get(s, "items").is_none_or(Value::is_null) {
            out.push(required(&f("items"), "must have a schema if x-kubernetes-list-type is map"));
        }
        if let Some(is) = item_schema {
            let it = s_type(is);
            if it != "object" {
                let msg = "must be object if parent array's x-kubernetes-list-type is map";
                out.push(invalid(&child(&f("items"), "type"), Bad::Str(it.into()), msg));
            } else {
                let mut seen = BTreeSet::new();
                for k in &keys {
                    match prop(is, k) {
                        Some(kp) if matches!(s_type(kp), "array" | "object") => {
                            let fp = child(&key(&child(&f("items"), "properties"), k), "type");
                            let msg = "must be a scalar type if parent array's x-kubernetes-list-type is map";
                            out.push(invalid(&fp, Bad::Str(it.into()), msg));
                        }
                        Some(_) => {}
                        None => {
                            let msg = "entries must all be names of item properties";
                            out.push(invalid(&f(LIST_MAP_KEYS), Bad::StrList(keys.clone()), msg));
                        }
                    }
                    if !seen.insert(k.as_str()) {
                        let msg = "must not contain duplicate entries";
                        out.push(invalid(&f(LIST_MAP_KEYS), Bad::StrList(keys.clone()), msg));
                    }
                }
            }
        }
    }
    if let (Some(lt @ ("set" | "map")), Some(is)) = (list_type, item_schema) {
        if flag(is, "nullable") {
            let msg = format!("cannot be nullable when x-kubernetes-list-type is {lt}");
            out.push(forbidden(&child(&f("items"), "nullable"), &msg));
        }
        if lt == "map" {
            let req: Vec<&str> = list(is, "required").iter().filter_map(Value::as_str).collect();
            for k in &keys {
                let Some(kp) = prop(is, k) else { continue };
                let base = key(&child(&f("items"), "properties"), k);
                if !req.contains(&k.as_str()) && default_of(kp).is_none() {
                    let msg = "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property";
                    out.push(required(&child(&base, "default"), msg));
                }
                if flag(kp, "nullable") {
                    let msg = "this property is in x-kubernetes-list-map-keys, so it cannot be nullable";
                    out.push(forbidden(&child(&base, "nullable"), msg));
                }
            }
        }
    }
    crate::cel::crd::rule_fields(s, path, out);
    // CEL is compiled only where the schema at and below this node has no errors.
    if ssv.cel && out.len() == entry {
        crate::cel::crd::compile_errors(s, path, ssv.uncorrelatable.as_deref(), cel);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::check_structural;
    use crate::test_util::*;

    const BASE: &str = "spec.versions[0].schema.openAPIV3Schema";

    #[test]
    fn openapi_keyword_rules() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "u": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "t": {"type": "thing"},
            "p": {"type": "object", "x-kubernetes-preserve-unknown-fields": false},
        }}));
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!(
                    r#"{BASE}.properties[spec].properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"#
                ),
                format!(
                    r#"{BASE}.properties[spec].properties[t].type: Unsupported value: "thing": supported values: "array", "boolean", "integer", "number", "object", "string""#
                ),
                format!(
                    "{BASE}.properties[spec].properties[u].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
                ),
            ]
        );
    }

    #[test]
    fn list_type_schema_rules() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "m": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "nope"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "n": {"type": "string", "x-kubernetes-list-type": "set"},
            "k": {"type": "array", "x-kubernetes-list-map-keys": ["a"], "items": {"type": "string"}},
        }}));
        let p = format!("{BASE}.properties[spec].properties");
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!(
                    "{p}[k].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"
                ),
                format!(
                    r#"{p}[m].x-kubernetes-list-map-keys: Invalid value: []string{{"name", "nope"}}: entries must all be names of item properties"#
                ),
                format!(
                    "{p}[m].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                ),
                format!(
                    r#"{p}[n].type: Invalid value: "string": must be array if x-kubernetes-list-type is specified"#
                ),
                format!(
                    r#"{p}[s].items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set"#
                ),
            ]
        );
    }
}
