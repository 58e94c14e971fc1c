//! Custom-resource values generated from a CRD's structural OpenAPI v3 schema, for
//! `ctop test --fuzz`: [`valid`] values (what a user could write), [`invalid`] ones that
//! break exactly one rule at one place (what the API server must refuse with a 422 naming
//! that field), and [`mutate`]d ones (what an update of a custom resource does).
//!
//! Start at [`valid`]. The schema is a node of a `ResourceSpec::schema` (normally its
//! `properties.spec`), a plain [`Value`]; every choice draws from the seeded [`Rng`], so
//! the same seed gives the same values. Generation is by construction (bounds, lengths,
//! item counts, uniqueness, `required`, defaults); strings from a `pattern` or a
//! `format`, numbers with `multipleOf`, and nodes under `anyOf`/`oneOf`/`not` are then
//! checked with the server's validator (`ctop_schema`) and drawn again when they fail.
//!
//! The other modules: `strings` (labels, formats, patterns), `invalid` (the rules a
//! value can break and how), `mutate` (the changes an update makes), `place` (paths in
//! a value, and the server's pipeline the last two check their results with), `tests`
//! (the bundled examples' schemas and a schema with every keyword, through kubesim's
//! pipeline).
//!
//! What the values look like: integers near the low end of their bounds, strings that
//! are DNS-1123 labels unless a `format`, `pattern` or `enum` says otherwise, arrays and
//! maps of 0 to 3 entries, optional properties present about half the time. Nodes with
//! no type (`x-kubernetes-preserve-unknown-fields` alone, `z.any()`) get an empty object:
//! nothing says what an operator expects there.

use serde_json::{Map, Value};

use super::rng::Rng;

mod invalid;
mod mutate;
mod place;
mod strings;
#[cfg(test)]
mod tests;

pub use invalid::Invalid;

/// How many times a value that must pass a check made with the validator (a pattern, a
/// format, `multipleOf`, a junctor) is drawn before the last draw is kept.
const DRAWS: usize = 24;

/// A valid value for `schema` (an OpenAPI v3 JSON schema node). Optional properties are
/// present about half the time; fields with a `default` are sometimes omitted (the server
/// fills them in). Values are small and realistic so an operator can turn them into valid
/// children: integers within the bounds and near the low end, strings that are DNS-1123
/// labels by default (within `minLength`/`maxLength`), `enum`, `format` and `pattern`
/// honoured, arrays of 0 to 3 items within `minItems`/`maxItems` (unique in
/// `x-kubernetes-list-type: set` and by key in `map` lists), maps with 0 to 3 keys.
///
/// `x-kubernetes-validations` (CEL) rules are not read: they cannot be satisfied in
/// general, so a value may be refused by one of them. A caller treats a 422 whose causes
/// are all CEL rule failures as an acceptable outcome of a valid value.
pub fn valid(schema: &Value, rng: &mut Rng) -> Value {
    Gen { rng, optional: 50 }.value(schema)
}

/// A value that breaks exactly one rule of `schema` at one place, and which rule: `path`
/// is the field path the 422 names (like `spec.port` or `spec.items[1].name`, given
/// `root` as the path of `schema` itself, e.g. `"spec"`), `rule` a short text such as
/// "below the minimum 1", "not one of the enum values", "a string where an integer is
/// required" or "required field missing". The value is checked with the server's
/// validator: it is refused with exactly one cause, at `path`. `None` when nothing in
/// the schema can be broken (e.g. `x-kubernetes-preserve-unknown-fields` everywhere).
///
/// CEL rules may add causes of their own on top (or, after a type, required, enum or
/// size error, the server's "some validation rules were not checked" cause).
pub fn invalid(schema: &Value, root: &str, rng: &mut Rng) -> Option<Invalid> {
    invalid::invalid(schema, root, rng)
}

/// `current` (a valid value of `schema`) with one field changed to another valid value,
/// an optional field added or removed, or an item or map entry added or removed: what
/// an update of a custom resource does. The result passes the server's validator
/// (CEL aside, as for [`valid`]), and differs from `current` unless nothing in the
/// schema can change.
pub fn mutate(schema: &Value, current: &Value, rng: &mut Rng) -> Value {
    mutate::mutate(schema, current, rng)
}

/// The generator: the random source and how often optional properties appear.
pub(crate) struct Gen<'r> {
    pub(crate) rng: &'r mut Rng,
    /// Percent of optional properties (without a default) that are present.
    pub(crate) optional: u64,
}

impl Gen<'_> {
    /// A valid value for `s`.
    pub(crate) fn value(&mut self, s: &Value) -> Value {
        let merged;
        let s = if list(s, "allOf").is_empty() {
            s
        } else {
            merged = merge_all_of(s);
            &merged
        };
        if !list(s, "anyOf").is_empty() || !list(s, "oneOf").is_empty() {
            return self.junction(s);
        }
        if needs_check(s) {
            let mut last = Value::Null;
            for _ in 0..DRAWS {
                last = self.plain(s);
                if accepts(s, &last) {
                    break;
                }
            }
            return last;
        }
        self.plain(s)
    }

    /// A value for a node under `anyOf`/`oneOf`: the node's own keywords with one
    /// branch's, drawn until the node (all branches) accepts it.
    fn junction(&mut self, s: &Value) -> Value {
        let mut base = s.clone();
        if let Some(m) = base.as_object_mut() {
            m.remove("anyOf");
            m.remove("oneOf");
        }
        let branches: Vec<&Value> = list(s, "anyOf").iter().chain(list(s, "oneOf")).collect();
        let mut last = Value::Null;
        for _ in 0..DRAWS {
            let branch = *self.rng.pick(&branches);
            last = self.value(&merge(&base, branch));
            if accepts(s, &last) {
                break;
            }
        }
        last
    }

    /// A value for a node without junctors, by its type.
    fn plain(&mut self, s: &Value) -> Value {
        let values = list(s, "enum");
        if flag(s, "nullable") && self.rng.chance(5) && (values.is_empty() || values.contains(&Value::Null)) {
            return Value::Null;
        }
        if !values.is_empty() {
            return self.rng.pick(values).clone();
        }
        match kind(s) {
            Kind::Object => self.object(s),
            Kind::Array => Value::Array(self.items(s, Vec::new(), None)),
            Kind::String => Value::String(strings::string(self.rng, s)),
            Kind::Integer => self.integer(s),
            Kind::Number => self.number(s),
            Kind::Boolean => Value::Bool(self.rng.chance(50)),
            Kind::IntOrString => {
                // A branch (`anyOf: [{type: integer}, {type: string}]`) may have chosen.
                let typed = get(s, "type").and_then(Value::as_str);
                if typed == Some("integer") || typed != Some("string") && self.rng.chance(50) {
                    self.integer(s)
                } else {
                    Value::String(strings::int_or_string(self.rng, s))
                }
            }
            Kind::Any => Value::Object(Map::new()),
        }
    }

    fn object(&mut self, s: &Value) -> Value {
        let mut m = Map::new();
        if flag(s, ctop_schema::EMBEDDED) {
            // An embedded resource: a kind the operator can apply as it is.
            m.insert("apiVersion".into(), "v1".into());
            m.insert("kind".into(), "ConfigMap".into());
            let name = strings::label(self.rng, 1, 40);
            m.insert("metadata".into(), serde_json::json!({ "name": name }));
        }
        let required = list(s, "required");
        if let Some(ps) = props(s) {
            for (k, p) in ps {
                let needed = required.iter().any(|r| r.as_str() == Some(k));
                let percent = match (needed, get(p, "default").is_some_and(|d| !d.is_null())) {
                    (true, false) => 100,
                    (true, true) => 75,
                    (false, false) => self.optional,
                    (false, true) => self.optional * 3 / 4,
                };
                if self.rng.chance(percent) {
                    let v = self.value(p);
                    m.insert(k.clone(), v);
                }
            }
        }
        if let Some(a) = map_values(s) {
            let (lo, hi) = counts(s, "minProperties", "maxProperties");
            let n = self.rng.range(lo, hi.min(lo.max(3)));
            while (m.len() as u64) < n {
                let key = strings::map_key(self.rng, m.len());
                if !m.contains_key(&key) {
                    let v = self.value(a);
                    m.insert(key, v);
                }
            }
        }
        Value::Object(m)
    }

    /// `have` extended with new items to a count drawn within the array's bounds (or to
    /// exactly `to`), keeping a `set` list's items and a `map` list's keys unique.
    pub(crate) fn items(&mut self, s: &Value, mut have: Vec<Value>, to: Option<u64>) -> Vec<Value> {
        let Some(item) = ctop_schema::items(s) else { return have };
        let (lo, hi) = counts(s, "minItems", "maxItems");
        let n = to.unwrap_or_else(|| self.rng.range(lo, hi.min(lo.max(3))));
        let mut tries = 0;
        while (have.len() as u64) < n && tries < 16 * (n + 1) {
            tries += 1;
            let v = self.value(item);
            if !duplicates(s, &have, &v) {
                have.push(v);
            }
        }
        have
    }

    fn integer(&mut self, s: &Value) -> Value {
        let (lo, hi) = int_bounds(s);
        let step = get(s, "multipleOf").and_then(Value::as_f64).map_or(1, |m| (m as i64).max(1));
        // The first multiple of `step` at or above `lo`; the check draws again otherwise.
        let first = lo.div_euclid(step) * step + if lo.rem_euclid(step) == 0 { 0 } else { step };
        let span = hi.max(first).saturating_sub(first) / step;
        let k = match self.rng.below(100) {
            0..10 => 0,
            10..15 => span,
            15..85 => self.rng.range_i64(0, span.min(9)),
            _ => self.rng.range_i64(0, span.min(100)),
        };
        Value::from(first.saturating_add(k.saturating_mul(step)))
    }

    fn number(&mut self, s: &Value) -> Value {
        let min = get(s, "minimum").and_then(Value::as_f64);
        let max = get(s, "maximum").and_then(Value::as_f64);
        let (ex_lo, ex_hi) = (flag(s, "exclusiveMinimum"), flag(s, "exclusiveMaximum"));
        let lo = min.unwrap_or_else(|| max.map_or(0.0, |m| (m - 9.0).min(0.0)));
        let hi = max.unwrap_or(lo + 9.0);
        // Halves within the bounds, strictly inside an exclusive one.
        let first = (lo * 2.0).ceil() / 2.0 + if ex_lo && (lo * 2.0).fract() == 0.0 { 0.5 } else { 0.0 };
        let last = (hi * 2.0).floor() / 2.0 - if ex_hi && (hi * 2.0).fract() == 0.0 { 0.5 } else { 0.0 };
        if last < first {
            return Value::from((lo + hi) / 2.0);
        }
        let halves = ((last - first) * 2.0).min(18.0) as u64;
        let x = first + self.rng.below(halves + 1) as f64 / 2.0;
        if x.fract() == 0.0 && self.rng.chance(50) && x.abs() < 1e15 {
            Value::from(x as i64)
        } else {
            Value::from(x)
        }
    }
}

/// What a schema node holds, from its `type` (and `x-kubernetes-int-or-string`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
    IntOrString,
    /// No type: anything (`x-kubernetes-preserve-unknown-fields` or junctors alone).
    Any,
}

pub(crate) fn kind(s: &Value) -> Kind {
    if flag(s, ctop_schema::INT_OR_STRING) {
        return Kind::IntOrString;
    }
    match get(s, "type").and_then(Value::as_str).unwrap_or("") {
        "object" => Kind::Object,
        "array" => Kind::Array,
        "string" => Kind::String,
        "integer" => Kind::Integer,
        "number" => Kind::Number,
        "boolean" => Kind::Boolean,
        _ if props(s).is_some() || map_values(s).is_some() => Kind::Object,
        _ => Kind::Any,
    }
}

/// Whether a node's values are checked with the validator after they are drawn: the
/// rules generation does not meet by construction.
fn needs_check(s: &Value) -> bool {
    ["pattern", "format", "multipleOf", "not"].iter().any(|k| get(s, k).is_some())
}

/// Whether the server's validator accepts `v` for node `s` (CEL aside).
pub(crate) fn accepts(s: &Value, v: &Value) -> bool {
    ctop_schema::validate(v, s).is_empty()
}

/// `allOf`'s branches merged into the node.
fn merge_all_of(s: &Value) -> Value {
    let mut base = s.clone();
    if let Some(m) = base.as_object_mut() {
        m.remove("allOf");
    }
    list(s, "allOf").iter().fold(base, |acc, b| merge(&acc, b))
}

/// `a` with `b`'s keywords: `b`'s win, except `properties` (merged by key) and `required`
/// (joined).
pub(crate) fn merge(a: &Value, b: &Value) -> Value {
    let (Some(am), Some(bm)) = (a.as_object(), b.as_object()) else { return a.clone() };
    let mut out = am.clone();
    for (k, v) in bm {
        match (k.as_str(), out.get_mut(k)) {
            ("properties", Some(Value::Object(ps))) => {
                for (pk, pv) in v.as_object().into_iter().flatten() {
                    let merged = ps.get(pk).map_or_else(|| pv.clone(), |old| merge(old, pv));
                    ps.insert(pk.clone(), merged);
                }
            }
            ("required", Some(Value::Array(rs))) => {
                for r in v.as_array().into_iter().flatten() {
                    if !rs.contains(r) {
                        rs.push(r.clone());
                    }
                }
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// An integer node's bounds as the validator applies them to integer data (bounds
/// truncated toward zero, exclusive ones stepped in): near zero when unbounded.
pub(crate) fn int_bounds(s: &Value) -> (i64, i64) {
    let bound = |k: &str, ex: &str, step: i64| {
        get(s, k)
            .and_then(Value::as_f64)
            .map(|b| (b as i64).saturating_add(if flag(s, ex) { step } else { 0 }))
    };
    let (min, max) = (bound("minimum", "exclusiveMinimum", 1), bound("maximum", "exclusiveMaximum", -1));
    let lo = min.unwrap_or_else(|| max.map_or(0, |m| m.saturating_sub(9).min(0)));
    let hi = max.unwrap_or(lo.saturating_add(9));
    (lo, hi.max(lo))
}

/// A count's bounds (`minItems`/`maxItems`, `minProperties`/`maxProperties`).
pub(crate) fn counts(s: &Value, min: &str, max: &str) -> (u64, u64) {
    let lo = get(s, min).and_then(Value::as_u64).unwrap_or(0);
    let hi = get(s, max).and_then(Value::as_u64).unwrap_or(u64::MAX);
    (lo, hi.max(lo))
}

/// Whether adding `v` to the items `have` of array node `s` repeats a `set` item or a
/// `map` list's key (`x-kubernetes-list-type`; `uniqueItems` too).
pub(crate) fn duplicates(s: &Value, have: &[Value], v: &Value) -> bool {
    match get(s, ctop_schema::LIST_TYPE).and_then(Value::as_str) {
        Some("map") => {
            let keys = list(s, ctop_schema::LIST_MAP_KEYS);
            let key_of = |x: &Value| -> Vec<Option<Value>> {
                keys.iter().filter_map(Value::as_str).map(|k| get(x, k).cloned()).collect()
            };
            let mine = key_of(v);
            have.iter().any(|h| key_of(h) == mine)
        }
        Some("set") => have.contains(v),
        _ => flag(s, "uniqueItems") && have.contains(v),
    }
}

/// The schema of a map's values (`additionalProperties` as a schema, or `true`: anything).
pub(crate) fn map_values(s: &Value) -> Option<&Value> {
    static ANY: std::sync::LazyLock<Value> =
        std::sync::LazyLock::new(|| serde_json::json!({ "x-kubernetes-preserve-unknown-fields": true }));
    match get(s, "additionalProperties")? {
        Value::Bool(true) => Some(&ANY),
        v @ Value::Object(_) => Some(v),
        _ => None,
    }
}

pub(crate) fn get<'a>(s: &'a Value, k: &str) -> Option<&'a Value> {
    s.as_object()?.get(k)
}

pub(crate) fn flag(s: &Value, k: &str) -> bool {
    get(s, k).and_then(Value::as_bool).unwrap_or(false)
}

pub(crate) fn list<'a>(s: &'a Value, k: &str) -> &'a [Value] {
    get(s, k).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

pub(crate) fn props(s: &Value) -> Option<&Map<String, Value>> {
    get(s, "properties")?.as_object()
}
