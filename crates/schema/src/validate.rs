//! Value validation of a custom resource against its schema: kube-openapi's
//! `validate.SchemaValidator` as the API server runs it (type, required, enum, bounds,
//! lengths, pattern, formats, junctors) with the server's words, and CRD validation
//! ratcheting (`apiextensions-apiserver/pkg/apiserver/validation/ratcheting.go`) on
//! update. Start at [`validate`] and [`validate_update`].

use serde_json::{Map, Value};

use crate::access::*;
use crate::cause::*;
use crate::formats::{SUPPORTED_FORMATS, effective_format, format_ok};
use crate::go::{float as go_float, json as go_json, quote as go_quote};
use crate::listtype::list_sets_and_maps;
use crate::pattern::with_regex;

/// Validates a pruned and defaulted custom resource against its schema, returning the
/// causes in the server's order: the OpenAPI schema errors (type, required, enum,
/// bounds, lengths, pattern, items, properties, format, nullable, allOf/anyOf/oneOf/not,
/// `additionalProperties` schemas), then the `x-kubernetes-list-type` `set` / `map`
/// uniqueness errors. Object properties are visited in sorted order (Go visits them
/// in map order).
#[must_use]
pub fn validate(obj: &Value, schema: &Value) -> Vec<Cause> {
    let v = Validator { base: None };
    let mut out = Res::default();
    v.node(obj, schema, "", None, &mut out);
    let mut causes = out.causes;
    if let Some(m) = obj.as_object() {
        list_sets_and_maps(None, schema, m, &mut causes);
    }
    causes
}

/// Validates an update like [`validate`], with the server's ratcheting (on by default
/// since 1.30, GA in 1.33): schema errors inside any value equal to its correlated old
/// value are dropped. Values correlate through object keys, `additionalProperties` keys
/// and `x-kubernetes-list-type: map` keys, never through other list items; so an
/// unchanged `spec` keeps an object that became invalid under a tightened schema
/// writable. List-type uniqueness errors are reported only when `old` had none.
#[must_use]
pub fn validate_update(new: &Value, old: &Value, schema: &Value) -> Vec<Cause> {
    let v = Validator { base: None };
    let mut out = Res::default();
    v.node(new, schema, "", Some(old), &mut out);
    let mut causes = out.causes;
    if let Some(m) = new.as_object() {
        let mut list_errs = Vec::new();
        list_sets_and_maps(None, schema, m, &mut list_errs);
        if !list_errs.is_empty() {
            let mut old_errs = Vec::new();
            if let Some(o) = old.as_object() {
                list_sets_and_maps(None, schema, o, &mut old_errs);
            }
            if old_errs.is_empty() {
                causes.extend(list_errs);
            }
        }
    }
    causes
}

/// The old item of a `x-kubernetes-list-type: map` list with the same keys as `item`.
pub(crate) fn correlate_item<'a>(s: &Value, item: &Value, old: Option<&'a Value>) -> Option<&'a Value> {
    if s_str(s, LIST_TYPE) != Some("map") {
        return None;
    }
    let keys: Vec<&str> = list(s, LIST_MAP_KEYS).iter().filter_map(Value::as_str).collect();
    let key_of = |v: &Value| keys.iter().map(|k| get(v, k).cloned()).collect::<Vec<_>>();
    let wanted = key_of(item);
    old?.as_array()?.iter().find(|o| o.is_object() && key_of(o) == wanted)
}

#[derive(Default)]
pub(crate) struct Res {
    pub(crate) causes: Vec<Cause>,
    /// kube-openapi's MatchCount: how many checks ran (picks anyOf/oneOf's best failure).
    pub(crate) count: usize,
}

impl Res {
    fn merge(&mut self, other: Res) {
        self.causes.extend(other.causes);
        self.count += other.count;
    }
}

/// A kube-openapi `SchemaValidator` rooted at a field path (`None` for a whole object).
pub(crate) struct Validator<'a> {
    pub(crate) base: Option<&'a str>,
}

pub(crate) fn schema_types(s: &Value) -> Vec<&str> {
    if flag(s, INT_OR_STRING) {
        return vec!["integer", "string"];
    }
    match s_type(s) {
        "" => vec![],
        t => vec![t],
    }
}

/// Go's `swag.IsFloat64AJSONInteger`.
pub(crate) fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    if f == f.trunc() {
        return true;
    }
    let g = f.trunc();
    if f < 0.0 || g == 0.0 {
        return false;
    }
    (f - g).abs() / (f.abs() + g.abs()) < 1e-9
}

impl Validator<'_> {
    /// The field of an error whose kube-openapi name is `name`.
    fn field(&self, name: &str) -> String {
        let n = name.strip_prefix('.').unwrap_or(name);
        match (n.is_empty() || name == ".", self.base) {
            (true, Some(b)) => b.to_owned(),
            (true, None) => "<nil>".to_owned(),
            (false, Some(b)) => format!("{b}.{n}"),
            (false, None) => n.to_owned(),
        }
    }

    /// A composite (allOf/anyOf/oneOf/not) error, reported at the validator's root.
    fn composite(&self, msg: String) -> Cause {
        invalid(&self.field(""), Bad::Str(String::new()), &msg)
    }

    /// Validates `x` at `path`; with ratcheting, a node equal to its correlated `old`
    /// value drops its errors (and its descendants').
    pub(crate) fn node(&self, x: &Value, s: &Value, path: &str, old: Option<&Value>, out: &mut Res) {
        let mut r = Res::default();
        self.node_checks(x, s, path, old, &mut r);
        if old == Some(x) {
            r.causes.clear();
        }
        out.merge(r);
    }

    fn node_checks(&self, x: &Value, s: &Value, path: &str, old: Option<&Value>, out: &mut Res) {
        let types = schema_types(s);
        let format = effective_format(s);
        if x.is_null() {
            if !types.is_empty() && !flag(s, "nullable") {
                let t = types.join(",");
                let msg = format!("{path} in body must be of type {t}: \"null\"");
                out.causes.push(type_invalid(&self.field(path), Bad::Str("null".into()), &msg));
            }
            self.check_enum(x, s, path, out);
            out.count += 1;
            return;
        }
        if !types.is_empty() || !format.is_empty() {
            self.check_type(x, &types, format, path, out);
            out.count += 1;
        }
        self.check_junctors(x, s, path, old, out);
        out.count += 1;
        if let Value::String(st) = x {
            self.check_string(st, s, path, out);
            out.count += 1;
            if SUPPORTED_FORMATS.contains(&format.replace('-', "").as_str()) {
                if !format_ok(&format.replace('-', ""), st) {
                    let msg = format!("{path} in body must be of type {format}: {}", go_quote(st));
                    out.causes.push(type_invalid(&self.field(path), Bad::Str(st.clone()), &msg));
                }
                out.count += 1;
            }
        }
        if let Some(n) = num(x) {
            self.check_number(n, s, path, out);
            out.count += 1;
        }
        if let Value::Array(a) = x {
            self.check_array(a, s, path, old, out);
            out.count += 1;
        }
        self.check_enum(x, s, path, out);
        out.count += 1;
        if let Value::Object(m) = x {
            self.check_object(m, s, path, old, out);
            out.count += 1;
        }
        out.count += 1;
    }

    fn type_error(&self, path: &str, type_name: &str, value: &str, out: &mut Res) {
        let msg = format!("{path} in body must be of type {type_name}: {}", go_quote(value));
        out.causes.push(type_invalid(&self.field(path), Bad::Str(value.to_owned()), &msg));
    }

    fn check_type(&self, x: &Value, types: &[&str], format: &str, path: &str, out: &mut Res) {
        let (sch, fmt, str_or_slice) = match x {
            Value::Bool(_) => ("boolean", "", false),
            Value::String(_) => ("string", "", true),
            Value::Array(_) => ("array", "", true),
            Value::Object(_) => ("object", "", false),
            _ => match num(x) {
                Some(Num::I(_)) => ("integer", "int64", false),
                _ => ("number", "float64", false),
            },
        };
        let has = |t: &str| types.contains(&t);
        let float_int = sch == "number" && x.as_f64().is_some_and(is_json_integer) && has("integer");
        let int_float = sch == "integer" && has("number");
        if !(str_or_slice || format.is_empty() || has(sch) || fmt == format || float_int || int_float) {
            self.type_error(path, format, fmt, out);
            return;
        }
        if str_or_slice && !(has("number") || has("integer") || format.is_empty()) {
            return;
        }
        if !(has(sch) || float_int || int_float) {
            self.type_error(path, &types.join(","), sch, out);
        }
    }

    fn check_junctors(&self, x: &Value, s: &Value, path: &str, old: Option<&Value>, out: &mut Res) {
        let any_of = list(s, "anyOf");
        if !any_of.is_empty() {
            let mut best: Option<Res> = None;
            let mut success: Option<Res> = None;
            for sub in any_of {
                let mut r = Res::default();
                self.node(x, sub, path, old, &mut r);
                if r.causes.is_empty() {
                    success = Some(r);
                    best = None;
                    break;
                }
                if best.as_ref().is_none_or(|b| r.count > b.count) {
                    best = Some(r);
                }
            }
            if success.is_none() {
                let msg = format!("{} must validate at least one schema (anyOf)", go_quote(path));
                out.causes.push(self.composite(msg));
            }
            if let Some(r) = best.or(success) {
                out.merge(r);
            }
        }
        let one_of = list(s, "oneOf");
        if !one_of.is_empty() {
            let mut best: Option<Res> = None;
            let mut first_success: Option<Res> = None;
            let mut valid = 0;
            for sub in one_of {
                let mut r = Res::default();
                self.node(x, sub, path, old, &mut r);
                if r.causes.is_empty() {
                    valid += 1;
                    best = None;
                    if first_success.is_none() {
                        first_success = Some(r);
                    }
                    continue;
                }
                if valid == 0 && best.as_ref().is_none_or(|b| r.count > b.count) {
                    best = Some(r);
                }
            }
            if valid != 1 {
                let extra = if valid == 0 {
                    "Found none valid".to_owned()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                let msg =
                    format!("{} must validate one and only one schema (oneOf). {extra}", go_quote(path));
                out.causes.push(self.composite(msg));
                if let Some(b) = best {
                    out.merge(b);
                }
            } else if let Some(r) = first_success {
                out.merge(r);
            }
        }
        let all_of = list(s, "allOf");
        if !all_of.is_empty() {
            let mut valid = 0;
            for sub in all_of {
                let mut r = Res::default();
                self.node(x, sub, path, old, &mut r);
                if r.causes.is_empty() {
                    valid += 1;
                }
                out.merge(r);
            }
            if valid != all_of.len() {
                let extra = if valid == 0 { ". None validated" } else { "" };
                let msg = format!("{} must validate all the schemas (allOf){extra}", go_quote(path));
                out.causes.push(self.composite(msg));
            }
        }
        if let Some(not) = get(s, "not").filter(|v| v.is_object()) {
            let mut r = Res::default();
            self.node(x, not, path, old, &mut r);
            if r.causes.is_empty() {
                let msg = format!("{} must not validate the schema (not)", go_quote(path));
                out.causes.push(self.composite(msg));
            }
        }
    }

    fn check_string(&self, st: &str, s: &Value, path: &str, out: &mut Res) {
        let len = i64::try_from(st.chars().count()).unwrap_or(i64::MAX);
        if let Some(max) = i64_of(s, "maxLength")
            && len > max
        {
            out.causes.push(too_long(&self.field(path), max));
            return;
        }
        if let Some(min) = i64_of(s, "minLength")
            && len < min
        {
            let msg = format!("{path} in body should be at least {min} chars long");
            out.causes.push(invalid(&self.field(path), Bad::Str(st.to_owned()), &msg));
            return;
        }
        if let Some(p) = s_str(s, "pattern").filter(|p| !p.is_empty()) {
            let shown = match with_regex(p, |re| re.is_match(st)) {
                Ok(true) => return,
                Ok(false) => p.to_owned(),
                Err(e) => format!("{p}, but pattern is invalid: {e}"),
            };
            let msg = format!("{path} in body should match '{shown}'");
            out.causes.push(invalid(&self.field(path), Bad::Str(st.to_owned()), &msg));
        }
    }

    fn check_number(&self, n: Num, s: &Value, path: &str, out: &mut Res) {
        let field = self.field(path);
        let bad = || match n {
            Num::I(i) => Bad::Int(i),
            Num::F(f) => Bad::Float(f),
        };
        if let Some(factor) = f64_of(s, "multipleOf") {
            let failed = if factor < 0.0 {
                Some(format!("factor MultipleOf declared for {path} must be positive: {}", go_float(factor)))
            } else {
                match n {
                    // Integer data is checked against the truncated factor.
                    Num::I(i) if factor as i64 != 0 => {
                        let fi = factor as i64;
                        (i % fi != 0).then(|| format!("{path} in body should be a multiple of {fi}"))
                    }
                    _ => {
                        let d = match n {
                            Num::I(i) => i as f64,
                            Num::F(f) => f,
                        };
                        let mult = if factor < 1.0 { 1.0 / factor * d } else { d / factor };
                        (!is_json_integer(mult))
                            .then(|| format!("{path} in body should be a multiple of {}", go_float(factor)))
                    }
                }
            };
            if let Some(msg) = failed {
                out.causes.push(invalid(&field, bad(), &msg));
            }
        }
        for (kw, excl_kw, is_min) in
            [("minimum", "exclusiveMinimum", true), ("maximum", "exclusiveMaximum", false)]
        {
            let Some(bound) = f64_of(s, kw) else { continue };
            let excl = flag(s, excl_kw);
            // Integer data is compared with the bound truncated to an integer.
            let (fails, shown) = match n {
                Num::I(i) => {
                    let b = bound as i64;
                    let fails = if is_min { i < b || excl && i == b } else { i > b || excl && i == b };
                    (fails, b.to_string())
                }
                Num::F(f) => {
                    let fails = if is_min {
                        f < bound || excl && f == bound
                    } else {
                        f > bound || excl && f == bound
                    };
                    (fails, go_float(bound))
                }
            };
            if fails {
                let rel = match (is_min, excl) {
                    (true, false) => "greater than or equal to",
                    (true, true) => "greater than",
                    (false, false) => "less than or equal to",
                    (false, true) => "less than",
                };
                let msg = format!("{path} in body should be {rel} {shown}");
                out.causes.push(invalid(&field, bad(), &msg));
            }
        }
    }

    fn check_array(&self, a: &[Value], s: &Value, path: &str, old: Option<&Value>, out: &mut Res) {
        if let Some(is) = items(s) {
            for (i, v) in a.iter().enumerate() {
                let mut r = Res::default();
                self.node(v, is, &index(path, i), correlate_item(s, v, old), &mut r);
                out.merge(r);
            }
        }
        let size = i64::try_from(a.len()).unwrap_or(i64::MAX);
        if let Some(min) = i64_of(s, "minItems")
            && size < min
        {
            let msg = format!("{path} in body should have at least {min} items");
            out.causes.push(invalid(&self.field(path), Bad::Int(size), &msg));
        }
        if let Some(max) = i64_of(s, "maxItems")
            && size > max
        {
            out.causes.push(too_many(&self.field(path), size, max));
        }
        if flag(s, "uniqueItems") && a.iter().enumerate().any(|(i, v)| a[..i].contains(v)) {
            let msg = format!("{path} in body shouldn't contain duplicates");
            out.causes.push(invalid(&self.field(path), Bad::Str(String::new()), &msg));
        }
    }

    fn check_enum(&self, x: &Value, s: &Value, path: &str, out: &mut Res) {
        let values = list(s, "enum");
        if values.is_empty() || values.iter().any(|e| enum_matches(x, e)) {
            return;
        }
        let shown: Vec<String> = values
            .iter()
            .map(|e| match e {
                Value::String(st) => st.clone(),
                other => go_json(other),
            })
            .collect();
        out.causes.push(not_supported(&self.field(path), Bad::of(x), &shown));
    }

    fn check_object(
        &self,
        m: &Map<String, Value>,
        s: &Value,
        path: &str,
        old: Option<&Value>,
        out: &mut Res,
    ) {
        let old_at = |k: &str| old.and_then(|o| o.get(k));
        let n = i64::try_from(m.len()).unwrap_or(i64::MAX);
        if let Some(min) = i64_of(s, "minProperties")
            && n < min
        {
            let msg = format!("{path} in body should have at least {min} properties");
            out.causes.push(invalid(&self.field(path), Bad::Int(n), &msg));
            return;
        }
        if let Some(max) = i64_of(s, "maxProperties")
            && n > max
        {
            out.causes.push(too_many(&self.field(path), n, max));
            return;
        }
        match addl(s) {
            Addl::Bool(false) => {
                for k in m.keys().filter(|k| prop(s, k).is_none()) {
                    let msg = format!("{path}.{k} in body is a forbidden property");
                    out.causes.push(invalid(&self.field(path), Bad::Str(k.clone()), &msg));
                }
            }
            Addl::Schema(a) => {
                for (k, v) in m.iter().filter(|(k, _)| prop(s, k).is_none()) {
                    let mut r = Res::default();
                    self.node(v, a, &format!("{path}.{k}"), old_at(k), &mut r);
                    out.merge(r);
                }
            }
            _ => {}
        }
        if let Some(ps) = props(s) {
            for (k, p) in ps {
                if let Some(v) = m.get(k) {
                    let mut r = Res::default();
                    self.node(v, p, &child(path, k), old_at(k), &mut r);
                    out.merge(r);
                }
            }
        }
        for k in list(s, "required").iter().filter_map(Value::as_str) {
            if !m.contains_key(k) {
                out.causes.push(required(&self.field(&format!("{path}.{k}")), ""));
            }
        }
    }
}

/// kube-openapi's enum match: equal after converting the data to the enum value's type.
pub(crate) fn enum_matches(x: &Value, e: &Value) -> bool {
    match (num(x), num(e)) {
        (Some(Num::I(a)), Some(Num::I(b))) => a == b,
        (Some(Num::F(a)), Some(Num::I(b))) => a as i64 == b,
        (Some(Num::I(a)), Some(Num::F(b))) => a as f64 == b,
        (Some(Num::F(a)), Some(Num::F(b))) => a == b,
        (Some(Num::I(a)), None) => match e {
            // Go converts an integer to the string of that code point.
            Value::String(st) => {
                let c = u32::try_from(a).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}');
                st.chars().eq(std::iter::once(c))
            }
            _ => false,
        },
        _ => !x.is_null() && !e.is_null() && x == e,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::test_util::*;

    #[test]
    fn type_mismatch_reports_the_json_type() {
        let s = spec_schema(json!({"type": "object", "properties": {"replicas": {"type": "integer"}}}));
        let c = validate(&json!({"spec": {"replicas": "3"}}), &s);
        let c = one(&c);
        assert_eq!(c.reason, FIELD_VALUE_TYPE_INVALID);
        assert_eq!(c.field, "spec.replicas");
        assert_eq!(
            c.message,
            r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#
        );
        // A float with an integral value is an integer; 1.5 is not.
        assert!(validate(&json!({"spec": {"replicas": 3.0}}), &s).is_empty());
        let c = validate(&json!({"spec": {"replicas": 1.5}}), &s);
        assert_eq!(
            one(&c).message,
            r#"Invalid value: "number": spec.replicas in body must be of type integer: "number""#
        );
        // number accepts integers
        let n = spec_schema(json!({"type": "number"}));
        assert!(validate(&json!({"spec": 3}), &n).is_empty());
    }

    #[test]
    fn root_type_errors_have_nil_field() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object"}}});
        let c = validate(&json!([1]), &json!({"type": "object"}));
        assert_eq!(one(&c).field, "<nil>");
        assert_eq!(one(&c).message, r#"Invalid value: "array":  in body must be of type object: "array""#);
        assert!(validate(&json!({"spec": {}}), &s).is_empty());
    }

    #[test]
    fn minimum_maximum_and_exclusive() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number", "minimum": 0.5, "exclusiveMinimum": true, "maximum": 1e6, "exclusiveMaximum": true}
        }}));
        let c = validate(&json!({"spec": {"replicas": -1}}), &s);
        let c = one(&c);
        assert_eq!(c.reason, FIELD_VALUE_INVALID);
        assert_eq!(c.field, "spec.replicas");
        assert_eq!(
            c.message,
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 1"
        );
        let c = validate(&json!({"spec": {"replicas": 11}}), &s);
        assert_eq!(
            one(&c).message,
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10"
        );
        let c = validate(&json!({"spec": {"ratio": 0.5}}), &s);
        assert_eq!(one(&c).message, "Invalid value: 0.5: spec.ratio in body should be greater than 0.5");
        let c = validate(&json!({"spec": {"ratio": 2e6}}), &s);
        assert_eq!(one(&c).message, "Invalid value: 2e+06: spec.ratio in body should be less than 1e+06");
        assert!(validate(&json!({"spec": {"replicas": 1, "ratio": 0.75}}), &s).is_empty());
    }

    #[test]
    fn integer_data_is_checked_against_truncated_bounds() {
        // kube-openapi converts the float bound to int64 for integer data.
        let s = spec_schema(json!({"type": "integer", "minimum": 1.5, "multipleOf": 2}));
        assert!(validate(&json!({"spec": 2}), &s).is_empty());
        let c = validate(&json!({"spec": 1}), &s);
        assert_eq!(one(&c).message, "Invalid value: 1: spec in body should be a multiple of 2");
        let c = validate(&json!({"spec": 0}), &s);
        assert_eq!(one(&c).message, "Invalid value: 0: spec in body should be greater than or equal to 1");
        let f = spec_schema(json!({"type": "number", "multipleOf": 0.1}));
        assert!(validate(&json!({"spec": 0.3}), &f).is_empty());
        let c = validate(&json!({"spec": 0.35}), &f);
        assert_eq!(one(&c).message, "Invalid value: 0.35: spec in body should be a multiple of 0.1");
    }

    #[test]
    fn required_fields_at_root_nested_and_in_lists() {
        let s = json!({"type": "object", "required": ["spec"], "properties": {"spec": {
        "type": "object", "required": ["name", "items"], "properties": {
            "name": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}
        }}}});
        let c = validate(&json!({}), &s);
        let c = one(&c);
        assert_eq!(
            (c.reason.as_str(), c.field.as_str(), c.message.as_str()),
            (FIELD_VALUE_REQUIRED, "spec", "Required value")
        );
        let c = validate(&json!({"spec": {"items": [{"id": "a"}, {}]}}), &s);
        assert_eq!(msgs(&c), vec!["spec.items[1].id: Required value", "spec.name: Required value"]);
    }

    #[test]
    fn enum_values() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "level": {"type": "integer", "enum": [1, 2]},
        }}));
        let c = validate(&json!({"spec": {"mode": "x"}}), &s);
        let c = one(&c);
        assert_eq!(c.reason, FIELD_VALUE_NOT_SUPPORTED);
        assert_eq!(c.message, r#"Unsupported value: "x": supported values: "a", "b""#);
        let c = validate(&json!({"spec": {"level": 3}}), &s);
        assert_eq!(one(&c).message, r#"Unsupported value: 3: supported values: "1", "2""#);
        assert!(validate(&json!({"spec": {"mode": "b", "level": 2.0}}), &s).is_empty());
    }

    #[test]
    fn string_lengths_and_pattern() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"},
            "one": {"type": "string", "maxLength": 1},
            "digits": {"type": "string", "pattern": "^\\d+$"},
        }}));
        let c = validate(&json!({"spec": {"name": "toolongname"}}), &s);
        let c = one(&c);
        assert_eq!(
            (c.reason.as_str(), c.message.as_str()),
            (FIELD_VALUE_TOO_LONG, "Too long: may not be more than 5 bytes")
        );
        let c = validate(&json!({"spec": {"one": "ab"}}), &s);
        assert_eq!(one(&c).message, "Too long: may not be more than 1 byte");
        let c = validate(&json!({"spec": {"name": "ab"}}), &s);
        assert_eq!(
            one(&c).message,
            r#"Invalid value: "ab": spec.name in body should be at least 3 chars long"#
        );
        let c = validate(&json!({"spec": {"name": "ABCD"}}), &s);
        assert_eq!(one(&c).message, r#"Invalid value: "ABCD": spec.name in body should match '^[a-z]+$'"#);
        // maxLength counts characters, not bytes
        assert!(validate(&json!({"spec": {"name": "ééé"}}), &s).len() == 1); // fails pattern only
        // Go's \d is ASCII only.
        assert!(validate(&json!({"spec": {"digits": "123"}}), &s).is_empty());
        assert_eq!(validate(&json!({"spec": {"digits": "١٢٣"}}), &s).len(), 1);
    }

    #[test]
    fn item_and_property_counts() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "l": {"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "string"}},
            "one": {"type": "array", "maxItems": 1, "items": {"type": "string"}},
            "u": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}},
            "m": {"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "string"}},
        }}));
        let c = validate(&json!({"spec": {"l": ["a"]}}), &s);
        assert_eq!(one(&c).message, "Invalid value: 1: spec.l in body should have at least 2 items");
        let c = validate(&json!({"spec": {"l": ["a", "b", "c", "d"]}}), &s);
        let c = one(&c);
        assert_eq!(
            (c.reason.as_str(), c.message.as_str()),
            (FIELD_VALUE_TOO_MANY, "Too many: 4: must have at most 3 items")
        );
        let c = validate(&json!({"spec": {"one": ["a", "b"]}}), &s);
        assert_eq!(one(&c).message, "Too many: 2: must have at most 1 item");
        let c = validate(&json!({"spec": {"u": [1, 2, 1]}}), &s);
        assert_eq!(one(&c).message, r#"Invalid value: "": spec.u in body shouldn't contain duplicates"#);
        assert!(validate(&json!({"spec": {"u": [1, 1.0]}}), &s).is_empty());
        let c = validate(&json!({"spec": {"m": {}}}), &s);
        assert_eq!(one(&c).message, "Invalid value: 0: spec.m in body should have at least 1 properties");
        let c = validate(&json!({"spec": {"m": {"a": "1", "b": "2", "c": "3"}}}), &s);
        assert_eq!(one(&c).error_string(), "spec.m: Too many: 3: must have at most 2 items");
    }

    #[test]
    fn additional_properties_schema_and_false() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
            "closed": {"type": "object", "additionalProperties": false},
        }}));
        let c = validate(&json!({"spec": {"labels": {"a": "ok", "b": 5, "c": "long"}}}), &s);
        assert_eq!(
            msgs(&c),
            vec![
                r#"spec.labels.b: Invalid value: "integer": spec.labels.b in body must be of type string: "integer""#,
                "spec.labels.c: Too long: may not be more than 3 bytes",
            ]
        );
        let c = validate(&json!({"spec": {"closed": {"x": 1}}}), &s);
        assert_eq!(
            one(&c).error_string(),
            r#"spec.closed: Invalid value: "x": spec.closed.x in body is a forbidden property"#
        );
    }

    #[test]
    fn nullable_and_nulls() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "a": {"type": "string", "nullable": true},
            "b": {"type": "string"},
        }}));
        assert!(validate(&json!({"spec": {"a": null}}), &s).is_empty());
        let c = validate(&json!({"spec": {"b": null}}), &s);
        assert_eq!(
            one(&c).message,
            r#"Invalid value: "null": spec.b in body must be of type string: "null""#
        );
    }

    #[test]
    fn int_or_string() {
        let s = spec_schema(
            json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}}),
        );
        assert!(validate(&json!({"spec": {"port": 80}}), &s).is_empty());
        assert!(validate(&json!({"spec": {"port": "http"}}), &s).is_empty());
        let c = validate(&json!({"spec": {"port": true}}), &s);
        assert_eq!(
            one(&c).message,
            r#"Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#
        );
    }

    #[test]
    fn formats() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "t": {"type": "string", "format": "date-time"},
            "d": {"type": "string", "format": "date"},
            "u": {"type": "string", "format": "uuid"},
            "ip": {"type": "string", "format": "ipv4"},
            "h": {"type": "string", "format": "hostname"},
            "odd": {"type": "string", "format": "made-up"},
            "i32": {"type": "integer", "format": "int32"},
        }}));
        let good = json!({"spec": {"t": "2024-01-02T03:04:05Z", "d": "2024-02-29", "u": "123e4567-e89b-12d3-a456-426614174000",
            "ip": "10.0.0.1", "h": "my-host.example.com", "odd": "anything", "i32": 5}});
        assert!(validate(&good, &s).is_empty(), "{:?}", validate(&good, &s));
        let c = validate(&json!({"spec": {"t": "yesterday"}}), &s);
        assert_eq!(
            one(&c).error_string(),
            r#"spec.t: Invalid value: "yesterday": spec.t in body must be of type date-time: "yesterday""#
        );
        assert_eq!(one(&c).reason, FIELD_VALUE_TYPE_INVALID);
        for bad in [
            json!({"d": "2023-02-29"}),
            json!({"u": "nope"}),
            json!({"ip": "1.2.3"}),
            json!({"h": "-bad"}),
            json!({"t": "2024-01-02T25:00:00Z"}),
        ] {
            assert_eq!(validate(&json!({"spec": bad}), &s).len(), 1, "{bad}");
        }
        // An integer format applies to the type check of non-integers.
        let c = validate(&json!({"spec": {"i32": true}}), &s);
        assert_eq!(one(&c).message, r#"Invalid value: "": spec.i32 in body must be of type int32: """#);
    }

    #[test]
    fn patterns_use_go_semantics() {
        let m = |p: &str, t: &str| with_regex(p, |re| re.is_match(t)).unwrap();
        assert!(m(r"^\d+$", "123") && !m(r"^\d+$", "١٢٣"));
        assert!(m(r"^\D+$", "é-x") && !m(r"^\D+$", "a1"));
        assert!(m(r"^[\w.-]+$", "a_b.c-d") && !m(r"^[\w]+$", "é"));
        assert!(m(r"^\S+\s\S+$", "a b") && !m(r"^\s$", "\u{a0}"));
        assert!(m(r"\bfoo\b", "a foo b") && m(r"^[]a]+$", "]a") && m(r"^[a[]+$", "[a"));
        assert!(m("a.c", "a\u{e9}c"));
        let e = with_regex("[abc", |_| ()).unwrap_err();
        assert_eq!(e, "error parsing regexp: missing closing ]: `[abc`");
    }

    #[test]
    fn junctors_report_composite_errors_at_nil() {
        let s = spec_schema(json!({"type": "object", "properties": {"v": {
            "type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]}}}));
        assert!(validate(&json!({"spec": {"v": "bee"}}), &s).is_empty());
        let c = validate(&json!({"spec": {"v": "cat"}}), &s);
        assert_eq!(
            c[0].error_string(),
            r#"<nil>: Invalid value: "": "spec.v" must validate at least one schema (anyOf)"#
        );
        assert_eq!(c[1].error_string(), r#"spec.v: Invalid value: "cat": spec.v in body should match '^a'"#);
        let one_of = spec_schema(json!({"type": "integer", "oneOf": [{"minimum": 1}, {"minimum": 2}]}));
        let c = validate(&json!({"spec": 5}), &one_of);
        assert_eq!(
            one(&c).message,
            r#"Invalid value: "": "spec" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
        );
        let not = spec_schema(json!({"type": "string", "not": {"enum": ["x"]}}));
        let c = validate(&json!({"spec": "x"}), &not);
        assert_eq!(one(&c).message, r#"Invalid value: "": "spec" must not validate the schema (not)"#);
    }

    #[test]
    fn update_ratchets_unchanged_values() {
        let s = spec_schema(json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "replicas": {"type": "integer", "minimum": 1},
            "note": {"type": "string"},
            "byName": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer", "minimum": 0}}}},
            "atomic": {"type": "array", "items": {"type": "integer", "minimum": 0}},
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        }}));
        let old = json!({"spec": {"name": "n", "replicas": 0, "note": "a"}});
        // replicas unchanged: its error is ratcheted away even though spec changed.
        assert!(
            validate_update(&json!({"spec": {"name": "n", "replicas": 0, "note": "b"}}), &old, &s).is_empty()
        );
        let c = validate_update(&json!({"spec": {"name": "n", "replicas": -1}}), &old, &s);
        assert_eq!(one(&c).field, "spec.replicas");
        // required: kept when the parent changed, dropped when it did not
        let old = json!({"spec": {"note": "a"}});
        assert!(validate_update(&old, &old, &s).is_empty());
        assert_eq!(
            msgs(&validate_update(&json!({"spec": {"note": "b"}}), &old, &s)),
            vec!["spec.name: Required value"]
        );
        // map lists correlate by key, other lists do not
        let old = json!({"spec": {"name": "n", "byName": [{"name": "a", "v": -1}], "atomic": [-1]}});
        let new = json!({"spec": {"name": "n", "byName": [{"name": "b", "v": 1}, {"name": "a", "v": -1}], "atomic": [-1, 2]}});
        assert_eq!(
            msgs(&validate_update(&new, &old, &s)),
            vec![
                "spec.atomic[0]: Invalid value: -1: spec.atomic[0] in body should be greater than or equal to 0"
            ]
        );
        // list-type errors only when the old object had none
        let dup = json!({"spec": {"name": "n", "set": ["x", "x"]}});
        assert!(
            validate_update(&json!({"spec": {"name": "n", "set": ["x", "x", "y"]}}), &dup, &s).is_empty()
        );
        let clean = json!({"spec": {"name": "n", "set": ["x"]}});
        assert_eq!(validate_update(&dup, &clean, &s).len(), 1);
    }

    // --- pruning, nulls, defaults --------------------------------------------
}
